# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event relay on a Linux VM: one process, the standard library and this collection's own code.

`python3 -m ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.program CONFIG`
(the event_relay role installs it as a systemd service). Every second it reads the local IMDS with the
modules' client (Metadata header, no proxy, no redirects, the first-call budget, empty 200s), and:
- writes each change of the document to a local history file (observation schema, change-only);
- spools a push per change (a file per push, written before anything else, so a killed relay loses
  nothing) and sends the spool in order to the controller, signed, with bounded retries; the spool is
  bounded too (the oldest pushes go first; the newest always stays);
- sends a heartbeat every few seconds when the spool is empty;
- writes its Prometheus metrics (metrics.py) to a node_exporter textfile, if asked to.
What a poll means is decided in protocol.py; this file is the I/O around it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Dict, List, Optional
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import ProxyHandler, Request, build_opener, HTTPSHandler

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import owes_work
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import load_state
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import DocumentError, compute_facts
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_records import (
    local_action,
    record_line,
    vm_of,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_file import HistoryFile
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
    DEFAULT_API_VERSION,
    DEFAULT_URL,
    SUPPORTED_API_VERSIONS,
    ImdsClient,
    ImdsError,
    read_document,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import replace_file
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.key_file import (
    ConfigError,
    read_token,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import render
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.metrics import (
    RelayCounters,
    relay_families,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.fast_path import (
    DEFAULT_TYPES,
    command_environment,
    events_to_act_on,
    exit_result,
    remembered,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (
    SIGNATURE_HEADER,
    VERSION,
    LogLimiter,
    RelaySettings,
    Tracker,
    held_back,
    sign,
    spool_overflow,
    utc_iso,
)


@dataclass
class RelayConfig:
    host: str
    controller_url: str
    token_file: str
    state_dir: str
    imds_url: str = DEFAULT_URL            # "" too: the role writes "" unless the play sets the cycle's own
    api_version: str = DEFAULT_API_VERSION  # likewise
    poll_interval: float = 1.0
    heartbeat_seconds: float = 30.0
    cycle_state_path: str = ""            # the maintenance cycle's state file on this VM ("" none)
    # Where else the cycle may keep it: the role resolves the path as the cycle's modules do with and without
    # privilege escalation (the relay cannot know how the cycle will be run), and work in any of them counts.
    cycle_state_paths: list = field(default_factory=list)
    resource_name: str = ""               # this VM's name in Resources, as the modules' resource_name ("" compute's)
    history_path: str = ""                # change-only history ("" none)
    history_max_bytes: int = 64 * 1024 * 1024
    spool_max_entries: int = 10000
    push_timeout: float = 5.0
    max_backoff: float = 5.0              # a Preempt gives 30 s: never wait long between tries
    ca_file: str = ""                     # CA bundle for an https controller_url ("" the system's)
    metrics_path: str = ""                # node_exporter textfile (.prom) for the relay's metrics ("" none)
    metrics_seconds: float = 15.0         # how often it is rewritten (also at each change of the document)
    # The fast path (fast_path.py): an argv run once per event of local_command_types that lists this VM, within one
    # poll of its first sight, before the controller is told ([] none).
    local_command: list = field(default_factory=list)
    local_command_types: list = field(default_factory=lambda: list(DEFAULT_TYPES))

    @classmethod
    def from_file(cls, path):
        # type: (str) -> RelayConfig
        try:
            with open(path) as stream:
                data = json.load(stream)
        except (OSError, ValueError) as exc:
            raise ConfigError("cannot read the relay configuration %s (%s)." % (path, exc))
        known = set(f.name for f in fields(cls))
        unknown = sorted(set(data) - known) if isinstance(data, dict) else []
        if not isinstance(data, dict) or unknown:
            raise ConfigError("the relay configuration %s has unknown settings %s." % (path, unknown))
        missing = sorted(f.name for f in fields(cls)
                         if f.default is MISSING and f.default_factory is MISSING and f.name not in data)
        if missing:
            raise ConfigError("the relay configuration %s lacks the settings %s." % (path, missing))
        for setting in fields(cls):
            if setting.name in data and not _is_a(data[setting.name], setting.type):
                raise ConfigError("the relay configuration %s sets %s to %r, which is not %s."
                                  % (path, setting.name, data[setting.name], _KINDS[setting.type]))
        config = cls(**data)
        config.check()
        return config

    def __post_init__(self):
        # IMDS's own address and the modules' api-version have one home (document/imds.py): the event_relay role
        # gives them only when the play sets the cycle's, and writes "" for the rest.
        self.imds_url = self.imds_url or DEFAULT_URL
        self.api_version = self.api_version or DEFAULT_API_VERSION

    def check(self):
        for name in ("controller_url", "imds_url"):
            url = getattr(self, name)
            try:
                parts = urlsplit(url)
                good = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
            except ValueError:   # a port that is not a number, a bad IPv6 literal
                good = False
            if not good:
                raise ConfigError("%s %r is not an http:// or https:// URL with a host." % (name, url))
        if self.api_version not in SUPPORTED_API_VERSIONS:
            raise ConfigError("api_version %r is not a Scheduled Events api-version the modules support (%s)."
                              % (self.api_version, ", ".join(SUPPORTED_API_VERSIONS)))
        if self.poll_interval <= 0 or self.heartbeat_seconds <= 0 or self.push_timeout <= 0 \
                or self.metrics_seconds <= 0:
            raise ConfigError("poll_interval, heartbeat_seconds, push_timeout and metrics_seconds must be positive.")
        if self.metrics_path and not self.metrics_path.endswith(".prom"):
            raise ConfigError("metrics_path %r must end in .prom (node_exporter's textfile collector reads only "
                              "those)." % self.metrics_path)
        if self.spool_max_entries < 1:
            raise ConfigError("spool_max_entries must be at least 1.")
        if self.local_command and not os.path.isabs(self.local_command[0]):
            raise ConfigError("local_command %r must start with an absolute path (the relay's service has a bare "
                              "PATH)." % (self.local_command[0],))
        if not all(_TYPE_NAME.match(t) for t in self.local_command_types):
            raise ConfigError("local_command_types %r must be event type names, such as Preempt." %
                              (self.local_command_types,))
        for path in [self.cycle_state_path] + list(self.cycle_state_paths):
            if path and not os.path.isabs(path):
                raise ConfigError("cycle_state_path %r is not an absolute path: the relay must watch the very file "
                                  "the cycle writes, which the event_relay role resolves on the VM as the cycle's "
                                  "modules do." % path)


_KINDS = {str: "a string", float: "a number", int: "a whole number", list: "a list of non-empty strings"}


def _is_a(value, kind):
    """Whether a JSON value has a setting's type (a bool is no number; an int is a float's number; a list is of
    non-empty strings)."""
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, (int, float))
    if kind is list:
        return isinstance(value, list) and all(isinstance(item, str) and item for item in value)
    return isinstance(value, kind)


_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,63}$")


class Spool:
    """Pushes waiting for the controller: one file each (<seq>.json), written atomically, sent in order."""

    def __init__(self, directory, max_entries):
        self.directory = os.path.join(directory, "spool")
        self.max_entries = max_entries
        self.lock = threading.Lock()   # stamping and adding are one step for the loop and the sender
        os.makedirs(self.directory, 0o700, exist_ok=True)
        for folder in (directory, self.directory):   # temporary files of writes a kill interrupted
            for name in os.listdir(folder):
                if name.startswith(".lock-"):
                    os.unlink(os.path.join(folder, name))
        self._seq_path = os.path.join(directory, "last_seq")
        saved = self._saved_seq()
        self.relay_id = self._relay_id(directory, fresh=saved is None)
        self.next_seq = max(self.seqs() + [saved or 0]) + 1
        self.dropped = 0

    @staticmethod
    def _relay_id(directory, fresh):
        """This spool's id; a new one whenever the sequence cannot be trusted, so that the controller, which
        drops what it has seen by (relay_id, seq), never drops a new push as an old one."""
        path = os.path.join(directory, "relay_id")
        value = None if fresh else (_read(path) or "").strip()
        if not value:
            value = secrets.token_hex(8)
            try:
                replace_file(path, value)
            except OSError as exc:   # a full disk: this id lives in memory; a restart takes another
                log("cannot save the relay id in %s (%s); the relay goes on with it in memory." % (path, exc))
        return value

    def _saved_seq(self):
        """The last sequence number handed out; 0 for a new spool; None when the file is damaged."""
        text = _read(self._seq_path)
        if text is None:
            return 0 if not self.seqs() else None
        text = text.strip()
        return int(text) if text.isdigit() else None

    def seqs(self):
        # type: () -> List[int]
        return sorted(int(n[:-5]) for n in os.listdir(self.directory) if n.endswith(".json") and n[:-5].isdigit())

    def stamp(self, push):
        # type: (Dict[str, Any]) -> Dict[str, Any]
        """The push with this relay's id and the next sequence number (saved before it is used).
        Callers hold `lock`."""
        seq = self.next_seq
        self.next_seq += 1
        try:
            replace_file(self._seq_path, str(seq))
        except OSError:
            # A full disk: the number lives in memory. The saved one is now behind it, so the saved relay id goes
            # (removing needs no space): a restart takes a fresh id and never reuses a number under the old one.
            self.seq_unsaved = True
            try:
                os.unlink(os.path.join(os.path.dirname(self._seq_path), "relay_id"))
            except OSError:
                pass
        return dict(push, relay_id=self.relay_id, seq=seq)

    seq_unsaved = False

    def add(self, push):
        # type: (Dict[str, Any]) -> None
        """Stamp and spool a change, in one step under the lock (a heartbeat never takes a seq in between)."""
        with self.lock:
            push = self.stamp(push)
            replace_file(os.path.join(self.directory, "%d.json" % push["seq"]),
                         json.dumps(push, separators=(",", ":")))
            for seq in spool_overflow(self.seqs(), self.max_entries):
                self.remove(seq)
                self.dropped += 1

    def heartbeat(self, push):
        # type: (Dict[str, Any]) -> Optional[Dict[str, Any]]
        """The heartbeat stamped, if nothing waits in the spool (the backlog itself shows the relay alive)."""
        with self.lock:
            return None if self.seqs() else self.stamp(push)

    def oldest(self):
        # type: () -> Optional[Dict[str, Any]]
        for seq in self.seqs():
            try:
                with open(os.path.join(self.directory, "%d.json" % seq)) as stream:
                    return json.load(stream)
            except (OSError, ValueError):
                self.remove(seq)  # a spool file is replaced atomically, so this is not a torn write
        return None

    def remove(self, seq):
        try:
            os.unlink(os.path.join(self.directory, "%d.json" % seq))
        except FileNotFoundError:
            pass


def _read(path):
    try:
        with open(path) as stream:
            return stream.read()
    except FileNotFoundError:
        return None


class History:
    """The VM's own change-only history: one JSON line per change (observation/history_file.py), rotated once at a
    size bound; a write that fails is logged (rate-limited) and the relay goes on."""

    def __init__(self, path, max_bytes, clock=time.time):
        self.file = HistoryFile(path, max_bytes=max_bytes) if path else None
        self.clock = clock
        self.logs = LogLimiter()

    def append(self, record):
        if self.file is None:
            return
        try:
            self.file.append(record_line(record))
        except OSError as exc:
            held = self.logs.note("history", self.clock())
            if held is not None:
                log("cannot write the history file %s (%s); the relay goes on%s." % (self.file.path, exc, held_back(held)))


def log(message):
    sys.stderr.write("azure-imds-relay: %s\n" % message)
    sys.stderr.flush()


SENT, REFUSED, FAILED = "sent", "refused", "failed"


class Sender:
    """Sends the spool to the controller in order, in a thread of its own; heartbeats only when it is empty."""

    def __init__(self, config, spool, token, stop, outcomes=None):
        self.config = config
        self.spool = spool
        self.token = token
        self.stop = stop
        self.outcomes = outcomes if outcomes is not None else {}   # result -> count (the metrics')
        self.wake = threading.Event()
        self.heartbeat = None   # type: Optional[Dict[str, Any]]
        self.failures = 0
        self.sent = 0
        handlers = [ProxyHandler({})]
        if config.controller_url.startswith("https://"):
            context = ssl.create_default_context(cafile=config.ca_file or None)
            handlers.append(HTTPSHandler(context=context))
        self.opener = build_opener(*handlers)

    def offer_heartbeat(self, push):
        self.heartbeat = push
        self.wake.set()

    def run(self):
        """The sender's loop; an unexpected error stops the whole relay (systemd restarts it), never
        leaves it polling with nobody sending."""
        try:
            self._loop()
        except Exception as exc:  # pylint: disable=broad-except
            log("the sender stopped on an unexpected error (%r); the relay stops so that it is restarted." % exc)
            self.died = True
            self.stop.set()

    died = False

    def _loop(self):
        while not self.stop.is_set():
            push = self.spool.oldest()
            spooled = push is not None
            if push is None and self.heartbeat is not None:
                beat, self.heartbeat = self.heartbeat, None
                push = self.spool.heartbeat(beat)
            if push is None:
                self.wake.wait(1.0)
                self.wake.clear()
                continue
            outcome = self.post(push)
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
            if outcome == SENT or outcome == REFUSED:
                self.failures = 0
                self.sent += outcome == SENT
                if spooled:
                    self.spool.remove(push["seq"])
            elif spooled:
                self.failures += 1
                self.stop.wait(min(self.config.max_backoff, 0.5 * 2 ** min(self.failures, 10)))

    def post(self, push):
        # type: (Dict[str, Any]) -> str
        body = json.dumps(push, separators=(",", ":")).encode("utf-8")
        request = Request(self.config.controller_url, data=body, method="POST", headers={
            "Content-Type": "application/json", SIGNATURE_HEADER: sign(body, self.token, time.time())})
        try:
            with self.opener.open(request, timeout=self.config.push_timeout) as response:
                response.read()
            return SENT
        except HTTPError as exc:
            detail = exc.read()[:200].decode("utf-8", "replace")
            if exc.code in (400, 413):   # this push will never be taken: keeping it would stall the spool
                log("the controller refused push %d for good with HTTP %d (%s); it is dropped."
                    % (push["seq"], exc.code, detail))
                return REFUSED
            if self.failures % 30 == 0:
                log("the controller refused a push with HTTP %d (%s); it stays in the spool." % (exc.code, detail))
        except Exception as exc:  # pylint: disable=broad-except
            # URLError, a reset, a truncated or garbled answer (http.client's errors): try again later.
            if self.failures % 30 == 0:
                log("cannot reach the controller at %s (%s); pushes wait in the spool."
                    % (self.config.controller_url, exc))
        return FAILED


def has_saved_work(path):
    # type: (str) -> bool
    """Whether the cycle state on this VM still owes something (a corrupt state counts as work)."""
    if not path:
        return False
    try:
        with open(path) as stream:   # absolute (RelayConfig.check): as the cycle's modules resolved it
            text = stream.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    state, status = load_state(text)[:2]
    return owes_work(state, status)


class Metrics:
    """The relay's textfile: rewritten every metrics_seconds and at each change, atomically, readable by
    node_exporter (0644); a write that fails is said once in the log and never stops the relay."""

    def __init__(self, path, every):
        self.path = path
        self.every = every
        self.written_at = None   # type: Optional[float]
        self.failing = False

    def due(self, now, changed):
        return bool(self.path) and (changed or self.written_at is None or now - self.written_at >= self.every)

    def write(self, now, text):
        self.written_at = now
        try:
            replace_file(self.path, text, prefix=".metrics-", mode=0o644)
            self.failing = False
        except OSError as exc:
            if not self.failing:
                log("cannot write the metrics file %s (%s); the relay goes on." % (self.path, exc))
            self.failing = True


class LocalCommand:
    """The fast path's edge (fast_path.py holds its rules): runs the operator's command, detached, once per event,
    remembers the ids in the state directory (a restarted relay does not run it again), records each start in the
    history, and reaps the commands that ended. Its output goes to local_command.log beside the spool."""

    def __init__(self, config, history, logs, clock, exits=None):
        self.host, self.argv, self.types = config.host, list(config.local_command), tuple(config.local_command_types)
        self.exits = exits if exits is not None else {}  # the metrics' count of ended runs, by result
        self.path = os.path.join(config.state_dir, "local_actions.json")
        self.output = os.path.join(config.state_dir, "local_command.log")
        self.history, self.logs, self.clock, self.children = history, logs, clock, []
        self.done = self._load() if self.argv else []

    def _load(self):
        try:
            with open(self.path) as stream:
                data = json.load(stream)
        except (OSError, ValueError):
            return []
        return [i for i in data if isinstance(i, str)] if isinstance(data, list) else []

    def act(self, document, vm):
        """Run the command for each event it is due for; True when any started."""
        self.reap()
        due = events_to_act_on(document, vm.get("name", ""), self.types, self.done) if self.argv else []
        for event in due:
            self._start(event, vm)
        if due:
            self.done = remembered(self.done, [event["EventId"] for event in due])
            try:
                replace_file(self.path, json.dumps(self.done))
            except OSError as exc:
                log("cannot keep the ids the local command ran for in %s (%s)." % (self.path, exc))
        return bool(due)

    def reap(self):
        """Say, and count, how each command that ended did: a head start that failed is worth an alert."""
        running = []
        for child, event, started in self.children:
            if child.poll() is None:
                running.append((child, event, started))
                continue
            result, said = exit_result(child.returncode)
            self.exits[result] = self.exits.get(result, 0) + 1
            log("the local command for %s %s %s after %.1f s (its output: %s)."
                % (event.get("EventType"), event["EventId"], said, self.clock() - started, self.output))
        self.children = running

    def _start(self, event, vm):
        at = self.clock()
        env = dict(os.environ, **command_environment(event, vm.get("name", "")))
        try:
            with open(self.output, "ab") as output:
                # The relay is a daemon, not a module: no AnsibleModule, so no run_command; and the command runs
                # detached, not waited for, which run_command cannot do.
                self.children.append((subprocess.Popen(  # pylint: disable=ansible-bad-function
                    self.argv, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                    close_fds=True, start_new_session=True), event, at))
        except (OSError, ValueError) as exc:  # run once: a command that cannot start is said, not retried every poll
            log("cannot run the local command %s for %s %s (%s)."
                % (self.argv[0], event.get("EventType"), event["EventId"], exc))
            return
        self.history.append(local_action(self.host, event, vm, utc_iso(at)))


class Relay:
    def __init__(self, config, token, stop=None, clock=time.time):
        self.config = config
        self.stop = stop or threading.Event()
        self.clock = clock
        self.counters = RelayCounters(started_at=clock())
        self.metrics = Metrics(config.metrics_path, config.metrics_seconds)
        self.client = ImdsClient(base_url=config.imds_url, api_version=config.api_version, timeout=2.0, retries=0)
        self.tracker = Tracker(RelaySettings(host=config.host, heartbeat_seconds=config.heartbeat_seconds,
                                             poll_interval=config.poll_interval))
        self.spool = Spool(config.state_dir, config.spool_max_entries)
        self.history = History(config.history_path, config.history_max_bytes, clock)
        self.logs = LogLimiter()
        self.sender = Sender(config, self.spool, token, self.stop, self.counters.pushes)
        self.local = LocalCommand(config, self.history, self.logs, clock, self.counters.local_command_exits)

    def identify(self):
        """The VM's identity from compute metadata (retried until it answers: the first call may take minutes)."""
        while not self.stop.is_set():
            try:
                facts = compute_facts(self.client.get_compute())
                self.tracker.vm = vm_of(self.config.host, facts)
                if self.config.resource_name:   # as the modules' this_vm: resource_name before compute's name
                    self.tracker.vm["name"] = self.config.resource_name
                return
            except (ImdsError, DocumentError) as exc:
                log("cannot read this VM's compute metadata yet (%s)." % exc)
                self.stop.wait(self.config.poll_interval)

    def poll_once(self):
        now = self.clock()
        work = any(has_saved_work(path) for path in [self.config.cycle_state_path] + self.config.cycle_state_paths)
        try:
            parsed = read_document(self.client)
        except (ImdsError, DocumentError) as exc:
            step = self.tracker.failed(now, str(exc), work)
            held = self.logs.note("imds", now)
            if held is not None:
                log("cannot read IMDS (%s); the relay goes on polling and tells the controller%s."
                    % (exc, held_back(held)))
        else:
            if parsed is not None:  # the fast path first: the controller is told right after, in parallel
                self.local.act(parsed["raw"], self.tracker.vm)
            step = self.tracker.polled(now, None if parsed is None else parsed["raw"], work)
        if step.record is not None:
            self.sender.heartbeat = None      # older than this change: never sent after it
            try:
                self.spool.add(step.push)     # spooled first: a kill after this loses nothing
            except OSError as exc:            # a full disk: sent all the same, without the spool's keeping
                held = self.logs.note("spool", now)
                if held is not None:
                    log("cannot spool a push in %s (%s); it is sent without being kept, and the relay goes on "
                        "polling%s." % (self.spool.directory, exc, held_back(held)))
                self.sender.offer_heartbeat(step.push)
            self.sender.wake.set()
            self.history.append(step.record)
        elif step.push is not None:
            self.sender.offer_heartbeat(step.push)
        self.counters.polls += 1
        if self.metrics.due(now, step.record is not None):
            self.metrics.write(now, self.metrics_text(work))

    def metrics_text(self, work):
        # type: (bool) -> str
        tracker, counters = self.tracker, self.counters
        counters.spool_depth, counters.spool_dropped = len(self.spool.seqs()), self.spool.dropped
        return render(relay_families(tracker.document, tracker.vm.get("name", ""), tracker.quiet(work),
                                     tracker.imds_errors, tracker.last_success_at, counters))

    def run(self, ticks=time.monotonic):
        """Poll on a monotonic schedule (a wall-clock step neither stalls nor races the loop); 1 when the
        sender died, so that the service manager restarts the relay."""
        thread = threading.Thread(target=self.sender.run, name="sender", daemon=True)
        thread.start()   # a spool left by an earlier run goes out while this VM is being identified
        self.identify()
        next_poll = ticks()
        while not self.stop.is_set():
            self.poll_once()
            next_poll = max(next_poll + self.config.poll_interval, ticks())
            self.stop.wait(max(0.0, next_poll - ticks()))
        thread.join(timeout=self.config.push_timeout + 1)
        return 1 if self.sender.died else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: program CONFIG.json\n")
        return 2
    try:
        config = RelayConfig.from_file(argv[0])
        relay = Relay(config, read_token(config.token_file))
    except (ConfigError, OSError) as exc:
        log(str(exc))
        return 2
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: relay.stop.set())
    log("version %s started for host %s: reads %s every %g s, pushes to %s." % (
        VERSION, config.host, config.imds_url, config.poll_interval, config.controller_url))
    return relay.run()


if __name__ == "__main__":
    raise SystemExit(main())
