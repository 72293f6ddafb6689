"""Type-checked by tests/core/test_typing.py (mypy, against the installed package's stubs).
Never run: it only has to be well-typed."""

from __future__ import annotations

import pickle
from typing import Any

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
        win: nc.RegisteredWindowHandle = comm.register_window(buf, nc.WindowFlag.COLL_SYMMETRIC)
        handle: int = win.handle
        le: nc.CftLeInfo = win.get_peer_le_info(0, offset=0)
        win.close()
        # nccl4py 0.6.0: per-call config, properties, teams, device communicators
        cfg = nc.NCCLCollConfig(min_ctas=1, vendor_options=(nc.VendorOption(1, 2, int_value=3),))
        comm.allreduce(buf, buf, nc.SUM, config=cfg)
        comm.alltoall(buf, buf, stream=None, config=None)
        props: nc.NCCLCommProperties = comm.properties
        world: nc.NCCLTeam = comm.team_world
        first: int = comm.team_rank_to_world(world, 0) + props.n_ranks
        cft: nc.NCCLTeam = comm.team_cft(nc.NcclCftTeamMode.HIER_LSA)
        reqs = nc.NCCLDevCommRequirements(barrier_count=1, teams=(nc.TeamRequirement(world, multimem=True),),
                                          resources=(nc.LsaBarrierRequirement(world, 1),))
        dev: nc.DevCommResource = comm.create_dev_comm(reqs)
        mm: nc.MultimemHandle = dev.multimem_handle(world)
        dev_ptr: int = dev.ptr
        dev.close()
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
    info: nc.VersionInfo = nc.get_version()
    lib: nc.LibraryInfo | None = info.libnccl
    pkg: str = nc.__version__
    value: str = nc.params["NCCL_DEBUG"]
    null = nc.Communicator(None)
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
    arr = uid.as_ndarray
    same: bool = nc.UniqueId.from_bytes(bytearray(128)) == uid and hash(uid) == hash(uid)
    address: int = uid.ptr


def surface() -> None:
    """The rest of the public surface, each with the type its annotation promises."""
    import torch

    from nccl.core import constants
    from nccl.core.params import dump_params
    from nccl.core.interop import torch as nt

    keys: list[str] = list(nc.params)
    level: str | None = nc.params.get("NCCL_DEBUG")
    nc.dump_params()
    dump_params()
    nc.group_start()
    nc.group_end()
    sim: nc.GroupSimInfo = nc.group_end(simulate=True)
    maybe: nc.GroupSimInfo | None = nc.group_end(simulate=bool(keys))
    ms: float = sim.estimated_time
    old: nc.Version = nc.Version(22703)
    nccl_v = old.nccl_version
    lib_path = nc.get_lib_path()
    text: str = nc.get_error_string(nc.NcclDataType.INT8)
    np_dtype: np.dtype[Any] = nc.FLOAT32.numpy_dtype
    op: nc.NcclRedOp = constants.SUM
    flag: nc.WindowFlag = nc.WindowFlag.COLL_SYMMETRIC | nc.WindowFlag.STRICT_ORDERING
    mr = get_memory_resource(0)
    dev: int = mr.device_id
    host: bool = mr.is_host_accessible and not mr.is_device_accessible
    t: torch.Tensor = nt.empty(4, 4, dtype=torch.float32, device=0, morder="F")
    ptr, count, dtype, device = nt.resolve_tensor(t)
    total: int = ptr + count + dtype.itemsize
    idx: int | None = device
    team = nc.NCCLTeam(n_ranks=2, rank=0, stride=1)
    req = nc.NCCLDevCommRequirements(teams=(nc.TeamRequirement(team),),
                                     resources=(nc.GinBarrierRequirement(team, 1), nc.LLA2ARequirement(1, 2, 4)))
    gin: nc.NcclGinType | int | None = nc.NCCLConfig().host_cft_mode and nc.NcclGinType.PROXY
    le = nc.CftLeInfo(le_id=1, le_offset=0)
    comm = nc.Communicator.from_env(config=nc.NCCLConfig(), timeout=5.0, environ={"RANK": "0"})
    with comm.register_buffer(np.zeros(4)) as reg:
        size: int = reg.size
    props = comm.properties
    kinds: tuple[nc.NcclGinType | int, ...] | None = props.available_gin_types
    handles = comm.create_dev_comm(req).resource_handles
    for h in handles:
        if isinstance(h, nc.LsaBarrierHandle):
            n: int = h.n_barriers + h.buf_handle
