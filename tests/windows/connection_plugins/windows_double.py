"""Test double: stands in for WinRM/PSRP + a Windows host; the boundary this machine cannot reach.

There is no PowerShell runtime here, so this connection plugin keeps WinRM's side of the
contract (PowerShell shell, every module pipelined through the exec wrapper) and answers at
the connection boundary the way the real Windows modules would, following their sources in
ansible.windows (win_uri.ps1 + WebRequest.psm1, slurp.ps1, win_copy.ps1) and ansible-core
(Ansible.Basic.cs, Ansible.ModuleUtils.Legacy.psm1, powershell_mkdtemp.ps1). The host's disk is
a local directory (C:\\X\\Y is <root>/C/X/Y); win_uri performs the real HTTP request from Python.

Emulated: the modules above, the temp-directory commands and put_file/fetch_file. Anything else
(other modules, async, become, raw commands) is refused with rc 1 and a stderr saying so: the
double never pretends success. Every module call is appended to a JSON-lines log so tests can
assert what a play sent.
"""
from __future__ import annotations

DOCUMENTATION = r"""
name: windows_double
short_description: Test double for a Windows host reached over WinRM/PSRP
description:
  - Stands in for WinRM/PSRP plus a Windows host, the boundary this machine cannot reach.
  - The shell is PowerShell and modules are pipelined as with the winrm connection; the exec
    wrapper input is decoded and a few Windows modules are emulated in Python.
  - Emulated are ansible.windows.win_uri, ansible.windows.slurp, ansible.windows.win_copy
    (query and single modes), the temporary directory commands, put_file and fetch_file.
    Everything else fails with rc 1.
options:
  windows_double_root:
    description: Local directory that is this host's disk, C(C:\X\Y) maps to C(<root>/C/X/Y).
    type: path
    required: true
    vars:
      - name: ansible_windows_double_root
  windows_double_log:
    description: JSON-lines log of module calls, by default C(windows_double_calls.jsonl) next to the root.
    type: path
    vars:
      - name: ansible_windows_double_log
  host_name:
    description: Host name recorded in the call log.
    type: str
    vars:
      - name: inventory_hostname
"""

import base64
import dataclasses
import datetime
import email.utils
import fcntl
import hashlib
import http.client
import json
import ntpath
import os
import re
import shutil
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, NoReturn

from ansible.errors import AnsibleError, AnsibleFileNotFound
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()

EXEC_SEPARATOR = b"\n\0\0\0\0\n"  # between the bootstrap and exec manifests (module_manifest.py)
USERPROFILE = "C:\\Users\\ansible"
BASE_ENV = {  # what a WinRM session of user 'ansible' sees; names are case-insensitive on Windows
    "USERPROFILE": USERPROFILE, "USERNAME": "ansible", "HOMEDRIVE": "C:", "HOMEPATH": "\\Users\\ansible",
    "APPDATA": USERPROFILE + "\\AppData\\Roaming", "LOCALAPPDATA": USERPROFILE + "\\AppData\\Local",
    "TEMP": USERPROFILE + "\\AppData\\Local\\Temp", "TMP": USERPROFILE + "\\AppData\\Local\\Temp",
    "ProgramData": "C:\\ProgramData", "ALLUSERSPROFILE": "C:\\ProgramData", "PUBLIC": "C:\\Users\\Public",
    "ProgramFiles": "C:\\Program Files", "ProgramFiles(x86)": "C:\\Program Files (x86)",
    "SystemDrive": "C:", "SystemRoot": "C:\\Windows", "windir": "C:\\Windows",
}
PROVISIONED = ("TEMP", "APPDATA", "ProgramData", "PUBLIC", "SystemRoot")  # directories a fresh host has


# ---------------------------------------------------------------- replies and failures

@dataclasses.dataclass(frozen=True)
class Reply:
    rc: int
    stdout: str = ""
    stderr: str = ""

    def as_tuple(self) -> tuple[int, bytes, bytes]:
        return self.rc, self.stdout.encode("utf-8"), self.stderr.encode("utf-8")


class NotEmulated(Exception):
    """The real host would do something here that this double does not reproduce."""


class ModuleExit(Exception):
    """A module ending early (Exit-Json/ExitJson): the result goes to stdout with this rc."""

    def __init__(self, result: dict[str, Any], rc: int = 0) -> None:
        super().__init__(result.get("msg"))
        self.result, self.rc = result, rc


class ModuleFailed(ModuleExit):
    """Fail-Json / FailJson: the module exits 1."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result, rc=1)


class ConversionError(Exception):
    """A value an Ansible.Basic type converter rejects (the message is .NET's)."""


# ---------------------------------------------------------------- the host's disk and environment

def expand_environment(text: str, env: dict[str, str]) -> str:
    """[Environment]::ExpandEnvironmentVariables: %NAME% (case-insensitive) if defined, else left as is."""
    lookup = {k.lower(): v for k, v in env.items()}
    out, i = [], 0
    while True:
        start = text.find("%", i)
        end = text.find("%", start + 1) if start >= 0 else -1
        if end < 0:
            return "".join(out) + text[i:]
        out.append(text[i:start])
        name = text[start + 1:end]
        if name.lower() in lookup:
            out.append(lookup[name.lower()])
            i = end + 1
        else:  # .NET keeps '%name' and rescans from the closing '%'
            out.append("%" + name)
            i = end


@dataclasses.dataclass
class WindowsHost:
    """A Windows machine's disk (a local directory) and process environment."""
    root: Path
    name: str
    env: dict[str, str] = dataclasses.field(default_factory=lambda: dict(BASE_ENV))

    def with_env(self, extra: dict[str, Any]) -> WindowsHost:
        """The host as a module sees it after the exec wrapper applied the task's `environment`."""
        return dataclasses.replace(self, env={**self.env, **{k: str(v) for k, v in extra.items()}})

    def provision(self) -> None:
        for name in PROVISIONED:
            self.local(self.env[name]).mkdir(parents=True, exist_ok=True)

    def expand(self, text: str) -> str:
        return expand_environment(text, self.env)

    def full_path(self, path: str) -> str:
        """Absolute Windows form: either separator, relative to USERPROFILE (the WinRM cwd)."""
        p = path.replace("/", "\\")
        if p.startswith("\\\\?\\"):
            p = p[4:]
        if p.startswith("\\\\"):
            raise NotEmulated(f"UNC path {path!r}")
        if re.match(r"^[A-Za-z]:", p):
            drive, rest = p[0].upper() + ":", p[2:]
            if not rest.startswith("\\"):  # drive-relative: the cwd on C:, the root elsewhere
                rest = (USERPROFILE[2:] if drive == "C:" else "") + "\\" + rest
        elif p.startswith("\\"):
            drive, rest = "C:", p
        else:
            drive, rest = "C:", USERPROFILE[2:] + "\\" + p
        return ntpath.normpath(drive + rest)  # '..' stops at the drive root, as on Windows

    def local(self, path: str) -> Path:
        full = self.full_path(path)
        current = self.root / full[0]
        for part in filter(None, full[3:].split("\\")):
            current = _case_insensitive_child(current, part)
        return current

    def is_file(self, path: str) -> bool:
        return self.local(path).is_file()

    def is_dir(self, path: str) -> bool:
        return self.local(path).is_dir()


def _case_insensitive_child(parent: Path, name: str) -> Path:
    """NTFS names are case-insensitive: reuse an existing entry whatever its case."""
    exact = parent / name
    if exact.exists() or not parent.is_dir():
        return exact
    folded = name.casefold()
    return next((e for e in parent.iterdir() if e.name.casefold() == folded), exact)


def ps_join(parent: str, child: str) -> str:
    """Join-Path: one backslash between the parts, the parts otherwise as given."""
    return parent.rstrip("\\/") + "\\" + child.lstrip("\\/")


def ps_parent(path: str) -> str:
    """Split-Path -Parent for a file path ('' for a bare name)."""
    head = ntpath.dirname(path.replace("/", "\\").rstrip("\\"))
    return head + "\\" if re.fullmatch(r"[A-Za-z]:", head) else head


def sha1_file(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- PowerShell/.NET value semantics

def ps_str(value: Any) -> str:
    """Object.ToString() of a value decoded from complex_args."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)[:-2] if value.is_integer() else repr(value)
    if isinstance(value, dict):
        return "System.Collections.Hashtable"
    if isinstance(value, list):
        return "System.Object[]"
    return str(value)


def ps_type(value: Any) -> str:
    if isinstance(value, bool):
        return "System.Boolean"
    if isinstance(value, int):
        return "System.Int32" if -2**31 <= value < 2**31 else "System.Int64"
    return {float: "System.Double", str: "System.String", dict: "System.Collections.Hashtable",
            list: "System.Object[]"}.get(type(value), "System.Object")


BOOLEANS_TRUE = ["y", "yes", "on", "1", "true", "t", "1.0"]
BOOLEANS_FALSE = ["n", "no", "off", "0", "false", "f", "0.0"]


def parse_bool(value: Any, _host: WindowsHost) -> bool:
    if isinstance(value, bool):
        return value
    text = ps_str(value).lower().strip()
    if text in BOOLEANS_TRUE or text in BOOLEANS_FALSE:
        return text in BOOLEANS_TRUE
    raise ConversionError(f"The value '{text}' is not a valid boolean. Valid booleans include: "
                          + ", ".join(BOOLEANS_TRUE + BOOLEANS_FALSE))


def parse_int(value: Any, _host: WindowsHost) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and -2**31 <= value < 2**31:
        return value
    text = ps_str(value).strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ConversionError("Input string was not in a correct format.")
    if not -2**31 <= int(text) < 2**31:
        raise ConversionError("Value was either too large or too small for an Int32.")
    return int(text)


def parse_list(value: Any, _host: WindowsHost) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [s.strip() for s in value.split(",")]
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    raise ConversionError(f"{ps_type(value)} cannot be converted to a list")


def parse_dict(value: Any, _host: WindowsHost) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise ConversionError(f"{ps_type(value)} cannot be converted to a dict")
    if value.startswith("{") and value.endswith("}"):
        try:
            return json.loads(value)
        except ValueError as err:
            raise ConversionError(str(err)) from err
    if "=" not in value:
        raise ConversionError("string cannot be converted to a dict, must either be a JSON string or in the key=value form")
    return {k: v for k, _, v in (f.partition("=") for f in _split_key_values(value))}


def _split_key_values(text: str) -> list[str]:
    """Ansible.Basic's k=v splitter: quotes group, backslash escapes, ',' and ' ' separate."""
    fields, buf, quote, escape = [], [], None, False
    for c in text:
        if escape:
            buf.append(c)
            escape = False
        elif c == "\\":
            escape = True
        elif quote is None and c in "'\"":
            quote = c
        elif quote is not None and c == quote:
            quote = None
        elif quote is None and c in ", ":
            fields.append("".join(buf))
            buf = []
        else:
            buf.append(c)
    fields.append("".join(buf))
    return list(dict.fromkeys(f for f in fields if f))


def parse_path(value: Any, host: WindowsHost) -> str:
    text = ps_str(value)
    if text.startswith("\\\\?\\"):
        return text
    text = host.expand(text)
    if any(c in '"<>|' or ord(c) < 32 for c in text):
        raise ConversionError("string value contains invalid path characters, cannot convert to path")
    return text


CONVERTERS: dict[str, Callable[[Any, WindowsHost], Any]] = {
    "bool": parse_bool, "int": parse_int, "list": parse_list, "dict": parse_dict, "path": parse_path,
    "raw": lambda v, _h: v, "str": lambda v, _h: ps_str(v),
}


# ---------------------------------------------------------------- a module call

@dataclasses.dataclass(frozen=True)
class ModuleCall:
    host: WindowsHost
    name: str  # FQCN taken from the exec manifest's Script
    args: dict[str, Any]  # complex_args, including the _ansible_* keys

    @property
    def user_args(self) -> dict[str, Any]:
        return {k: v for k, v in self.args.items() if not k.startswith("_ansible_")}

    @property
    def check_mode(self) -> bool:
        return bool(self.args.get("_ansible_check_mode"))


# ---------------------------------------------------------------- Ansible.Basic (Ansible.Basic.cs)

PASS_VARS = ("check_mode", "debug", "diff", "keep_remote_files", "ignore_unknown_opts", "module_name", "no_log",
             "remote_tmp", "selinux_special_fs", "shell_executable", "socket", "syslog_facility", "target_log_info",
             "tracebacks_for", "tmpdir", "verbosity", "version")
NO_LOG_MARK = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


@dataclasses.dataclass(frozen=True)
class Option:
    type: str = "str"
    required: bool = False
    default: Any = None
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    elements: str | None = None
    no_log: bool = False


class BasicModule:
    """[Ansible.Basic.AnsibleModule]::Create: the same checks, in the same order, with the same messages."""

    def __init__(self, call: ModuleCall, spec: dict[str, Option], supports_check_mode: bool = True) -> None:
        self.host, self.spec = call.host, spec
        self.module_name = "undefined win module"
        self.check_mode = False
        self.params: dict[str, Any] = dict(call.args)
        self.result: dict[str, Any] = {"changed": False}
        self._warnings: list[str] = []
        self._resolve_aliases()
        self._no_log = {ps_str(self.params[k]) for k, o in spec.items()
                        if o.no_log and ps_str(self.params.get(k))}
        self._check_unsupported()
        if self.check_mode and not supports_check_mode:
            self.result.update(skipped=True, msg=f"remote module ({self.module_name}) does not support check mode")
            raise ModuleExit(self.formatted())
        self._defaults_and_required()
        self._convert()
        self.result["invocation"] = {"module_args": self._masked(self.params)}

    def _resolve_aliases(self) -> None:
        for key, option in self.spec.items():
            for alias in option.aliases:
                if alias in self.params:
                    self.params[key] = self.params[alias]

    def _legal_inputs(self) -> list[str]:
        aliases = [a for o in self.spec.values() for a in o.aliases]
        return [f"_ansible_{v}" for v in PASS_VARS] + list(self.spec) + aliases

    def _check_unsupported(self) -> None:
        legal = self._legal_inputs()
        by_case = {}
        for name in legal:
            by_case.setdefault(name.lower(), name)
        unsupported, ignore_unknown = [], False
        for key in list(self.params):
            if key.lower() not in by_case:
                unsupported.append(key)
            elif key not in legal:  # a case-insensitive match is accepted under the spec's spelling
                self.params[by_case[key.lower()]] = self.params.pop(key)
            elif key.startswith("_ansible_"):
                value, name = self.params.pop(key), key[len("_ansible_"):]
                if name == "check_mode":
                    self.check_mode = parse_bool(value, self.host)
                elif name == "module_name":
                    self.module_name = ps_str(value)
                elif name == "ignore_unknown_opts":
                    ignore_unknown = parse_bool(value, self.host)
        if unsupported and not ignore_unknown:
            supported = [x for x in legal if x.replace("_ansible_", "") not in PASS_VARS]
            self.fail(f"Unsupported parameters for ({self.module_name}) module: {', '.join(unsupported)}. "
                      f"Supported parameters include: {', '.join(supported)}")

    def _defaults_and_required(self) -> None:
        missing = []
        for key, option in self.spec.items():
            if option.default is not None and key not in self.params:
                self.params[key] = json.loads(json.dumps(option.default))
            if option.required and key not in self.params:
                missing.append(key)
        if missing:
            self.fail(f"missing required arguments: {', '.join(missing)}")

    def _convert(self) -> None:
        for key, option in self.spec.items():
            value = self.params.get(key)
            if value is None:
                continue
            try:
                self.params[key] = value = CONVERTERS[option.type](value, self.host)
            except ConversionError as err:
                self.fail(f"argument for {key} is of type {ps_type(value)} and we were unable to convert to "
                          f"{option.type}: {err}")
            self._check_choices(key, option, value)
        for key, option in self.spec.items():
            self.params.setdefault(key, None)
            if option.type == "list" and option.elements and self.params[key] is not None:
                self.params[key] = [self._element(key, option.elements, e) for e in self.params[key]]

    def _check_choices(self, key: str, option: Option, value: Any) -> None:
        if not option.choices:
            return
        values = [ps_str(v) for v in value] if option.type == "list" else [ps_str(value)]
        lowered = {c.lower() for c in option.choices}
        wrong = [v for v in values if v.lower() not in lowered]
        if wrong:
            kind = "one or more of" if option.type == "list" else "one of"
            self.fail(f"value of {key} must be {kind}: {', '.join(option.choices)}. Got no match for: {', '.join(wrong)}")

    def _element(self, key: str, elements: str, element: Any) -> Any:
        try:
            return CONVERTERS[elements](element, self.host)
        except ConversionError:  # DynamicInvoke wraps the converter's exception
            self.fail(f"argument for list entry {key} is of type {ps_type(element)} and we were unable to convert "
                      f"to {elements}: Exception has been thrown by the target of an invocation.")

    def _masked(self, value: Any) -> Any:
        """RemoveNoLogValues: hide no_log option values wherever they appear."""
        if isinstance(value, dict):
            return {k: self._masked(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._masked(v) for v in value]
        if value is None or not self._no_log:
            return value
        text = ps_str(value)
        if text in self._no_log:
            return NO_LOG_MARK
        for secret in self._no_log:
            if secret in text:
                return NO_LOG_MARK if not isinstance(value, str) else text.replace(secret, "********")
        return value

    def warn(self, message: str) -> None:
        self._warnings.append(message)

    def formatted(self) -> dict[str, Any]:
        self.result.setdefault("invocation", {"module_args": self._masked(self.params)})
        if self._warnings:
            self.result["warnings"] = list(self._warnings)
        return self.result

    def fail(self, message: str) -> NoReturn:
        self.result.update(failed=True, msg=self._masked(message))
        raise ModuleFailed(self.formatted())


# ---------------------------------------------------------------- Legacy (Ansible.ModuleUtils.Legacy.psm1)

def legacy_fail(result: dict[str, Any], message: str) -> NoReturn:
    result.update(msg=message, failed=True)
    result.setdefault("changed", False)
    raise ModuleFailed(result)


def legacy_param(call: ModuleCall, result: dict[str, Any], name: str, *, type: str | None = None,
                 default: Any = None, required: bool = False, aliases: tuple[str, ...] = (),
                 validate_set: tuple[str, ...] = ()) -> Any:
    """Get-AnsibleParam; complex_args is a Hashtable, so keys match case-insensitively."""
    keys = {k.lower(): k for k in call.args}
    found = next((keys[a.lower()] for a in (name, *aliases) if a.lower() in keys), None)
    if found is None:
        if required:
            legacy_fail(result, f"Get-AnsibleParam: Missing required argument: {name}")
        value = default
    else:
        value = call.args[found]
        if validate_set and ps_str(value).lower() not in {v.lower() for v in validate_set}:
            legacy_fail(result, f"Get-AnsibleParam: Argument {found} needs to be one of {','.join(validate_set)} "
                                f"but was {ps_str(value)}.")
    if value is None:
        return None
    if type == "path":
        value = call.host.expand(ps_str(value))
        if any(c in '"<>|' or ord(c) < 32 for c in value):
            legacy_fail(result, f"Get-AnsibleParam: Parameter '{found or name}' has an invalid path '{value}' specified.")
    elif type == "str":
        value = ps_str(value)
    elif type == "bool":  # ConvertTo-Bool
        value = value is True or ps_str(value).lower() in ("yes", "on", "1", "true")
    elif type == "list" and not isinstance(value, list):
        if isinstance(value, str):
            value = [s.strip() for s in value.split(",")]
        elif isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        else:
            legacy_fail(result, f"Get-AnsibleParam: Parameter '{found}' is not a YAML list.")
    return value


def legacy_check_mode(call: ModuleCall) -> bool:
    return ps_str(call.args.get("_ansible_check_mode", False)).lower() in ("yes", "on", "1", "true")


# ---------------------------------------------------------------- ansible.windows.win_uri

WIN_URI_SPEC: dict[str, Option] = {  # win_uri.ps1's spec merged with Get-AnsibleWindowsWebRequestSpec
    "url": Option(required=True),
    "content_type": Option(),
    "body": Option(type="raw"),
    "dest": Option(type="path"),
    "creates": Option(type="path"),
    "removes": Option(type="path"),
    "return_content": Option(type="bool", default=False),
    "status_code": Option(type="list", elements="int", default=[200]),
    "url_timeout": Option(type="int", default=30, aliases=("timeout",)),
    "url_method": Option(default="GET", aliases=("method",)),
    "follow_redirects": Option(default="safe", choices=("all", "none", "safe")),
    "headers": Option(type="dict"),
    "http_agent": Option(default="ansible-httpget"),
    "maximum_redirection": Option(type="int", default=50),
    "validate_certs": Option(type="bool", default=True),
    "client_cert": Option(),
    "client_cert_password": Option(no_log=True),
    "force_basic_auth": Option(type="bool", default=False),
    "url_username": Option(),
    "url_password": Option(no_log=True),
    "use_default_credential": Option(type="bool", default=False),
    "use_proxy": Option(type="bool", default=True),
    "proxy_url": Option(),
    "proxy_username": Option(),
    "proxy_password": Option(no_log=True),
    "proxy_use_default_credential": Option(type="bool", default=False),
}
JSON_CANDIDATES = re.compile("text|json|javascript", re.I)
# System.Net.HttpStatusCode names as Windows PowerShell (.NET Framework) prints them: for values with two names
# (300-303, 307) it prints the alias; codes the enum lacks (429, 308, ...) print as the number.
STATUS_NAMES = {
    100: "Continue", 101: "SwitchingProtocols", 200: "OK", 201: "Created", 202: "Accepted",
    203: "NonAuthoritativeInformation", 204: "NoContent", 205: "ResetContent", 206: "PartialContent",
    300: "Ambiguous", 301: "Moved", 302: "Redirect", 303: "RedirectMethod", 304: "NotModified", 305: "UseProxy",
    306: "Unused", 307: "RedirectKeepVerb", 400: "BadRequest", 401: "Unauthorized", 402: "PaymentRequired",
    403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable",
    407: "ProxyAuthenticationRequired", 408: "RequestTimeout", 409: "Conflict", 410: "Gone", 411: "LengthRequired",
    412: "PreconditionFailed", 413: "RequestEntityTooLarge", 414: "RequestUriTooLong", 415: "UnsupportedMediaType",
    416: "RequestedRangeNotSatisfiable", 417: "ExpectationFailed", 426: "UpgradeRequired",
    500: "InternalServerError", 501: "NotImplemented", 502: "BadGateway", 503: "ServiceUnavailable",
    504: "GatewayTimeout", 505: "HttpVersionNotSupported",
}


class WebRequestError(Exception):
    """A WebException without a response; the message is the one .NET would give."""


@dataclasses.dataclass(frozen=True)
class HttpExchange:
    """The response HttpWebRequest handed to the module (any status: win_uri passes -IgnoreBadResponse)."""
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    url: str
    method: str
    version: int


def snake_case(name: str) -> str:
    """Convert-StringToSnakeCase (Ansible.ModuleUtils.CamelConversion)."""
    plural = re.search(r"[A-Z]{3,}s", name)
    if plural:
        replaced = re.sub(plural.group(0), "_" + plural.group(0).lower(), name)
        name = replaced[1:] if replaced.startswith("_") and not name.startswith("_") else replaced
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class _RedirectPolicy(urllib.request.HTTPRedirectHandler):
    """HttpWebRequest.AllowAutoRedirect/MaximumAutomaticRedirections; a refused redirect is the response."""
    max_repeats = max_redirections = 1 << 30  # counting is ours

    def __init__(self, allowed: bool, maximum: int, method: str) -> None:
        super().__init__()
        self.allowed, self.maximum, self.final_method = allowed, maximum, method

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        hops = getattr(req, "hops", 0)
        if not self.allowed or hops >= self.maximum:
            return None
        method, data = req.get_method(), req.data
        if (code == 303 and method != "HEAD") or (code in (301, 302) and method == "POST"):
            method, data = "GET", None  # what .NET does; other methods keep verb and body
        kept = {k: v for k, v in req.headers.items()
                if data is not None or k.lower() not in ("content-type", "content-length", "expect")}
        new = urllib.request.Request(newurl, data=data, headers=kept, method=method)
        new.hops = hops + 1  # type: ignore[attr-defined]
        self.final_method = method
        return new


class _NoImplicitContentType(urllib.request.BaseHandler):
    """urllib adds 'Content-Type: application/x-www-form-urlencoded' to any body; HttpWebRequest adds none."""
    handler_order = 1000  # after HTTPHandler's own request processing

    def http_request(self, req: urllib.request.Request) -> urllib.request.Request:
        req.unredirected_hdrs.pop("Content-type", None)
        return req

    https_request = http_request


def _proxy_handler(p: dict[str, Any]) -> urllib.request.ProxyHandler:
    if not p["use_proxy"]:
        return urllib.request.ProxyHandler({})
    if p["proxy_url"]:
        return urllib.request.ProxyHandler({"http": p["proxy_url"], "https": p["proxy_url"]})
    return urllib.request.ProxyHandler()  # the process's *_proxy variables stand in for the IE (WinINet) proxy


def _opener(p: dict[str, Any], method: str) -> tuple[urllib.request.OpenerDirector, _RedirectPolicy]:
    follow = p["follow_redirects"].lower()
    allowed = (follow == "all" or (follow == "safe" and method in ("GET", "HEAD"))) and p["maximum_redirection"] != 0
    redirects = _RedirectPolicy(allowed, p["maximum_redirection"], method)
    context = ssl.create_default_context() if p["validate_certs"] else ssl._create_unverified_context()
    handlers: list[Any] = [_proxy_handler(p), redirects, _NoImplicitContentType(),
                           urllib.request.HTTPSHandler(context=context)]
    if p["url_username"] and not p["force_basic_auth"]:  # NetworkCredential: answer a 401 challenge
        passwords = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        passwords.add_password(None, p["url"], p["url_username"], p["url_password"] or "")
        handlers += [urllib.request.HTTPBasicAuthHandler(passwords), urllib.request.HTTPDigestAuthHandler(passwords)]
    if p["use_proxy"] and p["proxy_username"]:
        proxy_passwords = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        proxy_passwords.add_password(None, p["proxy_url"] or "", p["proxy_username"], p["proxy_password"] or "")
        handlers.append(urllib.request.ProxyBasicAuthHandler(proxy_passwords))
    opener = urllib.request.build_opener(*handlers)
    opener.addheaders = []  # no Python-urllib User-Agent
    return opener, redirects


def _request_headers(module: BasicModule, has_body: bool) -> dict[str, str]:
    p = module.params
    given = p["headers"] or {}
    headers = {k: ps_str(v) for k, v in given.items() if k.lower() != "user-agent"}
    agent = p["http_agent"]
    if "User-Agent" in given:  # a header wins only over the default agent
        if agent == WIN_URI_SPEC["http_agent"].default:
            agent = ps_str(given["User-Agent"])
        else:
            module.warn("The 'User-Agent' header and the 'http_agent' was set, using the 'http_agent' for web request")
    headers["User-Agent"] = agent
    if p["url_username"] and p["force_basic_auth"]:
        token = f"{p['url_username']}:{p['url_password'] or ''}".encode("ascii", "replace")
        headers["Authorization"] = "Basic " + base64.b64encode(token).decode()
    if p["content_type"] is not None:
        headers["Content-Type"] = p["content_type"]
    if has_body:
        headers["Expect"] = "100-continue"  # ServicePointManager.Expect100Continue defaults to true
    return headers


def _body_bytes(body: Any) -> bytes | None:
    if body is None:
        return None
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False) if isinstance(body, (dict, list)) else ps_str(body)
    return text.encode("utf-8")


def _dotnet_message(err: BaseException, url: str) -> str:
    """The WebException message HttpWebRequest would have raised for this failure."""
    reason = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return "The operation has timed out."
    if isinstance(reason, ConnectionRefusedError) or "Tunnel connection failed" in str(reason):
        return "Unable to connect to the remote server"
    if isinstance(reason, socket.gaierror):
        return f"The remote name could not be resolved: '{urllib.parse.urlsplit(url).hostname}'"
    if isinstance(reason, ssl.SSLCertVerificationError):
        return ("The underlying connection was closed: Could not establish trust relationship for the SSL/TLS "
                "secure channel.")
    if isinstance(reason, (http.client.RemoteDisconnected, ConnectionResetError)):
        return "The underlying connection was closed: An unexpected error occurred on a receive."
    return str(reason)


def send_web_request(module: BasicModule, method: str, body: bytes | None) -> HttpExchange:
    p = module.params
    opener, redirects = _opener(p, method)
    request = urllib.request.Request(p["url"], data=body, method=method,
                                     headers=_request_headers(module, body is not None))
    try:
        try:
            response = opener.open(request, timeout=p["url_timeout"])
        except urllib.error.HTTPError as err:  # 3xx not followed, 4xx, 5xx: still a response
            response = err
        with response:
            payload = b"" if method == "HEAD" else response.read()
            raw = getattr(response, "fp", None) if isinstance(response, urllib.error.HTTPError) else response
            return HttpExchange(status=response.status, reason=response.reason, headers=list(response.headers.items()),
                                body=payload, url=response.url, method=redirects.final_method,
                                version=getattr(raw, "version", 11) or 11)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise WebRequestError(_dotnet_message(err, p["url"])) from err


def _dotnet_datetime(value: str | None) -> str:
    """DateTime in local time, ToString('o'): seven fractional digits and the UTC offset."""
    try:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError):  # .NET falls back to 'now' as for a missing header
        parsed = None
    iso = (parsed or datetime.datetime.now(datetime.timezone.utc)).astimezone().isoformat(timespec="microseconds")
    return iso[:26] + "0" + iso[26:]


def response_keys(exchange: HttpExchange) -> dict[str, Any]:
    """The HttpWebResponse properties in snake_case, then every header (hyphens removed) over them."""
    headers: dict[str, str] = {}
    for name, value in exchange.headers:  # WebHeaderCollection joins repeated headers with ','
        key = next((k for k in headers if k.lower() == name.lower()), name)
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    get = {k.lower(): v for k, v in headers.items()}.get
    content_type = get("content-type", "")
    charset = re.search(r"charset=\"?([^;\"]+)", content_type, re.I)
    keys: dict[str, Any] = {
        "is_mutually_authenticated": False, "cookies": [], "headers": list(headers), "supports_headers": True,
        "content_length": int(length) if (length := get("content-length", "").strip()).isdigit() else -1,
        "content_encoding": get("content-encoding", ""),
        "content_type": content_type,
        "character_set": charset.group(1) if charset else ("ISO-8859-1" if content_type.startswith("text/") else ""),
        "server": get("server", ""), "last_modified": _dotnet_datetime(get("last-modified")),
        "status_code": exchange.status, "status_description": exchange.reason,
        "protocol_version": {"Major": exchange.version // 10, "Minor": exchange.version % 10, "Build": -1,
                             "Revision": -1, "MajorRevision": -1, "MinorRevision": -1},
        "response_uri": exchange.url, "method": exchange.method, "is_from_cache": False,
    }
    for name, value in headers.items():
        keys[snake_case(name.replace("-", ""))] = value
    return keys


def _ps_truthy(value: Any) -> bool:
    """`if ($json)` in PowerShell."""
    if isinstance(value, list):
        return len(value) > 1 or (len(value) == 1 and _ps_truthy(value[0]))
    return value is not None and (isinstance(value, dict) or bool(value))


def _write_dest(module: BasicModule, exchange: HttpExchange) -> None:
    target = module.host.local(module.params["dest"])
    same = target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == hashlib.sha256(exchange.body).hexdigest()
    module.result["changed"] = not same
    if not same and not module.check_mode:
        if not target.parent.is_dir():
            raise WebRequestError(f"Could not find a part of the path '{module.host.full_path(module.params['dest'])}'.")
        target.write_bytes(exchange.body)


def _process_response(module: BasicModule, exchange: HttpExchange) -> None:
    """win_uri.ps1's $response_script."""
    p, result = module.params, module.result
    result.update(response_keys(exchange))
    if p["return_content"]:
        result["content"] = exchange.body.decode("utf-8", errors="replace")
        if JSON_CANDIDATES.search(result.get("content_type") or ""):
            try:
                parsed = json.loads(result["content"]) if result["content"] else None
            except ValueError:
                parsed = None
            if _ps_truthy(parsed):
                result["json"] = parsed
    if p["dest"]:
        _write_dest(module, exchange)
    if exchange.status not in p["status_code"]:
        codes = " ".join(str(c) for c in p["status_code"])
        name = STATUS_NAMES.get(exchange.status, str(exchange.status))
        module.fail(f"Status code of request '{exchange.status}' is not in list of valid status codes {codes} : {name}'.")


def win_uri(call: ModuleCall) -> dict[str, Any]:
    module = BasicModule(call, WIN_URI_SPEC)
    p, result = module.params, module.result
    method = ps_str(p["url_method"]).upper()
    result.update(elapsed=0, url=p["url"])
    if not re.fullmatch(r"[A-Z]+", method):
        module.fail("Parameter 'method' needs to be a single word in uppercase, like GET or POST.")
    for key, wanted, says in (("creates", True, "already exists"), ("removes", False, "does not exist")):
        if p[key] and module.host.local(p[key]).exists() == wanted:
            result.update(skipped=True, msg=f"The '{key}' file or directory ({p[key]}) {says}.")
            return module.formatted()
    _check_url(p["url"])
    if p["client_cert"] or p["use_default_credential"] or p["proxy_use_default_credential"]:
        raise NotEmulated("win_uri client_cert / use_default_credential / proxy_use_default_credential")
    body = _body_bytes(p["body"])
    if body is not None and method in ("GET", "HEAD"):
        module.fail("Unhandled exception occurred when sending web request. "
                    "Exception: Cannot send a content-body with this verb-type.")
    started = time.monotonic()
    try:
        exchange = send_web_request(module, method, body)
    except WebRequestError as err:  # the wrapper set msg/status_code from the absent response
        result.update(msg=None, status_code=None, elapsed=time.monotonic() - started)
        module.fail(f"Unhandled exception occurred when sending web request. Exception: {err}")
    result.update(msg=exchange.reason, status_code=exchange.status, elapsed=time.monotonic() - started)
    try:
        _process_response(module, exchange)
    except WebRequestError as err:
        module.fail(f"Unhandled exception occurred when sending web request. Exception: {err}")
    return module.formatted()


def _check_url(url: str) -> None:
    """The [System.Uri] cast (outside the module's try, so the module wrapper reports it)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or not (parts.netloc or parts.scheme == "file"):
        raise ModuleFailed({
            "failed": True,
            "msg": "Unhandled exception while executing module: Cannot process argument transformation on parameter "
                   f"'Uri'. Cannot convert value \"{url}\" to type \"System.Uri\". Error: \"Invalid URI: The format of "
                   "the URI could not be determined.\"",
        })
    if parts.scheme.lower() not in ("http", "https"):
        raise NotEmulated(f"win_uri with a {parts.scheme}: URL")


# ---------------------------------------------------------------- ansible.windows.slurp

def slurp(call: ModuleCall) -> dict[str, Any]:
    result: dict[str, Any] = {"changed": False}
    src = legacy_param(call, result, "src", type="path", aliases=("path",), required=True)
    target = call.host.local(src)
    if target.is_file():
        result.update(content=base64.b64encode(target.read_bytes()).decode(), encoding="base64")
        return result
    legacy_fail(result, f"Path {src} is a directory" if target.is_dir() else f"Path {src} is not found")


# ---------------------------------------------------------------- ansible.windows.win_copy

def win_copy(call: ModuleCall) -> dict[str, Any]:
    result: dict[str, Any] = {"changed": False}
    mode = legacy_param(call, result, "_copy_mode", type="str", default="single",
                        validate_set=("explode", "query", "remote", "single"))
    if mode.lower() not in ("query", "single"):
        raise NotEmulated(f"win_copy _copy_mode={mode} (only query and single are emulated)")
    if legacy_param(call, result, "_ansible_diff", type="bool", default=False):
        result["diff"] = {}
    return (_copy_query if mode.lower() == "query" else _copy_single)(call, result)


def _copy_query(call: ModuleCall, result: dict[str, Any]) -> dict[str, Any]:
    """Which of the controller's files/directories differ from dest (the action plugin sends only those)."""
    host = call.host
    dest = legacy_param(call, result, "dest", type="path", required=True)
    force = legacy_param(call, result, "force", type="bool", default=True)
    files = legacy_param(call, result, "files", type="list") or []
    directories = legacy_param(call, result, "directories", type="list") or []
    changed_files, changed_dirs = [], []
    for entry in files:
        filepath = ps_join(dest, entry["dest"])
        if host.is_dir(filepath):
            filepath = ps_join(dest, ps_join(entry["dest"], re.split(r"[\\/]", entry["src"])[-1]))
        if host.is_file(filepath):
            if force and sha1_file(host.local(filepath)) != entry["checksum"]:
                changed_files.append(entry)
        elif host.is_dir(filepath):
            legacy_fail(result, f"cannot copy file to dest '{filepath}': object at path is already a directory")
        else:
            changed_files.append(entry)
    for entry in directories:
        dirpath = ps_join(dest, entry["dest"])
        if host.is_file(ps_parent(dirpath)):
            legacy_fail(result, f"cannot copy folder to dest '{dirpath}': object at parent directory path is already a file")
        if host.is_file(dirpath):
            legacy_fail(result, f"cannot copy folder to dest '{dirpath}': object at path is already a file")
        if not host.is_dir(dirpath):
            changed_dirs.append(entry)
    result.update(files=changed_files, directories=changed_dirs, symlinks=[])
    return result


def _copy_single(call: ModuleCall, result: dict[str, Any]) -> dict[str, Any]:
    """Put the uploaded src at dest; the action plugin already decided a copy is needed (and skips check mode)."""
    host = call.host
    src = legacy_param(call, result, "src", type="path", required=True)
    dest = legacy_param(call, result, "dest", type="path", required=True)
    backup = legacy_param(call, result, "backup", type="bool", default=False)
    basename = legacy_param(call, result, "_original_basename", type="str")
    if not host.is_file(src):
        legacy_fail(result, f"Cannot copy src file: '{src}' as it does not exist")
    remote_dest = dest
    if dest.endswith(("/", "\\")) or host.is_dir(dest):
        remote_dest = ps_join(dest, basename or "")
    parent = ps_parent(remote_dest) or USERPROFILE
    if host.is_file(parent):
        legacy_fail(result, f"object at destination parent dir '{parent}' is currently a file")
    elif not host.is_dir(parent):
        if dest == remote_dest:  # the real module does not create the parent of a file dest
            legacy_fail(result, f"Destination directory '{parent}' does not exist")
        host.local(parent).mkdir(parents=True)
    if backup:
        result["backup_file"] = _backup(host, remote_dest, legacy_check_mode(call))
    shutil.copyfile(host.local(src), host.local(remote_dest))
    result["changed"] = True
    return result


def _backup(host: WindowsHost, path: str, check_mode: bool) -> str | None:
    """Backup-File: <path>.<pid>.<yyyyMMdd-HHmmss>.bak when the file exists."""
    if not host.is_file(path):
        return None
    backup = f"{path}.{os.getpid()}.{datetime.datetime.now():%Y%m%d-%H%M%S}.bak"
    if not check_mode:
        shutil.copyfile(host.local(path), host.local(backup))
    return backup


# ---------------------------------------------------------------- ansible.windows.win_file

def win_file(call: ModuleCall) -> dict[str, Any]:
    """state=directory only: New-Item creates every missing parent; an existing file there fails."""
    result: dict[str, Any] = {"changed": False}
    path = legacy_param(call, result, "path", type="path", aliases=("dest", "name"), required=True)
    state = legacy_param(call, result, "state", type="str", validate_set=("absent", "directory", "file", "touch"))
    if (state or "").lower() != "directory":
        raise NotEmulated(f"win_file state={state} (only directory is emulated)")
    target = call.host.local(path)
    if target.exists():
        if not target.is_dir():
            legacy_fail(result, f"path {path} is not a directory")
        return result
    if call.host.is_file(ps_parent(call.host.full_path(path))):
        legacy_fail(result, f"path {path} is not a directory")
    if not legacy_check_mode(call):
        target.mkdir(parents=True)
    result["changed"] = True
    return result


MODULES: dict[str, Callable[[ModuleCall], dict[str, Any]]] = {
    "ansible.windows.win_uri": win_uri,
    "ansible.windows.slurp": slurp,
    "ansible.windows.win_copy": win_copy,
    "ansible.windows.win_file": win_file,
}


# ---------------------------------------------------------------- decoding what ansible-core sends

@dataclasses.dataclass(frozen=True)
class ExecInput:
    """bootstrap_wrapper.ps1's stdin: bootstrap manifest, separator, exec manifest (scripts + actions)."""
    bootstrap: dict[str, Any]
    actions: list[dict[str, Any]]

    @classmethod
    def parse(cls, in_data: bytes) -> ExecInput:
        bootstrap, found, rest = in_data.partition(EXEC_SEPARATOR)
        if not found:
            raise ValueError("no exec wrapper manifest separator in the input")
        manifest = json.loads(rest.partition(EXEC_SEPARATOR)[0])
        return cls(bootstrap=json.loads(bootstrap), actions=list(manifest.get("actions", [])))

    @property
    def action_names(self) -> list[str]:
        return [a.get("name", "") for a in self.actions]


def decode_encoded_command(cmd: str) -> str | None:
    """The script of `PowerShell ... -EncodedCommand <base64 UTF-16-LE>`."""
    match = re.search(r"-EncodedCommand\s+(\S+)", cmd)
    if not match:
        return None
    try:
        return base64.b64decode(match.group(1)).decode("utf-16-le")
    except ValueError:
        return None


def module_fqcn(script: str) -> str:
    match = re.fullmatch(r"ansible_collections\.(\w+)\.(\w+)\.plugins\.modules\.(\w+)\.(?:ps1|cs)", script)
    return ".".join(match.groups()) if match else re.sub(r"\.(ps1|cs)$", "", script)


REMOVE_ITEM = re.compile(r"^Remove-Item '((?:[^']|'')*)' -Force( -Recurse)?;$", re.M)


# ---------------------------------------------------------------- the connection plugin

class Connection(ConnectionBase):
    """WinRM's contract (PowerShell shell, always-pipelined modules) answered by an emulated Windows host."""

    transport = "windows_double"
    module_implementation_preferences = (".ps1", ".exe", "")
    allow_executable = False
    has_pipelining = True
    allow_extras = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.always_pipeline_modules = True
        self.has_native_async = True
        self._shell_type = "powershell"
        self._host: WindowsHost | None = None
        super().__init__(*args, **kwargs)

    # -- connection lifecycle

    def _connect(self) -> Connection:
        if self._host is None:
            root = Path(self.get_option("windows_double_root")).resolve()
            self._host = WindowsHost(root=root, name=self.get_option("host_name") or self._play_context.remote_addr)
            self._host.provision()
        self._connected = True
        return self

    def close(self) -> None:
        self._connected = False

    @property
    def host(self) -> WindowsHost:
        if self._host is None:
            self._connect()
        assert self._host is not None
        return self._host

    # -- commands

    def exec_command(self, cmd: str, in_data: bytes | None = None, sudoable: bool = True) -> tuple[int, bytes, bytes]:
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        try:
            reply = self._exec_input(in_data) if in_data else self._plain_command(cmd)
        except NotEmulated as err:
            reply = self._refuse(str(err))
        display.vvv(f"WINDOWS_DOUBLE EXEC rc={reply.rc} {reply.stderr.strip()}", host=self.host.name)
        return reply.as_tuple()

    def _refuse(self, what: str) -> Reply:
        return Reply(1, stderr=f"windows_double: this test double does not emulate {what}\r\n")

    def _exec_input(self, in_data: bytes) -> Reply:
        try:
            exec_input = ExecInput.parse(in_data)
        except ValueError as err:
            return self._refuse(f"this exec wrapper input ({err})")
        names = exec_input.action_names
        handlers = {"module_wrapper.ps1": self._module, "powershell_mkdtemp.ps1": self._mkdtemp,
                    "powershell_expand_user.ps1": self._expand_user}
        if exec_input.bootstrap.get("name") != "exec_wrapper" or len(names) != 1 or names[0] not in handlers:
            return self._refuse(f"exec wrapper actions {names} (async, become and coverage wrappers are not emulated)")
        return handlers[names[0]](exec_input.actions[0].get("params") or {})

    def _plain_command(self, cmd: str) -> Reply:
        script = decode_encoded_command(cmd) or ""
        match = REMOVE_ITEM.search(script)
        if match is None:
            shown = (script or cmd).strip().splitlines()
            return self._refuse(f"the command {(shown[0] if shown else cmd)[:200]!r}")
        return self._remove(match.group(1).replace("''", "'"), recurse=bool(match.group(2)))

    def _mkdtemp(self, params: dict[str, Any]) -> Reply:
        """powershell_mkdtemp.ps1: New-Item -Path (expanded Directory) -Name Name -ItemType Directory."""
        full = self.host.full_path(ntpath.join(self.host.expand(params["Directory"]), params["Name"]))
        target = self.host.local(full)
        if target.exists():
            return Reply(1, stderr=f"New-Item : An item with the specified name {full} already exists.\r\n")
        target.mkdir(parents=True)
        return Reply(0, full + "\r\n")

    def _expand_user(self, params: dict[str, Any]) -> Reply:
        path, profile = params["Path"], self.host.env["USERPROFILE"]
        if path == "~":
            path = profile
        elif path.startswith("~\\"):
            path = ps_join(profile, path[2:])
        return Reply(0, path + "\r\n")

    def _remove(self, path: str, recurse: bool) -> Reply:
        target = self.host.local(path)
        if not target.exists():
            return Reply(1, stderr=f"Remove-Item : Cannot find path '{path}' because it does not exist.\r\n")
        if target.is_dir() and recurse:
            shutil.rmtree(target)
        elif target.is_dir():
            target.rmdir()
        else:
            target.unlink()
        return Reply(0)

    def _module(self, params: dict[str, Any]) -> Reply:
        name = module_fqcn(str(params.get("Script", "")))
        args = next((v.get("Value") for v in params.get("Variables") or [] if v.get("Name") == "complex_args"), None)
        if not isinstance(args, dict):
            return self._refuse(f"running {name} without complex_args")
        call = ModuleCall(host=self.host.with_env(params.get("Environment") or {}), name=name, args=args)
        display.vvv(f"WINDOWS_DOUBLE MODULE {name}", host=self.host.name)
        emulate = MODULES.get(name)
        self._log(call, emulated=emulate is not None)
        if emulate is None:
            return self._refuse(f"the module {name} (emulated: {', '.join(MODULES)})")
        try:
            return Reply(0, json.dumps(emulate(call)) + "\r\n")
        except ModuleExit as done:
            return Reply(done.rc, json.dumps(done.result) + "\r\n")

    def _log(self, call: ModuleCall, emulated: bool) -> None:
        path = Path(self.get_option("windows_double_log") or self.host.root.parent / "windows_double_calls.jsonl")
        entry = {"at": time.time(), "host": self.host.name, "module": call.name, "args": call.user_args,
                 "check_mode": call.check_mode, "emulated": emulated}
        with open(path, "a", encoding="utf-8") as log:
            fcntl.flock(log, fcntl.LOCK_EX)  # forks append concurrently
            log.write(json.dumps(entry, sort_keys=True, default=str) + "\n")

    # -- files

    def _local_or_refuse(self, path: str) -> Path:
        try:
            return self.host.local(path)
        except NotEmulated as err:
            raise AnsibleError(f"windows_double: this test double does not emulate {err}") from err

    def put_file(self, in_path: str, out_path: str) -> None:
        super().put_file(in_path, out_path)
        if not os.path.exists(in_path):
            raise AnsibleFileNotFound(f'file or module does not exist: "{in_path}"')
        out_path = self._shell._unquote(out_path)
        target = self._local_or_refuse(out_path)
        display.vvv(f'PUT "{in_path}" TO "{out_path}"', host=self.host.name)
        if not target.parent.is_dir():
            raise AnsibleError(f"Could not find a part of the path '{self.host.full_path(out_path)}'.")
        shutil.copyfile(in_path, target)

    def fetch_file(self, in_path: str, out_path: str) -> None:
        super().fetch_file(in_path, out_path)
        in_path = self._shell._unquote(in_path)
        source = self._local_or_refuse(in_path)
        display.vvv(f'FETCH "{in_path}" TO "{out_path}"', host=self.host.name)
        if source.is_dir():
            return  # winrm_fetch_file.ps1 answers [DIR] and nothing is written
        if not source.is_file():
            raise AnsibleError(f'failed to transfer file to "{out_path}"')
        shutil.copyfile(source, out_path)
