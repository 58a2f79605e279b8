"""Install pip arguments (`-r requirements.txt`, `-e '.[notebooks]'`, ...) into the environment of this interpreter.

    .venv/bin/python tools/install_requirements.py -r requirements.txt -r requirements-test.txt -e '.[notebooks]'

With uv (from PyPI, put into the same environment) when it can: it installs the test requirements in a fraction
of pip's CPU, and every fresh clone's `make test` waits for the venv before anything else can start
(docs/lab/benchmarks.md, the test suite's cost). The same requirement files decide the versions
either way; uv's resolution of them matched pip's package for package when compared (`pip freeze`). If uv cannot be
installed or cannot install them (no route to PyPI, a private index only pip is configured for), pip does it, as
before, and a line says so.

Then the packages of UNWANTED are removed again: dependencies of dependencies that cost every process that imports
them and that nothing here needs.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

BIN = Path(sys.executable).parent
# rfc3987-syntax comes with jupyter-events' jsonschema[format-nongpl]: when it is installed, `import jsonschema` builds
# its 39 lark grammars (about 1.5 CPU-s, twice that under load), in every pytest worker, ansible-lint and
# ansible-rulebook process. Without it jsonschema leaves the "iri" formats unchecked, which no schema here uses.
UNWANTED = ("rfc3987-syntax",)


def quietly(command: List[str]) -> int:
    print("+ " + " ".join(command), flush=True)
    return subprocess.call(command)


def with_uv(arguments: List[str]) -> int:
    if quietly([sys.executable, "-m", "pip", "install", "--quiet", "uv"]) != 0:
        return 1
    return quietly([str(BIN / "uv"), "pip", "install", "--quiet", "--python", sys.executable, *arguments])


def with_pip(arguments: List[str]) -> int:
    return quietly([sys.executable, "-m", "pip", "install", "--quiet", *arguments])


def remove_unwanted() -> int:
    """pip's uninstall works whichever tool installed, and is quiet about a package that is not there."""
    return quietly([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", *UNWANTED])


def main(arguments: List[str]) -> int:
    if not arguments:
        sys.exit("usage: python tools/install_requirements.py PIP-INSTALL-ARGUMENTS...")
    if with_uv(arguments) != 0:
        print("uv could not install them; installing with pip instead (about two minutes longer).", flush=True)
        if with_pip(arguments) != 0:
            return 1
    return remove_unwanted()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
