"""python -m nccl.trace DIR [--json] [--last K] [--job JOB]: the verdict on a folder of
flight-recorder dumps (docs/api/trace.md#the-verdict). Exit status 0 when a verdict was made
(whatever it says), 2 when the input cannot be analysed."""

import argparse
import json
import sys

from nccl.trace import TraceInputError, analyze

EXIT_BAD_INPUT = 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nccl.trace",
                                     description="Where the ranks of a job parted, from their flight-recorder dumps.")
    parser.add_argument("folder", help="the folder of rank<R>.jsonl files (NCCL4PY_TRACE_DIR), or one file")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    parser.add_argument("--last", type=int, default=5, metavar="K", help="each rank's last K calls (default 5; 0: none)")
    parser.add_argument("--job", help="the job to analyse when the folder holds dumps of several")
    args = parser.parse_args(argv)
    if args.last < 0:
        parser.error("--last must be 0 or more")
    try:
        report = analyze(args.folder, args.job)
    except TraceInputError as exc:
        print(f"nccl.trace: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        json.dump(report.to_json(args.last), sys.stdout, indent=1)
        print()
    else:
        print(report.text(args.last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
