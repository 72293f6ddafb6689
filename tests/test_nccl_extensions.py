"""NVIDIA's nccl-extensions 0.1.0 (nccl.ep, nccl.m2n) on this package (docs/compatibility.md#peer-packages):
installed with `pip install --target` into a scratch directory and found through PYTHONPATH (so the
namespace merge is part of the check), its modules import and its GPU-free layer works on the host
backend. Skipped, saying why, when the pinned wheel cannot be downloaded. Also the private version
hooks of nccl._show_versions that nccl4py's and the RCCL fork's code reach for."""

import json
import os
import subprocess
import sys
import types

import pytest

from nccl import _show_versions as sv

PINNED = ["nccl-extensions==0.1.0", "cuda-bindings~=12.0", "cuda-pathfinder"]


@pytest.fixture(scope="module")
def extensions_dir(tmp_path_factory):
    target = tmp_path_factory.mktemp("nccl_extensions")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--target", str(target), *PINNED],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        lines = [line for line in r.stderr.splitlines() if line.startswith("ERROR")] or r.stderr.splitlines()[-1:]
        pytest.skip(f"cannot install {' '.join(PINNED)} with pip: {' '.join(lines) or 'no output'}")
    return target


# Run on the host backend with the wheel's directory on PYTHONPATH; prints one JSON object.
PROBE = r"""
import json
import numpy as np
import nccl, nccl.core, nccl.ep, nccl.m2n
from nccl import _show_versions as sv
from nccl.ep import CombineConfig, DispatchConfig, Group, GroupConfig, HandleConfig, Tensor
from nccl.m2n import Config, DistTensor, Mesh, Replicate, Shard
from nccl.m2n.tensor import normalize_dtype

out = {"ep": nccl.ep.__file__, "m2n": nccl.m2n.__file__, "core": nccl.core.__file__}
cfg = GroupConfig(num_experts=8, max_dispatch_tokens_per_rank=128, max_token_bytes=4096)
out["group_config"] = [cfg._lowpp.num_experts, cfg._lowpp.max_dispatch_tokens_per_rank, cfg._lowpp.max_token_bytes]
out["configs"] = [type(c()).__name__ for c in (HandleConfig, DispatchConfig, CombineConfig)]
raw = Tensor(0x1000, dtype=nccl.core.FLOAT32, shape=(4, 8))
arr = Tensor(np.zeros((4, 8), np.int64))
out["tensors"] = [[raw.sizes, raw.datatype is nccl.core.FLOAT32], [arr.sizes, arr.datatype is nccl.core.INT64]]
try:
    import torch
except ImportError:
    out["torch_tensor"] = None
else:
    t = Tensor(torch.zeros(2, 3, dtype=torch.bfloat16))
    out["torch_tensor"] = [t.sizes, t.datatype is nccl.core.BFLOAT16]
out["m2n_config"] = Config(max_cta=4).to_binding().maxCta
out["dtypes"] = [normalize_dtype(d) is m for d, m in (("float32", nccl.core.FLOAT32), (np.dtype("int8"), nccl.core.INT8),
                                                      ("bfloat16", nccl.core.BFLOAT16), (nccl.core.UINT64, nccl.core.UINT64))]
dist = DistTensor(None, (4, 8), "float16", mesh=Mesh([1]), placements=[Shard(0)])
out["dist"] = [dist.ndims, dist.dtype is nccl.core.FLOAT16, Mesh([2, 2]).size, type(Replicate()).__name__]
comm = nccl.core.Communicator.init(1, 0, nccl.core.get_unique_id())
try:
    Group.create(comm, cfg)
except RuntimeError as exc:  # libnccl_ep needs NVIDIA's libnccl.so.2 and CUDA
    out["group_create"] = str(exc)
finally:
    comm.destroy()
out["hooks"] = [sv._nccl_ep_importable(), sv._ep_bindings.__name__, sv._nccl_ep_library_info(), nccl.get_version().nccl_ep]
print(json.dumps(out))
"""


def test_nccl_extensions_imports_and_runs_without_a_gpu(extensions_dir):
    env = dict(os.environ, PYTHONPATH=str(extensions_dir), NCCL_LIBRARY="host")
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["ep"] == str(extensions_dir / "nccl" / "ep" / "__init__.py")
    assert out["m2n"] == str(extensions_dir / "nccl" / "m2n" / "__init__.py")
    assert not out["core"].startswith(str(extensions_dir))
    assert out["group_config"] == [8, 128, 4096]
    assert out["configs"] == ["HandleConfig", "DispatchConfig", "CombineConfig"]
    assert out["tensors"] == [[[4, 8], True], [[4, 8], True]]
    assert out["torch_tensor"] in (None, [[2, 3], True])
    assert out["m2n_config"] == 4
    assert out["dtypes"] == [True, True, True, True]
    assert out["dist"] == [2, True, 4, "Replicate"]
    assert out["group_create"].startswith("Failed to dlopen libnccl_ep")
    assert out["hooks"] == [True, "nccl._extensions.bindings.nccl_ep", None, None]


def test_ep_hooks_without_nccl_extensions(monkeypatch):
    monkeypatch.setitem(sys.modules, "nccl.ep", None)  # as if not installed, whatever the environment
    monkeypatch.setitem(sys.modules, "nccl._extensions.bindings.nccl_ep", None)
    monkeypatch.delitem(vars(sv), "_ep_bindings", raising=False)
    assert sv._nccl_ep_importable() is False
    assert sv._nccl_ep_library_info() is None
    assert sv._ep_bindings is None
    del vars(sv)["_ep_bindings"]  # read again on next use (the monkeypatch restores an earlier value)


def test_ep_library_info_is_none_without_bindings(monkeypatch):
    # The RCCL fork's check: _nccl_ep_importable is the seam tests patch.
    monkeypatch.setattr(sv, "_ep_bindings", None)
    monkeypatch.setattr(sv, "_nccl_ep_importable", lambda: True)
    assert sv._nccl_ep_library_info() is None


def test_ep_library_info_from_the_bindings(monkeypatch, tmp_path):
    lib = tmp_path / "libnccl_ep.so"
    lib.write_bytes(b"\0ELF...NCCL EP version 0.1.0+cuda12.9\0...")
    fake = types.SimpleNamespace(get_version=lambda: 100, get_library_path=lambda: str(lib))
    monkeypatch.setattr(sv, "_ep_bindings", fake)
    monkeypatch.setattr(sv, "_nccl_ep_importable", lambda: True)
    info = sv._nccl_ep_library_info()
    assert (str(info.version), str(info.cuda_variant), info.path) == ("0.1.0", "12.9", lib)
    assert str(info) == f"0.1.0+cuda12.9 @ {lib}"


def test_ep_library_that_does_not_load(monkeypatch):
    def fail():
        raise RuntimeError("Failed to dlopen libnccl_ep")

    monkeypatch.setattr(sv, "_ep_bindings", types.SimpleNamespace(get_version=fail, get_library_path=fail))
    monkeypatch.setattr(sv, "_nccl_ep_importable", lambda: True)
    assert sv._nccl_ep_library_info() is None
