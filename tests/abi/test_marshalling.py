"""Every wrapper of nccl.bindings.nccl and rocm_extensions, called on the stub NCCL: the C function
reached and the arguments it received, the return conventions, and the status mapping."""

import array
import pickle
import re
import sys

import numpy as np
import pytest

import nccl.bindings.nccl as b
from nccl import _ext
from nccl.bindings import rocm_extensions as rx

U32 = 0xFFFFFFFF
P, Q, C, S = 0x7F00_0000_1000, 0x7F00_0000_2000, 0x5555_0000, 0x77  # buffers, comm, stream


def i32(v):
    return v & U32


# (wrapper, args, C name, recorded args); ints are recorded zero-extended from 32 bits.
SIMPLE = [
    (b.mem_free, (P,), "ncclMemFree", [P]),
    (b.comm_finalize, (C,), "ncclCommFinalize", [C]),
    (b.comm_destroy, (C,), "ncclCommDestroy", [C]),
    (b.comm_abort, (C,), "ncclCommAbort", [C]),
    (b.comm_revoke, (C, 0), "ncclCommRevoke", [C, 0]),
    (b.comm_suspend, (C, 1), "ncclCommSuspend", [C, 1]),
    (b.comm_resume, (C,), "ncclCommResume", [C]),
    (b.comm_deregister, (C, Q), "ncclCommDeregister", [C, Q]),
    (b.comm_window_deregister, (C, Q), "ncclCommWindowDeregister", [C, Q]),
    (b.red_op_destroy, (7, C), "ncclRedOpDestroy", [7, C]),
    (b.reduce, (P, Q, 10, 7, 2, 1, C, S), "ncclReduce", [P, Q, 10, 7, 2, 1, C, S]),
    (b.bcast, (P, 11, 4, 2, C, S), "ncclBcast", [P, 11, 4, 2, C, S]),
    (b.broadcast, (P, Q, 12, 9, 0, C, S), "ncclBroadcast", [P, Q, 12, 9, 0, C, S]),
    (b.all_reduce, (P, Q, 2**40, 11, 4, C, S), "ncclAllReduce", [P, Q, 2**40, 11, 4, C, S]),
    (b.reduce_scatter, (P, Q, 13, 6, 3, C, S), "ncclReduceScatter", [P, Q, 13, 6, 3, C, S]),
    (b.all_gather, (P, Q, 14, 1, C, S), "ncclAllGather", [P, Q, 14, 1, C, S]),
    (b.allto_all, (P, Q, 15, 2, C, S), "ncclAlltoAll", [P, Q, 15, 2, C, S]),
    (b.gather, (P, Q, 16, 3, 2, C, S), "ncclGather", [P, Q, 16, 3, 2, C, S]),
    (b.scatter, (P, Q, 17, 5, 1, C, S), "ncclScatter", [P, Q, 17, 5, 1, C, S]),
    (b.send, (P, 18, 7, 3, C, S), "ncclSend", [P, 18, 7, 3, C, S]),
    (b.recv, (Q, 19, 8, 2, C, S), "ncclRecv", [Q, 19, 8, 2, C, S]),
    (b.put_signal, (P, 20, 7, 1, Q, 64, 0, 0, 5, C, S), "ncclPutSignal", [P, 20, 7, 1, Q, 64, 0, 0, 5, C, S]),
    (b.signal, (1, 0, 0, 3, C, S), "ncclSignal", [1, 0, 0, 3, C, S]),
    (b.wait_signal, (2, P, C, S), "ncclWaitSignal", [2, P, C, S]),
    (b.dev_comm_create, (C, P, Q), "ncclDevCommCreate", [C, P, Q]),
    (b.dev_comm_destroy, (C, P), "ncclDevCommDestroy", [C, P]),
    (rx.all_reduce_with_bias, (P, Q, 21, 7, 0, C, S, P + 8), "ncclAllReduceWithBias", [P, Q, 21, 7, 0, C, S, P + 8]),
]


@pytest.mark.parametrize("fn,args,cname,recorded", SIMPLE, ids=[c for _, _, c, _ in SIMPLE])
def test_simple_wrappers_pass_their_arguments(fresh, fn, args, cname, recorded):
    assert fn(*args) is None
    assert fresh.last() == (cname, recorded)


def test_keywords_use_upstream_names(fresh):
    b.all_reduce(sendbuff=P, recvbuff=Q, count=3, datatype=7, op=0, comm=C, stream=S)
    assert fresh.last() == ("ncclAllReduce", [P, Q, 3, 7, 0, C, S])
    b.send(P, 4, 7, stream=S, comm=C, peer=1)
    assert fresh.last() == ("ncclSend", [P, 4, 7, 1, C, S])
    with pytest.raises(TypeError, match=r"all_reduce\(\) got an unexpected keyword argument 'buf'"):
        b.all_reduce(P, Q, 3, 7, 0, C, buf=1)


def test_pointer_like_objects_are_accepted(fresh):
    box = b.PointerBox(C)
    b.comm_destroy(box)
    assert fresh.last() == ("ncclCommDestroy", [C])
    b.comm_destroy(2**64 - 16)  # an address above 2**63 keeps its bits
    assert fresh.last() == ("ncclCommDestroy", [2**64 - 16])


def test_value_returning_wrappers(fresh):
    assert b.mem_alloc(4096) == 0xABC000
    name, args = fresh.last()
    assert name == "ncclMemAlloc" and args[1] == 4096
    assert b.get_version() == 23007
    assert b.comm_count(C) == 3
    assert b.comm_get_async_error(C) == 7  # the state is returned, not raised
    assert b.get_error_string(4) == "stub error 4"
    assert b.get_last_error(C) == "stub last error"
    for fn, cname in ((b.comm_cu_device, "ncclCommCuDevice"), (b.comm_user_rank, "ncclCommUserRank")):
        assert fn(C) == 0
        assert fresh.last()[0] == cname and fresh.last()[1][0] == C
    assert b.comm_register(C, P, 100) == 0
    assert fresh.last()[0] == "ncclCommRegister" and fresh.last()[1][:3] == [C, P, 100]
    assert b.comm_mem_stats(C, 3) == 0
    assert fresh.last()[0] == "ncclCommMemStats" and fresh.last()[1][:2] == [C, 3]
    assert b.red_op_create_pre_mul_sum(P, 7, 1, C) == 0
    assert fresh.last()[0] == "ncclRedOpCreatePreMulSum" and fresh.last()[1][1:] == [P, 7, 1, C]
    assert b.win_get_user_ptr(C, Q) == 0
    assert fresh.last()[0] == "ncclWinGetUserPtr"
    for fn, cname, args in ((b.get_lsa_multimem_device_pointer, "ncclGetLsaMultimemDevicePointer", (Q, 8)),
                            (b.get_lsa_device_pointer, "ncclGetLsaDevicePointer", (Q, 8, 1)),
                            (b.get_peer_device_pointer, "ncclGetPeerDevicePointer", (Q, 8, 2))):
        assert fn(*args) == 0
        assert fresh.last()[0] == cname and fresh.last()[1][: len(args)] == list(args)


def test_unique_id_forms(fresh):
    uid = b.get_unique_id()
    assert isinstance(uid, b.UniqueId)
    assert bytes(uid) == bytes((i * 7 + 1) & 0xFF for i in range(128))
    target = b.UniqueId()
    assert b.get_unique_id(target.ptr) is None  # the 0.2.0 form writes to an address
    assert bytes(target) == bytes(uid)
    got = b.comm_get_unique_id(C)
    assert isinstance(got, b.UniqueId) and fresh.last()[0] == "ncclCommGetUniqueId"
    assert b.comm_get_unique_id(C, target.ptr) is None
    assert fresh.last() == ("ncclCommGetUniqueId", [C, target.ptr])


@pytest.mark.parametrize("as_", ["bytes", "bytearray", "UniqueId", "address", "numpy"])
def test_comm_init_rank_both_forms(fresh, as_):
    raw = bytes(range(128))
    uid = b.UniqueId.from_buffer(bytearray(raw))
    keep = np.frombuffer(raw, dtype=np.int8).copy()
    comm_id = {"bytes": raw, "bytearray": bytearray(raw), "UniqueId": uid, "address": uid.ptr,
               "numpy": keep}[as_]
    box = b.PointerBox()
    assert b.comm_init_rank(box.address, 4, comm_id, 2) == 0
    assert box.ptr == 0x1002
    name, args = fresh.last()
    assert (name, args[0], args[1], args[3]) == ("ncclCommInitRank", box.address, 4, 2)
    assert args[2] == int.from_bytes(raw[:8], "little")
    assert b.comm_init_rank(4, comm_id, 3) == 0x1003  # 0.2.0 form returns the comm


def test_in_progress_is_returned_not_raised(fresh):
    fresh.script("ncclCommInitRankConfig", 7)
    box = b.PointerBox()
    assert b.comm_init_rank_config(box.address, 2, bytes(128), 0, 0) == 7
    fresh.script("ncclAllReduce", 7)
    assert b.all_reduce(P, Q, 1, 7, 0, C, S) is None


def test_creation_wrappers_record_and_return(fresh):
    box = b.PointerBox()
    cfg = b.Config()
    assert b.comm_init_rank_config(box.address, 2, bytes(128), 1, cfg.ptr) == 0
    assert fresh.last() == ("ncclCommInitRankConfig", [box.address, 2, 0, 1, cfg.ptr])
    assert b.comm_split(C, -1, 5, box.address, cfg.ptr) == 0
    assert fresh.last() == ("ncclCommSplit", [C, U32, 5, box.address, cfg.ptr])
    assert box.ptr == 0x2000
    assert b.comm_split(C, 1, 5, 0) == 0x2000  # 0.2.0 form
    ids = bytes(range(128)) * 2
    assert b.comm_init_rank_scalable(box.address, 4, 1, 2, ids, 0) == 0
    name, args = fresh.last()
    assert name == "ncclCommInitRankScalable" and args[:4] == [box.address, 4, 1, 2]
    assert b.comm_grow(C, 5, 0, -1, box.address, 0) == 0
    assert fresh.last() == ("ncclCommGrow", [C, 5, 0, U32, box.address, 0])
    assert b.comm_grow(C, 5, 0, -1, 0) == 0  # 0.2.0 form: 5 arguments
    assert b.comm_window_register(C, P, 4096, box.address, 1) == 0
    assert fresh.last() == ("ncclCommWindowRegister", [C, P, 4096, box.address, 1])
    assert b.comm_window_register(C, P, 4096, 1) == 0


def test_comm_shrink_copies_the_exclusion_list(fresh):
    box = b.PointerBox()
    assert b.comm_shrink(C, [3, 1], 2, box.address, 0, 1) == 0
    name, args = fresh.last()
    assert name == "ncclCommShrink" and args[0] == C and args[2:] == [2, box.address, 0, 1]
    excl = np.array([5, 6], dtype=np.int32)
    assert b.comm_shrink(C, excl.ctypes.data, 2, 0, 0) == 0  # 0.2.0 form with a raw address
    assert fresh.last()[1][1] == excl.ctypes.data


def test_comm_init_all(fresh):
    comms = b.comm_init_all(3, [4, 5, 6])
    assert isinstance(comms, array.array) and comms.typecode == "q"
    assert list(comms) == [0x3000, 0x3001, 0x3002]
    assert fresh.last()[0] == "ncclCommInitAll" and fresh.last()[1][1:] == [3, 6]
    calls = fresh.calls
    assert list(b.comm_init_all(0, None)) == [] and fresh.calls == calls  # ndev 0: no call
    assert list(b.comm_init_all(2, None)) == [0x3000, 0x3001]
    assert fresh.last()[1][2] == 99  # NULL devlist


def test_group_and_struct_returning_wrappers(fresh):
    assert b.group_start() is None and fresh.last()[0] == "ncclGroupStart"
    assert b.group_end() is None and fresh.last()[0] == "ncclGroupEnd"
    info = b.group_simulate_end()
    assert isinstance(info, b.SimInfo) and fresh.last() == ("ncclGroupSimulateEnd", [info.ptr])
    assert info.estimated_time == -1.0 and info.magic == 0x74685283
    other = b.SimInfo()
    assert b.group_simulate_end(other.ptr) is None and fresh.last() == ("ncclGroupSimulateEnd", [other.ptr])
    props = b.comm_query_properties(C)
    assert isinstance(props, b.CommProperties) and fresh.last() == ("ncclCommQueryProperties", [C, props.ptr])
    assert b.comm_query_properties(C, other.ptr) is None


def test_all_to_all_v_arrays(fresh):
    counts = np.array([1, 2, 3], dtype=np.uint64)
    rx.all_to_all_v(P, counts.ctypes.data, counts.ctypes.data, Q, counts.ctypes.data, counts.ctypes.data, 7, C, S)
    assert fresh.last() == ("ncclAlltoAllv", [P, counts.ctypes.data, counts.ctypes.data, Q, counts.ctypes.data,
                                             counts.ctypes.data, 7, C, S])
    rx.all_to_all_v(P, [1, 2, 3], counts, Q, (0, 1, 2), [3, 3, 3], 7, C, S)
    name, args = fresh.last()
    assert name == "ncclAlltoAllv" and args[0] == P and args[3] == Q and args[6:] == [7, C, S]
    with pytest.raises(ValueError, match=r"^sendcounts must have nranks=3 entries, got 2$"):
        rx.all_to_all_v(P, [1, 2], counts, Q, counts, counts, 7, C, S)


@pytest.mark.parametrize("code,cls", [(1, "NCCLUnhandledCudaError"), (2, "NCCLSystemError"),
                                      (3, "NCCLInternalError"), (4, "NCCLInvalidArgument"),
                                      (5, "NCCLInvalidUsage"), (6, "NCCLRemoteError"), (8, "NCCLTimeout"),
                                      (42, "NCCLError")])
def test_status_maps_to_exception(fresh, code, cls):
    fresh.script("ncclAllReduce", code)
    fresh.set_last_error(f"detail {code}")
    with pytest.raises(b.NCCLError) as ei:
        b.all_reduce(P, Q, 1, 7, 0, C, S)
    err = ei.value
    assert type(err).__name__ == cls and err.status == code
    name = {42: "Unknown"}.get(code) or b.Result(code).name
    assert str(err) == f"{name} ({code}): stub error {code}\n  detail {code}"
    assert err.last_error == f"detail {code}"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and back.status == code and str(back) == str(err)


def test_refcounts_do_not_grow(fresh):
    box = b.PointerBox(C)
    args = (P, Q, 3, 7, 0, box, S)
    before = sys.getrefcount(box)
    for _ in range(100_000):
        b.all_reduce(*args)
    assert sys.getrefcount(box) == before
    fresh.script("ncclAllReduce", 4)
    for _ in range(2_000):
        with pytest.raises(b.NCCLInvalidArgument):
            b.all_reduce(*args)
    assert sys.getrefcount(box) == before
    raw = bytes(128)
    before = sys.getrefcount(raw)
    for _ in range(20_000):
        b.comm_init_rank(box.address, 2, raw, 0)
    assert sys.getrefcount(raw) == before


def test_every_abi_row_has_a_wrapper():
    wrapped = {
        "ncclAllReduceWithBias", "ncclAlltoAllv", "ncclAllToAllv", "ncclAllToAll",  # rocm_extensions / alias
    }
    names = [name for name, _, _ in _ext._abi_symbols()]
    # Each wrapper's docstring (after its signature) starts with the C function it calls.
    documented = {re.match(r"(nccl\w+)", fn.__doc__).group(1) for fn in vars(b).values()
                  if type(fn).__name__ == "builtin_function_or_method" and fn.__doc__
                  and fn.__doc__.startswith("nccl")}
    missing = [n for n in names if n not in wrapped and n not in documented]
    assert missing == []
