"""tests/torch: the "nccl4py" torch.distributed backend (docs/api/torch.md). Its rank programs run
under python -m nccl.run (launch.py); nothing here loads a library in the pytest process."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent))
