"""Command line: `python -m event_analysis {summary,to-parquet}`."""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import List, Optional

import event_analysis as ea


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m event_analysis", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("to-parquet", help="convert JSON lines histories (.jsonl, .gz, globs) to one Parquet file")
    convert.add_argument("source", nargs="+")
    convert.add_argument("destination")
    summary = sub.add_parser("summary", help="what a history holds: records, bad lines, lifecycles by outcome")
    summary.add_argument("source", nargs="+")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ea.HistoryWarning)  # the report below says it
    try:
        if args.command == "to-parquet":
            report = ea.to_parquet(args.source, args.destination)
            print(f"{report.summary()[:-1]}; wrote {args.destination}.")
        else:
            frame = ea.load_history(args.source)
            print(ea.report_of(frame).summary())
            for example in ea.report_of(frame).examples:
                print(f"  {example.file}:{example.line}: {example.reason}: {example.text}")
            lifecycles = ea.event_lifecycles(frame)
            counts = lifecycles["outcome"].value_counts()
            print(f"{len(lifecycles)} event lifecycles: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    except (ea.HistoryError, OSError) as error:
        print(f"python -m event_analysis: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
