"""The relay's decisions (relay/protocol.py): what a poll means, what is pushed, how a push is signed and checked."""
from __future__ import annotations

import json

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (
    CHANGE,
    HEARTBEAT,
    PushError,
    RelaySettings,
    Tracker,
    check_push,
    is_quiet,
    relay_key,
    parse_push,
    sign,
    spool_overflow,
    utc_iso,
    verify,
)

T0 = 1_800_000_000.0
KEY = b"0123456789abcdef0123"
REBOOT = {"EventId": "602D9444-D2CD-49C7-8624-8643E7171297", "EventType": "Reboot", "EventStatus": "Scheduled",
          "Resources": ["vm0"], "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT"}


def doc(incarnation: int, *events: dict) -> dict:
    return {"DocumentIncarnation": incarnation, "Events": list(events)}


def tracker(heartbeat: float = 30.0) -> Tracker:
    return Tracker(RelaySettings(host="web-vm0", heartbeat_seconds=heartbeat), vm={"name": "vm0"})


def test_the_first_poll_is_a_change_and_the_same_document_is_not() -> None:
    relay = tracker()
    first = relay.polled(T0, doc(1), False)
    assert first.push["kind"] == CHANGE and first.record["document_incarnation"] == 1
    assert "previous_observed_at" not in first.record, "nothing was seen before the first poll"
    again = relay.polled(T0 + 1, doc(1), False)
    assert again.record is None and again.push is None, "no change, no heartbeat due"


def test_a_change_record_carries_the_last_poll_that_saw_the_previous_document() -> None:
    relay = tracker()
    relay.polled(T0, doc(1), False)
    for second in range(1, 8):
        relay.polled(T0 + second, doc(1), False)
    step = relay.polled(T0 + 8, doc(2, REBOOT), False)
    assert step.record["previous_observed_at"] == utc_iso(T0 + 7)
    assert step.record["observed_at"] == utc_iso(T0 + 8)
    assert step.record["events"] == [REBOOT] and step.record["vm"] == {"name": "vm0"}
    assert step.push["record"] == step.record and step.push["quiet"] is False


def test_heartbeats_come_every_period_and_say_whether_the_vm_is_quiet() -> None:
    relay = tracker(heartbeat=10)
    relay.polled(T0, doc(1), False)
    pushes = [relay.polled(T0 + s, doc(1), s >= 20).push for s in range(1, 31)]
    beats = [(i + 1, p["quiet"]) for i, p in enumerate(pushes) if p is not None]
    assert beats == [(10, True), (20, False), (30, False)], "saved cycle work makes the VM not quiet"
    assert all(p["kind"] == HEARTBEAT for p in pushes if p)


@pytest.mark.parametrize("document, work, name, quiet", [
    (doc(1), False, "vm0", True),
    (doc(2, REBOOT), False, "vm0", False),
    (doc(2, REBOOT), False, "VM0", False),                # matched as the modules match: case-insensitive
    (doc(2, dict(REBOOT, Resources=["_vm0"])), False, "vm0", False),   # 2017-03-01's underscore
    (doc(2, REBOOT), False, "vm1", True),                 # the set sees it; it lists vm0 only
    (doc(2, dict(REBOOT, Resources="vm0")), False, "vm1", False),   # unreadable Resources: busy
    (doc(1), True, "vm0", False),                         # owed a recover
    (doc(1), False, "", False),                           # a VM that cannot name itself cannot tell
    (None, False, "vm0", False),                          # blind: what cannot be seen is busy
])
def test_quiet_means_no_event_lists_this_vm_and_no_saved_work(
        document: dict, work: bool, name: str, quiet: bool) -> None:
    assert is_quiet(document, work, name) is quiet


def test_failed_polls_record_nothing_the_first_is_pushed_at_once_and_the_answer_after_is_recorded() -> None:
    relay = tracker(heartbeat=5)
    relay.polled(T0, doc(1), False)
    steps = [relay.failed(T0 + s, "cannot reach IMDS", False) for s in range(1, 7)]
    assert all(s.record is None for s in steps)
    first, beat = [s.push for s in steps if s.push]
    assert first["imds_ok"] is False and first["sent_at"] == utc_iso(T0 + 1), "the controller learns it at once"
    assert beat["imds_ok"] is False and beat["imds_errors"] == 6 and beat["last_success_at"] == utc_iso(T0)
    assert beat["quiet"] is False, "regression: a VM whose IMDS is down was reported quiet"
    back = relay.polled(T0 + 7, doc(1), False)
    assert back.record is not None and back.record["previous_observed_at"] == utc_iso(T0), \
        "the same document after an outage is recorded, so that the history shows the silence (T0, T0 + 7]"
    assert back.push is not None and back.push["imds_ok"] is True, "IMDS answering again is pushed at once too"
    after = relay.polled(T0 + 8, doc(1), False)
    assert after.push is None and after.record is None


def test_a_push_says_whether_a_started_event_lists_this_vm() -> None:
    relay = tracker()
    other = dict(REBOOT, EventStatus="Started", Resources=["vm1"])
    assert relay.polled(T0, doc(1, REBOOT, other), False).push["in_started_event"] is False
    mine = relay.polled(T0 + 1, doc(2, dict(REBOOT, EventStatus="Started"), other), False).push
    assert mine["in_started_event"] is True and mine["quiet"] is False


def test_an_empty_answer_is_a_change_to_blind() -> None:
    relay = tracker()
    relay.polled(T0, doc(1), False)
    step = relay.polled(T0 + 1, None, False)
    assert step.record["document_incarnation"] is None and step.record["events"] == []
    assert step.push["document_available"] is False and step.push["quiet"] is False


def signed(push: dict, at: float = T0, key: bytes = KEY) -> tuple:
    body = json.dumps(push).encode()
    return body, sign(body, key, at)


PUSH = {"version": 1, "kind": "change", "host": "web-vm0", "relay_id": "ab12", "seq": 3, "quiet": False}


def test_a_signed_push_verifies_and_parses() -> None:
    body, header = signed(PUSH)
    verify(body, header, KEY, T0 + 10)
    assert parse_push(body)["seq"] == 3


@pytest.mark.parametrize("case, fragment", [
    ("no header", "carries no"),
    ("wrong key", "does not match"),
    ("changed body", "does not match"),
    ("replayed later", "signed 301 s away"),
    ("garbled header", "is not t=<seconds>"),
    ("non-ASCII digits", "is not t=<seconds>"),
])
def test_a_push_that_is_not_ours_is_refused_in_one_sentence(case: str, fragment: str) -> None:
    body, header = signed(PUSH)
    now = T0
    if case == "no header":
        header = None
    elif case == "wrong key":
        body, header = signed(PUSH, key=b"another key, long enough")
    elif case == "changed body":
        body = body.replace(b'"seq": 3', b'"seq": 4')
    elif case == "replayed later":
        now = T0 + 301
    elif case == "garbled header":
        header = "v1=abc"
    else:
        header = "t=\u00b2\u00b2,v1=abc"
    with pytest.raises(PushError, match=fragment):
        verify(body, header, KEY, now)


@pytest.mark.parametrize("body, fragment", [
    (b"\xff", "not UTF-8 JSON"),
    (b"[]", "not a version 1"),
    (json.dumps(dict(PUSH, kind="approve")).encode(), "kind is 'approve'"),
    (json.dumps(dict(PUSH, seq=0)).encode(), "seq is not a positive"),
    (json.dumps(dict(PUSH, seq=True)).encode(), "seq is not a positive"),
    (json.dumps(dict(PUSH, host="")).encode(), "names no host"),
    (json.dumps(dict(PUSH, host="!vm1")).encode(), "not an inventory hostname"),
    (json.dumps(dict(PUSH, host="vm1,vm2")).encode(), "not an inventory hostname"),
    (json.dumps({k: v for k, v in PUSH.items() if k != "quiet"}).encode(), "whether the VM is quiet"),
    (b" " * (1024 * 1024 + 1), "larger than"),
])
def test_malformed_pushes_are_refused(body: bytes, fragment: str) -> None:
    with pytest.raises(PushError, match=fragment):
        parse_push(body)


def test_a_full_spool_drops_the_oldest_and_never_the_newest() -> None:
    assert spool_overflow([5, 3, 4, 6], 2) == [3, 4]
    assert spool_overflow([7], 0) == [], "the newest push always stays"
    assert spool_overflow([1, 2], 5) == []


SECRET = b"the controller's shared secret"


def test_each_host_has_a_key_of_its_own_derived_from_the_secret() -> None:
    import hashlib
    import hmac
    assert relay_key(SECRET, "web-vm0") == hmac.new(SECRET, b"relay-key:web-vm0", hashlib.sha256).hexdigest().encode()
    assert relay_key(SECRET.decode() + "\n", "web-vm0") == relay_key(SECRET, "web-vm0"), "as the token file is read"
    assert relay_key(SECRET, "web-vm0") != relay_key(SECRET, "web-vm1")


def test_a_push_is_checked_with_the_key_of_the_host_it_names() -> None:
    body, header = signed(PUSH, key=relay_key(SECRET, "web-vm0"))
    assert check_push(body, header, SECRET, T0 + 10)["host"] == "web-vm0"
    forged = dict(PUSH, host="web-vm1")   # web-vm0's relay (or root on it) speaking for web-vm1
    body, header = signed(forged, key=relay_key(SECRET, "web-vm0"))
    with pytest.raises(PushError, match="does not match its body with the key of web-vm1") as refused:
        check_push(body, header, SECRET, T0)
    assert refused.value.status == 401
    body, header = signed(PUSH, key=SECRET)   # a relay installed before per-host keys: loud, named
    with pytest.raises(PushError, match="signed with the controller's shared secret.*run the event_relay role"):
        check_push(body, header, SECRET, T0)


@pytest.mark.parametrize("header", ["t=1800000000,v1=\u00e9\u00e9", "t=1800000000,v1=\udcff", "t=%s,v1=ab" % ("9" * 5000)])
def test_a_signature_with_other_than_ascii_or_a_huge_stamp_is_a_clean_refusal(header: str) -> None:
    body = signed(PUSH)[0]
    for check in (lambda: verify(body, header, KEY, T0), lambda: check_push(body, header, SECRET, T0)):
        with pytest.raises(PushError) as refused:
            check()
        assert refused.value.status == 401
