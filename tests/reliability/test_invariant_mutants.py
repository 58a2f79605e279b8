"""Every mutant of tools/invariant_mutants.py still finds the fix it reverts, and reverting changes the code: a fix
that moved (a file split, a line rewritten) would otherwise stop `make invariant-mutants` at that mutant, or
leave a mutant that tests nothing. The model's verdicts on them are `make invariant-mutants` (minutes)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tools.invariant_mutants import MUTATIONS, mutated_texts

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_the_mutant_still_finds_its_fix(name: str) -> None:
    mutated = mutated_texts(REPO, name)
    assert any(text != (REPO / path).read_text() for path, text in mutated.items()), "reverting changes nothing"


def test_each_mutant_run_on_one_kind_of_fleet_day_is_a_mutant() -> None:
    from tools.invariant_mutants import MUTATIONS, ONLY
    from tools.fault_model_run import KINDS
    assert set(ONLY) <= set(MUTATIONS) and set(ONLY.values()) <= set(KINDS)


def test_docs_list_the_mutants_the_tool_runs_in_its_order() -> None:
    """docs/lab/reliability.md lists what `make invariant-mutants` reverts: a mutant added, renamed or dropped in the
    tool and not in the page (or the other way) would make the page's \"22 of 22\" speak of another set."""
    page = (REPO / "docs" / "lab" / "reliability.md").read_text()
    marker = "The mutants `make invariant-mutants` runs today"
    assert marker in page, f"docs/lab/reliability.md no longer introduces its list of mutants with {marker!r}"
    listed = page.split(marker, 1)[1].split("\n\n", 2)[1]
    assert [line[2:] for line in listed.splitlines() if line.startswith("- ")] == list(MUTATIONS)
    assert f"**{len(MUTATIONS)} of {len(MUTATIONS)} caught**" in page, "the page's count is of another set of mutants"
