"""Read one history file's bytes into an Arrow table of records, counting every bad line.

The fast path hands the whole buffer to Arrow's multi-threaded JSON reader. Only when
that fails (a broken line somewhere) is the buffer bisected by lines, so that a few bad
lines cost a few extra parses of shrinking chunks, not a Python loop over the file.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from event_analysis.loading.schema import LINE

TRUNCATED, INVALID_JSON, UNKNOWN_SCHEMA = "truncated last line", "invalid JSON", "unknown schema"
_PARSE = pj.ParseOptions(explicit_schema=LINE, unexpected_field_behavior="ignore")
_READ = pj.ReadOptions(block_size=8 << 20)
_LEAF_LINES = 32  # below this many lines a failed chunk is read line by line
MAX_EXAMPLES = 20
# What Arrow raises for a line it cannot type: broken JSON, another shape, other types, bad UTF-8.
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


@dataclass
class BadLine:
    """One line that could not be used, with where it is and why."""
    file: str
    line: int  # 1-based line number in the (decompressed) file
    reason: str
    text: str  # the start of the line, for a human to recognise it


@dataclass
class FileRead:
    """What reading one file produced: good records, and an account of the bad lines."""
    table: pa.Table
    bad_counts: Dict[str, int] = field(default_factory=dict)
    examples: List[BadLine] = field(default_factory=list)

    def add_bad(self, file: str, line: int, reason: str, text: bytes) -> None:
        self.bad_counts[reason] = self.bad_counts.get(reason, 0) + 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(BadLine(file, line, reason, text[:120].decode("utf-8", "replace")))


def read_records(data: bytes, file: str) -> Tuple[FileRead, List[int]]:
    """Parse JSON lines into a LINE-typed table; returns it with the 1-based numbers of the bad lines."""
    result = FileRead(LINE.empty_table())
    bad_lines: List[int] = []
    data = _drop_truncated_tail(data, file, result, bad_lines)
    try:
        result.table = _arrow_read(data)
        return result, bad_lines
    except _ARROW_ERRORS:
        pass
    starts, ends = _line_bounds(data)
    tables: List[pa.Table] = []
    _bisect(data, starts, ends, 0, len(starts), file, tables, result, bad_lines)
    result.table = pa.concat_tables(tables) if tables else LINE.empty_table()
    return result, sorted(bad_lines)


def _arrow_read(data: bytes) -> pa.Table:
    if not data.strip():
        return LINE.empty_table()
    return pj.read_json(io.BytesIO(data), read_options=_READ, parse_options=_PARSE)


def _drop_truncated_tail(data: bytes, file: str, result: FileRead, bad_lines: List[int]) -> bytes:
    """A last line without its newline that is not JSON is a write cut short: count it, drop it."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]
    if not tail.strip():
        return data
    try:
        json.loads(tail)
        return data
    except ValueError:
        line = data.count(b"\n", 0, cut) + 1
        result.add_bad(file, line, TRUNCATED, tail)
        bad_lines.append(line)
        return data[:cut]


def _line_bounds(data: bytes) -> Tuple[np.ndarray, np.ndarray]:
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines + 1, [len(data)]))
    if starts[-1] == len(data):  # the file ends with a newline: no empty last line
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def _bisect(data: bytes, starts: np.ndarray, ends: np.ndarray, lo: int, hi: int, file: str,
            tables: List[pa.Table], result: FileRead, bad_lines: List[int]) -> None:
    """Read lines [lo, hi); split in halves on failure, down to single lines."""
    if lo >= hi:
        return
    chunk = data[starts[lo]:ends[hi - 1]]
    try:
        tables.append(_arrow_read(chunk))
        return
    except _ARROW_ERRORS:
        pass
    if hi - lo <= _LEAF_LINES:
        for index in range(lo, hi):
            _read_one_line(data[starts[index]:ends[index]], index + 1, file, tables, result, bad_lines)
        return
    mid = (lo + hi) // 2
    _bisect(data, starts, ends, lo, mid, file, tables, result, bad_lines)
    _bisect(data, starts, ends, mid, hi, file, tables, result, bad_lines)


def _read_one_line(text: bytes, number: int, file: str, tables: List[pa.Table], result: FileRead,
                   bad_lines: List[int]) -> None:
    try:
        tables.append(_arrow_read(text))
        return
    except _ARROW_ERRORS:
        pass
    try:
        json.loads(text)
        reason = UNKNOWN_SCHEMA  # JSON, but not a record of ours (wrong shape or types)
    except ValueError:
        reason = INVALID_JSON
    result.add_bad(file, number, reason, text.rstrip(b"\r\n"))
    bad_lines.append(number)


def rejected_lines(data: bytes, ordinals: np.ndarray, skip: List[int]) -> List[Tuple[int, bytes]]:
    """(line number, text) of the table rows at `ordinals`: Arrow skips blank lines and bad lines were cut out.

    Only called to name rows rejected after parsing, which is rare, so one Python pass is fine.
    """
    skipped = set(skip)
    lines = data.split(b"\n")
    kept = [number for number, text in enumerate(lines, start=1) if text.strip() and number not in skipped]
    return [(kept[i], lines[kept[i] - 1]) for i in ordinals if i < len(kept)]
