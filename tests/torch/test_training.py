"""DDP and FSDP2 train on CPU over the "nccl4py" backend to the parameters gloo's training
reaches: the same model, data and steps under each backend (rank_train.py), compared rank by
rank. At two ranks a sum has one order, so the parameters are identical bit for bit; at three,
the backends may add in different orders, so they agree to rounding."""

import numpy as np
import pytest

from launch import run_ranks

CASES = [("ddp", 2), ("fsdp", 2), ("ddp", 3)]


@pytest.mark.parametrize("kind,nranks", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_parameters_match_gloos(tmp_path, kind, nranks):
    ours, _ = run_ranks("rank_train.py", nranks, tmp_path / "nccl4py", kind, "nccl4py")
    gloo, _ = run_ranks("rank_train.py", nranks, tmp_path / "gloo", kind, "gloo")
    for rank in range(nranks):
        assert ours[rank]["params"].keys() == gloo[rank]["params"].keys()
        for name, values in ours[rank]["params"].items():
            a, b = np.array(values), np.array(gloo[rank]["params"][name])
            if nranks == 2:
                assert np.array_equal(a, b), (rank, name, np.abs(a - b).max())
            else:
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-6, err_msg=f"rank {rank} {name}")
        assert ours[rank]["params"] == ours[0]["params"], "the ranks' replicas differ"
        np.testing.assert_allclose(ours[rank]["losses"], gloo[rank]["losses"], rtol=1e-6)
