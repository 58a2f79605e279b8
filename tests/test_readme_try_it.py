"""The README's first screen tells a newcomer without Azure how to try the collection: `make demo` and `make test`."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
FIRST_SCREEN = 60  # lines


def try_it_block() -> str:
    start = README.index("\n## Try it without Azure\n")
    (block,) = re.findall(r"```sh\n(.*?)```", README[start:README.index("\n## ", start + 1)], re.S)
    return block


def test_the_first_screen_names_both_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:FIRST_SCREEN])
    assert "## Try it without Azure" in first_screen
    for command in ("make demo", "make test"):
        assert command in first_screen, f"{command} is in the README's first {FIRST_SCREEN} lines"


def test_the_try_it_block_is_make_targets_that_exist() -> None:
    """Each line of the block is a target of the Makefile, as written (make -n runs nothing)."""
    commands = [line.split("#")[0].strip() for line in try_it_block().splitlines()]
    commands = [command for command in commands if command]
    assert commands == ["make demo", "make test"]
    for command in commands:
        done = subprocess.run(command.split() + ["-n", "-C", str(REPO)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
