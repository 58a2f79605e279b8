"""tools/install_requirements.py: uv when it installs, pip when it cannot, the same arguments either way, and the
unwanted packages removed after."""
from __future__ import annotations

from typing import List

import pytest

from tools import install_requirements


def test_pip_installs_what_uv_could_not(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    ran: List[List[str]] = []

    def run(command: List[str]) -> int:
        ran.append(command)
        return 2 if command[0].endswith("/uv") else 0  # uv installs itself, then fails to install the files

    monkeypatch.setattr(install_requirements, "quietly", run)
    assert install_requirements.main(["-r", "requirements.txt"]) == 0
    assert ran[-2][-4:] == ["install", "--quiet", "-r", "requirements.txt"] and ran[-2][1:3] == ["-m", "pip"]
    assert "installing with pip instead" in capsys.readouterr().out


def test_uv_alone_when_it_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: List[List[str]] = []
    monkeypatch.setattr(install_requirements, "quietly", lambda command: ran.append(command) or 0)
    assert install_requirements.main(["-e", ".[notebooks]"]) == 0
    assert [command[0].rsplit("/", 1)[-1] for command in ran][-2] == "uv" and ran[-2][-2:] == ["-e", ".[notebooks]"]
    assert not any("pip" == command[2] and command[-1] == ".[notebooks]" for command in ran if len(command) > 2)


def test_the_unwanted_packages_are_removed_after_either_install(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: List[List[str]] = []
    monkeypatch.setattr(install_requirements, "quietly", lambda command: ran.append(command) or 0)
    assert install_requirements.main(["-r", "requirements.txt"]) == 0
    assert ran[-1][1:] == ["-m", "pip", "uninstall", "--quiet", "--yes", *install_requirements.UNWANTED]


def test_a_failed_install_removes_nothing_and_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: List[List[str]] = []
    monkeypatch.setattr(install_requirements, "quietly", lambda command: ran.append(command) or 1)
    assert install_requirements.main(["-r", "requirements.txt"]) == 1
    assert not any("uninstall" in command for command in ran)


def test_this_environment_has_none_of_them() -> None:
    """What `make` installed: jsonschema here does not build rfc3987-syntax's grammars on import."""
    from importlib.util import find_spec
    assert [name for name in install_requirements.UNWANTED if find_spec(name.replace("-", "_"))] == []
