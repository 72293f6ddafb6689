"""The struct wrappers of nccl.bindings.nccl (docs/compatibility.md#struct-wrappers-and-pointerbox,
docs/compatibility.md#the-rccl-forks-test-files): layouts against
ctypes references and the offsets docs/compatibility.md#struct-wrappers-and-pointerbox lists, initializer values,
the buffer protocol,
from_buffer / from_data / from_ptr, read-only rules, equality, __int__/__index__, string
keep-alive, PointerBox, and reference-count loops.

Everything here but the refcount loops over library calls runs in this process: the wrappers need
no library, and nothing here calls one.
"""

import ctypes
import gc
import operator
import re
import struct
import sys
import tracemalloc

import numpy as np
import pytest

import nccl.bindings as nb
import nccl.bindings.nccl as b

INT_MIN = -(2**31)
# NCCL 2.32.3 sizes (x86_64); tests/test_abi_real_nccl.py checks them against the real header.
SIZES = {"UniqueId": 128, "Config": 120, "SimInfo": 24, "WaitSignalDesc": 16, "CommProperties": 152,
         "CollConfig": 72, "ConfigExt": 24, "EncryptionConfig": 32, "Team": 12, "MultimemHandle": 8,
         "LsaBarrierHandle": 8, "GinBarrierHandle": 8, "CftBarrierHandle": 8, "LLA2AHandle": 8,
         "ResourceWindowVidmem": 16, "DevResourceRequirements": 56, "TeamRequirements": 32,
         "DevCommRequirements": 120, "DevComm": 248}
DTYPES = {"UniqueId": "unique_id_dtype", "Config": "config_dtype", "SimInfo": "sim_info_dtype",
          "WaitSignalDesc": "wait_signal_desc_dtype", "CommProperties": "comm_properties_dtype",
          "CollConfig": "coll_config_dtype", "ConfigExt": "config_ext_dtype",
          "EncryptionConfig": "encryption_config_dtype", "Team": "team_dtype", "MultimemHandle": "multimem_handle_dtype",
          "LsaBarrierHandle": "lsa_barrier_handle_dtype", "GinBarrierHandle": "gin_barrier_handle_dtype",
          "CftBarrierHandle": "cft_barrier_handle_dtype", "LLA2AHandle": "ll_a2a_handle_dtype",
          "ResourceWindowVidmem": "resource_window_vidmem_dtype",
          "DevResourceRequirements": "dev_resource_requirements_dtype", "TeamRequirements": "team_requirements_dtype",
          "DevCommRequirements": "dev_comm_requirements_dtype", "DevComm": "dev_comm_dtype"}
API = 23203  # the version every versioned struct is stamped with (NCCL 2.32.3)
CLASSES = list(SIZES)


# ---- CommProperties: the RCCL fork's test_comm_properties_abi.py checks ----

class CommPropertiesRef(ctypes.Structure):
    """ncclCommProperties_t as NCCL 2.32.3 declares it (x86_64); its first 56 bytes are the 2.29.7
    to 2.30 layout the RCCL fork's first ABI test pinned."""
    _fields_ = [
        ("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
        ("rank", ctypes.c_int), ("nRanks", ctypes.c_int), ("cudaDev", ctypes.c_int), ("nvmlDev", ctypes.c_int),
        ("deviceApiSupport", ctypes.c_bool), ("multimemSupport", ctypes.c_bool), ("ginType", ctypes.c_int),
        ("nLsaTeams", ctypes.c_int), ("hostRmaSupport", ctypes.c_bool), ("railedGinType", ctypes.c_int),
        ("commHash", ctypes.c_uint64), ("ginMinStride", ctypes.c_int), ("ginConnectionType", ctypes.c_int),
        ("ginSupport", ctypes.c_bool * 64), ("devCommRuntimeVersionSize", ctypes.c_size_t),
        ("cftSupport", ctypes.c_bool), ("cftMulticastSupport", ctypes.c_bool), ("cftCountedSupport", ctypes.c_bool),
    ]


C_TO_DTYPE = {"size": "size_", "nRanks": "n_ranks", "cudaDev": "cuda_dev", "nvmlDev": "nvml_dev",
              "deviceApiSupport": "device_api_support", "multimemSupport": "multimem_support",
              "ginType": "gin_type", "nLsaTeams": "n_lsa_teams", "hostRmaSupport": "host_rma_support",
              "railedGinType": "railed_gin_type", "commHash": "comm_hash", "ginMinStride": "gin_min_stride",
              "ginConnectionType": "gin_connection_type", "ginSupport": "gin_support",
              "devCommRuntimeVersionSize": "dev_comm_runtime_version_size", "cftSupport": "cft_support",
              "cftMulticastSupport": "cft_multicast_support", "cftCountedSupport": "cft_counted_support"}


def test_comm_properties_reference_is_152_bytes():
    assert ctypes.sizeof(CommPropertiesRef) == 152
    assert CommPropertiesRef.commHash.offset == 56  # the 2.30 struct ended at 56


def test_comm_properties_dtype_matches_the_reference():
    dt = nb.comm_properties_dtype
    assert dt.itemsize == ctypes.sizeof(CommPropertiesRef)
    assert len(dt.names) == 21
    for name, _ in CommPropertiesRef._fields_:
        assert dt.fields[C_TO_DTYPE.get(name, name)][1] == getattr(CommPropertiesRef, name).offset, name


@pytest.mark.parametrize("gin, railed", [("NONE", "NONE"), ("PROXY", "GDAKI"), ("GDAKI", "PROXY")])
def test_comm_properties_round_trip(gin, railed):
    ref = CommPropertiesRef(size=152, magic=0xDEADBEEF, version=123456, rank=3, nRanks=8, cudaDev=5, nvmlDev=9,
                            deviceApiSupport=1, multimemSupport=0, ginType=nb.GinType[gin], nLsaTeams=42,
                            hostRmaSupport=1, railedGinType=nb.GinType[railed], commHash=2**64 - 3,
                            ginMinStride=4, ginConnectionType=3, devCommRuntimeVersionSize=2**40 + 8,
                            cftSupport=1, cftMulticastSupport=0, cftCountedSupport=1)
    ref.ginSupport[0] = ref.ginSupport[3] = ref.ginSupport[63] = True
    props = nb.CommProperties.from_buffer(bytes(ref))
    assert (props.size_, props.magic, props.version) == (152, 0xDEADBEEF, 123456)
    assert (props.rank, props.n_ranks, props.cuda_dev, props.nvml_dev) == (3, 8, 5, 9)
    assert (props.device_api_support, props.multimem_support, props.host_rma_support) == (1, 0, 1)
    assert props.n_lsa_teams == 42
    assert nb.GinType(props.gin_type) is nb.GinType[gin]
    assert nb.GinType(props.railed_gin_type) is nb.GinType[railed]
    assert (props.comm_hash, props.gin_min_stride, props.gin_connection_type) == (2**64 - 3, 4, 3)
    assert props.dev_comm_runtime_version_size == 2**40 + 8
    assert (props.cft_support, props.cft_multicast_support, props.cft_counted_support) == (1, 0, 1)
    support = props.gin_support
    assert (support.format, len(support), support.readonly) == ("B", 64, True)
    assert [i for i, v in enumerate(support) if v] == [0, 3, 63]
    scalars = [f for f in nb.comm_properties_dtype.names if f != "gin_support"]
    assert all(type(getattr(props, f)) is int for f in scalars)


def test_comm_properties_undersized_buffer():
    with pytest.raises(ValueError, match="^buffer length must be 152 bytes$"):
        nb.CommProperties.from_buffer(bytes(56))


def test_gin_type_values():
    # NCCL 2.32's ncclGinType_t and ncclGinConnectionType_t (nccl.h), nccl4py 0.6.0's member names
    assert [(m.name, m.value) for m in nb.GinType] == [("NONE", 0), ("PROXY", 2), ("GDAKI", 3), ("GPI", 4),
                                                      ("EFA_GDA", 5), ("GIN_MAX_TYPES", 6)]
    assert [(m.name, m.value) for m in nb.GinConnectionType] == [("NONE", 0), ("FULL", 1), ("RAIL", 2),
                                                                ("CUSTOM_STRIDE", 3)]


def test_comm_properties_initializer():
    p = b.CommProperties()
    assert (p.size_, p.magic, p.version) == (152, 0xCAFEBEEF, API)
    assert bytes(p)[16:] == bytes(136)


# ---- Config ----

CONFIG_OFFSETS = {  # ncclConfig_t (x86_64, 2.32.3)
    "size_": 0, "magic": 8, "version": 12, "blocking": 16, "cga_cluster_size": 20, "min_ctas": 24,
    "max_ctas": 28, "net_name": 32, "split_share": 40, "traffic_class": 44, "comm_name": 48,
    "collnet_enable": 56, "cta_policy": 60, "shrink_share": 64, "nvls_ctas": 68,
    "n_channels_per_net_peer": 72, "nvlink_centric_sched": 76, "graph_usage_mode": 80, "num_rma_ctx": 84,
    "max_p2p_peers": 88, "graph_stream_ordering": 92, "launch_order_implicit": 96, "num_rma_sig": 100,
    "rma_eager_init": 104, "host_cft_mode": 108, "nvls_host_mode": 112,
}
CONFIG_INTS = [n for n in CONFIG_OFFSETS if n not in ("size_", "magic", "version", "net_name", "comm_name")]


def test_config_layout():
    dt = b.config_dtype
    assert dt.itemsize == 120 and list(dt.names) == list(CONFIG_OFFSETS)
    assert {n: dt.fields[n][1] for n in dt.names} == CONFIG_OFFSETS


def test_config_initializer():
    cfg = b.Config()
    assert (cfg.size_, cfg.magic, cfg.version) == (120, 0xCAFEBEEF, API)
    assert [getattr(cfg, n) for n in CONFIG_INTS] == [INT_MIN] * 21
    assert (cfg.net_name, cfg.comm_name) == ("", "")
    raw = bytes(cfg)
    assert struct.unpack_from("<QII", raw) == (120, 0xCAFEBEEF, API)
    assert struct.unpack_from("<QQ", raw, 32)[0] == 0 and struct.unpack_from("<Q", raw, 48)[0] == 0
    for name in CONFIG_INTS:
        assert struct.unpack_from("<i", raw, CONFIG_OFFSETS[name])[0] == INT_MIN, name


def test_config_fields_write_their_offsets():
    cfg = b.Config()
    for k, name in enumerate(CONFIG_INTS):
        setattr(cfg, name, 1000 + k)
    cfg.size_ = 2**40
    cfg.magic, cfg.version = 0xFFFFFFFF, 7
    raw = bytes(cfg)
    assert struct.unpack_from("<QII", raw) == (2**40, 0xFFFFFFFF, 7)
    for k, name in enumerate(CONFIG_INTS):
        assert struct.unpack_from("<i", raw, CONFIG_OFFSETS[name])[0] == 1000 + k, name
        assert getattr(cfg, name) == 1000 + k
    arr = np.frombuffer(raw, dtype=b.config_dtype)[0]
    assert arr["blocking"] == 1000 and arr["graph_stream_ordering"] == 1015 and arr["nvls_host_mode"] == 1020


def test_config_field_range_checks():
    cfg = b.Config()
    for name, value, exc in (("blocking", 2**31, OverflowError), ("blocking", INT_MIN - 1, OverflowError),
                             ("magic", -1, OverflowError), ("version", 2**32, OverflowError),
                             ("size_", -1, OverflowError), ("blocking", "1", TypeError),
                             ("cta_policy", 1.5, TypeError)):
        with pytest.raises(exc):
            setattr(cfg, name, value)
    cfg.blocking = INT_MIN
    cfg.max_p2p_peers = 2**31 - 1
    assert (cfg.blocking, cfg.max_p2p_peers) == (INT_MIN, 2**31 - 1)
    with pytest.raises(AttributeError):
        del cfg.blocking


def _c_string_at(cfg, offset):
    ptr = struct.unpack_from("<Q", bytes(cfg), offset)[0]
    return None if ptr == 0 else ctypes.string_at(ptr)


@pytest.mark.parametrize("field, offset", [("net_name", 32), ("comm_name", 48)])
def test_config_strings_stay_alive(field, offset):
    cfg = b.Config()
    setattr(cfg, field, "".join(["so", "cket-", str(12345), "-ñ"]))  # a fresh str nobody else holds
    gc.collect()
    for _ in range(3):
        [bytearray(64) for _ in range(1000)]  # churn the allocator over any freed bytes
    assert _c_string_at(cfg, offset) == "socket-12345-ñ".encode()
    assert getattr(cfg, field) == "socket-12345-ñ"
    setattr(cfg, field, "ib")
    assert _c_string_at(cfg, offset) == b"ib" and getattr(cfg, field) == "ib"
    setattr(cfg, field, None)
    assert _c_string_at(cfg, offset) is None and getattr(cfg, field) == ""
    with pytest.raises(TypeError):
        setattr(cfg, field, b"bytes")
    assert getattr(cfg, field) == ""


def test_config_string_on_borrowed_memory():
    store = bytearray(bytes(b.Config()))
    cfg = b.Config.from_buffer(store)
    cfg.comm_name = "borrowed"
    assert struct.unpack_from("<Q", store, 48)[0] == struct.unpack_from("<Q", bytes(cfg), 48)[0] != 0
    assert cfg.comm_name == "borrowed"


def test_read_only_config():
    cfg = b.Config.from_buffer(bytes(b.Config()))
    for name, value in (("blocking", 0), ("net_name", "x"), ("size_", 120), ("magic", 1)):
        with pytest.raises(ValueError, match=r"^This Config instance is read-only$"):
            setattr(cfg, name, value)
    with pytest.raises(ValueError, match=r"^This Config instance is read-only$"):
        cfg[0] = np.zeros(1, dtype=b.config_dtype)
    assert cfg.blocking == INT_MIN
    with pytest.raises(ValueError, match=r"^This CommProperties instance is read-only$"):
        b.CommProperties.from_buffer(bytes(152)).rank = 1


# ---- the other initializers and fields ----

def test_sim_info():
    s = b.SimInfo()
    assert (s.size_, s.magic, s.version, s.estimated_time) == (24, 0x74685283, API, -1.0)
    assert struct.unpack("<QIIf4x", bytes(s)) == (24, 0x74685283, API, -1.0)
    s.estimated_time = 0.125
    assert struct.unpack_from("<f", bytes(s), 16)[0] == 0.125
    assert {n: b.sim_info_dtype.fields[n][1] for n in b.sim_info_dtype.names} == {
        "size_": 0, "magic": 8, "version": 12, "estimated_time": 16}


def test_wait_signal_desc():
    d = b.WaitSignalDesc()
    assert bytes(d) == bytes(16) and (d.op_cnt, d.peer, d.sig_idx, d.ctx) == (0, 0, 0, 0)
    d.op_cnt, d.peer, d.sig_idx, d.ctx = 1, -2, 3, 4
    assert struct.unpack("<4i", bytes(d)) == (1, -2, 3, 4)
    assert [b.wait_signal_desc_dtype.fields[n][1] for n in ("op_cnt", "peer", "sig_idx", "ctx")] == [0, 4, 8, 12]


def test_unique_id():
    u = b.UniqueId()
    assert bytes(u) == bytes(128) and u.internal == bytes(128)
    u.internal = bytes(range(128))
    assert bytes(u) == bytes(range(128))
    with pytest.raises(ValueError):
        u.internal = bytes(127)
    assert b.unique_id_dtype.itemsize == 128


def test_dtypes_are_exported_with_their_sizes():
    for cls, name in DTYPES.items():
        assert getattr(b, name).itemsize == SIZES[cls] and getattr(nb, name) is getattr(b, name)


# ---- the common protocol, for every class ----

@pytest.mark.parametrize("cls", CLASSES)
def test_buffer_protocol(cls):
    obj = getattr(b, cls)()
    view = memoryview(obj)
    assert (view.format, view.itemsize, view.nbytes, view.readonly) == ("b", 1, SIZES[cls], False)
    assert bytes(obj) == view.tobytes() and len(bytes(obj)) == SIZES[cls]
    memoryview(obj)[0] = 5
    assert bytes(obj)[0] == 5  # a writable view writes the struct
    ro = getattr(b, cls).from_buffer(bytes(SIZES[cls]))
    assert memoryview(ro).readonly
    with pytest.raises(TypeError):
        memoryview(ro)[0] = 1
    with pytest.raises(TypeError):
        ctypes.c_char.from_buffer(ro)  # asks for a writable buffer


@pytest.mark.parametrize("cls", CLASSES)
def test_from_buffer_is_read_only_exactly_when_the_source_is(cls):
    T, n = getattr(b, cls), SIZES[cls]
    store = bytearray(range(n))
    w = T.from_buffer(store)
    assert not memoryview(w).readonly and w.ptr == ctypes.addressof(ctypes.c_char.from_buffer(store))
    store[0] = 0xAA
    assert bytes(w)[0] == 0xAA  # borrowed, not copied
    arr = np.arange(n, dtype=np.uint8)
    assert not memoryview(T.from_buffer(arr)).readonly
    arr.flags.writeable = False
    for source in (bytes(n), memoryview(bytearray(n)).toreadonly(), arr):
        assert memoryview(T.from_buffer(source)).readonly, type(source)


@pytest.mark.parametrize("cls", CLASSES)
def test_from_buffer_errors(cls):
    T, n = getattr(b, cls), SIZES[cls]
    with pytest.raises(TypeError, match=r"^buffer argument does not support the buffer protocol$"):
        T.from_buffer(12)
    with pytest.raises(TypeError, match=r"^buffer argument does not support the buffer protocol$"):
        T.from_buffer([0] * n)
    with pytest.raises(ValueError, match=r"^buffer itemsize must be 1 byte$"):
        T.from_buffer(np.zeros(n // 4, dtype=np.int32))
    for wrong in (n - 1, n + 1, 0):
        with pytest.raises(ValueError, match=rf"^buffer length must be {n} bytes$"):
            T.from_buffer(bytearray(wrong))


@pytest.mark.parametrize("cls", CLASSES)
def test_from_buffer_keeps_the_source_alive(cls):
    T, n = getattr(b, cls), SIZES[cls]
    store = bytearray(range(n))
    before = sys.getrefcount(store)
    w = T.from_buffer(store)
    assert sys.getrefcount(store) == before + 1
    del store
    gc.collect()
    assert bytes(w) == bytes(range(n))
    source = bytearray(n)
    w2 = T.from_buffer(source)
    with pytest.raises(BufferError):
        source.append(0)  # exported: cannot be resized under the wrapper
    del w2
    source.append(0)


@pytest.mark.parametrize("cls", CLASSES)
def test_from_data(cls):
    T, dtype = getattr(b, cls), getattr(b, DTYPES[cls])
    arr = np.zeros(1, dtype=dtype)
    w = T.from_data(arr)
    assert w.ptr == arr.ctypes.data and not memoryview(w).readonly
    w[0] = np.frombuffer(bytes(range(SIZES[cls])), dtype=dtype)
    assert arr.tobytes() == bytes(range(SIZES[cls]))
    arr.flags.writeable = False
    assert memoryview(T.from_data(arr)).readonly
    with pytest.raises(TypeError, match=r"^data argument must be a NumPy ndarray$"):
        T.from_data(bytes(SIZES[cls]))
    with pytest.raises(ValueError, match=r"^data array must have a size of 1$"):
        T.from_data(np.zeros(2, dtype=dtype))
    with pytest.raises(ValueError, match=r"^data array must have a size of 1$"):
        T.from_data(np.zeros(0, dtype=dtype))
    with pytest.raises(ValueError, match=rf"^data array must be of dtype {DTYPES[cls]}$"):
        T.from_data(np.zeros(1, dtype=np.int8))


@pytest.mark.parametrize("cls", CLASSES)
def test_from_ptr(cls):
    T, n = getattr(b, cls), SIZES[cls]
    raw = ctypes.create_string_buffer(bytes(range(n)), n)
    addr = ctypes.addressof(raw)
    copy = T.from_ptr(addr)
    raw[0] = 0x7F
    assert bytes(copy) == bytes(range(n)) and copy.ptr != addr  # copied
    assert not memoryview(copy).readonly and memoryview(T.from_ptr(addr, readonly=True)).readonly
    before = sys.getrefcount(raw)
    borrowed = T.from_ptr(addr, owner=raw)
    assert borrowed.ptr == addr and bytes(borrowed)[0] == 0x7F and sys.getrefcount(raw) == before + 1
    raw[1] = 0x55
    assert bytes(borrowed)[1] == 0x55
    assert memoryview(T.from_ptr(ptr=addr, readonly=True, owner=raw)).readonly
    del borrowed
    assert sys.getrefcount(raw) == before
    with pytest.raises(ValueError, match=r"^ptr must not be null \(0\)$"):
        T.from_ptr(0)
    with pytest.raises(TypeError):
        T.from_ptr("x")


@pytest.mark.parametrize("cls", CLASSES)
def test_eq_int_index_repr(cls):
    T, n = getattr(b, cls), SIZES[cls]
    x, y = T(), T()
    assert x == y and not (x != y) and x is not y
    z = T.from_buffer(bytearray(b"\x01" * n))
    assert x != z and not (x == z)
    assert T.from_buffer(bytes(x)) == x
    other = next(getattr(b, c)() for c in CLASSES if c != cls)
    assert (x == other) is False and (x == bytes(x)) is False and (x == 0) is False
    assert int(x) == x.ptr == operator.index(x) != 0
    assert hex(x) == hex(x.ptr)
    assert re.fullmatch(rf"<nccl\.bindings\.nccl\.{cls} object at 0x[0-9a-f]+>", repr(x))
    assert type(x).__module__ == "nccl.bindings.nccl" and type(x).__name__ == cls
    with pytest.raises(TypeError):
        T(1)


@pytest.mark.parametrize("cls", CLASSES)
def test_setitem_copies_in(cls):
    T, n = getattr(b, cls), SIZES[cls]
    w = T()
    w[0] = bytes(range(n))
    assert bytes(w) == bytes(range(n))
    with pytest.raises(ValueError):
        w[0] = bytes(n - 1)
    with pytest.raises(IndexError):
        w[1] = bytes(n)


def test_struct_wrappers_are_usable_as_pointers():
    cfg = b.Config()
    assert ctypes.c_size_t.from_address(int(cfg)).value == 120


# ---- PointerBox ----

def test_pointer_box():
    box = b.PointerBox()
    assert (box.ptr, int(box), operator.index(box), bool(box)) == (0, 0, 0, False)
    assert repr(box) == "<PointerBox ptr=0x0>"
    box = b.PointerBox(0x1234)
    assert (box.ptr, int(box), bool(box), repr(box)) == (0x1234, 0x1234, True, "<PointerBox ptr=0x1234>")
    assert f"{box:x}" == "1234" and f"{box:#010x}" == "0x00001234"
    address = box.address
    assert address != box.ptr and box.address == address
    ctypes.c_void_p.from_address(address).value = 0xFFFF_8000_0000_0010  # what NCCL does
    assert box.ptr == 0xFFFF_8000_0000_0010
    box.ptr = 7
    assert ctypes.c_void_p.from_address(address).value == 7 and box.address == address
    assert b.PointerBox(ptr=5).ptr == 5
    with pytest.raises(OverflowError):
        b.PointerBox(2**64)
    with pytest.raises(TypeError):
        b.PointerBox("x")
    with pytest.raises(AttributeError):
        box.address = 1
    with pytest.raises(AttributeError):
        del box.ptr


# ---- reference counts ----

N = 100_000


def test_struct_creation_does_not_leak():
    def cycle():
        for _ in range(N // 10):
            b.Config()
            b.UniqueId.from_buffer(store)
            b.SimInfo.from_ptr(addr)
            b.CommProperties.from_data(arr)
            box = b.PointerBox(1)
            cfg = b.Config()
            cfg.net_name = "n"
            del box, cfg

    store = bytearray(128)
    raw = ctypes.create_string_buffer(24)
    addr = ctypes.addressof(raw)
    arr = np.zeros(1, dtype=b.comm_properties_dtype)
    cycle()  # warm up
    counts = [sys.getrefcount(o) for o in (store, arr, b.Config, b.UniqueId, b.PointerBox, b.CommProperties)]
    tracemalloc.start()
    try:
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(10):
            cycle()
        grown = tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(o) for o in (store, arr, b.Config, b.UniqueId, b.PointerBox, b.CommProperties)] == counts
    assert grown < 64 * 1024, f"{grown} bytes more after {N} rounds"


REFCOUNT_LOOPS = f"""
import sys
N = {N}
ID = bytes(range(128))
send = 2**40 + 12345          # ints above the small-int cache: their counts are observable
count = 2**33 + 1
comm = b.PointerBox(0x7F00_0000_0001)
uid = b.UniqueId.from_buffer(bytearray(ID))
box = b.PointerBox()
objs = dict(send=send, count=count, comm=comm, uid=uid, ID=ID, box=box, UniqueId=b.UniqueId,
            CommProperties=b.CommProperties)

def counts():
    return {{k: sys.getrefcount(v) for k, v in objs.items()}}

def loops(fail):
    status = 4 if fail else 0
    stub.script("ncclAllReduce", status)
    stub.script("ncclCommInitRank", status)
    stub.script("ncclGetUniqueId", status)
    stub.script("ncclCommQueryProperties", status)
    errors = 0
    for _ in range(N):
        try:
            b.all_reduce(send, send, count, 7, 0, comm, 0)
        except b.NCCLError:
            errors += 1
    for _ in range(N // 5):
        for call in (lambda: b.comm_init_rank(box.address, 4, uid, 1), lambda: b.comm_init_rank(4, ID, 1),
                     b.get_unique_id, lambda: b.comm_query_properties(comm)):
            try:
                call()
            except b.NCCLError:
                errors += 1
    return errors

out = {{}}
for fail in (False, True):
    loops(fail)  # warm up (caches, the first exception)
    before = counts()
    errors = loops(fail)
    out[fail] = (errors, before, counts())
result = out
"""


def test_refcounts_over_library_calls(stub_python):
    r = stub_python("nccl").run(REFCOUNT_LOOPS, timeout=120)
    for fail, (errors, before, after) in r.items():
        assert errors == (N + 4 * (N // 5) if fail else 0)
        assert after == before, f"reference counts moved ({'failure' if fail else 'success'} path)"


def test_refcounts_over_all_to_all_v(stub_python):
    r = stub_python("rccl").run(f"""
        import sys
        import numpy as np
        stub.set_out("ncclCommCount", 4)
        big = [10**12 + k for k in range(4)]  # above the small-int cache: their counts are observable
        lists = [big, [0, 1, 3, 6], np.ones(4, dtype=np.uint64), [0, 1, 2, 3]]
        before = [sys.getrefcount(x) for x in lists] + [sys.getrefcount(v) for v in lists[0]]
        for status in (0, 5):
            stub.script("ncclAlltoAllv", status)
            for _ in range({N // 5}):
                try:
                    rx.all_to_all_v(1, lists[0], lists[1], 2, lists[2], lists[3], 7, 3, 4)
                except b.NCCLError:
                    pass
                try:
                    rx.all_to_all_v(1, lists[0], lists[1], 2, lists[2], [0, 1], 7, 3, 4)
                except ValueError:
                    pass
        result = (before, [sys.getrefcount(x) for x in lists] + [sys.getrefcount(v) for v in lists[0]])
    """, timeout=120)
    assert r[0] == r[1]
