"""Find promtool (Prometheus' rule and metrics checker) for the tests of docs/reference/metrics.md, without installing
Prometheus: on PATH, else a copy already unpacked in build/promtool, else Debian's `prometheus` package
downloaded (`apt-get download`, no root needed) and unpacked there (about 19 MB, once).

    python tools/get_promtool.py        # prints its path, or why there is none (exit 1)
"""
from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
HOME = REPO / "build" / "promtool"
UNPACKED = HOME / "root" / "usr" / "bin" / "promtool"


def find_promtool() -> Tuple[Optional[Path], str]:
    """(promtool, "") or (None, one sentence saying why there is none)."""
    found = shutil.which("promtool")
    if found:
        return Path(found), ""
    if UNPACKED.is_file():
        return UNPACKED, ""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        return None, "promtool is not on PATH and this machine has no apt-get/dpkg-deb to fetch Debian's prometheus."
    HOME.mkdir(parents=True, exist_ok=True)
    # pytest-xdist workers ask at the same moment: one fetches and unpacks while the others wait, and the
    # unpacked tree appears whole (renamed into place), so no worker runs a half-written promtool.
    with open(HOME / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if UNPACKED.is_file():
            return UNPACKED, ""
        return _fetch_and_unpack()


def _fetch_and_unpack() -> Tuple[Optional[Path], str]:
    download = HOME / "download"
    download.mkdir(parents=True, exist_ok=True)
    for command in (["apt-get", "download", "prometheus"], ["apt-get", "update", "-qq"],
                    ["apt-get", "download", "prometheus"]):
        if list(download.glob("prometheus_*.deb")):
            break
        subprocess.run(command, cwd=download, capture_output=True, text=True, timeout=300, check=False)
    packages = sorted(download.glob("prometheus_*.deb"))
    if not packages:
        return None, "apt-get could not download Debian's prometheus package (no network to the Debian mirror?)."
    staging = Path(tempfile.mkdtemp(prefix="root-", dir=HOME))
    unpack = subprocess.run(["dpkg-deb", "-x", str(packages[-1]), str(staging)], capture_output=True,
                            text=True, timeout=300, check=False)
    if unpack.returncode != 0 or not (staging / "usr" / "bin" / "promtool").is_file():
        shutil.rmtree(staging, ignore_errors=True)
        return None, f"dpkg-deb could not unpack {packages[-1].name}: {unpack.stderr.strip()[:200]}"
    shutil.rmtree(HOME / "root", ignore_errors=True)
    staging.rename(HOME / "root")
    return UNPACKED, ""


if __name__ == "__main__":
    path, why = find_promtool()
    print(path or why)
    sys.exit(0 if path else 1)
