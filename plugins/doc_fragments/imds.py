# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Options every module that talks to IMDS takes."""

    DOCUMENTATION = r"""
notes:
  - On Windows VMs (a PowerShell connection such as C(winrm), C(psrp), or C(ssh) with C(shell_type=powershell)), the
    module runs in its action plugin on the controller, and each IMDS request goes from the VM through
    M(ansible.windows.win_uri). Options, results, retries, parsing and the approval rules are the same code as on Linux.
    This needs the C(ansible.windows) collection on the controller, and nothing on the VM.
  - On Windows VMs, V(~) at the start of a path means C(%USERPROFILE%) on the VM, and C(%VAR%) variables are expanded there.
attributes:
  action:
    support: full
    description: Runs as a Python module on Linux VMs; on Windows VMs, as an action plugin that calls M(ansible.windows.win_uri).
  platform:
    support: full
    platforms: [posix, windows]
    description: Linux VMs run the module; Windows VMs are served by the action plugin (see notes).
options:
  imds_url:
    description:
      - Base URL of the Instance Metadata Service seen from the VM.
      - Change it for VMs outside a virtual network (classic VMs, cloud services) after endpoint discovery,
        or to point at the collection's IMDS simulator, for example V(http://127.0.0.1:8099/avset-web-vm0).
      - Only C(http://) and C(https://) URLs are accepted. Requests never use a proxy, whatever
        C(http_proxy)/C(HTTP_PROXY) say, and never follow a redirect.
    type: str
    default: http://169.254.169.254
  api_version:
    description:
      - Scheduled Events C(api-version). Older versions omit C(Description), C(EventSource) and
        C(DurationInSeconds); the modules handle all of them.
    type: str
    default: '2020-07-01'
  timeout:
    description:
      - Seconds to wait for one IMDS answer.
    type: float
    default: 5
  first_call_timeout:
    description:
      - Seconds to wait for the first answer of each IMDS endpoint in a task. IMDS may take up to two
        minutes to answer the first call after 24 hours without one; later calls, and retries after a
        first attempt that got no answer, use O(timeout).
    type: float
    default: 120
  retries:
    description:
      - Extra attempts after a connection error, a timeout, HTTP 410, 429 or 5xx, with jittered
        exponential backoff. HTTP 400 and 404 fail at once.
    type: int
    default: 4
  resource_name:
    description:
      - The name this VM has in event C(Resources). Defaults to the C(name) IMDS reports in
        C(/metadata/instance/compute).
      - Matching is exact and case-insensitive (V(vm1) never matches V(vm10)); the legacy leading
        underscore of api-version 2017-03-01 is ignored.
    type: str
"""
