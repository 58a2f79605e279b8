"""The Event-Driven Ansible source, loaded by path as ansible-rulebook loads it, fed over real HTTP.

The queue is a plain asyncio.Queue, the one thing ansible-rulebook would hand the source (a queue
double, as ansible.eda's own source tests use).
"""
from __future__ import annotations

import asyncio
import json
import importlib.util
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import List, Any, Dict, Optional, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (
    SIGNATURE_HEADER,
    VERSION,
    relay_key,
    sign,
)
from tests.conftest import COLLECTIONS_PATH
from tests.eda.rulebook_setup import free_port

SOURCE = Path(COLLECTIONS_PATH, "ansible_collections", "azure_imds", "scheduled_events", "extensions", "eda",
              "plugins", "event_source", "scheduled_events.py")
TOKEN = b"source-test-token-0123456789"   # the controller's shared secret
REBOOT = {"EventId": "A1", "EventType": "Reboot", "EventStatus": "Scheduled", "Resources": ["vm0"]}


def push(host: str, seq: int, quiet: bool, events=(), kind: str = "change", relay_id: str = "r1") -> Dict[str, Any]:
    message = {"version": 1, "kind": kind, "host": host, "relay_id": relay_id + host, "seq": seq, "quiet": quiet,
               "document_available": True}
    if kind == "change":
        message["record"] = {"document_incarnation": seq, "events": list(events)}
    return message


def post(url: str, body: bytes, header: Optional[str]) -> Tuple[int, Dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if header is not None:
        headers[SIGNATURE_HEADER] = header
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def signed(message: Dict[str, Any], key: Optional[bytes] = None, at: Optional[float] = None) -> Tuple[bytes, str]:
    """Signed as the relay of the host it names signs (its own key), unless a key is given."""
    body = json.dumps(message).encode()
    return body, sign(body, relay_key(TOKEN, message["host"]) if key is None else key, time.time() if at is None else at)


def load_source() -> Any:
    """The plugin as a module of its own, from its file (ansible-rulebook uses runpy.run_path, which
    Ansible's collection finder, loaded in this test process by pytest-ansible, intercepts)."""
    spec = importlib.util.spec_from_file_location("scheduled_events_source", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Source:
    """The plugin's main() running in this test's event loop, on a free loopback port."""

    def __init__(self, tmp_path: Path, **args: Any):
        token = tmp_path / "token"
        token.write_bytes(TOKEN)
        token.chmod(0o600)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = dict({"token_file": str(token), "port": self.port, "tick_seconds": 0.05,
                          "expected_hosts": "vm0,vm1,vm2"}, **args)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.main = load_source().main

    async def send(self, message: Dict[str, Any], **how: Any) -> Tuple[int, Dict[str, Any]]:
        body, header = signed(message, **how)
        return await asyncio.to_thread(post, self.url + "/push", body, header)

    async def event(self, timeout: float = 10.0) -> Dict[str, Any]:
        # generous: news waits gather_seconds (1 s) in the source, and CI's loaded machine adds more
        return await asyncio.wait_for(self.queue.get(), timeout)


async def started(source: Source) -> asyncio.Task:
    task = asyncio.create_task(source.main(source.queue, source.args))
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", source.port), timeout=0.1):
                return task
        except OSError:
            await asyncio.sleep(0.05)
    raise AssertionError("the source did not listen")


async def read_quiet_by_a_first_cycle(source: Source, hosts=("vm0", "vm1", "vm2")) -> None:
    """What a freshly started source needs before a host counts as quiet: a cycle that covered it and whose own
    read found it quiet (the done report's read_quiet). The relays here start as 'not quiet' (a first
    relay id), so that a cycle runs at once."""
    for host in hosts:
        await source.send(push(host, 1, quiet=False, relay_id="first"))
    first = (await source.event())["scheduled_events"]
    assert sorted(first["hosts"]) == sorted(hosts)
    code, answer = await asyncio.to_thread(post, first["done_url"], json.dumps({"read_quiet": list(hosts)}).encode(),
                                           None)
    assert code == 200 and answer == {"released": True}


def test_a_new_event_on_two_vms_becomes_one_cycle_event_naming_both(tmp_path: Path) -> None:
    async def scenario() -> Dict[str, Any]:
        source = Source(tmp_path)
        task = await started(source)
        await read_quiet_by_a_first_cycle(source)
        for host in ("vm0", "vm1", "vm2"):
            assert (await source.send(push(host, 1, quiet=True)))[0] == 200
        for host in ("vm0", "vm1"):
            await source.send(push(host, 2, quiet=False, events=[REBOOT]))
        event = await source.event()
        assert source.queue.empty()
        task.cancel()
        return event

    whole = asyncio.run(scenario())
    assert whole["meta"]["hosts"] == ["vm0", "vm1", "localhost"], "the playbook's limit, controller plays included"
    event = whole["scheduled_events"]
    assert event["hosts"] == ["vm0", "vm1"] and event["changed"] == ["vm0", "vm1"] and event["stale"] == []
    assert event["done_url"].startswith("http://127.0.0.1:") and event["done_url"].endswith("/2")


def test_the_source_says_when_it_starts_which_version_listens_where_for_which_hosts(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """ansible-rulebook shows no INFO log by default: the start-up line goes to stderr, where a trial sees it."""
    async def scenario() -> None:
        source = Source(tmp_path, host="127.0.0.1")
        task = await started(source)
        task.cancel()
        port.append(source.port)
    port: List[int] = []
    asyncio.run(scenario())
    assert capsys.readouterr().err.splitlines() == [
        f"scheduled_events source {VERSION}: listening for relay pushes on http://127.0.0.1:{port[0]}/push, "
        "expecting 3 hosts (vm0, vm1, vm2)"]


@pytest.mark.parametrize("case, status, fragment", [
    ("unsigned", 401, "carries no"),
    ("wrong token", 401, "does not match"),
    ("another host's key", 401, "does not match its body with the key of vm0"),
    ("the shared secret (a relay installed before per-host keys)", 401, "signed with the controller's shared secret"),
    ("a signature that is not ASCII", 401, "does not match"),
    ("a stamp of 5,000 digits", 401, "is not t=<seconds>"),
    # not "3600 s": a loaded machine can take a second between the signing and the check
    ("replayed an hour later", 401, "s away from now (more than 300 s: a replay"),
    ("malformed", 400, "seq is not a positive"),
])
def test_bad_pushes_get_a_4xx_and_never_become_events(tmp_path: Path, case: str, status: int, fragment: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> Tuple[int, Dict[str, Any]]:
        source = Source(tmp_path)
        task = await started(source)
        message = push("vm0", 1, quiet=False, events=[REBOOT])
        if case == "unsigned":
            answer = await asyncio.to_thread(post, source.url + "/push", json.dumps(message).encode(), None)
        elif case == "wrong token":
            answer = await source.send(message, key=b"somebody else's token!!")
        elif case == "another host's key":  # vm1 (its own key, or root on it) speaking for vm0
            answer = await source.send(message, key=relay_key(TOKEN, "vm1"))
        elif case.startswith("the shared secret"):
            answer = await source.send(message, key=TOKEN)
        elif case == "a signature that is not ASCII":
            header = "t=%d,v1=%s" % (time.time(), "\u00e9" * 64)   # latin-1 on the wire, as http.client sends it
            answer = await asyncio.to_thread(post, source.url + "/push", json.dumps(message).encode(), header)
        elif case == "a stamp of 5,000 digits":
            answer = await asyncio.to_thread(post, source.url + "/push", json.dumps(message).encode(),
                                             "t=%s,v1=ab" % ("9" * 5000))
        elif case == "replayed an hour later":
            answer = await source.send(message, at=time.time() - 3600)
        else:
            answer = await source.send(dict(message, seq=0))
        await asyncio.sleep(0.3)
        assert source.queue.empty(), "nothing reaches the rulebook"
        task.cancel()
        return answer

    code, body = asyncio.run(scenario())
    assert code == status and fragment in body["error"]
    assert any(fragment in r.getMessage() for r in caplog.records), "a log line names the cause"


def test_news_a_running_cycle_covers_waits_for_its_done_report_and_news_elsewhere_does_not(tmp_path: Path) -> None:
    async def scenario() -> Tuple[List[Dict[str, Any]], List[bool]]:
        source = Source(tmp_path)
        task = await started(source)
        await read_quiet_by_a_first_cycle(source)
        for host in ("vm1", "vm2"):
            await source.send(push(host, 1, quiet=True))
        await source.send(push("vm0", 1, quiet=False, events=[REBOOT]))
        events, held = [(await source.event())["scheduled_events"]], []
        for seq in range(2, 12):  # a flood on vm0 while the first cycle works on it
            await source.send(push("vm0", seq, quiet=False, events=[dict(REBOOT, EventId=f"E{seq}")]))
        await asyncio.sleep(0.3)
        held.append(source.queue.empty())
        await source.send(push("vm1", 2, quiet=False, events=[dict(REBOOT, EventId="B")]))
        events.append((await source.event())["scheduled_events"])
        await asyncio.to_thread(post, events[0]["done_url"], b"", None)
        await asyncio.sleep(0.3)
        held.append(source.queue.empty())
        await asyncio.to_thread(post, events[1]["done_url"], b"", None)
        events.append((await source.event())["scheduled_events"])
        await asyncio.sleep(0.3)
        held.append(source.queue.empty())
        task.cancel()
        return events, held

    (first, second, third), held = asyncio.run(scenario())
    assert held == [True, True, True], "vm0's news waits for every cycle that began before it, then comes once"
    assert first["hosts"] == ["vm0"] and second["changed"] == ["vm1"] and second["hosts"] == ["vm0", "vm1"]
    assert third["changed"] == ["vm0"]


def test_a_host_that_falls_silent_is_put_into_a_cycle_once(tmp_path: Path) -> None:
    async def scenario() -> Dict[str, Any]:
        source = Source(tmp_path, stale_seconds=0.5, expected_hosts=["vm0"])
        task = await started(source)
        await source.send(push("vm0", 1, quiet=True))
        event = await source.event()
        task.cancel()
        return event

    event = asyncio.run(scenario())["scheduled_events"]
    assert event["stale"] == ["vm0"] and event["hosts"] == ["vm0"]


def test_without_expected_hosts_a_cycle_covers_the_whole_target_and_with_them_strangers_are_refused(
        tmp_path: Path) -> None:
    async def scenario() -> Tuple[Dict[str, Any], Tuple[int, Dict[str, Any]]]:
        open_source = Source(tmp_path, expected_hosts="")
        task = await started(open_source)
        await open_source.send(push("vm0", 1, quiet=False, events=[REBOOT]))
        event = await open_source.event()
        task.cancel()
        listed = Source(tmp_path)
        task = await started(listed)
        answer = await listed.send(push("vm9", 1, quiet=False, events=[REBOOT]))
        task.cancel()
        return event, answer

    event, (code, body) = asyncio.run(scenario())
    assert event["meta"]["hosts"] == ["all", "localhost"], "a VM whose relay never pushed may be in maintenance"
    assert code == 403 and "not an expected host" in body["error"]


def test_a_missing_token_file_is_one_sentence(tmp_path: Path) -> None:
    source = Source(tmp_path)
    with pytest.raises(Exception, match="token_file is required"):
        asyncio.run(source.main(source.queue, {"port": source.port}))


def test_a_restarted_source_rebuilds_its_view_from_the_next_pushes_and_a_silent_host_fails_closed(
        tmp_path: Path) -> None:
    async def scenario() -> Tuple[bool, Dict[str, Any], Dict[str, Any]]:
        source = Source(tmp_path, stale_seconds=0.6, expected_hosts="vm0,vm1,vm2")
        task = await started(source)
        for host in ("vm0", "vm1", "vm2"):
            await source.send(push(host, 1, quiet=True))
        task.cancel()  # the rulebook restarts: the view is gone
        await asyncio.gather(task, return_exceptions=True)
        task = await started(source)
        for host in ("vm0", "vm1"):  # the relays go on with their next seq; vm2's relay stays silent
            await source.send(push(host, 2, quiet=True, kind="heartbeat"))
        await asyncio.sleep(0.3)
        quiet_meanwhile = source.queue.empty()
        stale = (await source.event())["scheduled_events"]
        await asyncio.to_thread(post, stale["done_url"], b'{"read_quiet": ["vm0", "vm1"]}', None)
        await source.send(push("vm1", 3, quiet=False, events=[dict(REBOOT, Resources=["vm1"])]))
        news = (await source.event())["scheduled_events"]
        task.cancel()
        return quiet_meanwhile, stale, news

    quiet_meanwhile, stale, news = asyncio.run(scenario())
    assert quiet_meanwhile, "quiet hosts heard again start nothing"
    assert stale["stale"] == ["vm2"], "never heard since the restart: busy"
    assert stale["hosts"] == ["vm0", "vm1", "vm2"], "and no cycle has read the others quiet since the restart"
    assert news["changed"] == ["vm1"] and "vm2" in news["hosts"], "it stays in every cycle until it is heard"


def test_a_done_report_with_a_secret_that_is_not_ascii_is_an_unknown_run_not_a_server_error(tmp_path: Path) -> None:
    async def scenario() -> Tuple[int, Dict[str, Any]]:
        source = Source(tmp_path)
        task = await started(source)
        answer = await asyncio.to_thread(post, source.url + "/done/%C3%A9t%C3%A9/1", b"", None)
        task.cancel()
        return answer

    assert asyncio.run(scenario()) == (404, {"error": "unknown run"})


def test_a_quiet_push_never_takes_a_host_out_of_the_runs_only_a_cycles_own_read_does(tmp_path: Path) -> None:
    """A forged push for vm0 (signed with vm0's own key: the worst case) says quiet with a huge sequence number:
    vm0 stays in every run until a cycle reads it quiet, and the real relay's next push is still taken."""
    async def scenario() -> Tuple[List[Dict[str, Any]], Tuple[int, Dict[str, Any]]]:
        source = Source(tmp_path)
        task = await started(source)
        await read_quiet_by_a_first_cycle(source)
        await source.send(push("vm0", 2, quiet=False, events=[REBOOT]))
        runs = [(await source.event())["scheduled_events"]]
        await source.send(push("vm0", 10 ** 15, quiet=True))          # the forgery
        await asyncio.to_thread(post, runs[0]["done_url"], b'{"read_quiet": []}', None)   # vm0 read with work
        await source.send(push("vm0", 3, quiet=False, events=[dict(REBOOT, EventId="B")]))  # the real relay
        runs.append((await source.event())["scheduled_events"])
        await asyncio.to_thread(post, runs[1]["done_url"], b'{"read_quiet": ["vm0"]}', None)
        await source.send(push("vm1", 2, quiet=False, events=[dict(REBOOT, Resources=["vm1"])]))
        runs.append((await source.event())["scheduled_events"])
        bad = await asyncio.to_thread(post, runs[2]["done_url"], b'{"read_quiet": "vm1"}', None)
        task.cancel()
        return runs, bad

    (first, second, third), (code, body) = asyncio.run(scenario())
    assert first["hosts"] == ["vm0"]
    assert second["changed"] == ["vm0"], "the real relay's push after the forged huge sequence number is news"
    assert third["hosts"] == ["vm1"], "vm0 left the runs once a cycle's own read found it quiet"
    assert code == 400 and "read_quiet is not a list" in body["error"]


def test_refused_pushes_are_logged_rate_limited(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> List[int]:
        source = Source(tmp_path)
        task = await started(source)
        codes = [(await source.send(push("vm0", seq, quiet=True), key=b"a key that is nobody's"))[0]
                 for seq in range(1, 21)]
        task.cancel()
        return codes

    assert asyncio.run(scenario()) == [401] * 20, "each one refused"
    lines = [r.getMessage() for r in caplog.records if "refused a push" in r.getMessage()]
    assert len(lines) == 1 and "does not match" in lines[0], "one line at once, then at most one a minute"


def test_the_shipped_rulebook_tells_its_cycles_how_many_run_side_by_side() -> None:
    """The cycle refuses hosts without a VM lock when cycles run side by side (cycle/plan.py): it must be told the
    source's max_parallel_runs, the same expression on both sides."""
    import yaml
    from pathlib import Path
    rulebook = Path(__file__).resolve().parents[2] / "extensions/eda/rulebooks/scheduled_events.yml"
    (ruleset,) = yaml.safe_load(rulebook.read_text())
    source = ruleset["sources"][0]["azure_imds.scheduled_events.scheduled_events"]
    cycle = next(a["run_playbook"] for a in ruleset["rules"][0]["actions"]
                 if a["run_playbook"]["name"] == "azure_imds.scheduled_events.cycle")
    assert cycle["extra_vars"]["maintenance_cycle_parallel_runs"] == source["max_parallel_runs"]


@pytest.mark.parametrize("body, expected", [
    (b"", ([], [])),  # a cycle that may have died takes no host out of the runs
    (json.dumps({"read_quiet": ["vm1"], "deleted": ["vm0"]}).encode(), (["vm1"], ["vm0"])),
    (json.dumps({"read_quiet": ["vm1"]}).encode(), (["vm1"], [])),  # a playbook of an earlier release
    (json.dumps({"read_quiet": [], "deleted": "vm0"}).encode(), "deleted is not a list of host names"),
    (json.dumps(["vm0"]).encode(), "read_quiet is not a list of host names"),
])
def test_a_done_report_says_which_hosts_were_read_quiet_and_which_were_taken_as_deleted(body: bytes,
                                                                                       expected: Any) -> None:
    source = load_source()
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            source.read_quiet_of(body)
    else:
        assert source.read_quiet_of(body) == expected


def test_the_source_imports_no_part_of_the_vm_program() -> None:
    """The relay's program runs on the VMs; the controller's source shares the push protocol with it (relay/protocol.py,
    key_file.py) and nothing else, so that a change to the VM program cannot break the source."""
    import ast
    imported = {node.module for node in ast.walk(ast.parse(SOURCE.read_text())) if isinstance(node, ast.ImportFrom)}
    assert not [m for m in imported if m and m.endswith("relay.program")]
    assert any(m and m.endswith("relay.key_file") for m in imported)
