#!/usr/bin/env bash
# GPU check of nccl.core on a machine with an NVIDIA GPU and the real NCCL (not run in CI).
#   tests/gpu/run_checks.sh            uses $PYTHON (default python3), which must have nccl4py
#                                      installed, or installs this checkout into it (no network
#                                      needed when meson-python and numpy are already there)
# Checks (tests/gpu/gpu_checks.py): every collective, configs, properties, a graph replay, a window
# with a put_signal/wait_signal round; (tests/gpu/torch_checks.py, with torch) the "nccl4py"
# torch.distributed backend on CUDA tensors, CPU tensors of the same group, DDP, one rank per GPU.
# Prints: the library in use, one line per check (PASS/FAIL/SKIP), and the per-call overhead
# benchmark. Exits non-zero if any check failed. Bounded to 7 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
python="${PYTHON:-python3}"

if ! "$python" -c "import nccl.core" 2>/dev/null; then
    echo "== installing this checkout into $python"
    "$python" -m pip install --quiet --no-build-isolation --no-deps . || { echo "install failed"; exit 2; }
fi
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not available)"

status=0
echo "== nccl.core on the GPU"
timeout 200 "$python" tests/gpu/gpu_checks.py || status=1
echo "== growing a communicator (ncclCommGrow)"
timeout 120 "$python" tests/gpu/grow_check.py || status=1
echo "== the docs' GPU examples (tests/test_docs_examples.py)"
NCCL4PY_DOCS_GPU=1 timeout 120 "$python" -m pytest -q -p no:cacheprovider tests/test_docs_examples.py -k gpu_example \
    || status=1
if "$python" -c "import torch, torch.distributed" 2>/dev/null; then
    gpus=$("$python" -c "import torch; print(max(torch.cuda.device_count(), 1))")
    echo "== torch.distributed on the nccl4py backend ($gpus rank(s))"
    timeout 120 "$python" -m nccl.run -n "$gpus" tests/gpu/torch_checks.py || status=1
else
    echo "== torch.distributed on the nccl4py backend: SKIP (torch is not installed)"
fi
echo "== per-call overhead (null library, same process)"
timeout 90 "$python" benchmarks/overhead.py --repeat 5 --number 100000 || status=1
exit $status
