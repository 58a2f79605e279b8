"""Copy the collection's Ansible content to DEST/ansible_collections/azure_imds/scheduled_events.

ansible-test and Ansible's collection loader need that path layout; ansible-test
refuses symlinks, so this is a copy. Only what Galaxy would ship is copied.
Usage: python tools/stage_collection.py DEST   (prints the collection path)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# tests/unit follows ansible-test's layout; tests/integration here is a pytest suite, not
# ansible-test integration targets, so it is not staged.
CONTENT = ("galaxy.yml", "README.md", "CHANGELOG.md", "meta", "plugins", "roles", "playbooks", "extensions", "changelogs",
           "tests/sanity",
           "tests/unit")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def stage(dest: Path, source_root: Path = REPO) -> Path:
    """The collection from `source_root` (this checkout, or e.g. an older commit unpacked by a benchmark)."""
    target = dest / "ansible_collections" / "azure_imds" / "scheduled_events"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in CONTENT:
        source = source_root / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=IGNORE)
        elif source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/stage_collection.py DEST")
    print(stage(Path(sys.argv[1]).resolve()))
