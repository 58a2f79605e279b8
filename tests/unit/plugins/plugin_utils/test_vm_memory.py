"""The control node's memory of each VM's fault domain (plugin_utils/vm_memory.py)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.vm_memory import update

NOW = datetime(2026, 11, 24, 20, 0, tzinfo=timezone.utc)
VM0 = {"name": "vm0", "fault_domain": 0, "update_domain": 0, "vm_scale_set_name": "", "zone": "",
       "resource_id": "/subscriptions/x/vm0", "os_type": "Linux"}


def test_a_read_is_remembered_and_returned_with_what_was_known() -> None:
    text, known, note, _outside, _deleting = update(None, {"web0": VM0}, NOW, 24)
    assert note == "" and known["web0"]["fault_domain"] == 0 and "os_type" not in known["web0"]
    later, known, note, _outside, _deleting = update(text, {"web1": dict(VM0, name="vm1", fault_domain=1)}, NOW + timedelta(hours=1), 24)
    assert sorted(known) == ["web0", "web1"] and note == ""
    assert json.loads(later)["vms"]["web0"]["seen_at"] == NOW.isoformat(), "kept as first seen"


def test_a_newer_read_replaces_the_old_and_old_entries_are_forgotten() -> None:
    text = update(None, {"web0": VM0}, NOW, 24)[0]
    moved = update(text, {"web0": dict(VM0, fault_domain=2)}, NOW + timedelta(hours=1), 24)[1]
    assert moved["web0"]["fault_domain"] == 2
    known = update(text, {}, NOW + timedelta(hours=25), 24)[1]
    assert known == {}, "a VM not read for a day may have been redeployed elsewhere"


def test_reads_that_do_not_tell_the_fault_domain_are_not_remembered() -> None:
    known = update(None, {"a": None, "b": {"name": "vm1"}, "c": dict(VM0, name="")}, NOW, 24)[1]
    assert known == {}


def test_a_damaged_file_starts_afresh_with_a_note_and_unknown_vms_stay_unknown() -> None:
    for text in ("{", "[]", json.dumps({"version": 9, "vms": {}}), json.dumps({"version": 1, "vms": []})):
        written, known, note, _outside, _deleting = update(text, {}, NOW, 24)
        assert known == {} and "starts afresh" in note and json.loads(written)["vms"] == {}
    entries = {"web0": {"vm": {"name": "vm0"}, "seen_at": NOW.isoformat()}, "web1": {"vm": VM0, "seen_at": "yesterday"}}
    assert update(json.dumps({"version": 1, "vms": entries}), {}, NOW, 24)[1] == {}


def test_vms_outside_the_target_are_remembered_per_set_after_their_events_are_gone() -> None:
    """The split-set rule (cycle/split_sets.py): the danger, the other run's drain, comes after the event is gone."""
    first = update(None, {"web0": VM0}, NOW, 24, {"availability set as1": ["win0", "win1"]})
    assert first.outside == {"availability set as1": ["win0", "win1"]}
    later = update(first.text, {"web0": VM0}, NOW + timedelta(hours=23), 24, {})
    assert later.outside == {"availability set as1": ["win0", "win1"]}, "remembered with no event listing them now"
    assert update(later.text, {}, NOW + timedelta(hours=25), 24).outside == {}, "forgotten after max_age_hours"


def test_a_vm_outside_the_target_becomes_its_own_once_a_read_of_the_target_reports_it() -> None:
    text = update(None, {"web0": VM0}, NOW, 24, {"availability set as1": ["WIN0", "win1"]}).text
    moved_in = update(text, {"win0": dict(VM0, name="win0", fault_domain=1)}, NOW + timedelta(hours=1), 24)
    assert moved_in.outside == {"availability set as1": ["win1"]}, "the operator put win0 in the target"


def test_a_damaged_outside_section_is_left_out_not_a_failure() -> None:
    entries = {"web0": {"vm": VM0, "seen_at": NOW.isoformat()}}
    for outside in ([], {"as1": ["win0"]}, {"as1": {"win0": "yesterday"}}):
        memory = update(json.dumps({"version": 1, "vms": entries, "outside": outside}), {}, NOW, 24)
        assert memory.outside == {} and sorted(memory.vms) == ["web0"] and memory.note == ""


PREEMPT = {"event_id": "E1", "event_type": "Preempt", "resources": ["vm0"]}
VM1 = dict(VM0, name="vm1", fault_domain=1)


def test_a_sighting_of_a_vms_own_delete_started_is_remembered_for_its_host_from_the_first() -> None:
    """cycle/deleted.py: the plan takes a VM silent since then as deleted. A VM being deleted rarely answers, so
    the sighting usually comes from another VM of its set; the first sighting is what counts."""
    known = update(None, {"web0": VM0, "web1": VM1}, NOW, 24).text
    first = update(known, {"web1": dict(VM1, started_deletes=[PREEMPT])}, NOW, 24)  # web0 did not answer
    assert first.deleting == {"web0": {"event_id": "E1", "event_type": "Preempt", "started_seen_at": NOW.isoformat()}}
    assert "deleting" not in first.vms["web0"]
    later = NOW + timedelta(seconds=30)
    again = update(first.text, {"web1": dict(VM1, started_deletes=[dict(PREEMPT, event_id="e1", resources=["VM0"])])},
                   later, 24)
    assert again.deleting["web0"]["started_seen_at"] == NOW.isoformat(), "the same event (any case) keeps its first"
    silent = update(again.text, {"web1": VM1}, later + timedelta(minutes=5), 24)
    assert silent.deleting["web0"]["event_id"] == "E1", "the event is gone; the sighting stays while web0 is silent"
    answered = update(silent.text, {"web0": VM0}, later + timedelta(minutes=6), 24)
    assert answered.deleting == {}, "web0 answered: stopped and started again, or never gone"


def test_a_deleted_vm_is_remembered_past_max_age_so_that_it_does_not_turn_unknown() -> None:
    text = update(None, {"web0": dict(VM0, started_deletes=[PREEMPT]), "web1": VM1}, NOW, 24).text
    later = update(text, {}, NOW + timedelta(days=2), 24)
    assert sorted(later.vms) == ["web0"] and later.deleting["web0"]["event_id"] == "E1"
    assert update(later.text, {}, NOW + timedelta(days=31), 24).vms == {}


def test_a_damaged_sighting_is_no_sighting() -> None:
    entries = {"web0": {"vm": VM0, "seen_at": NOW.isoformat(), "deleting": "soon"}}
    memory = update(json.dumps({"version": 1, "vms": entries}), {}, NOW, 24)
    assert memory.deleting == {} and sorted(memory.vms) == ["web0"]
    for damaged in ({"event_type": "Preempt", "resources": ["vm0"]}, dict(PREEMPT, resources="vm0"), "E1"):
        assert update(None, {"web0": dict(VM0, started_deletes=[damaged])}, NOW, 24).deleting == {}, damaged


def test_the_file_is_json_with_one_vm_a_line() -> None:
    text = update(None, {"web0": VM0, "web1": dict(VM0, name="vm1")}, NOW, 24, {"availability set as1": ["x"]}).text
    data = json.loads(text)
    assert sorted(data["vms"]) == ["web0", "web1"] and data["outside"] == {"availability set as1": {"x": NOW.isoformat()}}
    (web1,) = [line for line in text.splitlines() if '"vm1"' in line]
    assert web1.startswith(' "web1": {') and json.loads(web1.split(": ", 1)[1].rstrip(",")) == data["vms"]["web1"]
    assert json.loads(update(None, {}, NOW, 24).text) == {"version": data["version"], "outside": {}, "vms": {}}
