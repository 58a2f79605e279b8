"""Histories too big for memory: partitioned by host through Parquet, analysed one part at a time.

A month of one-second histories of 2,000 VMs is millions of records and gigabytes of JSON. What the
notebooks compute per (event, VM) depends on that VM's own series only, plus two things that cross VMs:
approval and action records (an approval names an event other VMs saw) and the set each VM belongs to
(revealed by co-sightings across VMs). So `partition_history` reads one source file at a time and writes
each file's observations to N Parquet parts by host (all of a host's rows in one part), approval and action
records to one shared file; `read_parts` then yields one part's observations frame (with every approval and
action record) at a time, so memory holds one part, however long the history. The set evidence is small
and gathered whole (sets.set_evidence).
"""
from __future__ import annotations

import json
import os
import shutil
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from event_analysis.loading import history, records
from event_analysis.loading.history import HistoryError, LoadReport, PathLike
from event_analysis.loading.reading import BadLine

DESCRIPTION = "history.json"   # marks a folder as a partitioned history; holds the load report
RECORDS = "records.parquet"    # approval and action records of every host
DEFAULT_PARTS = 16


def part_of(host: str, parts: int) -> int:
    """The part a host's rows go to: stable across runs and machines (not Python's salted hash)."""
    return zlib.crc32(host.encode("utf-8")) % parts


@dataclass
class Partitioned:
    """A partitioned history folder: its parts and the load report of the files it was made from."""
    folder: Path
    parts: int
    report: LoadReport

    def part_path(self, index: int) -> Path:
        return self.folder / f"part-{index:03d}.parquet"


def is_partitioned(path: PathLike) -> bool:
    return Path(path).expanduser().is_dir() and (Path(path).expanduser() / DESCRIPTION).is_file()


def partition_history(source: Union[PathLike, Sequence[PathLike]], destination: PathLike,
                      parts: int = DEFAULT_PARTS) -> LoadReport:
    """Read JSON-lines histories (paths, globs; .gz) one file at a time into a new folder of `parts` Parquet
    parts by host. Returns the load report (bad lines by reason, as load_history counts them)."""
    if not 1 <= parts <= 4096:
        raise HistoryError(f"parts must be between 1 and 4096, not {parts}.")
    folder = Path(destination).expanduser()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise HistoryError(f"{folder} exists and is not an empty folder; give a new folder for the partitioned "
                           "history.")
    partial = folder.with_name(f".{folder.name}.partial-{os.getpid()}")  # renamed to `folder` once complete
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        report = _partition_into(source, Partitioned(partial, parts, LoadReport()))
        if folder.exists():
            folder.rmdir()
        os.replace(partial, folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # a failure leaves nothing behind
    return report


def _partition_into(source: Union[PathLike, Sequence[PathLike]], target: Partitioned) -> LoadReport:
    folder, parts = target.folder, target.parts
    schema = records.empty_long_table().schema
    writers = [pq.ParquetWriter(target.part_path(i), schema, compression="zstd") for i in range(parts)]
    shared: List[pa.Table] = []
    scales = set()
    try:
        for path in history.history_files(source):
            if path.suffix == ".parquet":
                raise HistoryError(f"{path} is Parquet; partition the JSON-lines histories it was made from.")
            table, report = history.read_file(path)
            target.report.merge(report)
            target.report.simulated = target.report.simulated or report.simulated
            scales.add(report.time_scale)
            observation = pc.equal(table.column("record"), records.OBSERVATION)
            shared.append(table.filter(pc.invert(observation)))
            _write_by_host(table.filter(observation), writers)
    finally:
        for writer in writers:
            writer.close()
    if len(scales) > 1:
        raise HistoryError(f"these histories were recorded at different simulator time scales {sorted(scales)}; "
                           "partition them separately.")
    target.report.time_scale = scales.pop() if scales else 1.0
    pq.write_table(_without_duplicates(pa.concat_tables(shared) if shared else records.empty_long_table(),
                                       target.report), folder / RECORDS, compression="zstd")
    for frame in read_parts(target):  # one part at a time: duplicates and series resolution of every host
        _add_part_report(target.report, history.report_of(frame))
    _write_description(target)
    return target.report


def _add_part_report(report: LoadReport, part: LoadReport) -> None:
    """A part's duplicates (its hosts' observations; shared records are de-duplicated once, above) and its
    hosts' series resolution, into the whole's."""
    report.duplicates += part.duplicates
    report.records -= part.duplicates
    report.observations -= part.duplicates
    report.resolution.update(part.resolution)


def _write_by_host(table: pa.Table, writers: List[pq.ParquetWriter]) -> None:
    hosts = table.column("host").combine_chunks().dictionary_encode()
    bucket_of_code = np.array([part_of(str(h), len(writers)) for h in hosts.dictionary.to_pylist()], dtype=np.int64)
    bucket = bucket_of_code[np.asarray(hosts.indices.fill_null(0))] if len(table) else np.zeros(0, np.int64)
    for index in np.unique(bucket):
        writers[index].write_table(table.filter(pa.array(bucket == index)))


def _without_duplicates(table: pa.Table, report: LoadReport) -> pa.Table:
    """Approval and action records written twice, kept once and counted (every part reads them)."""
    keys = table.select(["record", "host", "observed_at", "event_id"]).to_pandas()
    duplicated = keys.duplicated(keep="first")
    if not duplicated.any():
        return table
    _, approvals, actions = history.dropped_records(keys, duplicated)
    report.duplicates += approvals + actions
    report.records -= approvals + actions
    report.approvals -= approvals
    report.actions -= actions
    return table.filter(pa.array(~duplicated.to_numpy()))


def _write_description(target: Partitioned) -> None:
    report = dict(asdict(target.report), examples=[asdict(e) for e in target.report.examples])
    text = json.dumps({"format": "event_analysis partitioned history", "parts": target.parts, "report": report},
                      indent=1)
    (target.folder / DESCRIPTION).write_text(text + "\n", encoding="utf-8")


def open_partitioned(path: PathLike) -> Partitioned:
    """A partitioned history folder, checked: one sentence naming what is wrong otherwise."""
    folder = Path(path).expanduser()
    try:
        meta: Dict[str, Any] = json.loads((folder / DESCRIPTION).read_text(encoding="utf-8"))
        parts = int(meta["parts"])
        raw = dict(meta["report"])
        examples = [BadLine(**e) for e in raw.pop("examples", [])]
        report = LoadReport(**{k: v for k, v in raw.items() if k in LoadReport.__dataclass_fields__},
                            examples=examples)
    except (OSError, ValueError, KeyError, TypeError) as error:
        reason = f"no {error.args[0]!r} in it" if isinstance(error, KeyError) else history.one_sentence(error)
        raise HistoryError(f"{folder / DESCRIPTION} does not describe a partitioned history ({reason}); partition "
                           "the history again.") from None
    target = Partitioned(folder, parts, report)
    missing = [p.name for p in [target.part_path(i) for i in range(parts)] + [folder / RECORDS] if not p.is_file()]
    if missing:
        raise HistoryError(f"{folder} lacks {', '.join(missing[:3])}: partition the history again.")
    return target


def read_parts(target: Partitioned, hosts: Optional[Sequence[str]] = None) -> Iterator[pd.DataFrame]:
    """One observations frame per part (of `hosts`' parts only, when given), each with every approval and
    action record, sorted and de-duplicated like load_history's. Each frame's report counts that part only
    (its duplicates, its hosts' resolution); the whole history's is target.report."""
    shared = _read_table(target.folder / RECORDS)
    wanted = None if hosts is None else {part_of(h, target.parts) for h in hosts}
    for index in range(target.parts):
        if wanted is not None and index not in wanted:
            continue
        part = _read_table(target.part_path(index))
        report = LoadReport(time_scale=target.report.time_scale, simulated=target.report.simulated,
                            files=list(target.report.files))
        yield history.to_frame([part, shared], report)


def _read_table(path: Path) -> pa.Table:
    return history.read_parquet_table(path, fix="; partition the history again")
