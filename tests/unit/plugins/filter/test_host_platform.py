"""windows_host: any one sign of Windows is enough, so that the relay role never installs on a Windows host."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.filter.host_platform import windows_host


@pytest.mark.parametrize("connection, shell, family", [
    ("winrm", "", ""), ("psrp", "", ""), ("ssh", "powershell", ""), ("ssh", "cmd", ""), ("ssh", "sh", "Windows"),
])
def test_any_sign_of_windows_is_windows(connection: str, shell: str, family: str) -> None:
    assert windows_host(connection, shell, family) is True


@pytest.mark.parametrize("connection, shell, family", [
    ("ssh", "sh", "Debian"), ("local", "", ""), ("", "", ""), (None, None, None), ("ssh", "", "RedHat"),
])
def test_linux_hosts_are_not(connection: object, shell: object, family: object) -> None:
    assert windows_host(connection, shell, family) is False
