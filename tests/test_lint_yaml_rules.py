"""ansible-lint's yaml[...] rules, in two seconds, so that `make check` catches what tests/test_lint.py would refuse.

The rules are yamllint's with the configuration ansible-lint itself loads (`load_yamllint_config`: line length,
indentation, truthy values, ...), so this test cannot drift from the full lint it stands in for: a line too long for
the yaml rules would otherwise surface only in the minutes-long lint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, List

from ansiblelint.yaml_utils import load_yamllint_config
from yamllint import linter

from tools.stage_collection import CONTENT

REPO = Path(__file__).resolve().parent.parent
LINTED = (*CONTENT, "awx")  # what tests/test_lint.py stages and lints
NOT_LINTED = ("changelogs", "tests")  # .ansible-lint's exclude_paths among them


def yaml_files() -> Iterator[Path]:
    for name in LINTED:
        top = REPO / name
        if name.split("/")[0] in NOT_LINTED or not top.exists():
            continue
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        yield from (path for path in candidates if path.suffix in (".yml", ".yaml") and path.is_file())


def problems(text: str, name: str) -> List[str]:
    return ["%s:%s: %s" % (name, problem.line, problem.desc) for problem in linter.run(text, load_yamllint_config(), name)
            if problem.level == "error"]


def test_every_linted_yaml_file_keeps_ansible_lints_yaml_rules() -> None:
    files = list(yaml_files())
    assert any(path.name == "cycle.yml" for path in files) and len(files) > 40, "the files the lint sees are read"
    found = [line for path in files for line in problems(path.read_text(), str(path.relative_to(REPO)))]
    assert not found, "\n".join(found)


def test_a_line_longer_than_ansible_lint_allows_is_refused() -> None:
    long_line = "- name: a play\n  hosts: \"%s\"\n" % ("x" * 200)
    assert problems("---\n" + long_line, "long.yml"), "the rules are loaded, and refuse this"
    assert not problems("---\n- name: a play\n  hosts: all\n", "short.yml")
