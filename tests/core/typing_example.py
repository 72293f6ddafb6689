"""Type-checked by tests/core/test_typing.py (mypy, against the installed package's stubs).
Never run: it only has to be well-typed."""

from __future__ import annotations

import pickle

import numpy as np

import nccl.core as nc
from nccl.core.buffer import NcclBuffer
from nccl.core.cuda import CudaDeviceContext, get_device_id, get_stream_ptr
from nccl.core.memory import NcclMemoryResource, get_memory_resource


def allreduce_example(nranks: int, rank: int, uid_bytes: bytes) -> float:
    uid: nc.UniqueId = nc.UniqueId.from_bytes(uid_bytes)
    assert pickle.loads(pickle.dumps(uid)) == uid
    config = nc.NCCLConfig(blocking=True, comm_name="example", cta_policy=nc.CTAPolicy.ZERO)
    with nc.Communicator.init(nranks, rank, uid, config=config) as comm:
        n: int = comm.nranks + comm.rank
        buf = nc.mem_alloc(1 << 20, device=0)
        comm.allreduce(buf, buf, nc.SUM, stream=None)
        comm.reduce(buf, None, nc.NcclRedOp.MAX, root=0)
        comm.broadcast(None, buf, 0, stream=0)
        with nc.group():
            comm.send(buf, (rank + 1) % n)
            comm.recv(buf, (rank - 1) % n)
        win = comm.register_window(buf, nc.WindowFlag.COLL_SYMMETRIC)
        if win is not None:
            handle: int = win.handle
            win.close()
        op = comm.create_pre_mul_sum(0.5, nc.FLOAT32)
        comm.allreduce(buf, buf, op)
        op.close()
        comm.wait_signal([nc.WaitSignalDesc(0, op_count=1)])
        child: nc.Communicator = comm.split(color=rank % 2, key=rank)
        child.destroy()
        status = comm.get_async_error()
        stat: int = comm.get_mem_stat(nc.NcclCommMemStat.GPU_MEM_TOTAL)
        nc.mem_free(buf)
    info = nc.group_end(simulate=True)
    return 0.0 if info is None else info.estimated_time


def helpers() -> None:
    dt: nc.NcclDataType = nc.NcclDataType.from_numpy_dtype(np.float32)
    dt = nc.NcclDataType(7)
    size: int = dt.itemsize
    version = nc.get_lib_version()
    path = nc.get_lib_path()
    text: str = nc.get_error_string(4)
    b = NcclBuffer(np.zeros(4, dtype=np.float32))
    ptr: int = b.ptr + b.count + b.device_id + b.nbytes
    ro: bool = b.readonly
    with CudaDeviceContext(1):
        device_id: int = get_device_id()
    handle: int = get_stream_ptr(None)
    mr: NcclMemoryResource = get_memory_resource(0)
    comms: list[nc.Communicator] = nc.Communicator.init_all([0, 1])
    uid: nc.UniqueId = nc.get_unique_id(empty=True)
    raw: bytes = bytes(uid) + uid.as_bytes
