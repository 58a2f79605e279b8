#!/usr/bin/python
"""Test stand-in for ansible.eda.credential_type: its documented options, checked and recorded (module_utils/stand_in.py)."""
from ansible_collections.ansible.eda.plugins.module_utils.stand_in import run


def main() -> None:
    run("credential_type")


if __name__ == "__main__":
    main()
