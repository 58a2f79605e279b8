"""The control-plane modules, run by real ansible-playbook on the controller against the simulator's control-plane
face over HTTPS (a test CA): a service principal from the environment, as azure.azcollection reads it, and the
controller's managed identity (from a simulated VM's IMDS) and the Azure CLI's login (a TEST DOUBLE of `az`, which
is not installed here) when asked for; events read from Resource Graph and placed on hosts; an acknowledge that
starts the event the VMs' IMDS then serves Started; check mode and a refused identity approve nothing."""
from __future__ import annotations

import json
import os
import ssl
import urllib.request
from pathlib import Path

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import parse_document
from imds_simulator.fleet import FleetSpec
from tests.certificates import certificate_chain
from tests.live_fleet import LiveFleet
from tests.modules.harness import FQCN, play

CONTRIBUTOR = "Scheduled Events Contributor"
AZ_DOUBLE = Path(__file__).resolve().parent / "azure_cli_double"


def test_read_from_resource_graph_then_acknowledge_and_the_vms_see_it_started(tmp_path: Path) -> None:
    ca, cert, key = certificate_chain(tmp_path)
    fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=2, fault_domains=1), simulate_impact=False,
                      certfile=str(cert), keyfile=str(key),
                      control_plane_tokens={"t-operator": [CONTRIBUTOR], "t-reader": ["Reader"]},
                      control_plane_clients={"operator-app": {"secret": "operator-secret", "token": "t-operator"},
                                             "reader-app": {"secret": "reader-secret", "token": "t-reader"}},
                      # AZURE_CLIENT_ID (the principal's, below) names the managed identity too, as azure.azcollection
                      # reads it: the controller's VM has one of that client id, beside its system-assigned one
                      control_plane_identities={"avset-web-vm0": {"system": "t-operator", "operator-app": "t-operator"}})
    try:
        # At time scale 5: 360 s of notice (the play's acknowledge, its seventh task, must come minutes before it on
        # a loaded machine, or the event starts by itself), Started for 360 s (past the playbook's last read)
        (event_id,) = fleet.inject({"key": "r", "type": "Reboot", "notice_s": 1800, "started_for_s": 1800,
                                    "resources": {"names": fleet.vms}})
        vm_ids = {f"web{i}": vm.resource_id for i, vm in enumerate(fleet.engine.fleet.vms)}
        scope = "{{ r_read.events[0].scope }}"
        acknowledge = f"{FQCN}.scheduled_events_acknowledge"
        run = play(tmp_path, None, [
            ("read", {f"{FQCN}.scheduled_events_control_plane_info": {"vm_ids": vm_ids}}),
            ("as_identity", {f"{FQCN}.scheduled_events_control_plane_info": {"vm_ids": vm_ids, "auth_source": "msi"}}),
            ("no_identity", {f"{FQCN}.scheduled_events_control_plane_info": {
                "vm_ids": vm_ids, "auth_source": "msi", "client_id": "nobody"}}),
            ("as_cli", {f"{FQCN}.scheduled_events_control_plane_info": {"vm_ids": vm_ids, "auth_source": "cli"}}),
            ("rehearse", {acknowledge: {"scope": scope, "event_ids": [event_id]}, "check_mode": True}),
            ("refused", {acknowledge: {"scope": scope, "event_ids": [event_id], "client_id": "reader-app",
                                       "secret": "reader-secret", "tenant": "contoso"}}),
            ("approve", {acknowledge: {"scope": scope, "event_ids": [event_id]}}),
            ("after", {f"{FQCN}.scheduled_events_control_plane_info": {"vm_ids": vm_ids}}),
        ], urls={"controller": "unused"}, env={
            "AZURE_CLIENT_ID": "operator-app", "AZURE_SECRET": "operator-secret", "AZURE_TENANT": "contoso",
            "AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
            "AZURE_CLOUD_ENVIRONMENT": fleet.sim.base_url, "REQUESTS_CA_BUNDLE": str(ca), "SSL_CERT_FILE": str(ca),
            # the controller is avset-web-vm0: its IMDS serves its managed identity's token
            "AZURE_POD_IDENTITY_AUTHORITY_HOST": fleet.url("avset-web-vm0"),
            "PATH": f"{AZ_DOUBLE}{os.pathsep}{os.environ['PATH']}", "AZ_DOUBLE_TOKEN": "t-operator"})
        request = urllib.request.Request(fleet.url(fleet.vms[1]) + "/metadata/scheduledevents?api-version=2020-07-01",
                                         headers={"Metadata": "true"})
        with urllib.request.urlopen(request, timeout=10, context=ssl.create_default_context(cafile=str(ca))) as got:
            (imds,) = parse_document(got.read())["events"]
        approvals = [a for a in fleet.approvals() if a["accepted"]]
    finally:
        fleet.close()
    read = run.of("controller", "read")
    assert not read.get("failed"), json.dumps(read)[:2000] + run.stdout[-2000:]
    (event,) = read["events"]
    assert event["event_id"] == event_id and event["event_status"] == "Scheduled" and event["source"] == "resource_graph"
    assert read["hosts"] == {"web0": [event_id], "web1": [event_id]} and read["unmapped"] == {} == read["ambiguous"]
    assert event["scope"].endswith("/providers/Microsoft.Compute/availabilitySets/avset-web")
    for source in ("as_identity", "as_cli"):
        assert run.of("controller", source)["hosts"] == read["hosts"], json.dumps(run.of("controller", source))[:600]
    no_identity = run.of("controller", "no_identity")
    assert no_identity["failed"] and no_identity["msg"] == \
        "The managed identity nobody gave no token (HTTP 400: Identity not found).", no_identity
    rehearsal = run.of("controller", "rehearse")
    assert rehearsal["changed"] and rehearsal["would_approve"] == [event_id] and rehearsal["approved"] == []
    refused = run.of("controller", "refused")
    assert refused["failed"] and "needs the Scheduled Events Contributor role" in refused["msg"], refused
    assert run.of("controller", "approve")["approved"] == [event_id] and run.of("controller", "approve")["changed"]
    assert run.of("controller", "after")["events"][0]["event_status"] == "Started"
    assert imds["event_status"] == "Started", "approved from the control plane, started on the VMs"
    assert [(a["via"], a["event_ids"]) for a in approvals] == [("control_plane", [event_id])], "one real approval"
    assert "operator-secret" not in run.stdout + run.stderr
