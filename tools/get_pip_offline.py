"""Offline stand-in for get-pip.py, used by ansible-test to bootstrap pip in its venvs.

ansible-test downloads get-pip from a host this machine cannot reach, unless
~/.ansible/test/cache/get_pip_<version>.py exists. `make test` copies this file
there (tools/run_ansible_test.py), and ansible-test runs it in each new venv with the
packages to install (pip==<version>). get-pip's own --no-setuptools/--no-wheel flags
mean "do not install those", which is already what both ways below do.

With uv when it is on PATH (tools/run_ansible_test.py puts its own environment's bin
first): 0.3 CPU-s a venv. Else the pip bundled with Python (ensurepip) installs them:
about 11 CPU-s a venv, and a fresh machine's sanity run makes about ten venvs per
ansible-core line.
"""
import runpy
import shutil
import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def packages():
    return [a for a in sys.argv[1:] if a not in GET_PIP_ONLY and not a.startswith("--disable-pip-version-check")]


def with_uv(uv):
    # The system's certificates: ansible-test passes no SSL_CERT_FILE or UV_* setting on to this script.
    return subprocess.call([uv, "pip", "install", "--quiet", "--system-certs", "--python", sys.executable] + packages())


def with_ensurepip():
    # In a child process: ensurepip switches pip's configuration off (PIP_CONFIG_FILE=devnull)
    # in the process that runs it, and the registry settings of this machine must survive.
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
    sys.argv = ["pip", "install"] + [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
    runpy.run_module("pip", run_name="__main__", alter_sys=True)


UV = shutil.which("uv")
if not UV or with_uv(UV) != 0:
    with_ensurepip()
