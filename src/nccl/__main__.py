"""python -m nccl: the doctor's summary (nccl._doctor.summary): package, Python and library
versions, where the library came from with every load attempt, and the NCCL/RCCL copies mapped
in this process.

python -m nccl doctor: the full report (nccl._doctor.report): also the NCCL_* environment,
missing ABI symbols with their minimum version, GPU visibility and the cuda.core shim.
python -m nccl doctor --json: the facts behind the report (nccl._doctor.collect()) as JSON.
python -m nccl.doctor [--json] is the same as python -m nccl doctor [--json] (nccl/doctor.py).

Exit status 0, 1 when no library loads, 2 for bad arguments (a one-line error)."""

import argparse
import sys

from nccl import _doctor


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def cli(argv, prog="python -m nccl"):
    p = _Parser(prog=prog, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("command", nargs="?", choices=["doctor"], help="the full report instead of the summary")
    p.add_argument("--json", action="store_true", help="with doctor: the report's facts as JSON")
    args = p.parse_args(argv)
    if args.json and args.command != "doctor":
        p.error("--json goes with doctor")
    if args.command is None:
        return _doctor.main("summary")
    return _doctor.main("json" if args.json else "report")


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
