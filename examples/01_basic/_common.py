"""What the 01_basic examples share: the communicator, the array libraries, checking results.

* ``make_communicator(config=None)``: under MPI with mpi4py, upstream nccl4py's pattern (rank 0
  calls ``nccl.get_unique_id()``, ``MPI.COMM_WORLD.bcast`` hands the id out, every rank calls
  ``Communicator.init``); otherwise ``Communicator.from_env()``, which reads ``python -m nccl.run``'s
  and torchrun's variables (and runs as one rank under plain ``python``).
* ``array_libraries(comm)``: on the host backend, NumPy arrays (and torch CPU tensors when torch
  is installed); on GPUs, torch CUDA tensors or else CuPy arrays, on this rank's device.
* ``check(...)``: compare with the expected NumPy array and report the first difference.

The device must be chosen before the communicator is created, so ``select_device()`` runs first.
"""

import sys

import numpy as np

import nccl.core as nccl
from nccl.bindings import nccl as bindings
# The launcher's view of this process, as Communicator.from_env reads it: detect() names the
# launcher, local_rank() is this rank's index on its machine.
from nccl.core._env import detect, local_rank


def on_host_backend():
    return bindings.get_library_flavour() == "host"


def select_device():
    """On GPUs: make this rank's device current (LOCAL_RANK modulo the device count)."""
    if on_host_backend():
        return
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank() % torch.cuda.device_count())
            return
    except ImportError:
        pass
    try:
        import cupy

        cupy.cuda.Device(local_rank() % cupy.cuda.runtime.getDeviceCount()).use()
        return
    except ImportError:
        pass
    sys.exit("this example needs torch or cupy on a GPU machine (or NCCL_LIBRARY=host)")


def under_mpi():
    return detect().kind == "mpi"


def make_communicator(config=None):
    select_device()
    if under_mpi():
        try:
            from mpi4py import MPI
        except ImportError:
            MPI = None
        if MPI is not None:
            world = MPI.COMM_WORLD
            rank, nranks = world.Get_rank(), world.Get_size()
            # [nccl4py] rank 0 creates the id; MPI carries it to every rank (UniqueId pickles)
            unique_id = nccl.get_unique_id() if rank == 0 else None
            unique_id = world.bcast(unique_id, root=0)
            return nccl.Communicator.init(nranks=nranks, rank=rank, unique_id=unique_id, config=config)
    # python -m nccl.run, torchrun, or a single process
    if config is None:
        return nccl.Communicator.from_env()
    return nccl.Communicator.from_env(config=config)


class ArrayLibrary:
    """One way to hold buffers: name, full(count, value, dtype), to_numpy(a), stream, sync()."""

    def __init__(self, name, full, to_numpy, stream=None, sync=lambda: None):
        self.name, self._full, self.to_numpy, self.stream, self.sync = name, full, to_numpy, stream, sync

    def full(self, count, value, dtype=np.float32):
        return self._full(count, value, np.dtype(dtype))

    def zeros(self, count, dtype=np.float32):
        return self._full(count, 0, np.dtype(dtype))


def _torch_library(device):
    import torch

    def full(count, value, dtype):
        return torch.full((count,), value, dtype=getattr(torch, dtype.name), device=device)

    if device == "cpu":
        return ArrayLibrary("torch (cpu)", full, lambda t: t.numpy())
    stream = torch.cuda.current_stream()
    return ArrayLibrary(f"torch ({device})", full, lambda t: t.cpu().numpy(), stream=stream.cuda_stream,
                        sync=stream.synchronize)


def _cupy_library():
    import cupy

    stream = cupy.cuda.get_current_stream()
    return ArrayLibrary("cupy", lambda n, v, d: cupy.full(n, v, dtype=d), lambda a: cupy.asnumpy(a),
                        stream=stream.ptr, sync=stream.synchronize)


def array_libraries(comm):
    """The array libraries this example runs with, on this rank's memory."""
    if on_host_backend():
        libs = [ArrayLibrary("numpy", lambda n, v, d: np.full(n, v, dtype=d), np.asarray)]
        try:
            import torch  # noqa: F401

            libs.append(_torch_library("cpu"))
        except ImportError:
            pass
        return libs
    try:
        import torch

        if torch.cuda.is_available():
            return [_torch_library(f"cuda:{torch.cuda.current_device()}")]
    except ImportError:
        pass
    return [_cupy_library()]


def as_library(lib, array):
    """A NumPy array copied into lib's kind of buffer."""
    out = lib.zeros(array.size, array.dtype)
    if isinstance(out, np.ndarray):
        out[:] = array
        return out
    mod = type(out).__module__.split(".")[0]
    if mod == "torch":
        import torch

        out.copy_(torch.from_numpy(np.ascontiguousarray(array)))
    else:
        import cupy

        out.set(np.ascontiguousarray(array))
    return out


def check(rank, what, lib, got, want):
    """True when got (a buffer of lib) equals the NumPy array want; prints the verdict."""
    lib.sync()
    got = np.asarray(lib.to_numpy(got))
    if got.shape == want.shape and np.array_equal(got, want):
        print(f"rank {rank}: {what} [{lib.name}]: correct")
        return True
    bad = np.flatnonzero(got != want) if got.shape == want.shape else [0]
    i = int(bad[0])
    print(f"rank {rank}: {what} [{lib.name}]: WRONG at element {i}: got {got.flat[i]!r}, want {want.flat[i]!r}",
          flush=True)
    return False


def finish(comm, ok, name):
    """Destroys the communicator and returns the exit status (non-zero on a wrong answer)."""
    rank = comm.rank
    comm.destroy()
    if rank == 0:
        print(f"{name}: {'SUCCESS' if ok else 'FAILED'}")
    return 0 if ok else 1
