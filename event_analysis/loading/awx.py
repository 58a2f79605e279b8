"""Histories rebuilt from job events: AWX / Automation Controller's REST API, or ansible-runner artifacts.

AWX throws its execution environment away after each job, so a history file written
inside it is lost; the job events it keeps hold every module result. These loaders turn
them into the same observation records the history callback writes, with the callback's
own record builders (a copy of plugins/module_utils/observation/history_records.py), then into the same frame
load_history returns, or into a history file the notebooks read (write_history;
`python -m event_analysis from-awx`).
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional

import pandas as pd

from event_analysis.loading import history_records  # a generated copy of the collection's (tools/copy_history_records.py)
from event_analysis.loading.history import HistoryError, load_records

RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_item_on_ok", "runner_item_on_failed", "runner_retry")


def _utc(created: Any) -> Optional[str]:
    """A job event's `created` time in the schema's form (AWX and ansible-runner both give ISO 8601)."""
    if not isinstance(created, str) or not created:
        return None
    try:
        moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def records_from_job_events(events: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Observation, approval and action records from job events, in the order the job produced them (no
    `trigger`: job events do not carry the job's extra vars)."""
    records: List[Dict[str, Any]] = []
    vms: Dict[str, Dict[str, Any]] = {}
    for job_event in sorted(events, key=lambda e: e.get("counter", 0)):
        data = job_event.get("event_data") or {}
        result = data.get("res")
        if job_event.get("event") not in RESULT_EVENTS or not isinstance(result, dict):
            continue
        if job_event.get("event") in ("runner_on_ok", "runner_on_failed") and isinstance(result.get("results"), list):
            continue  # a loop's summary: its items came as runner_item_* events
        module = str(data.get("resolved_action") or data.get("task_action") or "").rsplit(".", 1)[-1]
        host = data.get("host") or job_event.get("host_name") or "unknown"
        record = history_records.record_of_result(module, host, result, vms, observed_at=_utc(job_event.get("created")),
                                                  check_mode=bool(result.get("check_mode")))
        if record is not None:
            records.append(record)
    return records


# ----------------------------------------------------------------- ansible-runner artifacts

def runner_job_events(artifacts: Path) -> Iterator[Dict[str, Any]]:
    """The job events of an ansible-runner run: ARTIFACTS/<ident>/job_events/*.json (or that folder)."""
    folder = artifacts if artifacts.name == "job_events" else artifacts / "job_events"
    if not folder.is_dir():
        raise HistoryError(f"no job_events folder in {artifacts}; give an ansible-runner artifacts/<ident> folder.")
    for path in folder.glob("*.json"):
        try:
            yield json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue  # ansible-runner writes each event file whole; a partial one is from a killed run


def load_runner_artifacts(artifacts: "str | Path") -> pd.DataFrame:
    """An observations frame from an ansible-runner artifacts folder (what AWX keeps per job)."""
    path = Path(artifacts).expanduser()
    return load_records(records_from_job_events(runner_job_events(path)), f"ansible-runner {path}")


# ----------------------------------------------------------------- AWX / Automation Controller REST API

def awx_job_events(base_url: str, job_id: int, token: str, *, page_size: int = 200, timeout: float = 30.0,
                   session: Any = None) -> Iterator[Dict[str, Any]]:
    """Every event of one job from /api/v2/jobs/<id>/job_events/, following `next` across pages (token auth)."""
    try:
        import requests  # the package's `awx` extra: the rest of the library works without it
    except ImportError:
        raise HistoryError("reading a job from AWX needs the requests package: pip install "
                           "'azure-imds-scheduled-events-analysis[awx]' (or pip install requests).") from None

    http = session or requests.Session()
    http.headers.update({"Authorization": f"Bearer {token}", "Accept": "application/json"})
    root = base_url.rstrip("/")
    url: Optional[str] = f"{root}/api/v2/jobs/{int(job_id)}/job_events/?order_by=counter&page_size={page_size}"
    while url:
        try:
            response = http.get(url, timeout=timeout)
        except requests.RequestException as error:
            raise HistoryError(f"cannot reach {root}: {error}.") from None
        if response.status_code in (401, 403):
            raise HistoryError(f"{root} refused the token for job {job_id} (HTTP {response.status_code}).")
        if response.status_code != 200:
            raise HistoryError(f"{root} answered HTTP {response.status_code} for the events of job {job_id}.")
        try:
            page = response.json()
            yield from page["results"]
        except (ValueError, KeyError, TypeError):
            raise HistoryError(f"{root} did not answer with a page of job events for job {job_id}.") from None
        following = page.get("next")
        url = (following if following.startswith("http") else root + following) if following else None


def load_awx_job(base_url: str, job_id: int, token: str, **options: Any) -> pd.DataFrame:
    """An observations frame from an AWX / Automation Controller job's events."""
    events = list(awx_job_events(base_url, job_id, token, **options))
    return load_records(records_from_job_events(events), f"AWX job {job_id} at {base_url}")


# ----------------------------------------------------------------- a history file from a job

def write_history(records: List[Dict[str, Any]], destination: "str | Path") -> int:
    """Write records as a JSON-lines history (the callback's own line format); returns how many. An existing
    file is never overwritten: a rebuilt history must not replace one that holds data."""
    path = Path(destination).expanduser()
    if path.exists():
        raise HistoryError(f"{path} exists; give a new file name (a rebuilt history never replaces a history).")
    try:
        with open(path, "xb") as handle:
            for record in records:
                handle.write(history_records.record_line(record))
    except OSError as error:
        raise HistoryError(f"cannot write {path}: {error.strerror or error}.") from None
    return len(records)
