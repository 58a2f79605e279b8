"""ansible-test's pep8 sanity rule, in seconds, so that `make check` catches what `make sanity` would refuse.

The pycodestyle version, the ignore list and the line length are read from the installed ansible-test, so this
test cannot drift from the sanity leg it stands in for (a rule only `make sanity` knows fails a CI run, late).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import ansible_test
import pytest

from tools.stage_collection import CONTENT

REPO = Path(__file__).resolve().parent.parent
ANSIBLE_TEST = Path(ansible_test.__file__).parent


def pinned_pycodestyle() -> str:
    text = (ANSIBLE_TEST / "_data" / "requirements" / "sanity.pep8.txt").read_text()
    return re.search(r"^pycodestyle==\S+", text, re.M).group(0)


def ignored() -> list[str]:
    lines = (ANSIBLE_TEST / "_util" / "controller" / "sanity" / "pep8" / "current-ignore.txt").read_text()
    return [line.strip() for line in lines.splitlines() if line.strip() and not line.startswith("#")]


def max_line_length() -> str:
    source = (ANSIBLE_TEST / "_internal" / "commands" / "sanity" / "pep8.py").read_text()
    return re.search(r"'--max-line-length', '(\d+)'", source).group(1)


def pycodestyle(*paths: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    try:
        import pycodestyle as installed  # noqa: F401  # pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        pytest.fail("pycodestyle is missing: requirements-test.txt pins %s" % pinned_pycodestyle())
    return subprocess.run([sys.executable, "-m", "pycodestyle", "--max-line-length", max_line_length(),
                           "--ignore", ",".join(ignored()), *paths], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)


def test_requirements_pin_the_pycodestyle_ansible_test_uses() -> None:
    assert pinned_pycodestyle() in (REPO / "requirements-test.txt").read_text()


def test_the_tree_passes_ansible_tests_pep8_rule() -> None:
    # What ansible-test sanity sees: the staged collection (tools/stage_collection.CONTENT).
    run = pycodestyle(*[name for name in CONTENT if (REPO / name).is_dir()])
    assert run.returncode == 0, run.stdout[-4000:]


def test_an_over_indented_continuation_fails_it(tmp_path: Path) -> None:
    (tmp_path / "sloppy.py").write_text('x = ("a",\n            "b")\n')
    run = pycodestyle("sloppy.py", cwd=tmp_path)
    assert "E127" in run.stdout
