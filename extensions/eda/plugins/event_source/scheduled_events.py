# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An Event-Driven Ansible source: the event relays' pushes in, maintenance-cycle events out."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import ssl
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Set

from aiohttp import web

# ansible-rulebook loads this file by path: the collection's own module_utils are found from here
# (<root>/ansible_collections/azure_imds/scheduled_events/extensions/eda/plugins/event_source/this.py).
_COLLECTIONS_ROOT = str(Path(__file__).resolve().parents[7])
if _COLLECTIONS_ROOT not in sys.path:
    sys.path.insert(0, _COLLECTIONS_ROOT)

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.fleet_view import (  # noqa: E402
    FleetView,
    Run,
    ViewSettings,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (  # noqa: E402
    MAX_PUSH_BYTES,
    SIGNATURE_HEADER,
    VERSION,
    LogLimiter,
    PushError,
    check_push,
    held_back,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.key_file import (  # noqa: E402
    ConfigError,
    read_token,
)

DOCUMENTATION = r"""
---
short_description: Receive Azure Scheduled Events relay pushes and start maintenance cycles
description:
  - Listens (loopback by default) for the pushes of the event relays on the VMs (role
    azure_imds.scheduled_events.event_relay). A push must be signed with the shared token; a bad or
    unauthenticated push gets a 4xx answer and a log line, and never becomes an event.
  - Keeps the fleet view (each host's last document, whether it is quiet, when it was last heard) and puts
    one event on the queue when a cycle is needed, naming every host with work (not quiet, or stale, that is not
    heard from for stale_seconds). News on hosts a running cycle covers is coalesced into the next event;
    news elsewhere starts another cycle at once (max_parallel_runs).
  - A push only starts a cycle or adds hosts to one; the cycle reads every VM itself, so a forged, replayed
    or stale push can never cause an approval. A host first heard of is looked at at once, quiet or not (the
    source knows nothing of it yet); its first push starts a cycle when none runs. A host leaves the runs only once a cycle found it quiet, or left it quiet
    after its recovers, by its own read (the done report's C(read_quiet), which the cycle playbook sends when it
    is given C(done_url)),
    never on a push's word; or once a cycle's plan took it as deleted (the done report's C(deleted), as its own
    Preempt or Terminate was seen Started and it has not answered since), until its relay is heard from again.
options:
  token_file:
    description:
      - File holding the controller's shared secret (mode 0600, at least 16 characters), from which each
        relay's own key is derived. It stays on the controller; the relays hold their derived keys only.
    type: str
    required: true
  host:
    description: Address to listen on.
    type: str
    default: 127.0.0.1
  port:
    description: Port to listen on.
    type: int
    default: 5081
  certfile:
    description:
      - TLS certificate (PEM, the chain up to the CA) to serve HTTPS; with keyfile. The relays then push to an
        C(https://) URL with a name the certificate carries (the role's C(event_relay_ca_file) on the VMs).
    type: str
  keyfile:
    description: TLS private key (PEM).
    type: str
  cafile:
    description:
      - The CA bundle (PEM) that signed certfile, on the controller. The done reports of the cycles check the
        source's certificate with it (C(done_ca) in each event, the C(ca_path) of their C(uri)); without it
        they use the system's CAs.
    type: str
  done_host:
    description:
      - The host name of the done URL that each event carries (the cycles report to it from the controller).
        With TLS it must be a name the certificate carries; by default the certificate's first DNS name
        (else its first IP address). Without TLS, by default the listening address (127.0.0.1 when that is
        every address, 0.0.0.0 or ::).
    type: str
  stale_seconds:
    description: A host not heard from for this long counts as having work (fail closed).
    type: float
    default: 90
  max_run_seconds:
    description: A cycle not reported done within this long no longer holds back the next one, and its news
      goes into the next.
    type: float
    default: 900
  rerun_seconds:
    description: While any host has work, a cycle runs at least this often, news or not (deferred hosts,
      preparing before NotBefore, retrying a failed prepare or recover).
    type: float
    default: 60
  max_parallel_runs:
    description:
      - News on hosts that no running cycle looks at starts another cycle at once, up to this many at a
        time (run the rulebook with the parallel C(execution_strategy), as the shipped ones do). Each cycle
        covers every host with work; a host another cycle holds counts as in maintenance (its VM lock), so
        fault domains stay serialised. News on hosts a running cycle covers waits for it and is coalesced.
      - 1 runs one cycle at a time.
    type: int
    default: 3
  expected_hosts:
    description:
      - The inventory hostnames of the VMs whose relays push here (a list, or a comma-separated string).
      - With it, a cycle covers only the hosts with work, and an expected host never heard from counts as
        having work; pushes for other hosts are refused (403). Without it, the source cannot know which
        VMs it has never heard from, so every cycle covers the whole target.
    type: list
    elements: str
  gather_seconds:
    description:
      - News waits this long for the news of the rest of its event's VMs before it starts a cycle, so that a
        whole fault domain's event (its relays poll once a second each, so their pushes come spread over
        about a second) starts one cycle on all of its VMs instead of several on a few each.
      - 0 starts a cycle at the first push.
    type: float
    default: 1.0
  tick_seconds:
    description: How often the view looks for news and stale hosts.
    type: float
    default: 0.25
"""

EXAMPLES = r"""
- name: Azure Scheduled Events
  hosts: all
  sources:
    - azure_imds.scheduled_events.scheduled_events:
        token_file: /etc/azure-imds-relay/token
        port: 5081
  rules:
    - name: A maintenance cycle on the hosts with work
      condition: event.scheduled_events is defined
      actions:
        - run_playbook:
            name: azure_imds.scheduled_events.cycle
        - run_playbook:
            name: azure_imds.scheduled_events.report_done
            extra_vars:
              done_url: "{{ event.scheduled_events.done_url }}"
"""

LOG = logging.getLogger("azure_imds.scheduled_events.scheduled_events")


class Receiver:
    """The HTTP side: checks each push, updates the view, and takes "cycle done" reports."""

    def __init__(self, view: FleetView, token: bytes, clock=time.time, ticks=time.monotonic):
        self.view = view
        self.token = token
        self.clock = clock    # wall time: signatures
        self.ticks = ticks    # monotonic: freshness
        self.secret = secrets.token_urlsafe(16)  # in done URLs only, which no VM sees
        self.refused = 0
        self.refusals = LogLimiter()   # one line per sender at once, then at most one a minute with a count

    def _refused(self, request: web.Request, message: str) -> None:
        self.refused += 1
        held = self.refusals.note(request.remote, self.ticks())
        if held is not None:
            LOG.warning("refused a push from %s: %s%s", request.remote, message, held_back(held))

    async def push(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            message = check_push(body, request.headers.get(SIGNATURE_HEADER), self.token, self.clock())
        except PushError as exc:
            self._refused(request, str(exc))
            return web.json_response({"error": str(exc)}, status=exc.status)
        if not self.view.knows(message["host"]):
            self._refused(request, "%s is not an expected host." % message["host"])
            return web.json_response({"error": "%s is not an expected host." % message["host"]}, status=403)
        accepted = self.view.accept(message, self.ticks())
        return web.json_response({"accepted": accepted})

    async def done(self, request: web.Request) -> web.Response:
        given = request.match_info["secret"].encode("utf-8", "replace")   # bytes: any character is a mismatch
        if not secrets.compare_digest(given, self.secret.encode("ascii")):
            return web.json_response({"error": "unknown run"}, status=404)
        try:
            number = int(request.match_info["number"])
        except ValueError:
            return web.json_response({"error": "unknown run"}, status=404)
        body = await request.read()
        try:
            read_quiet, deleted = read_quiet_of(body)
        except ValueError as exc:
            LOG.warning("refused the done report of run %d: %s", number, exc)
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"released": self.view.done(number, read_quiet, deleted)})


def read_quiet_of(body: bytes) -> tuple:
    """(read_quiet, deleted): the hosts a done report says the cycle found or left quiet by its own read, and those its plan
    took as deleted (([], []) for an empty body: the report of a cycle that may have died, which takes no host
    out of later runs); ValueError in one sentence."""
    if not body.strip():
        return [], []
    try:
        report = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("the done report is not UTF-8 JSON.")
    if not isinstance(report, dict):
        raise ValueError("the done report's read_quiet is not a list of host names.")
    lists = []
    for key in ("read_quiet", "deleted"):
        hosts = report.get(key, [])
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ValueError("the done report's %s is not a list of host names." % key)
        lists.append(hosts)
    return lists[0], lists[1]


def event_of(run: Run, done_url: str, done_ca: str = "") -> Dict[str, Any]:
    """The queue event: the hosts with work and why they run. meta.hosts limits the rulebook's playbook run
    (all of the target when the view cannot tell who is missing); localhost is in it because the cycle's
    control-node lock and the done report are plays on the controller. leave_alone: the hosts the cycle keeps
    in its play without contacting them (maintenance_cycle_leave_alone)."""
    return {"scheduled_events": {"run": run.number, "hosts": run.hosts, "changed": run.changed, "stale": run.stale,
                                 "leave_alone": run.leave_alone, "done_url": "%s/%d" % (done_url, run.number),
                                 "done_ca": done_ca},
            "meta": {"hosts": (run.hosts or ["all"]) + ["localhost"]}}


def escalate(too_long: List[str], warned: Set[str], seconds: float) -> Set[str]:
    """Say once, per absence, that a host's relay has said for too long that IMDS does not answer there."""
    for host in sorted(set(too_long) - warned):
        LOG.warning("%s's relay has said for over %d s that IMDS does not answer there: cycles contact it again, "
                    "and fail it there while that lasts.", host, seconds)
    return set(too_long)


def settings_of(args: Dict[str, Any]) -> Dict[str, Any]:
    """The source's arguments, checked; ConfigError in one sentence."""
    if not args.get("token_file"):
        raise ConfigError("token_file is required: the file with the token the relays sign their pushes with.")
    if bool(args.get("certfile")) != bool(args.get("keyfile")):
        raise ConfigError("certfile and keyfile go together (HTTPS needs both).")
    if args.get("cafile") and not args.get("certfile"):
        raise ConfigError("cafile checks the source's own certificate: it needs certfile and keyfile.")
    expected = args.get("expected_hosts") or []
    if isinstance(expected, str):
        expected = [h.strip() for h in expected.split(",") if h.strip()]
    checked = {"host": str(args.get("host", "127.0.0.1")), "port": int(args.get("port", 5081)),
               "stale_seconds": float(args.get("stale_seconds", 90)),
               "max_run_seconds": float(args.get("max_run_seconds", 900)),
               "rerun_seconds": float(args.get("rerun_seconds", 60)),
               "tick_seconds": float(args.get("tick_seconds", 0.25)), "expected_hosts": [str(h) for h in expected],
               "max_parallel_runs": int(args.get("max_parallel_runs", 3)),
               "gather_seconds": float(args.get("gather_seconds", 1.0)),
               "certfile": str(args.get("certfile") or ""), "keyfile": str(args.get("keyfile") or ""),
               "cafile": str(args.get("cafile") or ""), "done_host": str(args.get("done_host") or "")}
    if checked["gather_seconds"] < 0:
        raise ConfigError("gather_seconds must not be negative (0 starts a cycle at the first push).")
    if min(checked["stale_seconds"], checked["max_run_seconds"], checked["rerun_seconds"], checked["tick_seconds"],
           checked["max_parallel_runs"]) <= 0:
        raise ConfigError("stale_seconds, max_run_seconds, rerun_seconds, tick_seconds and max_parallel_runs must be "
                          "positive.")
    return checked


WILDCARDS = ("0.0.0.0", "::", "")


def certificate_names(certfile: str) -> list:
    """The DNS names, then the IP addresses, the (first) certificate of certfile carries; ConfigError."""
    from cryptography import x509   # ansible-core's own dependency, on the controller
    try:
        certificate = x509.load_pem_x509_certificate(Path(certfile).read_bytes())
    except (OSError, ValueError) as exc:
        raise ConfigError("cannot read the certificate in %s (%s)." % (certfile, exc))
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return names.get_values_for_type(x509.DNSName) + [str(ip) for ip in names.get_values_for_type(x509.IPAddress)]


def done_host_of(settings: Dict[str, Any]) -> str:
    """Where the cycles send their done report: done_host, else a name the certificate carries (TLS), else the
    listening address (loopback when it is every address)."""
    if settings["done_host"]:
        return settings["done_host"]
    if settings["certfile"]:
        names = certificate_names(settings["certfile"])
        if not names:
            raise ConfigError("the certificate in %s carries no subject alternative name for the done reports to "
                              "reach: set done_host to a name it carries." % settings["certfile"])
        return names[0]
    return "127.0.0.1" if settings["host"] in WILDCARDS else settings["host"]


def tls_of(settings: Dict[str, Any]):
    """The server's TLS context, or None without certfile; ConfigError in one sentence."""
    if not settings["certfile"]:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(settings["certfile"], settings["keyfile"])
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError("cannot load the TLS certificate %s with the key %s (%s)."
                          % (settings["certfile"], settings["keyfile"], exc))
    return context


async def main(queue: asyncio.Queue, args: Dict[str, Any]) -> None:
    settings = settings_of(args)
    view = FleetView(ViewSettings(settings["stale_seconds"], settings["max_run_seconds"], settings["rerun_seconds"],
                                  settings["expected_hosts"], settings["max_parallel_runs"],
                                  settings["gather_seconds"]))
    receiver = Receiver(view, read_token(args["token_file"]))
    app = web.Application(client_max_size=MAX_PUSH_BYTES)
    app.router.add_post("/push", receiver.push)
    app.router.add_post("/done/{secret}/{number}", receiver.done)
    context = tls_of(settings)
    done_host = done_host_of(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings["host"], settings["port"], ssl_context=context)
    await site.start()
    scheme = "https" if context else "http"
    done_url = "%s://%s:%d/done/%s" % (scheme, done_host, settings["port"], receiver.secret)
    expected = settings["expected_hosts"]
    sys.stderr.write("scheduled_events source %s: listening for relay pushes on %s://%s:%d/push, expecting %s\n" % (
        VERSION, scheme, settings["host"], settings["port"],
        "%d hosts (%s)" % (len(expected), ", ".join(expected)) if expected else "any host of the target"))
    sys.stderr.flush()
    warned: Set[str] = set()
    try:
        while True:
            run = view.next_run(time.monotonic())
            if run is not None:
                await queue.put(event_of(run, done_url, settings["cafile"]))
            warned = escalate(view.away_too_long(time.monotonic()), warned, view.settings.away_seconds)
            await asyncio.sleep(settings["tick_seconds"])
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    # A hand test: print the events a local relay's pushes cause (token file as the only argument).
    class _Printer:
        async def put(self, event: Dict[str, Any]) -> None:
            print(event)

    asyncio.run(main(_Printer(), {"token_file": sys.argv[1]}))  # type: ignore[arg-type]
