"""Live mode: the engine behind a loopback HTTP server, one IMDS root per VM.

    http://HOST:PORT/<vm-name>/metadata/scheduledevents?api-version=...
    http://HOST:PORT/<vm-name>/metadata/instance/compute?api-version=...
    http://HOST:PORT/_simulator/...          control API (Azure VM names never start with "_")

With a one-VM fleet the IMDS paths are also served at the root, like a real VM.
"""
from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import struct
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from . import control_plane
from . import scenario as sc
from . import wire
from .clock import WallClock
from .engine import ApprovalError, Engine
from .faults import Fault, FaultBook, FaultError, parse_fault
from .fleet import VM

MAX_POST_BYTES = 64 * 1024
CONTROL = "/_simulator/"


class BindError(ValueError):
    """A listen address the simulator refuses; one sentence."""


@dataclass
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 0
    allow_non_loopback: bool = False
    rate_limit: float = 5.0          # requests per second per VM (IMDS throttles at 5); 0 = off
    first_call_delay_s: float = 0.0  # wall seconds the (re-)enabling request takes
    log_requests: bool = False
    mock_server: bool = False        # what a client can tell of Microsoft's mock server (wire.mock_server_document)
    # The control plane's face (control_plane.py): bearer token -> roles; None = off (every path 404s as before).
    control_plane_tokens: Optional[Dict[str, List[str]]] = None
    graph_lag_s: float = 0.0         # Resource Graph rows show the events as they were this many seconds ago
    graph_page_rows: int = control_plane.GRAPH_PAGE_ROWS  # rows per Resource Graph answer (Azure: 1,000)
    graph_quota: int = control_plane.GRAPH_QUOTA  # Resource Graph queries per token per window (Azure: 15); 0 = off
    graph_quota_window_s: float = control_plane.GRAPH_QUOTA_WINDOW_S  # the quota's window, wall seconds (Azure: 5)
    # Service principals the token endpoint knows: client id -> {"secret": ..., "token": a key of the tokens above}
    control_plane_clients: Optional[Dict[str, Dict[str, str]]] = None
    # Managed identities: VM name -> {"system": token, <user-assigned client id>: token}, served at its IMDS root
    control_plane_identities: Optional[Dict[str, Dict[str, str]]] = None
    certfile: str = ""               # PEM chain and key: serve HTTPS (the control plane's face is HTTPS in Azure)
    keyfile: str = ""


def check_bind(host: str, allow_non_loopback: bool) -> None:
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise BindError(f"listen address {host!r} is not an IP address.") from None
    if not loopback and not allow_non_loopback:
        raise BindError(f"refusing to listen on non-loopback address {host}; "
                        "pass --allow-non-loopback if you really mean it.")


class Throttle:
    """A token bucket per VM, refilled at `rate` per second (wall clock)."""

    def __init__(self, rate: float):
        self.rate = rate
        self._buckets: Dict[str, Tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, vm: str) -> bool:
        if self.rate <= 0:
            return True
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(vm, (self.rate, now))
            tokens = min(self.rate, tokens + (now - last) * self.rate)
            if tokens < 1:
                self._buckets[vm] = (tokens, now)
                return False
            self._buckets[vm] = (tokens - 1, now)
            return True


class Simulator:
    """Shared state of one live server: engine, faults, logs. Thread-safe."""

    def __init__(self, engine: Engine, options: ServerOptions, scenario_name: str = ""):
        self.engine = engine
        self.options = options
        self.scenario_name = scenario_name
        self.clock = WallClock()
        self.lock = threading.RLock()
        self.faults = FaultBook()
        self.throttle = Throttle(options.rate_limit)
        self.graph = control_plane.GraphSettings(page_rows=options.graph_page_rows, quota=options.graph_quota,
                                                 window_s=options.graph_quota_window_s)
        self.violations: List[Dict[str, Any]] = []
        self.redirects_followed: List[Dict[str, Any]] = []
        self.base_url = ""

    def vm_url(self, name: str) -> str:
        return f"{self.base_url}/{name}"

    def violation(self, rule: str, handler: "Handler") -> None:
        with self.lock:
            self.violations.append({"at": wire.iso_utc(self.clock.now()), "rule": rule,
                                    "method": handler.command, "path": handler.path})


class Handler(BaseHTTPRequestHandler):
    server_version = "imds-simulator"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    sim: Simulator  # set on the subclass made by make_server

    # ------------------------------------------------------------------ plumbing

    def log_message(self, fmt: str, *args: Any) -> None:
        if self.sim.options.log_requests:
            super().log_message(fmt, *args)

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def _send(self, status: int, body: Any, headers: Optional[Dict[str, str]] = None,
              content_type: str = "application/json; charset=utf-8") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, versions: Optional[Any] = None) -> None:
        self._send(status, wire.error_body(message, versions))

    def _read_body(self) -> Optional[bytes]:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._error(411 if length is None else 400, "Bad request. Content-Length is required")
            return None
        if int(length) > MAX_POST_BYTES:
            self._error(413, "Bad request. Body too large")
            return None
        return self.rfile.read(int(length))

    def _drop(self) -> None:
        """Close without a response, as a rebooting or deleted VM would."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ------------------------------------------------------------------ routing

    def _route(self, method: str) -> None:
        target = urlsplit(self.path)
        if self.path.startswith(CONTROL) or target.path.startswith(CONTROL):
            self._control(method, target.path[len(CONTROL):], parse_qs(target.query))
            return
        if self.sim.options.control_plane_tokens is not None and control_plane.is_management(target.path):
            self._management(method, target.path, parse_qs(target.query))
            return
        if not self.path.startswith("/"):
            # Absolute-form target: the client sent this through a proxy.
            self.sim.violation("proxy", self)
            self._error(400, wire.ABSOLUTE_FORM)
            return
        vm_name, rest = self._split_vm(target.path)
        if vm_name is None:
            self._error(404, wire.NOT_FOUND)
            return
        if rest == "/metadata/identity/oauth2/token" and self.sim.options.control_plane_identities is not None:
            if method != "GET":
                self._send(405, wire.error_body("Method not allowed"), {"Allow": "GET"})
                return
            fault = self.sim.faults.take(vm_name, method, "identity")
            if fault is not None and fault.kind == "status":  # IMDS's answers while an identity is being assigned
                self._send(fault.status, {"error": "unavailable", "error_description": "fault injected"})
                return
            identities = {k.lower(): v for k, v in self.sim.options.control_plane_identities.items()}
            self._send(*control_plane.identity_token(identities, vm_name, parse_qs(target.query),
                                                     self.headers.get("Metadata")))
            return
        endpoint = {"/metadata/scheduledevents": "scheduledevents",
                    "/metadata/instance/compute": "compute",
                    "/metadata/instance": "instance"}.get(rest)
        if endpoint is None:
            self._error(404, wire.NOT_FOUND)
            return
        allowed = ("GET", "POST") if endpoint == "scheduledevents" else ("GET",)
        if method not in allowed:
            self._send(405, wire.error_body("Method not allowed"), {"Allow": ", ".join(allowed)})
            return
        if not self._valid_imds_request(endpoint, parse_qs(target.query)):
            return
        self._imds(method, vm_name, endpoint, parse_qs(target.query)["api-version"][0])

    def _split_vm(self, path: str) -> Tuple[Optional[str], str]:
        engine = self.sim.engine
        if path.startswith("/metadata/") and len(engine.fleet.vms) == 1:
            return engine.fleet.vms[0].name, path
        head, _, rest = path.lstrip("/").partition("/")
        vm = engine.fleet.vm(head)
        return (vm.name, "/" + rest) if vm is not None else (None, "")

    def _valid_imds_request(self, endpoint: str, query: Dict[str, List[str]]) -> bool:
        if self.headers.get("X-Forwarded-For") is not None:
            self.sim.violation("x-forwarded-for", self)
            self._error(400, wire.FORWARDED_HEADER)
            return False
        if (self.headers.get("Metadata") or "").lower() != "true":
            self.sim.violation("metadata-header", self)
            self._error(400, wire.MISSING_HEADER)
            return False
        versions = wire.SCHEDULED_EVENTS_API_VERSIONS if endpoint == "scheduledevents" else wire.INSTANCE_API_VERSIONS
        given = query.get("api-version")
        if not given or not given[0]:
            self._error(400, wire.MISSING_VERSION, versions)
            return False
        if len(given) > 1 or given[0] not in versions:
            self._error(400, wire.INVALID_VERSION, versions)
            return False
        return True

    # ------------------------------------------------------------------ IMDS

    def _imds(self, method: str, vm_name: str, endpoint: str, api_version: str) -> None:
        path_kind = "compute" if endpoint in ("compute", "instance") else "scheduledevents"
        fault = self.sim.faults.take(vm_name, method, path_kind)
        if fault is not None and fault.kind == "delay":
            time.sleep(fault.delay_s)
            fault = None
        if fault is not None and fault.kind != "delay":
            if self._apply_fault(fault, vm_name, api_version):
                return
        if not self.sim.throttle.allow(vm_name.lower()):
            self._error(429, wire.THROTTLED)
            return
        if endpoint in ("compute", "instance") and self.sim.options.mock_server:
            self._send(404, wire.MOCK_NOT_FOUND_PAGE, content_type="text/html; charset=utf-8")
        elif endpoint == "compute":
            self._send(200, self.sim.engine.fleet.vm(vm_name).compute_document())  # type: ignore[union-attr]
        elif endpoint == "instance":
            self._send(200, {"compute": self.sim.engine.fleet.vm(vm_name).compute_document()})  # type: ignore[union-attr]
        elif method == "GET":
            self._get_document(vm_name, api_version)
        else:
            self._approve(vm_name)

    def _get_document(self, vm_name: str, api_version: str) -> None:
        while True:
            with self.sim.lock:
                served = self.sim.engine.serve(vm_name, api_version, self.sim.clock.now())
            if served.kind != "frozen":
                break
            # A frozen VM answers when it thaws.
            time.sleep(max(0.0, (served.until - self.sim.clock.now()).total_seconds()) + 0.001)  # type: ignore
        if served.kind in ("down", "deleted"):
            self._drop()
            return
        if served.first_call and self.sim.options.first_call_delay_s:
            time.sleep(self.sim.options.first_call_delay_s)
        if served.kind == "enabling":
            self._send(200, b"")
            return
        self._send(200, wire.mock_server_document(served.document) if self.sim.options.mock_server else served.document)

    def _approve(self, vm_name: str) -> None:
        raw = self._read_body()
        if raw is None:
            return
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            body = raw  # not JSON: the engine logs it and answers 400
        with self.sim.lock:
            if self.sim.engine.condition(vm_name, self.sim.clock.now())[0] != "up":
                self._drop()
                return
            try:
                self.sim.engine.approve(vm_name, body, self.sim.clock.now())
            except ApprovalError as exc:
                self._error(400, str(exc))
                return
        self._send(200, b"")

    def _apply_fault(self, fault: Fault, vm_name: str, api_version: str) -> bool:
        """Answer with the fault; False when the fault lets the request through."""
        kind = fault.kind
        if kind == "status":
            self._error(fault.status, f"Injected fault: HTTP {fault.status}")
        elif kind == "empty_body":
            self._send(200, b"")
        elif kind == "malformed_json":
            self._send(200, b'{"DocumentIncarnation": 3, "Events": [{"EventId": ')
        elif kind == "wrong_shape":
            self._send(200, b'{"Events": {"EventId": "not-a-list"}}')
        elif kind == "non_utf8":
            self._send(200, b'{"DocumentIncarnation": 1, "Events": [], "\xff\xfe": "\xc3\x28"}')
        elif kind == "body":
            self._send(fault.status, fault.body.encode("utf-8"))
        elif kind == "huge":
            self._send(200, self._huge_document(vm_name, api_version, fault.size_bytes))
        elif kind == "redirect":
            self._send(307, wire.error_body("Temporary redirect"),
                       {"Location": f"{self.sim.base_url}{CONTROL}redirect-trap"})
        elif kind == "drop":
            self._drop()
        elif kind == "reset_mid_body":
            self._reset_mid_body()
        return True

    def _huge_document(self, vm_name: str, api_version: str, size: int) -> bytes:
        with self.sim.lock:
            served = self.sim.engine.serve(vm_name, api_version, self.sim.clock.now())
        text = json.dumps(served.document or {"DocumentIncarnation": 1, "Events": []})
        return (text[:-1] + " " * max(0, size - len(text)) + "}").encode("utf-8")

    def _reset_mid_body(self) -> None:
        body = json.dumps({"DocumentIncarnation": 1, "Events": []}).encode() * 20
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        # SO_LINGER 0 turns the close into a TCP reset.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    # ------------------------------------------------------------------ control plane (Azure Resource Manager)

    def _management(self, method: str, path: str, query: Dict[str, List[str]]) -> None:
        length = self.headers.get("Content-Length")
        body = self.rfile.read(int(length)) if length and length.isdigit() and int(length) <= MAX_POST_BYTES else None
        with self.sim.lock:
            status, answer, *headers = control_plane.handle(
                self.sim.engine, self.sim.options, self.sim.base_url, method, path, query,
                self.headers.get("Authorization"), body, self.sim.clock.now(), self.sim.graph)
        self._send(status, answer, headers[0] if headers else None)

    # ------------------------------------------------------------------ control API

    def _control(self, method: str, name: str, query: Dict[str, List[str]]) -> None:
        routes = {
            ("GET", "fleet"): self._c_fleet,
            ("GET", "clock"): self._c_clock,
            ("GET", "events"): self._c_events,
            ("POST", "events"): self._c_inject_events,
            ("POST", "cancel"): self._c_cancel,
            ("GET", "faults"): self._c_faults,
            ("POST", "faults"): self._c_inject_faults,
            ("GET", "approvals"): self._c_approvals,
            ("GET", "timeline"): self._c_timeline,
            ("GET", "violations"): self._c_violations,
            ("GET", "redirect-trap"): self._c_redirect_trap,
            ("POST", "redirect-trap"): self._c_redirect_trap,
        }
        handler = routes.get((method, name))
        if handler is None:
            known = sorted({n for _, n in routes})
            self._send(404, {"error": f"no control endpoint {method} {CONTROL}{name}; known: {', '.join(known)}."})
            return
        handler(query)

    def _json_body(self) -> Optional[Any]:
        raw = self._read_body()
        if raw is None:
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._send(400, {"error": "the request body is not valid JSON."})
            return None

    def _c_fleet(self, _query: Dict[str, List[str]]) -> None:
        engine = self.sim.engine
        with self.sim.lock:
            now = self.sim.clock.now()
            vms = [_fleet_entry(v, self.sim.vm_url(v.name), engine.condition(v.name, now)[0])
                   for v in engine.fleet.vms]
        self._send(200, {"kind": engine.fleet.kind, "name": engine.fleet.name, "scope": engine.fleet.scope,
                         "fault_domains": engine.fleet.fault_domains, "sets": list(engine.fleet.sets),
                         "zones": list(engine.fleet.zones), "scenario": self.sim.scenario_name,
                         "time_scale": engine.time_scale, "base_url": self.sim.base_url, "vms": vms})

    def _c_clock(self, _query: Dict[str, List[str]]) -> None:
        self._send(200, {"now": wire.iso_utc(self.sim.clock.now()), "start": wire.iso_utc(self.sim.engine.start),
                         "time_scale": self.sim.engine.time_scale})

    def _c_events(self, _query: Dict[str, List[str]]) -> None:
        with self.sim.lock:
            self.sim.engine.advance_to(self.sim.clock.now())
            self._send(200, {"events": self.sim.engine.event_summaries()})

    def _c_inject_events(self, _query: Dict[str, List[str]]) -> None:
        body = self._json_body()
        if body is None:
            return
        try:
            scenario = _scenario_from_request(body)
            with self.sim.lock:
                now = self.sim.clock.now()
                self.sim.engine.advance_to(now)  # what was already due is not "created" by this request
                before = len(self.sim.engine.events)
                keys = self.sim.engine.load(scenario, now)
                created = [ev.event_id for ev in self.sim.engine.events[before:]]
        except sc.ScenarioError as exc:
            self._send(400, {"error": str(exc)})
            return
        self._send(201, {"keys": keys, "event_ids": created})

    def _c_cancel(self, _query: Dict[str, List[str]]) -> None:
        body = self._json_body()
        if body is None:
            return
        event_id = body.get("event_id") if isinstance(body, dict) else None
        if not isinstance(event_id, str):
            self._send(400, {"error": 'the body must be {"event_id": "<id>"}.'})
            return
        try:
            with self.sim.lock:
                self.sim.engine.cancel(event_id, self.sim.clock.now())
        except sc.ScenarioError as exc:
            self._send(400, {"error": str(exc)})
            return
        self._send(200, {"event_id": event_id, "status": "Removed", "outcome": "cancelled"})

    def _c_faults(self, _query: Dict[str, List[str]]) -> None:
        self._send(200, {"faults": self.sim.faults.pending()})

    def _c_inject_faults(self, _query: Dict[str, List[str]]) -> None:
        body = self._json_body()
        if body is None:
            return
        try:
            vm_name, faults, clear, disable = _faults_from_request(body, self.sim.engine)
        except FaultError as exc:
            self._send(400, {"error": str(exc)})
            return
        if clear:
            self.sim.faults.clear(vm_name)
        if disable:
            with self.sim.lock:
                self.sim.engine.disable(vm_name)
        self.sim.faults.add(vm_name, faults)
        self._send(201, {"vm": vm_name, "queued": len(faults), "cleared": clear, "disabled": disable})

    def _c_approvals(self, _query: Dict[str, List[str]]) -> None:
        with self.sim.lock:
            self._send(200, {"approvals": list(self.sim.engine.approvals)})

    def _c_timeline(self, query: Dict[str, List[str]]) -> None:
        wanted = {n.lower() for n in query.get("vm", [])}
        with self.sim.lock:
            self.sim.engine.advance_to(self.sim.clock.now())
            vms = {s.vm.name: {"changes": list(s.changes), "served": list(s.served)}
                   for key, s in self.sim.engine.vms.items() if not wanted or key in wanted}
        self._send(200, {"vms": vms})

    def _c_violations(self, _query: Dict[str, List[str]]) -> None:
        with self.sim.lock:
            self._send(200, {"violations": list(self.sim.violations),
                             "redirects_followed": list(self.sim.redirects_followed)})

    def _c_redirect_trap(self, _query: Dict[str, List[str]]) -> None:
        with self.sim.lock:
            self.sim.redirects_followed.append({"at": wire.iso_utc(self.sim.clock.now()), "method": self.command,
                                                "headers": dict(self.headers.items())})
        self._error(400, "Bad request. IMDS clients must not follow redirects")


def _fleet_entry(vm: VM, imds_url: str, state: str) -> Dict[str, Any]:
    """One VM of `/_simulator/fleet`. `availability_set` is not in compute metadata
    (IMDS has no such field), so inventories take it from here."""
    return {"name": vm.name, "fault_domain": vm.fault_domain, "update_domain": vm.update_domain,
            "zone": vm.zone, "resource_id": vm.resource_id, "availability_set": vm.availability_set,
            "vm_scale_set_name": vm.vm_scale_set_name, "set": vm.set_name, "imds_url": imds_url,
            "state": state}


def _scenario_from_request(body: Any) -> sc.Scenario:
    if not isinstance(body, dict) or len({"scenario", "event"} & set(body)) != 1:
        raise sc.ScenarioError("inject either {\"scenario\": NAME, \"params\": {...}} or {\"event\": SPEC}.")
    if "event" in body:
        return sc.from_event(body["event"])
    params = body.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, (int, float)) for v in params.values()):
        raise sc.ScenarioError("params must map parameter names to numbers.")
    if not isinstance(body["scenario"], str) or "/" in body["scenario"]:
        raise sc.ScenarioError("scenario must be the name of a bundled scenario.")
    return sc.load(body["scenario"], {k: float(v) for k, v in params.items()})


def _faults_from_request(body: Any, engine: Engine) -> Tuple[str, List[Fault], bool, bool]:
    if not isinstance(body, dict) or not isinstance(body.get("vm"), str):
        raise FaultError("name the VM: {\"vm\": NAME, \"faults\": [...]}.")
    vm = engine.fleet.vm(body["vm"])
    if vm is None:
        raise FaultError(f"{body['vm']!r} is not a VM of this fleet.")
    unknown = sorted(set(body) - {"vm", "faults", "clear", "disable"})
    if unknown:
        raise FaultError(f"unknown field {unknown[0]!r}; use vm, faults, clear, disable.")
    raw = body.get("faults", [])
    if not isinstance(raw, list):
        raise FaultError("faults must be a list.")
    return vm.name, [parse_fault(f) for f in raw], bool(body.get("clear")), bool(body.get("disable"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (its timeout) is normal here; anything else is a bug worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionError, socket.timeout)):
            return
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


def make_server(sim: Simulator) -> ThreadingHTTPServer:
    options = sim.options
    check_bind(options.host, options.allow_non_loopback)
    handler = type("BoundHandler", (Handler,), {"sim": sim})
    server_class = _Server6 if ":" in options.host else _Server
    server = server_class((options.host, options.port), handler)
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    scheme = "http"
    if options.certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(options.certfile, options.keyfile or None)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    sim.base_url = f"{scheme}://{shown}:{port}"
    return server


def serve_in_thread(sim: Simulator) -> Tuple[ThreadingHTTPServer, threading.Thread]:
    """Start the server on a daemon thread (the demo and in-process tests use this)."""
    server = make_server(sim)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    return server, thread
