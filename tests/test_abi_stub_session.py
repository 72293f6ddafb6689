"""Runs tests/abi in a pytest session of its own: those tests load the stub NCCL into their
process, and a process holds one library, so they must not share it with the other tests."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ABI = Path(__file__).resolve().parent / "abi"


@pytest.mark.timeout(600)
def test_binding_suite_against_the_stub_nccl():
    env = dict(os.environ, NCCL4PY_STUB_SESSION="1")
    env.pop("NCCL_LIBRARY", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ABI)], env=env,
                          capture_output=True, text=True, timeout=590)
    tail = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, tail
    print(summary)
