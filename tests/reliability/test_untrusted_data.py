"""Nothing from IMDS is ever templated or executed: event text is data, even when it looks like Jinja."""
from __future__ import annotations

import json
from pathlib import Path

from imds_simulator.fleet import FleetSpec
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet


def test_a_jinja_payload_in_an_event_description_stays_text(tmp_path: Path) -> None:
    marker = tmp_path / "templated"
    payload = ("{{ lookup('ansible.builtin.pipe', 'touch %s') }} {%% if true %%}x{%% endif %%} "
               "{{ lookup('ansible.builtin.file', '/etc/hostname') }}" % marker)
    # Time scale 4: the 15-minute notice lasts 225 s, minutes more than the run that approves needs on a loaded machine
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(vms=2, fault_domains=1))
    try:
        (event_id,) = fleet.inject({"key": "jinja", "type": "Reboot", "notice_s": 900, "description": payload,
                                    "resources": {"names": [fleet.vms[0]]}})
        bench = CycleBench(fleet, tmp_path / "bench")
        run = bench.run()
        assert run.returncode == 0, run.stdout[-3000:]
        assert not marker.exists(), "the description was templated"
        (prepared,) = bench.actions("prepare")
        assert prepared["event_id"] == event_id and prepared["description"] == payload
        assert bench.state(fleet.vms[0])["events"][0]["description"] == payload
        assert [a["event_ids"] for a in fleet.approvals()] == [[event_id]]
    finally:
        fleet.close()
    assert json.dumps(payload) in bench.state_path(fleet.vms[0]).read_text()
