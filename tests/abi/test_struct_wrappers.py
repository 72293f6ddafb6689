"""Struct wrappers (API.md 3.6/3.7, and the RCCL fork's test_comm_properties_abi.py checks)."""

import ctypes
import sys

import numpy as np
import pytest

import nccl.bindings as nb
import nccl.bindings.nccl as b


class RefCommProperties(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("rank", ctypes.c_int), ("nRanks", ctypes.c_int), ("cudaDev", ctypes.c_int), ("nvmlDev", ctypes.c_int),
                ("deviceApiSupport", ctypes.c_bool), ("multimemSupport", ctypes.c_bool), ("ginType", ctypes.c_int),
                ("nLsaTeams", ctypes.c_int), ("hostRmaSupport", ctypes.c_bool), ("railedGinType", ctypes.c_int)]


C_TO_PY = {"size": "size_", "nRanks": "n_ranks", "cudaDev": "cuda_dev", "nvmlDev": "nvml_dev",
           "deviceApiSupport": "device_api_support", "multimemSupport": "multimem_support", "ginType": "gin_type",
           "nLsaTeams": "n_lsa_teams", "hostRmaSupport": "host_rma_support", "railedGinType": "railed_gin_type"}


def test_comm_properties_dtype_matches_the_c_layout():
    assert ctypes.sizeof(RefCommProperties) == 56
    dt = nb.comm_properties_dtype
    assert dt.itemsize == 56
    for cname, *_ in RefCommProperties._fields_:
        assert dt.fields[C_TO_PY.get(cname, cname)][1] == getattr(RefCommProperties, cname).offset, cname


@pytest.mark.parametrize("gin,railed", [("NONE", "NONE"), ("PROXY", "GDAKI"), ("GDAKI", "PROXY")])
def test_comm_properties_round_trip(gin, railed):
    ref = RefCommProperties(size=56, magic=0xDEADBEEF, version=123456, rank=3, nRanks=8, cudaDev=5, nvmlDev=9,
                            deviceApiSupport=1, multimemSupport=0, ginType=nb.GinType[gin], nLsaTeams=42,
                            hostRmaSupport=1, railedGinType=nb.GinType[railed])
    props = nb.CommProperties.from_buffer(bytes(ref))
    assert (props.size_, props.magic, props.version, props.rank, props.n_ranks, props.cuda_dev, props.nvml_dev) == (
        56, 0xDEADBEEF, 123456, 3, 8, 5, 9)
    assert (props.device_api_support, props.multimem_support, props.n_lsa_teams, props.host_rma_support) == (1, 0, 42, 1)
    assert nb.GinType(props.gin_type) is nb.GinType[gin] and nb.GinType(props.railed_gin_type) is nb.GinType[railed]
    with pytest.raises(ValueError, match=r"^This CommProperties instance is read-only$"):
        props.rank = 1  # a bytes source gives a read-only wrapper


def test_undersized_buffer():
    with pytest.raises(ValueError, match=r"^buffer length must be 56 bytes$"):
        nb.CommProperties.from_buffer(bytes(48))
    with pytest.raises(TypeError, match=r"^buffer argument does not support the buffer protocol$"):
        b.Config.from_buffer(12)
    with pytest.raises(ValueError, match=r"^buffer itemsize must be 1 byte$"):
        b.WaitSignalDesc.from_buffer(np.zeros(4, dtype=np.int32))


CONFIG_OFFSETS = {"size_": 0, "magic": 8, "version": 12, "blocking": 16, "cga_cluster_size": 20, "min_ctas": 24,
                  "max_ctas": 28, "net_name": 32, "split_share": 40, "traffic_class": 44, "comm_name": 48,
                  "collnet_enable": 56, "cta_policy": 60, "shrink_share": 64, "nvls_ctas": 68,
                  "n_channels_per_net_peer": 72, "nvlink_centric_sched": 76, "graph_usage_mode": 80,
                  "num_rma_ctx": 84, "max_p2p_peers": 88, "graph_stream_ordering": 92}


def test_config_layout_and_initializer():
    assert b.config_dtype.itemsize == 96
    assert {k: b.config_dtype.fields[k][1] for k in CONFIG_OFFSETS} == CONFIG_OFFSETS
    c = b.Config()
    raw = bytes(c)
    assert len(raw) == 96
    assert (c.size_, c.magic, c.version) == (96, 0xCAFEBEEF, 23007)
    ints = [k for k in CONFIG_OFFSETS if k not in ("size_", "magic", "version", "net_name", "comm_name")]
    assert all(getattr(c, k) == -2**31 for k in ints)
    assert (c.net_name, c.comm_name) == ("", "")
    assert int.from_bytes(raw[32:40], "little") == 0  # NULL pointers


def test_sim_info_and_unique_id_initializers():
    s = b.SimInfo()
    assert (s.size_, s.magic, s.version, s.estimated_time) == (24, 0x74685283, 23007, -1.0)
    assert bytes(b.UniqueId()) == bytes(128)
    assert bytes(b.WaitSignalDesc()) == bytes(16)


def test_config_strings_stay_alive_and_are_read_back():
    c = b.Config()
    c.comm_name = "trainer-" + "x" * 10
    c.net_name = "Socket"
    ptr = int.from_bytes(bytes(c)[48:56], "little")
    assert ptr != 0 and ctypes.string_at(ptr) == b"trainer-xxxxxxxxxx"
    assert (c.comm_name, c.net_name) == ("trainer-xxxxxxxxxx", "Socket")
    c.comm_name = None
    assert c.comm_name == "" and int.from_bytes(bytes(c)[48:56], "little") == 0
    with pytest.raises(TypeError, match="Config.net_name must be a str"):
        c.net_name = 5


def test_from_buffer_follows_the_source_flag():
    backing = bytearray(96)
    c = b.Config.from_buffer(backing)
    c.blocking = 0
    assert backing[16:20] == bytes(4) and c.ptr == ctypes.addressof(ctypes.c_char.from_buffer(backing))
    c.max_ctas = 7
    assert int.from_bytes(backing[28:32], "little") == 7
    with pytest.raises(ValueError, match="read-only"):
        b.Config.from_buffer(bytes(96)).blocking = 1


def test_from_data_and_from_ptr():
    arr = np.zeros(1, dtype=b.sim_info_dtype)
    s = b.SimInfo.from_data(arr)
    s.estimated_time = 2.5
    assert arr["estimated_time"][0] == 2.5
    with pytest.raises(TypeError, match=r"^data argument must be a NumPy ndarray$"):
        b.SimInfo.from_data(bytearray(24))
    with pytest.raises(ValueError, match=r"^data array must have a size of 1$"):
        b.SimInfo.from_data(np.zeros(2, dtype=b.sim_info_dtype))
    with pytest.raises(ValueError, match=r"^data array must be of dtype sim_info_dtype$"):
        b.SimInfo.from_data(np.zeros(1, dtype=b.config_dtype))
    src = b.UniqueId.from_buffer(bytearray(range(128)))
    copy = b.UniqueId.from_ptr(src.ptr)
    assert copy == src and copy.ptr != src.ptr
    view = b.UniqueId.from_ptr(src.ptr, owner=src)
    assert view.ptr == src.ptr
    with pytest.raises(ValueError, match=r"^ptr must not be null \(0\)$"):
        b.UniqueId.from_ptr(0)


def test_equality_int_index_and_setitem():
    a, c = b.UniqueId(), b.UniqueId()
    assert a == c and a != b.Config() and not (a == 5)
    a[0] = np.frombuffer(bytes(range(128)), dtype=np.int8)
    assert a != c and a.internal == bytes(range(128))
    assert int(a) == a.ptr == a.__index__()
    assert repr(a).startswith("<nccl.bindings.nccl.UniqueId object at 0x")


def test_pointer_box():
    box = b.PointerBox()
    assert box.ptr == 0 and not box and repr(box) == "<PointerBox ptr=0x0>"
    box.ptr = 0xBEEF
    assert int(box) == 0xBEEF and bool(box) and f"{box:#x}" == "0xbeef"
    assert ctypes.c_void_p.from_address(box.address).value == 0xBEEF
    assert box.address != b.PointerBox().address


def test_struct_refcounts_do_not_grow():
    src = bytearray(56)
    before = sys.getrefcount(src)
    for _ in range(20_000):
        p = b.CommProperties.from_buffer(src)
        del p
    assert sys.getrefcount(src) == before
    c = b.Config()
    name = "n" * 20
    before = sys.getrefcount(name)
    for _ in range(20_000):
        c.comm_name = name
    assert sys.getrefcount(name) == before
