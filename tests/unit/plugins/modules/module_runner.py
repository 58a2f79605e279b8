"""Run a module's main() in-process, as Ansible would run it on the VM, and return its JSON result.

exit_json/fail_json end the process with the result on stdout; here they raise instead, carrying it.
"""
from __future__ import annotations

import json
from types import ModuleType
from typing import Any, Dict, List
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    def __init__(self, result: Dict[str, Any]) -> None:
        super().__init__(result)
        self.result = result


_WARNINGS: List[str] = []  # AnsibleModule.warn, recorded (in a test process it would print on the controller)


def _warn(_module: basic.AnsibleModule, warning: str) -> None:
    _WARNINGS.append(warning)


def _with_warnings(result: Dict[str, Any]) -> Dict[str, Any]:
    return dict(result, warnings=list(_WARNINGS)) if _WARNINGS else result


def _exit(_module: basic.AnsibleModule, **result: Any) -> None:
    raise ModuleExit(_with_warnings(dict(result, failed=False)))


def _fail(_module: basic.AnsibleModule, msg: str, **result: Any) -> None:
    raise ModuleExit(_with_warnings(dict(result, failed=True, msg=msg)))


def run(module: ModuleType, args: Dict[str, Any], check_mode: bool = False) -> Dict[str, Any]:
    """The result of `module.main()` with `args` (and check mode); a traceback fails the test."""
    args = dict(args, _ansible_check_mode=check_mode)
    _WARNINGS.clear()
    with patch_module_args(args), mock.patch.object(basic.AnsibleModule, "exit_json", _exit), \
            mock.patch.object(basic.AnsibleModule, "fail_json", _fail), \
            mock.patch.object(basic.AnsibleModule, "warn", _warn), pytest.raises(ModuleExit) as ended:
        module.main()
    json.dumps(ended.value.result)  # what a module returns must be JSON
    return ended.value.result
