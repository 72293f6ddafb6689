"""python -m nccl.doctor [--json]: the full diagnosis, the same as python -m nccl doctor (see
nccl.__main__ and nccl._doctor), under the dotted name that nccl.run, nccl.bench and nccl.trace
have too."""

import sys

from nccl.__main__ import cli


def main(argv=None):
    """Runs the doctor with argv (default: sys.argv[1:]); returns the exit status."""
    return cli(["doctor", *(sys.argv[1:] if argv is None else argv)], prog="python -m nccl.doctor")


if __name__ == "__main__":
    sys.exit(main())
