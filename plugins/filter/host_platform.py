# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which platform a host is, from what the inventory and facts say (the event relay role refuses Windows)."""

from __future__ import annotations

WINDOWS_CONNECTIONS = ("winrm", "psrp")
WINDOWS_SHELLS = ("powershell", "cmd")


def windows_host(connection, shell_type="", os_family=""):
    """True for a host reached over WinRM/PSRP, with a Windows shell (SSH to Windows), or whose facts say
    Windows: any one of them is enough, so that a Windows host is never taken for Linux."""
    return (str(connection or "") in WINDOWS_CONNECTIONS or str(shell_type or "") in WINDOWS_SHELLS
            or str(os_family or "") == "Windows")


class FilterModule(object):
    def filters(self):
        return {"windows_host": windows_host}
