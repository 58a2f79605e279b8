"""Every plugin's documentation is YAML that parses, checked in milliseconds in `make check`.

A plain scalar with ": " in it breaks a module's DOCUMENTATION; only sanity's validate-modules, yamllint and
ansible-doc (minutes, in `make test`) see it otherwise, too late for the inner loop.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DOC_BLOCKS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def doc_blocks() -> Iterator[Tuple[str, str]]:
    for path in sorted((REPO / "plugins").rglob("*.py")) + sorted((REPO / "extensions").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in DOC_BLOCKS and isinstance(node.value, ast.Constant):
                yield f"{path.relative_to(REPO)} {node.targets[0].id}", node.value.value
    for path in sorted((REPO / "plugins").rglob("*.yml")):
        yield str(path.relative_to(REPO)), path.read_text()


BLOCKS = list(doc_blocks())


@pytest.mark.parametrize("where, text", BLOCKS, ids=[where for where, _text in BLOCKS])
def test_each_documentation_block_parses(where: str, text: str) -> None:
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        pytest.fail(f"{where} is not valid YAML: {exc}")


def test_a_colon_in_a_plain_scalar_is_caught() -> None:
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load("description:\n  - it remembers (C(x) in O(seen)): a VM\n    that has not answered\n")


def _descriptions(node: object) -> Iterator[object]:
    """Every item of every `description` and `notes` list in a parsed block."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "notes") and isinstance(value, list):
                yield from value
            yield from _descriptions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _descriptions(value)


@pytest.mark.parametrize("where, text", BLOCKS, ids=[where for where, _text in BLOCKS])
def test_each_description_item_is_text(where: str, text: str) -> None:
    """'Windows VMs keep no VM lock: there ...' as a list item is valid YAML, a mapping, and ansible-doc refuses the
    whole module ("Expected string in description"); only the newest-core leg's ansible-doc saw it."""
    odd = [item for item in _descriptions(yaml.safe_load(text)) if not isinstance(item, str)]
    assert odd == [], f"{where}: description items that are not text (a ': ' in them?): {odd}"


def test_every_changelog_fragment_parses_into_sections_of_text() -> None:
    """antsibull-changelog lint (make test) says the same, in seconds instead of milliseconds."""
    for path in sorted((REPO / "changelogs" / "fragments").glob("*.yml")):
        try:
            sections = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            pytest.fail(f"{path.relative_to(REPO)} is not valid YAML: {exc}")
        odd = [item for items in sections.values() if isinstance(items, list) for item in items
               if not isinstance(item, str)]
        assert odd == [], f"{path.relative_to(REPO)}: items that are not text (a ': ' in them? quote them): {odd}"
