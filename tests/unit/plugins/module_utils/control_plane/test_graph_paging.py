"""Reading every row of a Resource Graph query (module_utils/control_plane/graph_paging.py) from answers shaped as
the ResourceGraph 2021-03-01 spec's QueryResponse examples (totalRecords, count, resultTruncated, $skipToken, data);
the simulator's own pages over real HTTP are in tests/simulator/test_control_plane.py."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_paging import (
    MAX_PAGES,
    GraphIncomplete,
    GraphRefused,
    all_rows,
    events_query,
    quota_wait,
)

Answer = Tuple[int, Dict[str, Any], Dict[str, str]]


def row(n: int) -> Dict[str, Any]:
    return {"id": "/subscriptions/s/resourcegroups/rg/providers/microsoft.compute/availabilitysets/a/providers/"
                  "microsoft.maintenance/scheduledevents/%d" % n, "type": "microsoft.maintenance/scheduledevents"}


def page(numbers: List[int], total: int, token: str = "", truncated: bool = False) -> Answer:
    answer: Dict[str, Any] = {"totalRecords": total, "count": len(numbers), "data": [row(n) for n in numbers],
                              "facets": [], "resultTruncated": "true" if truncated or token else "false"}
    if token:
        answer["$skipToken"] = token
    return 200, answer, {"x-ms-user-quota-remaining": "14", "x-ms-user-quota-resets-after": "00:00:05"}


def served(*answers: Answer):
    """post(body) answering `answers` in turn, and the bodies it was sent."""
    sent: List[Dict[str, Any]] = []
    left = list(answers)

    def post(body: Dict[str, Any]) -> Answer:
        sent.append(body)
        return left.pop(0)
    return post, sent


def read(*answers: Answer) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    post, sent = served(*answers)
    return all_rows(post, ["s"], events_query(["RG"]), lambda s: None), sent


def test_pages_are_followed_by_their_skip_token_to_the_end_in_a_stable_order() -> None:
    rows, sent = read(page([0, 1], 5, "t1"), page([2, 3], 5, "t2"), page([4], 5))
    assert [r["id"][-1] for r in rows] == ["0", "1", "2", "3", "4"]
    assert [b["options"].get("$skipToken") for b in sent] == [None, "t1", "t2"]
    assert all(b["options"]["$top"] == 1000 and b["subscriptions"] == ["s"] for b in sent)
    assert sent[0]["query"] == ('maintenanceresources | where type == "microsoft.maintenance/scheduledevents" '
                                '| where resourceGroup in~ ("rg") | order by id asc')


@pytest.mark.parametrize("answers, sentence", [
    ([page([0, 1], 3, truncated=True)], "was cut at 2 of 3 rows without a $skipToken"),
    ([page([0, 1], 2, truncated=True)], "was cut at 2 of 2 rows without a $skipToken"),
    ([page([0, 1], 3, "t"), page([2, 3], 4)], "rows changed between pages (3, then 4)"),
    ([page([0, 1], 3, "t"), page([1], 3)], "pages repeated or skipped rows (3 rows for a total of 3)"),
    ([(200, {"count": 1, "data": [row(0)], "totalRecords": "many"}, {})], "gave no number of rows"),
])
def test_a_read_that_is_cut_or_inconsistent_is_no_read(answers: List[Answer], sentence: str) -> None:
    with pytest.raises(GraphIncomplete, match="nothing was read") as incomplete:
        read(*answers)
    assert sentence in str(incomplete.value)


def test_a_read_past_the_page_limit_is_cut() -> None:
    answers = [page([n], MAX_PAGES + 1, "t%d" % n) for n in range(MAX_PAGES)]
    with pytest.raises(GraphIncomplete, match="more than %d pages" % MAX_PAGES):
        read(*answers)


def test_an_error_answer_is_refused_with_its_status_and_body() -> None:
    body = {"error": {"code": "BadRequest", "message": "Query is invalid.", "details": []}}
    with pytest.raises(GraphRefused) as refused:
        read((400, body, {}))
    assert refused.value.status == 400 and refused.value.answer == body


def test_throttled_answers_are_waited_out_as_their_headers_say_then_given_up() -> None:
    throttled = (429, {"error": {"code": "RateLimiting", "message": "Too many requests."}},
                 {"x-ms-user-quota-remaining": "0", "x-ms-user-quota-resets-after": "00:00:03"})
    waits: List[float] = []
    post, _sent = served(throttled, page([0], 1))
    assert len(all_rows(post, ["s"], "q", waits.append)) == 1 and waits == [3.0]
    with pytest.raises(GraphIncomplete, match=r"throttled the read \(429\) 3 times in a row"):
        read(throttled, throttled, throttled)
    silent = (429, throttled[1], {})  # a 429 that says nothing of when: not waited for blindly
    with pytest.raises(GraphIncomplete):
        read(silent)


@pytest.mark.parametrize("headers, throttled, wait", [
    ({"x-ms-user-quota-remaining": "3", "x-ms-user-quota-resets-after": "00:00:05"}, False, 0),
    ({"X-Ms-User-Quota-Remaining": "0", "x-ms-user-quota-resets-after": "00:00:04"}, False, 4.0),
    ({}, False, 0),
    ({"x-ms-user-quota-remaining": "0", "x-ms-user-quota-resets-after": "00:01:00"}, True, None),
    ({"Retry-After": "2"}, True, 2.0),
    ({"x-ms-user-quota-resets-after": "soon"}, True, None),
])
def test_the_quota_headers_say_how_long_to_wait(headers: Dict[str, str], throttled: bool, wait: Any) -> None:
    assert quota_wait(headers, throttled) == wait


def test_the_query_without_resource_groups_reads_the_whole_subscription_in_order() -> None:
    assert events_query([]) == ('maintenanceresources | where type == "microsoft.maintenance/scheduledevents" '
                                '| order by id asc')
