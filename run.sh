#!/usr/bin/env bash
# Set up .venv with the package and its test extra, then run the demo (default) or the tests.
#   ./run.sh          demo: library diagnostics and a 2-rank all_reduce
#   ./run.sh test     the test suite (python -m pytest), extra arguments passed to pytest
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-demo}"
[ $# -gt 0 ] && shift

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch: the CPU build this machine keeps on disk; an unpinned torch would pull a CUDA build.
.venv/bin/python -m pip install --quiet '.[test]'

case "$mode" in
    demo)
        .venv/bin/python -m nccl
        .venv/bin/python examples/demo_allreduce.py
        ;;
    test)
        # The sources live under src/, so the installed package is what the tests import.
        .venv/bin/python -m pytest -q "$@"
        ;;
    *)
        echo "usage: ./run.sh [demo|test [pytest args...]]" >&2
        exit 2
        ;;
esac
