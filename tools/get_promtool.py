"""Find promtool (Prometheus' rule and metrics checker) for the tests of docs/metrics.md, without installing
Prometheus: on PATH, else a copy already unpacked in build/promtool, else Debian's `prometheus` package
downloaded (`apt-get download`, no root needed) and unpacked there (about 19 MB, once).

    python tools/get_promtool.py        # prints its path, or why there is none (exit 1)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
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
    unpack = subprocess.run(["dpkg-deb", "-x", str(packages[-1]), str(HOME / "root")], capture_output=True,
                            text=True, timeout=300, check=False)
    if unpack.returncode != 0 or not UNPACKED.is_file():
        return None, f"dpkg-deb could not unpack {packages[-1].name}: {unpack.stderr.strip()[:200]}"
    return UNPACKED, ""


if __name__ == "__main__":
    path, why = find_promtool()
    print(path or why)
    sys.exit(0 if path else 1)
