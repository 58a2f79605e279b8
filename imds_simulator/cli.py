"""Command line: `python -m imds_simulator {serve,generate,scenarios,demo}`."""
from __future__ import annotations

import argparse
import random
import signal
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import rehearsal
from . import scenario as sc
from .engine import ID_CASES, Engine, EngineOptions
from .fleet import Fleet, FleetError, build_fleet, load_fleet_spec, spec_from_fields
from .offline import APPROVAL_POLICIES, GenerateOptions, generate, open_output, write_description
from .server import BindError, ServerOptions, Simulator, make_server
from .wire import MOCK_VM_NAME, SCHEDULED_EVENTS_API_VERSIONS


class UsageError(ValueError):
    """A command-line mistake: printed as one sentence, exit status 2."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.command_line = " ".join(["python -m imds_simulator"] + list(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.run(args) or 0)
    except (UsageError, sc.ScenarioError, FleetError, BindError, rehearsal.RehearsalError, ValueError) as exc:
        print(f"imds_simulator: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"imds_simulator: {exc.strerror or exc} ({getattr(exc, 'filename', '') or 'network'}).", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m imds_simulator",
                                     description="A strict simulator of Azure IMDS Scheduled Events for a fleet of VMs.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="live mode: serve the fleet's IMDS over HTTP on loopback")
    _fleet_args(serve)
    serve.add_argument("--time-scale", type=_positive, default=1.0,
                       help="divide every scenario duration by this factor (timestamps stay on the wall clock)")
    serve.add_argument("--host", default="127.0.0.1", help="listen address (loopback unless --allow-non-loopback)")
    serve.add_argument("--port", type=int, default=0, help="listen port; 0 picks a free one")
    serve.add_argument("--allow-non-loopback", action="store_true", help="allow a non-loopback listen address")
    serve.add_argument("--rate-limit", type=float, default=5.0, help="requests per second per VM before 429 (0: off)")
    serve.add_argument("--first-call-delay", type=float, default=0.0,
                       help="wall seconds the first request of a VM takes (IMDS: up to 120)")
    serve.add_argument("--enabling-window", type=float, default=0.0,
                       help="scenario seconds after enabling during which GET answers 200 with an empty body")
    serve.add_argument("--no-impact", action="store_true", help="keep VMs answering during reboots and freezes")
    serve.add_argument("--log-requests", action="store_true", help="log each request to stderr")
    serve.add_argument("--inventory", metavar="DIR",
                       help="write DIR/inventory.ini (each VM a local host with its own IMDS root and state file, the "
                            "settings the time scale needs), DIR/ansible.cfg (the history callback) and "
                            "DIR/history.jsonl's description marking it simulated: the README's quick start runs "
                            "from DIR as written")
    serve.add_argument("--history", action="append", default=[], metavar="PATH",
                       help="a history a client captures from this simulator (the callback's, a relay's): writes "
                            "PATH.meta.json, which marks it SIMULATED at this time scale")
    serve.add_argument("--mock-server", action="store_true",
                       help="what a client can tell of Microsoft's mock server (Azure-Samples/scheduled-events-mock-"
                            "server): no compute metadata (an HTML 404), lower-case EventIds, ISO NotBefore; one VM, "
                            f"{MOCK_VM_NAME}, unless a fleet is given")
    serve.set_defaults(run=_serve)

    gen = sub.add_parser("generate", help="offline mode: write an observation history (JSON lines)")
    _fleet_args(gen)
    gen.add_argument("--days", type=_positive, default=1.0, help="simulated days")
    gen.add_argument("--poll-interval", type=_positive, default=10.0, help="seconds between two polls of one VM")
    gen.add_argument("--change-only", action="store_true",
                     help="write a line only when a VM's document changes, with previous_observed_at (the event "
                          "relay's history); use --poll-interval 1 for its one-second polls")
    gen.add_argument("--api-version", default="2020-07-01", choices=SCHEDULED_EVENTS_API_VERSIONS)
    gen.add_argument("--approve", default="none", choices=APPROVAL_POLICIES,
                     help="simulate a responder: the first listed VM approves matching events at first sight")
    gen.add_argument("--start", default="2026-01-05T00:00:00Z", help="simulated start time (ISO 8601, UTC)")
    gen.add_argument("--out", required=True, help="output file (.jsonl, or .jsonl.gz)")
    gen.set_defaults(run=_generate)

    scenarios = sub.add_parser("scenarios", help="list the bundled scenarios")
    scenarios.set_defaults(run=_scenarios)

    demo = sub.add_parser("demo", help="serve a 6-VM fleet under platform maintenance and show what a poller sees")
    demo.add_argument("--time-scale", type=_positive, default=120.0)
    demo.add_argument("--seed", type=int, default=7)
    demo.add_argument("--timeout", type=_positive, default=180.0, help="give up after this many wall seconds")
    demo.set_defaults(run=_demo)
    return parser


def _fleet_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="platform-maintenance", help="bundled scenario name, or a scenario file")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="scenario parameter")
    parser.add_argument("--fleet", help="fleet description file (JSON); replaces the flags below")
    parser.add_argument("--kind", choices=("availability_set", "scale_set"))
    parser.add_argument("--name", help="availability set or scale set name")
    parser.add_argument("--vms", type=int)
    parser.add_argument("--fault-domains", type=int)
    parser.add_argument("--update-domains", type=int)
    parser.add_argument("--zone")
    parser.add_argument("--sets", type=int, help="number of sets of --vms VMs each (<name>-a, <name>-b, ...)")
    parser.add_argument("--set-names", type=_names, metavar="A,B,...", help="explicit set names (implies --sets)")
    parser.add_argument("--zones", type=_names, metavar="1,2,3",
                        help="zonal scale set: VMs spread over these zones, all in fault domain 0")
    parser.add_argument("--event-id-case", choices=ID_CASES,
                        help="case of served EventIds for events whose scenario or spec does not say (default upper)")
    parser.add_argument("--seed", type=int, help="seed for every random choice (generate: 0 by default; serve: a new "
                                                 "one each run, so that two runs never serve the same EventIds)")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def _names(text: str) -> List[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r} must be a comma-separated list of names")
    return names


def _params(pairs: List[str]) -> Dict[str, float]:
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            params[name] = float(value)
        except ValueError:
            raise UsageError(f"--param {pair!r} must look like NAME=NUMBER.") from None
        if not sep or not name:
            raise UsageError(f"--param {pair!r} must look like NAME=NUMBER.")
    return params


def fleet_for(args: argparse.Namespace, scenario: sc.Scenario) -> Fleet:
    """The scenario's fleet defaults, then a fleet file or the command-line flags."""
    if args.fleet:
        return build_fleet(load_fleet_spec(args.fleet))
    fields = dict(scenario.fleet, **getattr(args, "fleet_fields", {}))
    overrides = {"kind": args.kind, "name": args.name, "vms": args.vms, "fault_domains": args.fault_domains,
                 "update_domains": args.update_domains, "zone": args.zone, "sets": args.sets,
                 "set_names": args.set_names, "zones": args.zones}
    named = "names" in fields
    for key, value in overrides.items():
        if value is not None:
            fields[key] = value
    sets = len(args.set_names) if args.set_names else (args.sets or 1)
    if named and args.vms is not None and len(fields["names"]) != args.vms * sets:
        raise UsageError(f"scenario {scenario.name} names its VMs, so --vms cannot change their number.")
    try:
        return build_fleet(spec_from_fields(fields, where=f"scenario {scenario.name}'s fleet"))
    except TypeError as exc:
        raise UsageError(f"scenario {scenario.name} has an invalid fleet ({exc}).") from None


def _engine(args: argparse.Namespace, start: datetime, time_scale: float, options: EngineOptions) -> Engine:
    scenario = sc.load(args.scenario, _params(args.param))
    fleet = fleet_for(args, scenario)
    engine = Engine(fleet, None, start, time_scale=time_scale, seed=args.seed, options=options)
    engine.load(scenario, start)
    return engine


def _serve(args: argparse.Namespace) -> int:
    if args.seed is None:  # fresh EventIds: a saved state or a history must never take a new run's event for an old
        args.seed = random.SystemRandom().randrange(1 << 31)
    if args.mock_server and not (args.fleet or args.vms or args.set_names):
        args.fleet_fields = {"kind": "scale_set", "name": "vmss", "names": [MOCK_VM_NAME], "vms": 1, "fault_domains": 1}
    options = EngineOptions(enabling_s=args.enabling_window, simulate_impact=not args.no_impact,
                            event_id_case=args.event_id_case or ("lower" if args.mock_server else "upper"))
    engine = _engine(args, datetime.now(timezone.utc), args.time_scale, options)
    sim = Simulator(engine, ServerOptions(host=args.host, port=args.port, allow_non_loopback=args.allow_non_loopback,
                                          rate_limit=args.rate_limit, first_call_delay_s=args.first_call_delay,
                                          log_requests=args.log_requests, mock_server=args.mock_server),
                    scenario_name=", ".join(engine.scenario_names))
    server = make_server(sim)
    try:  # before serving: the files name the bound port, and a refusal must leave nothing listening
        written = _rehearsal_files(args, engine, sim)
    except BaseException:
        server.server_close()
        raise
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    print(f"imds_simulator ready at {sim.base_url} ({len(engine.fleet.vms)} VMs, scenario "
          f"{sim.scenario_name}, time scale {args.time_scale:g}, seed {args.seed}); VM roots are "
          f"{sim.base_url}/<vm-name>", flush=True)
    for line in written:
        print(line, flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.shutdown()
    return 0


def _rehearsal_files(args: argparse.Namespace, engine: Engine, sim: Simulator) -> List[str]:
    """What --inventory and --history wrote, a line each."""
    lines = []
    what = f"captured from {len(engine.fleet.vms)} simulated VMs at time scale {args.time_scale:g}"
    for history in args.history:
        meta = rehearsal.mark_simulated(Path(history), args.command_line, args.time_scale, what)
        lines.append(f"{meta} marks {history} as SIMULATED")
    if args.inventory:
        inventory = rehearsal.write_rehearsal(Path(args.inventory), engine.fleet.vms, sim.vm_url, args.time_scale,
                                              args.command_line)
        lines.append(f"rehearsal inventory: {inventory} (history {inventory.parent / rehearsal.HISTORY}); run the "
                     f"quick start's steps from {inventory.parent}")
    return lines


def _generate(args: argparse.Namespace) -> int:
    try:
        start = datetime.fromisoformat(args.start.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        raise UsageError(f"--start {args.start!r} is not an ISO 8601 time.") from None
    args.seed = 0 if args.seed is None else args.seed  # one command, one history
    engine = _engine(args, start, 1.0, EngineOptions(record_served=False, event_id_case=args.event_id_case or "upper"))
    options = GenerateOptions(days=args.days, poll_interval_s=args.poll_interval,
                              api_version=args.api_version, approve=args.approve, change_only=args.change_only)
    with open_output(args.out) as out:
        stats = generate(engine, options, out, seed=args.seed)
    # What loads it (event_analysis) then says SIMULATED wherever it shows this history
    write_description(args.out, args.command_line, f"a {len(engine.fleet.vms)}-VM fleet over {args.days:g} days")
    print(f"wrote {stats.observations} observations of {len(engine.fleet.vms)} VMs over {args.days:g} days "
          f"({stats.events} events, {stats.approvals} approvals) to {args.out}")
    return 0


def _scenarios(_args: argparse.Namespace) -> int:
    for scenario in sc.available():
        print(f"{scenario.name:24} {scenario.summary}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    return run_demo(time_scale=args.time_scale, seed=args.seed, timeout_s=args.timeout)

