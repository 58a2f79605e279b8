"""Pure document functions: parse, validate, normalise, match this VM, diff."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    DocumentError,
    affects,
    annotate,
    diff_events,
    events_of,
    normalise_event,
    parse_document,
    parse_incarnation,
    parse_not_before,
)

EVENT = {"EventId": "602D9444-D2CD-49C7-8624-8643E7171297", "EventStatus": "Scheduled", "EventType": "Reboot",
         "ResourceType": "VirtualMachine", "Resources": ["FrontEnd_IN_0", "BackEnd_IN_0"],
         "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT", "Description": "Host server is undergoing maintenance.",
         "EventSource": "Platform", "DurationInSeconds": 9}


def document(*events: dict, incarnation: object = 1) -> str:
    return json.dumps({"DocumentIncarnation": incarnation, "Events": list(events)})


def test_a_full_document_is_normalised_to_snake_case() -> None:
    parsed = parse_document(document(EVENT, incarnation=4).encode())
    assert parsed["document_incarnation"] == 4 and parsed["warnings"] == []
    assert parsed["events"] == [{
        "event_id": EVENT["EventId"], "event_type": "Reboot", "event_status": "Scheduled",
        "resource_type": "VirtualMachine", "resources": ["FrontEnd_IN_0", "BackEnd_IN_0"],
        "not_before": "2016-09-19T18:29:47Z", "description": "Host server is undergoing maintenance.",
        "event_source": "Platform", "duration_in_seconds": 9, "known_type": True, "known_status": True}]
    assert parsed["raw"] == json.loads(document(EVENT, incarnation=4))


def test_fields_missing_in_older_api_versions_become_none() -> None:
    old = {k: EVENT[k] for k in ("EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore")}
    (event,) = parse_document(document(old))["events"]
    assert (event["description"], event["event_source"], event["duration_in_seconds"]) == (None, None, None)


@pytest.mark.parametrize("body", [b"", "", "   \n", None])
def test_an_empty_body_means_no_document_yet(body: object) -> None:
    assert parse_document(body) is None


@pytest.mark.parametrize("value, expected", [(7, 7), ("7", 7), (" 12 ", 12), (0, 0)])
def test_incarnation_may_be_an_integer_or_a_numeric_string(value: object, expected: int) -> None:
    assert parse_document(document(incarnation=value))["document_incarnation"] == expected


@pytest.mark.parametrize("body, message", [
    (b"\xff\xfe{}", "IMDS answered with bytes that are not UTF-8 text."),
    ('{"DocumentIncarnation": 3, "Events": [', "IMDS answered with malformed JSON"),
    ("[]", "not a Scheduled Events document"),
    ('{"Events": []}', "not a Scheduled Events document"),
    (document(incarnation=True), "DocumentIncarnation True is not a number."),
    (document(incarnation="x1"), "DocumentIncarnation 'x1' is not a whole number."),
    (document(incarnation=-2), "DocumentIncarnation -2 is negative."),
    ('{"DocumentIncarnation": 1, "Events": {}}', "the document's Events is not a list."),
    (document("text"), "event 0 of the document is not an object."),
    (document({"EventType": "Reboot"}), "event 0 has no EventId."),
    (document(dict(EVENT, Resources="vm1")), "has Resources that are not a list of names."),
    (document(dict(EVENT, NotBefore="tomorrow")), "NotBefore 'tomorrow' is neither an RFC 1123 nor an ISO 8601"),
    (document(dict(EVENT, DurationInSeconds="9")), "DurationInSeconds that is not a whole number."),
    (document({k: v for k, v in EVENT.items() if k != "EventStatus"}), "has no EventStatus."),
])
def test_bad_documents_fail_with_one_sentence_naming_the_cause(body: object, message: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse_document(body)
    text = str(info.value)
    assert message in text and text.endswith(".") and "\n" not in text


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "\uff17", "1\u00b2", "\U0001d7e0"])
def test_incarnation_accepts_ascii_digits_only(value: str) -> None:
    # str.isdigit() says yes to all of these; int() refuses some ("²") and reads others ("٣" is 3).
    with pytest.raises(DocumentError) as info:
        parse_incarnation(value)
    assert str(info.value) == "DocumentIncarnation %r is not a whole number." % value


@pytest.mark.parametrize("event_id", [
    "602d9444-d2cd-49c7-8624-8643e7171297", "602D9444-D2CD-49C7-8624-8643E7171297",
    "602d9444-D2CD-49c7-8624-8643e7171297",
])
def test_event_ids_are_guids_in_either_case_kept_as_served(event_id: str) -> None:
    assert normalise_event(dict(EVENT, EventId=event_id))["event_id"] == event_id


@pytest.mark.parametrize("event_id", [
    "E1", "../../etc/passwd", "{602D9444-D2CD-49C7-8624-8643E7171297}", " 602D9444-D2CD-49C7-8624-8643E7171297",
    "602D9444-D2CD-49C7-8624-8643E7171297\n", "602D9444D2CD49C786248643E7171297",
    "602D9444-D2CD-49C7-8624-8643E717129G",
    "602D9444-D2CD-49C7-8624-8643E71712970", "\uff16" + "02D9444-D2CD-49C7-8624-8643E7171297",
])
def test_an_event_id_that_is_not_a_guid_is_refused_in_one_sentence(event_id: str) -> None:
    with pytest.raises(DocumentError) as info:
        parse_document(document(EVENT, dict(EVENT, EventId=event_id)))
    assert str(info.value) == ("event 1 has EventId %r, which is not a GUID (8-4-4-4-12 hex digits, as IMDS serves "
                               "them)." % event_id)


@pytest.mark.parametrize("value, expected", [
    ("Mon, 19 Sep 2016 18:29:47 GMT", datetime(2016, 9, 19, 18, 29, 47, tzinfo=timezone.utc)),
    ("2016-09-19T18:29:47Z", datetime(2016, 9, 19, 18, 29, 47, tzinfo=timezone.utc)),
    ("2016-09-19T20:29:47+02:00", datetime(2016, 9, 19, 18, 29, 47, tzinfo=timezone.utc)),
    ("2016-09-19T18:29:47.250Z", datetime(2016, 9, 19, 18, 29, 47, 250000, tzinfo=timezone.utc)),
    ("2016-09-19T18:29:47", datetime(2016, 9, 19, 18, 29, 47, tzinfo=timezone.utc)),
    ("", None), (None, None), ("  ", None),
])
def test_not_before_in_rfc1123_or_iso8601(value: object, expected: object) -> None:
    assert parse_not_before(value) == expected


def test_unknown_type_and_status_are_kept_and_flagged() -> None:
    parsed = parse_document(document(dict(EVENT, EventType="Hibernate", EventStatus="Paused")))
    (event,) = parsed["events"]
    assert (event["event_type"], event["known_type"], event["known_status"]) == ("Hibernate", False, False)
    assert len(parsed["warnings"]) == 2 and "unknown EventType 'Hibernate'" in parsed["warnings"][0]


@pytest.mark.parametrize("resources, vm, expected", [
    (["vm1"], "vm1", True), (["VM1"], "vm1", True), (["vm10"], "vm1", False), (["vm1"], "vm10", False),
    (["_vm1"], "vm1", True), (["myvm1"], "vm1", False), (["vmss_1"], "vmss_1", True), (["_vmss_1"], "vmss_1", True),
    (["vmss_10", "vmss_11"], "vmss_1", False), ([], "vm1", False), (["vm1"], "", False),
])
def test_affects_is_an_exact_case_insensitive_match(resources: list, vm: str, expected: bool) -> None:
    assert affects({"resources": resources}, vm) is expected


def test_annotate_adds_match_and_seconds_to_not_before() -> None:
    (event,) = parse_document(document(EVENT))["events"]
    now = datetime(2016, 9, 19, 18, 28, 47, tzinfo=timezone.utc)
    (annotated,) = annotate([event], "backend_in_0", now)
    assert annotated["affects_this_vm"] is True and annotated["seconds_to_not_before"] == 60.0
    assert annotate([event], None, now)[0]["affects_this_vm"] is None


def started(event: dict) -> dict:
    return dict(event, EventStatus="Started", NotBefore="")


def events(*raw: dict) -> list:
    return [normalise_event(e) for e in raw]


def test_diff_names_new_started_removed_and_updated() -> None:
    other = dict(EVENT, EventId="AAAAAAAA-0000-0000-0000-000000000001")
    moved = dict(EVENT, EventId="AAAAAAAA-0000-0000-0000-000000000002")
    gone = dict(EVENT, EventId="AAAAAAAA-0000-0000-0000-000000000003")
    failure = started(dict(EVENT, EventId="AAAAAAAA-0000-0000-0000-000000000004"))
    previous = events(EVENT, moved, gone, other)
    current = events(started(EVENT), dict(moved, NotBefore="Mon, 19 Sep 2016 19:00:00 GMT"), other, failure)
    diff = diff_events(previous, current, 5, 6)
    ids = {key: [e["event_id"][-1] for e in diff[key]] for key in ("new", "started", "removed", "updated")}
    assert ids == {"new": ["4"], "started": ["7", "4"], "removed": ["3"], "updated": ["2"]}
    assert diff["changed"] is True and diff["incarnation_went_backwards"] is False


def test_diff_flags_an_incarnation_that_went_backwards() -> None:
    assert diff_events([], [], 9, 1)["incarnation_went_backwards"] is True
    assert diff_events(events(EVENT), events(EVENT), 1, 1)["changed"] is False


def test_previous_may_be_a_result_a_raw_document_a_list_or_json() -> None:
    raw = json.loads(document(EVENT, incarnation=3))
    result = {"document_incarnation": 3, "events": events(EVENT)}
    for value in (raw, result, json.dumps(raw)):
        assert events_of(value) == (3, events(EVENT))
    assert events_of([EVENT]) == (None, events(EVENT))
    assert events_of(None) == (None, [])
    with pytest.raises(DocumentError, match="previous must be"):
        events_of(42)
    with pytest.raises(DocumentError, match="previous has neither events nor Events."):
        events_of({"x": 1})


# ----------------------------------------------------------------- properties

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
raw_events = st.fixed_dictionaries({
    "EventId": st.uuids().map(lambda u: str(u).upper()),
    "EventStatus": st.sampled_from(["Scheduled", "Started", "Paused"]),
    "EventType": st.sampled_from(["Freeze", "Reboot", "Redeploy", "Preempt", "Terminate", "Hibernate"]),
    "ResourceType": st.just("VirtualMachine"),
    "Resources": st.lists(names, max_size=5),
    "NotBefore": st.one_of(st.just(""), st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1))
                           .map(lambda d: d.strftime("%a, %d %b %Y %H:%M:%S GMT")),
                           st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1))
                           .map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))),
}, optional={"Description": st.text(max_size=30), "EventSource": st.sampled_from(["Platform", "User"]),
             "DurationInSeconds": st.integers(-1, 3600)})
documents = st.builds(lambda evs, inc: {"DocumentIncarnation": inc, "Events": evs},
                      st.lists(raw_events, max_size=6, unique_by=lambda e: e["EventId"]), st.integers(0, 10**6))


@settings(max_examples=100, deadline=None)
@given(doc=documents)
def test_valid_documents_always_parse_and_keep_every_event(doc: dict) -> None:
    parsed = parse_document(json.dumps(doc).encode())
    assert [e["event_id"] for e in parsed["events"]] == [e["EventId"] for e in doc["Events"]]
    assert parsed["raw"] == doc
    assert diff_events(parsed["events"], parsed["events"])["changed"] is False


@settings(max_examples=100, deadline=None)
@given(before=documents, after=documents)
def test_diff_partitions_ids(before: dict, after: dict) -> None:
    old, new = parse_document(before)["events"], parse_document(after)["events"]
    diff = diff_events(old, new)
    old_ids, new_ids = {e["event_id"] for e in old}, {e["event_id"] for e in new}
    assert {e["event_id"] for e in diff["new"]} == new_ids - old_ids
    assert {e["event_id"] for e in diff["removed"]} == old_ids - new_ids
    assert {e["event_id"] for e in diff["started"]} <= {e["event_id"] for e in new if e["event_status"] == "Started"}
    assert not ({e["event_id"] for e in diff["updated"]} & {e["event_id"] for e in diff["started"]})


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(junk=st.one_of(json_values, st.fixed_dictionaries({"DocumentIncarnation": json_values, "Events": json_values})),
       raw=st.binary(max_size=40))
def test_any_input_either_parses_or_raises_document_error(junk: object, raw: bytes) -> None:
    for body in (json.dumps(junk), raw):
        try:
            parse_document(body)
        except DocumentError as exc:
            assert str(exc).endswith(".") and "\n" not in str(exc)


@pytest.mark.parametrize("not_before", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
                                        "Fri, 31 Dec 9999 23:59:59 -0100"])
def test_regression_a_not_before_at_the_calendars_edge_is_a_document_error(not_before: str) -> None:
    with pytest.raises(DocumentError, match="outside the calendar once in UTC"):
        parse_document(document(dict(EVENT, NotBefore=not_before)))


def test_regression_a_5000_digit_incarnation_is_a_document_error() -> None:
    for incarnation in ("9" * 5000, int("9" * 4000)):
        with pytest.raises(DocumentError, match="DocumentIncarnation|malformed JSON"):
            parse_document(document(EVENT, incarnation=incarnation))
