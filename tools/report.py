"""Figures into a markdown document: a tool's own section, replaced on each run."""
from __future__ import annotations

from pathlib import Path


def write_section(path: Path, heading: str, text: str) -> None:
    """Put `text` (which starts with `heading`) in place of the section under `heading` (up to the next "## "
    heading), or at the end of the document when it has none yet."""
    old = path.read_text() if path.exists() else ""
    if heading in old:
        before, rest = old.split(heading, 1)
        after = rest.split("\n## ", 1)
        old = before.rstrip("\n") + ("\n\n## " + after[1] if len(after) > 1 else "")
    path.write_text(old.rstrip("\n") + "\n\n" + text)
