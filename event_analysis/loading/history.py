"""load_history and the JSON lines -> Parquet converter: files in, one observations frame out."""
from __future__ import annotations

import glob
import gzip
import json
import os
import warnings
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from event_analysis.loading import change_only, reading, records
from event_analysis.loading.reading import UNKNOWN_SCHEMA, BadLine

PathLike = Union[str, os.PathLike]
_REPORT_KEY = b"event_analysis.report"
_DICTIONARY = ("record", "host", "vm", "scale_set", "zone", "location", "event_id", "event_status", "event_type",
               "event_source", "resource_type", "resources", "description", "action", "trigger", "source")


class HistoryError(ValueError):
    """A history that cannot be read at all; the message is one sentence naming the cause."""


def one_sentence(error: BaseException) -> str:
    """A library's error message as a clause of our sentence: its first sentence, without its period."""
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__).split(". ")[0].rstrip(". ")


@dataclass
class LoadReport:
    """What load_history read, and every line it could not use (counted by reason, with examples)."""
    files: List[str] = field(default_factory=list)
    records: int = 0
    observations: int = 0
    approvals: int = 0
    actions: int = 0
    duplicates: int = 0
    bad: Dict[str, int] = field(default_factory=dict)
    examples: List[BadLine] = field(default_factory=list)
    simulated: bool = False
    time_scale: float = 1.0
    resolution: Dict[str, str] = field(default_factory=dict)  # host -> change-only | per-poll

    @property
    def bad_lines(self) -> int:
        return sum(self.bad.values())

    def summary(self) -> str:
        actions = f", {self.actions} actions" if self.actions else ""
        text = (f"read {self.records} records ({self.observations} observations, {self.approvals} approvals"
                f"{actions}) from {len(self.files)} file(s)")
        if self.duplicates:
            text += f"; dropped {self.duplicates} duplicate record(s)"
        kinds = sorted(set(self.resolution.values()))
        if kinds:
            text += "; series: " + ", ".join(
                f"{sum(v == kind for v in self.resolution.values())} host(s) {kind}" for kind in kinds)
        if self.bad:
            reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.bad.items()))
            text += f"; skipped {self.bad_lines} bad line(s): {reasons}"
        return text + "."

    def merge(self, other: "LoadReport") -> None:
        self.files += other.files
        self.records += other.records
        self.observations += other.observations
        self.approvals += other.approvals
        self.actions += other.actions
        self.duplicates += other.duplicates
        for reason, count in other.bad.items():
            self.bad[reason] = self.bad.get(reason, 0) + count
        self.examples = (self.examples + other.examples)[:reading.MAX_EXAMPLES]


def history_files(path_or_glob: Union[PathLike, Sequence[PathLike]]) -> List[Path]:
    """The files a path, a glob or a list of them names, sorted; a clear error when none exist."""
    items = [path_or_glob] if isinstance(path_or_glob, (str, os.PathLike)) else list(path_or_glob)
    found: List[Path] = []
    for item in items:
        text = os.path.expanduser(os.fspath(item))
        matches = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        for match in matches:
            path = Path(match)
            if path.is_dir():
                raise HistoryError(f"{path} is a directory; give a history file or a glob such as {path}/*.jsonl.")
            if not path.is_file():
                raise HistoryError(f"no history file at {path}.")
            found.append(path)
    if not found:
        raise HistoryError(f"no history file matches {path_or_glob}.")
    return found


def load_history(path_or_glob: Union[PathLike, Sequence[PathLike]], *, warn: bool = True) -> pd.DataFrame:
    """Read observation histories (JSON lines, .gz, or Parquet from to_parquet) into an observations frame.

    One row per event per observation; an observation without events keeps one row whose
    event columns are missing; approval records add one row per approved event id
    (`record == "approval"`). Rows are sorted by host and time, duplicates dropped.
    `frame.attrs["report"]` is the LoadReport; bad lines are also announced as a warning.
    """
    tables, report = read_long_tables(history_files(path_or_glob))
    frame = to_frame(tables, report)
    if warn and (report.bad or report.duplicates):
        warnings.warn(report.summary(), HistoryWarning, stacklevel=2)
    return frame


class HistoryWarning(UserWarning):
    """Lines of a history were skipped or merged; the report says which and why."""


def read_long_tables(files: List[Path]) -> Tuple[List[pa.Table], LoadReport]:
    report = LoadReport()
    tables: List[pa.Table] = []
    scales = set()
    for path in files:
        table, file_report = read_file(path)
        tables.append(table)
        report.merge(file_report)
        report.simulated = report.simulated or file_report.simulated
        scales.add(file_report.time_scale)
    if len(scales) > 1:
        raise HistoryError(f"these histories were recorded at different simulator time scales {sorted(scales)}; "
                           "load them separately.")
    report.time_scale = scales.pop()
    return tables, report


def read_file(path: Path) -> Tuple[pa.Table, LoadReport]:
    if path.suffix == ".parquet":
        return _read_parquet(path)
    table, report = _read_bytes(_file_bytes(path), str(path))
    meta = _sidecar(path)
    report.simulated, report.time_scale = bool(meta.get("simulated", False)), float(meta.get("time_scale", 1.0))
    return table, report


def _read_bytes(data: bytes, name: str) -> Tuple[pa.Table, LoadReport]:
    read, bad_lines = reading.read_records(data, name)
    ok, observed_at, approval, action = records.valid_rows(read.table)
    for number, text in reading.rejected_lines(data, np.flatnonzero(~ok), bad_lines) if not ok.all() else []:
        read.add_bad(name, number, UNKNOWN_SCHEMA, text.rstrip(b"\r"))
    table = records.flatten(read.table.filter(pa.array(ok)), observed_at.filter(pa.array(ok)))
    report = LoadReport(files=[name], bad=dict(read.bad_counts), examples=list(read.examples),
                        records=int(ok.sum()), approvals=int((ok & approval).sum()), actions=int((ok & action).sum()))
    report.observations = report.records - report.approvals - report.actions
    return table, report


def load_records(items: Sequence[Dict[str, Any]], source: str) -> pd.DataFrame:
    """An observations frame from records already in memory (e.g. rebuilt from job events), read
    exactly as a history file would be."""
    data = b"".join(json.dumps(item, separators=(",", ":"), default=str).encode("utf-8") + b"\n" for item in items)
    table, report = _read_bytes(data, source)
    return to_frame([table], report)


def _file_bytes(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            head = handle.read(2)
        if head == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                return handle.read()
        return path.read_bytes()
    except (OSError, EOFError) as error:
        raise HistoryError(f"cannot read {path}: {error}.") from None
    except zlib.error as error:  # a damaged deflate stream inside a sound gzip header: not an OSError
        raise HistoryError(f"cannot read {path}: its compressed data is damaged ({one_sentence(error)}); "
                           f"`zcat {path} > saved.jsonl` keeps the lines before the damage.") from None


def _sidecar(path: Path) -> Dict[str, Any]:
    """`<history>.meta.json`, optional: {"simulated": true, "time_scale": 60, "source": "..."}."""
    meta_path = path.with_name(path.name + ".meta.json")
    if not meta_path.is_file():
        return {}
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        scale = float(meta.get("time_scale", 1.0))
    except (ValueError, TypeError, AttributeError) as error:
        raise HistoryError(f"{meta_path} is not a valid history description ({error}).") from None
    if scale <= 0:
        raise HistoryError(f"{meta_path} gives time_scale {scale}; it must be positive.")
    return meta


def to_frame(tables: List[pa.Table], report: LoadReport) -> pd.DataFrame:
    """Long Arrow tables -> the observations frame: sorted, de-duplicated, strings as categories."""
    table = pa.concat_tables(tables) if tables else records.empty_long_table()
    table = table.sort_by([("host", "ascending"), ("observed_at", "ascending")])
    columns = {}
    for name in records.COLUMNS:
        column = table.column(name)
        columns[name] = column.dictionary_encode() if name in _DICTIONARY else column
    frame = pa.table(columns).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    duplicated = frame.duplicated(["record", "host", "observed_at", "event_id"], keep="first")
    if duplicated.any():
        dropped = dropped_records(frame, duplicated)
        frame = frame.loc[~duplicated.to_numpy()].reset_index(drop=True)
        report.duplicates += sum(dropped)
        report.records -= sum(dropped)
        report.observations, report.approvals, report.actions = (
            count - drop for count, drop in zip((report.observations, report.approvals, report.actions), dropped))
    report.resolution = change_only.series_resolution(frame)
    frame = change_only.reconstruct_polls(frame)
    frame.attrs["report"] = report
    return frame


def dropped_records(frame: pd.DataFrame, duplicated: pd.Series) -> Tuple[int, int, int]:
    """Per kind (observation, approval, action), how many whole records the duplicate rows stand for: a record
    written n times has each of its rows n times, n - 1 of them duplicates. Counted from the rows alone, so
    that a part of a history (partitioned.py) counts its own."""
    rows = frame.loc[duplicated.to_numpy(), ["record", "host", "observed_at", "event_id"]]
    copies = rows.groupby(["record", "host", "observed_at", "event_id"], observed=True, dropna=False).size()
    per_record = copies.groupby(level=[0, 1, 2], observed=True).max()
    by_kind = per_record.groupby(level=0, observed=True).sum()
    return tuple(int(by_kind.get(kind, 0)) for kind in (records.OBSERVATION, records.APPROVAL,
                                                        records.ACTION))  # type: ignore[return-value]


def report_of(frame: pd.DataFrame) -> LoadReport:
    """The LoadReport load_history attached to a frame (an empty one for frames built otherwise)."""
    report = frame.attrs.get("report")
    return report if isinstance(report, LoadReport) else LoadReport()


# ----------------------------------------------------------------- Parquet

def to_parquet(source: Union[PathLike, Sequence[PathLike]], destination: PathLike) -> LoadReport:
    """Convert JSON lines histories to one Parquet file that load_history reads back much faster."""
    tables, report = read_long_tables(history_files(source))
    table = pa.concat_tables(tables) if tables else records.empty_long_table()
    table = table.sort_by([("host", "ascending"), ("observed_at", "ascending")])
    meta = dict(asdict(report), examples=[asdict(e) for e in report.examples])
    table = table.replace_schema_metadata({_REPORT_KEY: json.dumps(meta).encode()})
    pq.write_table(table, destination, compression="zstd")
    return report


def read_parquet_table(path: Path, fix: str = "") -> pa.Table:
    """A Parquet file's table, or a HistoryError of one sentence (ending with `fix`, what to do about it)."""
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowException) as error:
        raise HistoryError(f"cannot read {path} as Parquet ({one_sentence(error)}){fix}.") from None


def _read_parquet(path: Path) -> Tuple[pa.Table, LoadReport]:
    table = read_parquet_table(path)
    for name in records.LATER_COLUMNS:  # a file written before change-only histories
        if name not in table.column_names:
            empty = pa.array(np.zeros(table.num_rows, dtype=bool)) if name == "reconstructed" \
                else pa.nulls(table.num_rows, records.long_type(name))
            table = table.append_column(name, empty)
    missing = [c for c in records.COLUMNS if c not in table.column_names]
    if missing:
        raise HistoryError(f"{path} is not an observations Parquet file (missing columns {', '.join(missing)}).")
    meta = json.loads((table.schema.metadata or {}).get(_REPORT_KEY, b"{}"))
    examples = [BadLine(**e) for e in meta.pop("examples", [])]
    report = LoadReport(**{k: v for k, v in meta.items() if k in LoadReport.__dataclass_fields__}, examples=examples)
    report.files = [str(path)]
    return table.select(list(records.COLUMNS)).replace_schema_metadata(None), report
