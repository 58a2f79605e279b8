"""A real PostgreSQL server for the tests, started without root: the server of the PyPI package pgserver (its
binaries only), in a throw-away folder, listening on a Unix socket there and nowhere else.

PostgreSQL refuses to run as root; where the tests run as root, the server runs as `nobody` (pgserver itself would
create an account for it; this creates none)."""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable, Iterator, Optional

import psycopg

with warnings.catch_warnings():  # importing pgserver looks for a runtime folder it never uses here (XDG_RUNTIME_DIR)
    warnings.simplefilter("ignore")
    from pgserver._commands import POSTGRES_BIN_PATH  # the server's binaries, shipped in the wheel

START_SECONDS = 60.0


def _demote() -> Optional[Callable[[], None]]:
    if os.geteuid() != 0:
        return None
    nobody = pwd.getpwnam("nobody")

    def become_nobody() -> None:
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    return become_nobody


def _accepts(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


def postgresql_server() -> Iterator[str]:
    """Yield the libpq URL of a fresh server (database postgres, user postgres, trusted on its socket); stop it and
    delete its folder after."""
    folder = Path(tempfile.mkdtemp(prefix="se-postgres-"))  # not under pytest's tmp_path: nobody cannot enter it
    demote = _demote()
    if demote is not None:
        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    data, socket = folder / "data", folder
    subprocess.run([str(POSTGRES_BIN_PATH / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                    "--encoding=utf8", "--no-sync"], check=True, capture_output=True, preexec_fn=demote)
    server = subprocess.Popen([str(POSTGRES_BIN_PATH / "postgres"), "-D", str(data), "-k", str(socket), "-h", "",
                               "-c", "fsync=off", "-c", "max_connections=20"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=demote)
    try:
        url = "postgresql://postgres@/postgres?host=%s" % socket
        deadline = time.monotonic() + START_SECONDS
        while not _accepts(url):  # its socket appears before it accepts connections ("starting up")
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test's PostgreSQL server did not start (exit %s)" % server.poll())
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()  # smart shutdown: waits for clients, which the tests have closed
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)
