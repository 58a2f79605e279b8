"""Offline stand-in for get-pip.py, used by ansible-test to bootstrap pip in its venvs.

ansible-test downloads get-pip from a host this machine cannot reach, unless
~/.ansible/test/cache/get_pip_<version>.py exists. `make test` copies this file
there (tools/run_ansible_test.py): it bootstraps the pip bundled with Python
(ensurepip), then lets that pip install the exact packages ansible-test asked
for from the package registry. get-pip's own --no-setuptools/--no-wheel flags
mean "do not install those", which is already pip's behaviour here.
"""
import runpy
import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

# In a child process: ensurepip switches pip's configuration off (PIP_CONFIG_FILE=devnull)
# in the process that runs it, and the registry settings of this machine must survive.
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
sys.argv = ["pip", "install"] + [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
