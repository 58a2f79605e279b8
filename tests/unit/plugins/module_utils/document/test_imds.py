"""The IMDS client against the real simulator over real HTTP: header, proxy, redirects, retries, budgets."""
from __future__ import annotations

import json
import time
from typing import List

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import parse_document
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import ImdsClient, ImdsError
from ....simulated_imds import Simulator

VM = "avset-web-vm0"


def client(sim: Simulator, **kwargs: object) -> ImdsClient:
    kwargs.setdefault("backoff", 0.01)
    kwargs.setdefault("timeout", 2.0)
    return ImdsClient(base_url=sim.vm_url(VM), **kwargs)  # type: ignore[arg-type]


def inject(sim: Simulator, *faults: dict) -> None:
    from imds_simulator.faults import parse_fault
    sim.faults.add(VM, [parse_fault(f) for f in faults])


def test_reads_the_document_with_the_metadata_header_and_no_violation(sim: Simulator) -> None:
    parsed = parse_document(client(sim).get_document_body())
    assert parsed["document_incarnation"] >= 1
    assert sim.violations == []


def test_proxy_variables_are_ignored(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # discard port: a proxy that never answers
    monkeypatch.setenv("no_proxy", "")
    assert parse_document(client(sim).get_document_body()) is not None
    assert sim.violations == []


@pytest.mark.parametrize("status", [410, 429, 500, 503])
def test_retryable_statuses_are_retried_then_succeed(sim: Simulator, status: int) -> None:
    inject(sim, {"kind": "status", "status": status, "count": 2})
    imds = client(sim)
    assert parse_document(imds.get_document_body()) is not None
    assert imds.attempts == 3


@pytest.mark.parametrize("kind", ["drop", "reset_mid_body"])
def test_broken_connections_are_retried(sim: Simulator, kind: str) -> None:
    inject(sim, {"kind": kind})
    imds = client(sim)
    assert parse_document(imds.get_document_body()) is not None and imds.attempts == 2


def test_retries_exhausted_give_one_sentence(sim: Simulator) -> None:
    inject(sim, {"kind": "status", "status": 503, "count": -1})
    imds = client(sim, retries=2)
    with pytest.raises(ImdsError) as info:
        imds.get_document_body()
    text = str(info.value)
    assert "HTTP 503: Injected fault: HTTP 503" in text and text.endswith("(gave up after 3 attempts).")
    assert imds.attempts == 3 and info.value.status == 503


@pytest.mark.parametrize("status", [400, 404])
def test_client_errors_fail_at_once_with_imds_text(sim: Simulator, status: int) -> None:
    body = json.dumps({"error": "Bad request. api-version is invalid"})
    inject(sim, {"kind": "body", "status": status, "body": body})
    imds = client(sim)
    with pytest.raises(ImdsError, match=f"with HTTP {status}: Bad request. api-version is invalid.$"):
        imds.get_document_body()
    assert imds.attempts == 1


FLASK_404 = ("<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested "
             "URL was not found on the server. If you entered the URL manually please check your spelling and try "
             "again.</p>\n")


@pytest.mark.parametrize("body, said", [
    (FLASK_404, "with HTTP 404: Not Found."),  # Microsoft's mock server (Flask) for /metadata/instance/compute
    ("<html><body><h1>502 Bad Gateway</h1></body></html>", "with HTTP 404: Not Found."),  # no title: the reason
    ("upstream said no\nand a second line\n", "with HTTP 404: upstream said no and a second line."),
])
def test_an_error_page_is_one_sentence_never_its_markup(sim: Simulator, body: str, said: str) -> None:
    """Issue 27: a stand-in's HTML error page was pasted into the error message."""
    inject(sim, {"kind": "body", "status": 404, "body": body, "path": "compute"})
    with pytest.raises(ImdsError) as info:
        client(sim).get_compute()
    assert str(info.value).endswith(said) and "<" not in str(info.value) and "\n" not in str(info.value)


def test_a_wrong_api_version_is_reported_with_imds_own_words(sim: Simulator) -> None:
    with pytest.raises(ImdsError, match="HTTP 400: Bad request. api-version is invalid"):
        client(sim, api_version="2015-01-01").get_document_body()


def test_redirects_are_never_followed(sim: Simulator) -> None:
    inject(sim, {"kind": "redirect"})
    with pytest.raises(ImdsError, match="redirect \\(HTTP 307 to .*redirect-trap\\); IMDS clients never follow"):
        client(sim).get_document_body()
    assert sim.redirects_followed == []


def test_first_call_gets_the_long_budget_later_calls_do_not(sim: Simulator) -> None:
    inject(sim, {"kind": "delay", "delay_s": 1.0})
    imds = client(sim, timeout=0.3, first_call_timeout=5.0)
    assert parse_document(imds.get_document_body()) is not None and imds.attempts == 1
    inject(sim, {"kind": "delay", "delay_s": 1.0})
    started = time.monotonic()
    assert parse_document(imds.get_document_body()) is not None
    assert imds.attempts == 3  # the second call timed out once (0.3 s budget), then succeeded
    assert time.monotonic() - started < 1.0 + 2.0  # bounded: it did not wait out the first-call budget


def test_a_timeout_without_the_long_budget_is_retried(sim: Simulator) -> None:
    inject(sim, {"kind": "delay", "delay_s": 1.0})
    imds = client(sim, timeout=0.3, first_call_timeout=0.3)
    assert parse_document(imds.get_document_body()) is not None and imds.attempts == 2


def test_empty_body_is_no_document(sim: Simulator) -> None:
    inject(sim, {"kind": "empty_body"})
    assert parse_document(client(sim).get_document_body()) is None


def test_approve_posts_one_request_for_several_ids(sim: Simulator) -> None:
    imds = client(sim)
    deadline = time.monotonic() + 5
    ids: List[str] = []
    while not ids and time.monotonic() < deadline:  # the scenario's event appears 5/60 s after start
        ids = [e["event_id"] for e in parse_document(imds.get_document_body())["events"]]
    assert ids, "the scenario schedules an event within 0.1 s"
    imds.approve(ids)
    (entry,) = sim.engine.approvals
    assert entry["vm"] == VM and entry["event_ids"] == ids and entry["accepted"] is True


@pytest.mark.parametrize("url", ["ftp://169.254.169.254", "169.254.169.254", "file:///etc/passwd", "http://", ""])
def test_only_http_base_urls_are_accepted(url: str) -> None:
    with pytest.raises(ImdsError, match="is not an http:// or https:// base URL.$"):
        ImdsClient(base_url=url)


def test_compute_metadata_is_read(sim: Simulator) -> None:
    compute = client(sim).get_compute()
    assert compute["name"] == VM and compute["platformFaultDomain"] == "0"
