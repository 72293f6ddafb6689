#!/usr/bin/env bash
# Set up .venv with the package and its test extra, then run the demo (default) or the tests.
#   ./run.sh          demo: library diagnostics, then 2-rank nccl.core examples under python -m nccl.run
#   ./run.sh test     the test suite (python -m pytest), extra arguments passed to pytest
#   ./run.sh asan     the test suite against an AddressSanitizer/UBSan build, in .venv-asan
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-demo}"
[ $# -gt 0 ] && shift

python="${PYTHON:-python3}"
venv=.venv
# Warnings are errors in the main build (the sanitizer build keeps them as warnings).
build_args=(-Csetup-args=-Dwerror=true)
if [ "$mode" = asan ]; then
    venv=.venv-asan
    build_args=(-Csetup-args=-Db_sanitize=address,undefined -Csetup-args=-Db_lundef=false)
fi
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ${build_args[@]+"${build_args[@]}"} '.[test]'

case "$mode" in
    demo)
        .venv/bin/python -m nccl
        .venv/bin/python -m nccl.run -n 2 examples/01_basic/01_allreduce.py
        .venv/bin/python -m nccl.run -n 2 examples/01_basic/02_send_recv.py
        ;;
    test)
        # The sources live under src/, so the installed package is what the tests import.
        .venv/bin/python -m pytest -q "$@"
        ;;
    asan)
        # The interpreter is not instrumented, so the sanitizer runtimes are preloaded; leak
        # reports stay off (interpreter exit leaks drown them; refcount tests cover leaks).
        LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
        ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 PYTHONMALLOC=malloc \
            .venv-asan/bin/python -m pytest -q -p no:cacheprovider "$@"
        ;;
    *)
        echo "usage: ./run.sh [demo|test|asan [pytest args...]]" >&2
        exit 2
        ;;
esac
