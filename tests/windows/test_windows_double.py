"""The Windows test double itself, driven the way integration tests will drive it: real
ansible-playbook runs of ansible.windows modules over the `windows_double` connection, with a
local HTTP server for win_uri and the host's disk inspected afterwards."""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterator, List, Optional

import pytest
from ansible.errors import AnsibleError
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader

PLUGINS = Path(__file__).resolve().parent / "connection_plugins"
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
HOST = "win1"
JSON_BODY = b'{"hello": "world"}'


# ------------------------------------------------------------------ a small web server for win_uri

@dataclass
class Received:
    method: str
    path: str
    headers: Dict[str, str]  # lower-cased names
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # as imds_simulator: it also answers 'Expect: 100-continue'
    received: List[Received] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, content_type: str = "text/plain", **extra: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.received.append(Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path == "/json":
            self._answer(200, JSON_BODY, "application/json", X_Probe_Header="yes")
        elif self.path == "/redirect":
            self._answer(302, b"moved", Location="/json")
        elif self.path == "/echo":
            self._answer(201, json.dumps({"got": json.loads(body)}).encode(), "application/json")
        elif self.path == "/slow":
            time.sleep(3)
            self._answer(200, b"late")
        else:
            self._answer(404, b"nope")

    do_GET = do_POST = do_HEAD = _route


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the timeout test hangs up on /slow on purpose


@dataclass
class WebServer:
    port: int
    received: List[Received]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def paths(self) -> List[str]:
        return [r.path for r in self.received]


@pytest.fixture
def web() -> Iterator[WebServer]:
    handler = type("Handler", (_Handler,), {"received": []})
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield WebServer(server.server_address[1], handler.received)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dead_port() -> int:
    """A port nothing listens on: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------ running a play against the double

@dataclass
class PlayRun:
    proc: subprocess.CompletedProcess
    root: Path
    results: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def disk(self, *parts: str) -> Path:
        return self.root.joinpath("C", *parts)

    def calls(self, module: Optional[str] = None) -> List[Dict[str, Any]]:
        log = self.root.parent / "windows_double_calls.jsonl"
        entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return [e for e in entries if module in (None, e["module"])]


def play(tmp_path: Path, tasks: List[Dict[str, Any]], env: Optional[Dict[str, str]] = None) -> PlayRun:
    root = tmp_path / "hosts" / HOST
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"windows": {"hosts": {HOST: {
        "ansible_connection": "windows_double", "ansible_windows_double_root": str(root)}}}}))
    playbook = tmp_path / "play.yml"  # JSON is YAML
    playbook.write_text(json.dumps([{"name": "double", "hosts": "windows", "gather_facts": False, "tasks": tasks}]))
    base = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}  # no ambient proxy
    run_env = dict(base, ANSIBLE_CONNECTION_PLUGINS=str(PLUGINS), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCAL_TEMP=str(tmp_path / "local-tmp"),
                   **(env or {}))
    proc = subprocess.run([str(PLAYBOOK), "-i", str(inventory), str(playbook)], cwd=tmp_path, env=run_env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.stdout.lstrip().startswith("{"), proc.stdout[-3000:] + proc.stderr[-3000:]
    output = json.loads(proc.stdout)
    results = {t["task"]["name"]: t["hosts"][HOST] for t in output["plays"][0]["tasks"]}
    return PlayRun(proc, root, results)


def uri(name: str, **args: Any) -> Dict[str, Any]:
    return {"name": name, "ansible.windows.win_uri": args, "ignore_errors": True}


def task(name: str, module: str, check_mode: bool = False, **args: Any) -> Dict[str, Any]:
    return {"name": name, module: args, "ignore_errors": True, "check_mode": check_mode}


def load_double() -> ModuleType:
    spec = importlib.util.spec_from_file_location("windows_double_under_test", PLUGINS / "windows_double.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ tests

def test_windows_paths_and_variables_map_onto_the_host_root(tmp_path: Path) -> None:
    double = load_double()
    host = double.WindowsHost(root=tmp_path, name=HOST)
    host.provision()
    assert host.local(r"C:\ProgramData\x.txt") == tmp_path / "C" / "ProgramData" / "x.txt"
    assert host.local("c:/programdata/X.txt") == tmp_path / "C" / "ProgramData" / "X.txt"  # NTFS ignores case
    assert host.full_path(r"notes\a.txt") == r"C:\Users\ansible\notes\a.txt"  # the WinRM cwd
    assert host.full_path(r"C:\..\..\etc\passwd") == r"C:\etc\passwd"  # cannot climb out of the root
    assert host.expand(r"%temp%\x") == r"C:\Users\ansible\AppData\Local\Temp\x"
    assert host.expand(r"%ProgramData%\%NOPE%\100%") == r"C:\ProgramData\%NOPE%\100%"
    assert (tmp_path / "C" / "Users" / "ansible" / "AppData" / "Local" / "Temp").is_dir()
    assert [double.snake_case(h.replace("-", "")) for h in ("Content-Type", "X-Probe-Header", "ETag")] == \
        ["content_type", "x_probe_header", "e_tag"]


def test_temp_dirs_and_file_transfer_answer_the_powershell_shells_own_commands(tmp_path: Path) -> None:
    connection_loader.add_directory(str(PLUGINS))  # as ANSIBLE_CONNECTION_PLUGINS does
    conn = connection_loader.get("windows_double", PlayContext())
    conn.set_options(var_options={"ansible_windows_double_root": str(tmp_path / HOST), "inventory_hostname": HOST})
    shell = conn._shell
    temp = tmp_path.joinpath(HOST, "C", "Users", "ansible", "AppData", "Local", "Temp", "ansible-tmp-1-2")

    mkdtemp = shell._mkdtemp2(basefile="ansible-tmp-1-2", tmpdir="%TEMP%")  # what _make_tmp_path sends
    assert conn.exec_command(mkdtemp.command, in_data=mkdtemp.input_data) == (
        0, b"C:\\Users\\ansible\\AppData\\Local\\Temp\\ansible-tmp-1-2\r\n", b"")
    assert temp.is_dir()
    assert conn.exec_command(mkdtemp.command, in_data=mkdtemp.input_data)[0] == 1  # New-Item refuses an existing dir
    expand = shell._expand_user2("~\\x")
    assert conn.exec_command(expand.command, in_data=expand.input_data)[1] == b"C:\\Users\\ansible\\x\r\n"

    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"\x00\x01bytes")
    conn.put_file(str(payload), r"C:\Users\ansible\AppData\Local\Temp\ansible-tmp-1-2\source")
    assert (temp / "source").read_bytes() == b"\x00\x01bytes"
    conn.fetch_file(r"C:\Users\ansible\AppData\Local\Temp\ansible-tmp-1-2\SOURCE", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == b"\x00\x01bytes"
    with pytest.raises(AnsibleError, match="Could not find a part of the path"):
        conn.put_file(str(payload), r"C:\nowhere\source")

    remove = shell.remove(r"C:\Users\ansible\AppData\Local\Temp\ansible-tmp-1-2\.", recurse=True)
    assert conn.exec_command(remove)[0] == 0 and not temp.exists()
    rc, _, err = conn.exec_command(remove)
    assert rc == 1 and b"does not exist" in err
    rc, out, err = conn.exec_command("whoami")
    assert (rc, out) == (1, b"") and b"does not emulate the command 'whoami'" in err


def test_win_uri_sends_the_request_and_answers_with_the_modules_keys(tmp_path: Path, web: WebServer) -> None:
    run = play(tmp_path, [
        uri("imds style", url=web.url("/json"), headers={"Metadata": "true"}, use_proxy=False,
            follow_redirects="none", return_content=True),
        uri("redirect kept", url=web.url("/redirect"), follow_redirects="none", status_code=302),
        uri("redirect followed", url=web.url("/redirect"), return_content=True),
        uri("bool header", url=web.url("/json"), headers={"Metadata": True}),
        uri("post", url=web.url("/echo"), method="post", body={"a": 1, "b": [True]}, status_code=[201],
            return_content=True),
        uri("typed post", url=web.url("/echo"), method="POST", body='{"x": 2}', content_type="application/json",
            status_code=201),
        uri("unexpected status", url=web.url("/missing"), return_content=True),
        uri("expected status", url=web.url("/missing"), status_code="404, 200"),
    ])
    r = run.results
    assert web.paths() == ["/json", "/redirect", "/redirect", "/json", "/json", "/echo", "/echo", "/missing",
                           "/missing"]

    imds = r["imds style"]
    assert not imds.get("failed") and not imds["changed"]
    assert (imds["status_code"], imds["status_description"], imds["msg"]) == (200, "OK", "OK")
    assert imds["content"] == JSON_BODY.decode() and imds["json"] == {"hello": "world"}
    assert (imds["content_type"], imds["content_length"]) == ("application/json", str(len(JSON_BODY)))
    assert imds["x_probe_header"] == "yes" and imds["response_uri"] == imds["url"] == web.url("/json")
    assert imds["method"] == "GET" and imds["elapsed"] >= 0
    sent = web.received[0]
    assert sent.headers["metadata"] == "true" and sent.headers["user-agent"] == "ansible-httpget"

    kept, followed = r["redirect kept"], r["redirect followed"]
    assert (kept["status_code"], kept["location"], kept["response_uri"]) == (302, "/json", web.url("/redirect"))
    assert "content" not in kept  # return_content defaults to false
    assert (followed["status_code"], followed["json"], followed["response_uri"]) == (200, {"hello": "world"},
                                                                                     web.url("/json"))
    assert web.received[4].headers["metadata"] == "True"  # a YAML bool reaches the wire as .NET's ToString()

    post = r["post"]
    assert (post["status_code"], post["method"], post["json"]) == (201, "POST", {"got": {"a": 1, "b": [True]}})
    assert web.received[5].body == b'{"a":1,"b":[true]}'  # ConvertTo-Json -Compress
    assert "content-type" not in web.received[5].headers  # content_type not given: HttpWebRequest sends none
    typed = web.received[6]
    assert (typed.headers["content-type"], typed.body) == ("application/json", b'{"x": 2}')
    assert r["typed post"]["status_code"] == 201 and "json" not in r["typed post"]  # return_content is false

    bad = r["unexpected status"]
    assert bad.get("failed") and bad["status_code"] == 404 and bad["content"] == "nope"
    assert bad["msg"] == "Status code of request '404' is not in list of valid status codes 200 : NotFound'."
    assert not r["expected status"].get("failed") and r["expected status"]["status_code"] == 404

    calls = run.calls("ansible.windows.win_uri")
    assert len(calls) == 8 and all(c["host"] == HOST and c["emulated"] for c in calls)
    assert calls[0]["args"] == {"url": web.url("/json"), "headers": {"Metadata": "true"}, "use_proxy": False,
                                "follow_redirects": "none", "return_content": True}


def test_win_uri_failures_carry_the_modules_messages(tmp_path: Path, web: WebServer, dead_port: int) -> None:
    prefix = "Unhandled exception occurred when sending web request. Exception: "
    run = play(tmp_path, [
        uri("refused", url=f"http://127.0.0.1:{dead_port}/x"),
        uri("timeout", url=web.url("/slow"), url_timeout=1),
        uri("unsupported", url=web.url("/json"), bogus=1),
        uri("method", url=web.url("/json"), method="GET POST"),
        uri("choice", url=web.url("/json"), follow_redirects="sometimes"),
        uri("required", return_content=True),
        uri("int", url=web.url("/json"), timeout="soon"),
        uri("body on get", url=web.url("/json"), body="x"),
    ])
    r = run.results
    assert web.paths() == ["/slow"]  # validation failures never reach the network
    assert r["refused"].get("failed") and r["refused"]["msg"] == prefix + "Unable to connect to the remote server"
    assert r["refused"]["status_code"] is None
    assert r["timeout"]["msg"] == prefix + "The operation has timed out." and r["timeout"]["elapsed"] < 3
    assert r["unsupported"]["msg"].startswith(
        "Unsupported parameters for (ansible.windows.win_uri) module: bogus. Supported parameters include: url, ")
    assert "use_proxy" in r["unsupported"]["msg"] and "_ansible_" not in r["unsupported"]["msg"]
    assert r["method"]["msg"] == "Parameter 'method' needs to be a single word in uppercase, like GET or POST."
    assert r["choice"]["msg"] == "value of follow_redirects must be one of: all, none, safe. Got no match for: sometimes"
    assert r["required"]["msg"] == "missing required arguments: url"
    assert r["int"]["msg"] == ("argument for url_timeout is of type System.String and we were unable to convert to "
                               "int: Input string was not in a correct format.")
    assert r["body on get"]["msg"] == prefix + "Cannot send a content-body with this verb-type."
    assert all(r[name].get("failed") for name in r)


def test_only_use_proxy_false_bypasses_the_hosts_proxy(tmp_path: Path, web: WebServer, dead_port: int) -> None:
    dead_proxy = f"http://127.0.0.1:{dead_port}"
    run = play(tmp_path, [
        uri("direct", url=web.url("/json"), use_proxy=False),
        uri("through the proxy", url=web.url("/json")),
    ], env={"http_proxy": dead_proxy, "HTTP_PROXY": dead_proxy})
    assert not run.results["direct"].get("failed") and run.results["direct"]["status_code"] == 200
    assert run.results["through the proxy"].get("failed")
    assert run.results["through the proxy"]["msg"].endswith("Exception: Unable to connect to the remote server")
    assert web.paths() == ["/json"]  # only the direct request arrived


def test_win_copy_writes_the_host_disk_and_slurp_reads_it_back(tmp_path: Path) -> None:
    copy = "ansible.windows.win_copy"
    run = play(tmp_path, [
        task("copy", copy, content="v1\r\n", dest=r"%ProgramData%\state.txt"),
        task("copy same", copy, content="v1\r\n", dest=r"%ProgramData%\state.txt"),
        task("copy in check mode", copy, check_mode=True, content="v2", dest=r"C:\ProgramData\state.txt"),
        task("copy v2", copy, content="v2", dest="c:/programdata/STATE.txt"),
        task("copy into a missing dir", copy, content="x", dest=r"C:\ProgramData\missing\state.txt"),
        task("copy to the profile", copy, content="notes", dest=r"%USERPROFILE%\notes.txt"),
        task("slurp", "ansible.windows.slurp", src=r"%ProgramData%\state.txt"),
        task("slurp relative", "ansible.windows.slurp", path="notes.txt"),
        task("slurp missing", "ansible.windows.slurp", src=r"C:\nope.txt"),
        task("slurp directory", "ansible.windows.slurp", src=r"C:\ProgramData"),
    ])
    r = run.results
    first = r["copy"]
    assert first["changed"] and not first.get("failed")
    assert (first["checksum"], first["size"]) == (hashlib.sha1(b"v1\r\n").hexdigest(), 4)
    assert first["dest"] == r"%ProgramData%\state.txt" and first["operation"] == "file_copy"
    assert not r["copy same"]["changed"] and not r["copy same"].get("failed")
    assert r["copy in check mode"]["changed"]
    assert r["copy v2"]["changed"]
    assert [p.name for p in run.disk("ProgramData").iterdir()] == ["state.txt"]  # same file, whatever the case
    assert run.disk("ProgramData", "state.txt").read_bytes() == b"v2"
    assert run.disk("Users", "ansible", "notes.txt").read_bytes() == b"notes"
    missing = r["copy into a missing dir"]
    assert missing.get("failed") and missing["msg"].endswith(
        r"Destination directory 'C:\ProgramData\missing' does not exist")  # the module does not create parents
    assert not run.disk("ProgramData", "missing").exists()
    assert list(run.disk("Users", "ansible", "AppData", "Local", "Temp").iterdir()) == []  # tmp dirs removed

    assert base64.b64decode(r["slurp"]["content"]) == b"v2" and r["slurp"]["encoding"] == "base64"
    assert base64.b64decode(r["slurp relative"]["content"]) == b"notes"
    assert r["slurp missing"].get("failed") and r["slurp missing"]["msg"] == r"Path C:\nope.txt is not found"
    assert r["slurp directory"]["msg"] == r"Path C:\ProgramData is a directory"

    modes = [(c["args"]["_copy_mode"], c["check_mode"]) for c in run.calls(copy)]
    assert modes == [("query", False), ("single", False), ("query", False), ("query", True),
                     ("query", False), ("single", False), ("query", False), ("single", False),
                     ("query", False), ("single", False)]


def test_what_the_double_does_not_emulate_is_refused(tmp_path: Path) -> None:
    run = play(tmp_path, [
        task("ping", "ansible.windows.win_ping"),
        task("raw", "ansible.builtin.raw", _raw_params="Get-ChildItem"),
        task("remote copy", "ansible.windows.win_copy", src=r"C:\a.txt", dest=r"C:\b.txt", remote_src=True),
    ])
    r = run.results
    assert r["ping"].get("failed") and r["ping"]["rc"] == 1
    assert "does not emulate the module ansible.windows.win_ping" in r["ping"]["module_stderr"]
    assert r["raw"].get("failed") and r["raw"]["rc"] == 1 and "does not emulate the command" in r["raw"]["stderr"]
    assert r["remote copy"].get("failed") and "win_copy _copy_mode=remote" in r["remote copy"]["module_stderr"]
    assert [(c["module"], c["emulated"]) for c in run.calls()] == [("ansible.windows.win_ping", False),
                                                                  ("ansible.windows.win_copy", True)]
