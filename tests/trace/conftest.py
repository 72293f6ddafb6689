"""The flight recorder's tests (docs/api/trace.md): its ranks run under the multi-rank launcher of
tests/multirank (harness.py), on the host backend; single-process cases run in a child."""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "multirank"))

os.environ["NCCL_LIBRARY"] = "host"
os.environ.setdefault("NCCL_HOST_TIMEOUT", "30")
