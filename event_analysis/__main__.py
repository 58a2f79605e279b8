"""Command line: `python -m event_analysis {summary,to-parquet,partition,from-awx}`.

`from-awx` writes the history an AWX / Automation Controller job (its REST API) or an ansible-runner
artifacts folder holds to a JSON-lines file, which the notebooks and `summary` read like any other.

`summary` answers the notebooks' first questions without Jupyter: which history it read, the lifecycles by
outcome, notice per event type against the documented minimum, durations, and the fault-domain walk of each
set with its overlap verdict. It reads files, globs, or a folder `partition` wrote, part by part.

`partition` writes JSON-lines histories too big for memory (a month of a fleet's one-second relay histories)
to a folder of Parquet parts by host, reading one file at a time; the notebooks and `summary` read such a
folder one part at a time (see event_analysis/loading/partitioned.py).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import List, Optional

import pandas as pd

import event_analysis as ea


def summary_of(sources: List[str]) -> str:
    """The summary command's text (see the module docstring)."""
    import event_analysis.plots as plots  # matplotlib only for the summary, not for to-parquet

    view = ea.open_history(sources[0] if len(sources) == 1 else sources)
    if view.report.records == 0:  # a garbage file is no quiet history: say so, and fail
        raise ea.HistoryError(f"no valid record in {', '.join(sources)}, so there is nothing to summarise "
                              f"({view.report.summary()[:-1]}).")
    lines = [view.description]  # with the first bad lines as examples
    lifecycles = view.lifecycles
    counts = lifecycles["outcome"].value_counts()
    lines.append(f"{len(lifecycles)} event lifecycles: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    if lifecycles.empty:
        return "\n".join(lines)
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        lines += ["", "Notice per event type, seconds, against the documented minimum (verdict counts):",
                  ea.notice_summary(ea.notice_check(lifecycles)).to_string(),
                  "", "Durations per event type, seconds (declared, observed impact, Started to gone):",
                  plots.duration_summary(lifecycles).to_string()]
    windows = ea.fault_domain_windows(lifecycles)
    reused = int(lifecycles["id_reused"].sum())
    if reused:
        lines += ["", f"{reused} lifecycle(s) reuse an EventId: the event left a VM's document and came back, which "
                      "IMDS never does, so two events shared the id (separate simulator runs with one --seed?); "
                      "their overlaps are at most possible."]
    lines += ["", "Fault-domain walk: " + (ea.walk_order(windows) or "(no platform maintenance window)"),
              plots.overlap_sentence(plots.overlaps_of(lifecycles), windows)]
    return "\n".join(lines)


def from_awx(args: argparse.Namespace) -> str:
    from event_analysis.loading import awx

    if args.runner:
        events, origin = awx.runner_job_events(Path(args.runner).expanduser()), f"ansible-runner {args.runner}"
    else:
        if args.job is None or not args.token_file:
            raise ea.HistoryError("--url needs --job and --token-file.")
        token = Path(args.token_file).expanduser().read_text(encoding="utf-8").strip()
        events, origin = awx.awx_job_events(args.url, args.job, token), f"AWX job {args.job} at {args.url}"
    count = awx.write_history(awx.records_from_job_events(events), args.destination)
    return f"wrote {count} records from {origin} to {args.destination}."


def _program() -> str:
    """How the user called us: the installed console script, or `python -m event_analysis`."""
    name = Path(sys.argv[0]).name
    return name if name and name not in ("__main__.py", "-c") else "python -m event_analysis"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=_program(), description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("to-parquet", help="convert JSON lines histories (.jsonl, .gz, globs) to one Parquet file",
                             description="Convert JSON lines histories (.jsonl, .gz, globs) to one Parquet file, which "
                                         "load_history, summary and the notebooks read much faster.")
    convert.add_argument("source", nargs="+")
    convert.add_argument("destination")
    split = sub.add_parser("partition", help="write JSON lines histories to a folder of Parquet parts by host, "
                                             "which summary and the notebooks read part by part",
                           description="Write JSON lines histories too big for memory to a new folder of Parquet "
                                       "parts by host, one file in memory at a time; summary and the notebooks "
                                       "then read the folder one part at a time.")
    split.add_argument("source", nargs="+")
    split.add_argument("destination", help="a new (or empty) folder")
    split.add_argument("--parts", type=int, default=ea.loading.partitioned.DEFAULT_PARTS,
                       help=f"how many parts (default {ea.loading.partitioned.DEFAULT_PARTS}); memory holds one at a time")
    summary = sub.add_parser("summary", help="what a history holds and the notebooks' first answers: notice, durations, walk",
                             description="Read histories (files, globs, or a folder partition wrote) and print what "
                                         "was read (bad lines counted, with examples; SIMULATED and the time scale "
                                         "when the history says so), the event lifecycles by outcome, the notice "
                                         "per event type against Azure's documented minimum, the durations, and "
                                         "each set's fault-domain walk with its overlap verdict.")
    summary.add_argument("source", nargs="+")
    job = sub.add_parser("from-awx", help="write the history of an AWX job or ansible-runner artifacts to a file",
                         description="Rebuild the history an AWX / Automation Controller job (its REST API) or an "
                                     "ansible-runner artifacts folder holds, and write it to a new JSON lines file "
                                     "that summary and the notebooks read like any other.")
    origin = job.add_mutually_exclusive_group(required=True)
    origin.add_argument("--runner", metavar="ARTIFACTS", help="an ansible-runner artifacts/<ident> folder")
    origin.add_argument("--url", help="the AWX / Automation Controller base URL (with --job and --token-file)")
    job.add_argument("--job", type=int, help="the job id")
    job.add_argument("--token-file", help="a file holding an OAuth2 token that may read the job's events")
    job.add_argument("destination", help="a new .jsonl file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ea.HistoryWarning)  # the report below says it
    try:
        if args.command == "to-parquet":
            report = ea.to_parquet(args.source, args.destination)
            print(f"{report.summary()[:-1]}; wrote {args.destination}.")
        elif args.command == "partition":
            report = ea.partition_history(args.source, args.destination, parts=args.parts)
            print(f"{report.summary()[:-1]}; wrote {args.parts} parts to {args.destination}.")
        elif args.command == "from-awx":
            print(from_awx(args))
        else:
            print(summary_of(args.source))
    except (ea.HistoryError, OSError) as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
