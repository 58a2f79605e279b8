"""The cycle playbook's done report (event-driven runs): the real ansible-playbook against the simulator tells
the event source which hosts it found or left quiet by its own read, the only way a host leaves the source's later runs."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, List

from imds_simulator.fleet import FleetSpec
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet


class DoneReceiver:
    def __init__(self) -> None:
        self.bodies: List[Any] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                receiver.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"released": true}')

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/done/secret/7" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def owed_a_recover(vm: str) -> str:
    """A state that owes `vm` the recover of a Reboot no longer on the document (its prepare done)."""
    gone = {"event_id": "GONE-1", "event_type": "Reboot", "event_status": "Scheduled", "resources": [vm],
            "prepare": "done"}
    return json.dumps({"version": 2, "document_incarnation": 1, "events": [gone], "approved": ["GONE-1"]})


def test_the_cycle_reports_the_hosts_it_found_or_left_quiet_and_no_other(tmp_path: Path) -> None:
    # Time scale 4: the event is on the document (225 s of notice, then Started for 150 s) minutes longer than the
    # run, slowed by a read that never gets an answer, needs on a loaded machine
    # Two sets: every VM of a set keeps the set's events in its state, so the recovered VM is in the other one.
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(vms=3, fault_domains=2, sets=2))
    receiver = DoneReceiver()
    try:
        bench = CycleBench(fleet, tmp_path)
        listed, away, broken, quiet, recovered, also_quiet = fleet.vms
        fleet.inject({"key": "r", "type": "Reboot", "notice_s": 900, "resources": {"names": [listed]}})
        fleet.fault(broken, {"kind": "drop", "count": -1, "path": "any", "method": "any"})  # its read fails
        bench.state_path(recovered).parent.mkdir(parents=True, exist_ok=True)
        bench.state_path(recovered).write_text(owed_a_recover(recovered))
        run = bench.run(extra={"maintenance_cycle_leave_alone": [away], "done_url": receiver.url})
    finally:
        receiver.close()
        fleet.close()
    assert "Tell the event source which hosts this cycle's own read found quiet" in run.stdout, run.stdout[-3000:]
    assert [a["event_id"] for a in bench.actions("recover")] == ["GONE-1"], "its recover ran in this cycle"
    assert receiver.bodies == [{"read_quiet": sorted([quiet, recovered, also_quiet]), "deleted": []}], \
        "the host read quiet and the one this cycle's recover and save left quiet; not the host an event lists, " \
        "the one left alone, nor the one whose read failed; and none taken as deleted"
