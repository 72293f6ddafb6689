"""torch's own DistributedTest against the "nccl4py" backend at 2 and 3 ranks: the CI selection of
distributed_test_runner.py (what runs on a machine without a GPU), every test of it passing.
The same run under gloo, and the whole class, are on demand:

    python tests/torch/distributed_test_runner.py --backend gloo --world-size 3
    python tests/torch/distributed_test_runner.py --selection all --world-size 2

(docs/api/torch.md#torchs-own-tests has both backends' counts.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import children
import distributed_test_runner as runner

HERE = Path(__file__).resolve().parent


@pytest.mark.timeout(900)
@pytest.mark.parametrize("nranks", [2, 3])
def test_torch_distributed_tests_pass(tmp_path, nranks):
    out = tmp_path / "outcomes.json"
    env = children.environment(drop=children.LOADER_VARIABLES + children.LAUNCH_VARIABLES, NCCL_LIBRARY="host",
                               NCCL_HOST_TIMEOUT="60", NCCL4PY_TRACE_DIR=str(tmp_path / "trace"))
    proc = subprocess.run([sys.executable, str(HERE / "distributed_test_runner.py"), "--world-size", str(nranks),
                           "--json", str(out)], env=env, capture_output=True, text=True, timeout=840)
    outcomes = json.loads(out.read_text()) if out.exists() else None
    assert outcomes is not None, children.describe(proc)
    bad = {name: o["message"] for name, o in outcomes["tests"].items() if o["outcome"] != "passed"}
    assert not bad, "\n\n".join(f"{name}:\n{message}" for name, message in bad.items())
    assert sorted(outcomes["tests"]) == sorted(runner.CI_SELECTION)
