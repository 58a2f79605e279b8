"""Every relative Markdown link in the README and docs/ reaches a file, and its #anchor a heading there.

docs/ is split into guide/, reference/ and lab/ (docs/README.md); a page moved between them changes the depth of
every relative link to and from it, and a renamed heading changes its anchor. Links to other sites are not followed.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, List, Set, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
# [text](target) and [text](target "title"); images too. Fenced code blocks and inline code are left out first.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    return INLINE_CODE.sub("", FENCE.sub("", text))


def anchors(page: Path) -> Set[str]:
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-', repeats numbered."""
    seen: Set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in seen:
            n += 1
            anchor = f"{slug}-{n}"
        seen.add(anchor)
    return seen


def relative_links(page: Path) -> Iterator[Tuple[str, Path, str]]:
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        yield target, (page.parent / path).resolve() if path else page, anchor


def broken(page: Path) -> List[str]:
    found = []
    for target, path, anchor in relative_links(page):
        if not path.exists():
            found.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor.lower() not in anchors(path):
            found.append(f"{target}: no heading with that anchor in {path.name}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_reach_a_file_and_heading(page: Path) -> None:
    assert broken(page) == [], f"{page.relative_to(REPO)} links to what is not there: fix the path or the anchor"


def test_the_check_finds_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading: with (punctuation)\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-heading-with-punctuation) [gone](gone.md) [bad](there.md#nope)\n"
                    "`[code](skipped.md)` [web](https://example.com/x.md)\n```\n[fenced](skipped.md)\n```\n")
    assert broken(page) == ["gone.md: no such file", "there.md#nope: no heading with that anchor in there.md"]


def test_every_page_is_in_one_of_the_three_parts() -> None:
    """docs/ holds only its README and the guide, the reference and the lab reports."""
    loose = sorted(p.name for p in (REPO / "docs").iterdir() if p.name not in {"README.md", "guide", "reference", "lab"})
    assert loose == [], "move these into docs/guide, docs/reference or docs/lab, and list them in docs/README.md"
