"""The NCCL 2.32 struct classes against older libraries, and their own behaviour.

Older libraries: a 2.32 Config (120 bytes) passed to a 2.27 library is read as its 72-byte
prefix, which is exactly 2.27's layout; a CommProperties (152 bytes, stamped 2.32.3) passed by the
binding to a 2.29.7 library is stamped down to 2.29.7 so the library accepts it, and the fields
it does not know stay at their initializer values; a struct the caller stamped itself is passed
as it is. The same against the host backend emulating 2.29.7.

The classes: initializers of the new versioned structs (the NCCL_*_INITIALIZER values), nested
struct fields borrowing their parent's memory, array fields as memoryviews, pointer fields."""

import ctypes
import gc
import struct
import sys

import numpy as np
import pytest

import nccl.bindings.nccl as b

INT_MIN = -(2**31)
ID = bytes(range(7, 135))


class Config2_27(ctypes.Structure):
    """ncclConfig_t as RCCL 2.27 / NCCL 2.27 declare it (x86_64, 72 bytes)."""
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("blocking", ctypes.c_int), ("cgaClusterSize", ctypes.c_int), ("minCTAs", ctypes.c_int),
                ("maxCTAs", ctypes.c_int), ("netName", ctypes.c_char_p), ("splitShare", ctypes.c_int),
                ("trafficClass", ctypes.c_int), ("commName", ctypes.c_char_p), ("collnetEnable", ctypes.c_int),
                ("CTAPolicy", ctypes.c_int), ("shrinkShare", ctypes.c_int), ("nvlsCTAs", ctypes.c_int)]


def test_config_2_27_reference_is_72_bytes():
    assert ctypes.sizeof(Config2_27) == 72


def test_a_2_27_library_reads_the_2_32_config_as_its_own(stub_python):
    r = stub_python("nccl_2_27").run(f"""
        stub.set_struct_reader(True)
        cfg = b.Config()
        cfg.blocking, cfg.min_ctas, cfg.max_ctas, cfg.cta_policy, cfg.nvls_ctas = 0, 2, 16, 1, 4
        cfg.comm_name, cfg.nvls_host_mode, cfg.host_cft_mode = "ring-a", 3, 2
        box = b.PointerBox()
        ret = b.comm_init_rank_config(box.address, 4, {ID!r}, 1, cfg.ptr)
        calls = stub.calls(with_blobs=True)
        stub.reset()
        stub.set_struct_reader(True)
        bad = b.Config()
        bad.magic = 7
        err = catch(b.comm_init_rank_config, box.address, 4, {ID!r}, 1, bad.ptr)
        result = (ret, bytes(cfg), calls, err[0], cfg.comm_name)
    """)
    ret, raw, calls, err, name = r
    assert ret is None or ret == 0
    (call,) = calls
    assert call.name == "ncclCommInitRankConfig"
    assert call.blob[:128] == ID and len(call.blob) == 128 + 72  # the id, then what 2.27 copied
    seen = Config2_27.from_buffer_copy(call.blob[128:])
    assert (seen.size, seen.magic, seen.version) == (120, 0xCAFEBEEF, 23203)
    assert (seen.blocking, seen.minCTAs, seen.maxCTAs, seen.CTAPolicy, seen.nvlsCTAs) == (0, 2, 16, 1, 4)
    assert (seen.cgaClusterSize, seen.splitShare, seen.trafficClass, seen.collnetEnable, seen.shrinkShare) == (
        INT_MIN,) * 5
    assert call.blob[128:] == raw[:72] and name == "ring-a"
    assert err == "NCCLInvalidArgument"  # the reader is active: a bad magic is refused


PROPS_FIELDS = ("rank", "n_ranks", "cuda_dev", "nvml_dev", "device_api_support", "multimem_support", "gin_type",
                "n_lsa_teams", "host_rma_support", "railed_gin_type", "comm_hash", "gin_min_stride",
                "gin_connection_type", "dev_comm_runtime_version_size", "cft_support", "cft_multicast_support",
                "cft_counted_support")


def test_properties_from_a_2_29_library(stub_python):
    r = stub_python("nccl_2_29").run(f"""
        props = b.comm_query_properties(0x1000)
        new = ([getattr(props, f) for f in {PROPS_FIELDS!r}], props.size_, props.version,
               props.gin_support.tobytes(), stub.calls(with_blobs=True))
        stub.reset()
        mine = b.CommProperties()
        err = catch(b.comm_query_properties, 0x1000, mine.ptr)
        result = (new, err[0], mine.version, mine.rank)
    """)
    (values, size, version, support, calls), err, mine_version, mine_rank = r
    # stamped down to the library's version, which then fills the fields it has; the rest keep 0
    assert (size, version) == (152, 22907)
    assert values == [3, 8, 5, 9, 1, 0, 2, 42, 1, 3] + [0] * 7 and support == bytes(64)
    assert calls[0].blob == struct.pack("<QII", 152, 0xCAFEBEEF, 22907)
    # a struct the caller stamped goes as it is: newer than the library, which refuses it
    assert (err, mine_version, mine_rank) == ("NCCLInvalidUsage", 23203, 0)


def test_properties_from_a_2_32_library(stub_python):
    r = stub_python("nccl").run("""
        props = b.comm_query_properties(0x1000)
        result = (props.version, props.comm_hash, list(props.gin_support)[:4], props.cft_counted_support)
    """)
    assert r == (23203, 0x1234567890ABCDEF, [1, 0, 1, 1], 1)


HOST = """
    uid = b.get_unique_id()
    comm = b.comm_init_rank(1, uid, 0)
    props = b.comm_query_properties(comm)
    result = (props.version, props.rank, props.n_ranks, props.n_lsa_teams, props.comm_hash != 0)
    b.comm_destroy(comm)
"""


def test_properties_from_the_host_backend(fresh_python):
    assert fresh_python(HOST, env={"NCCL_LIBRARY": "host"}) == (23203, 0, 1, 1, True)


def test_properties_from_the_host_backend_as_2_29(fresh_python):
    r = fresh_python(HOST, env={"NCCL_LIBRARY": "host", "NCCL_HOST_VERSION_CODE": "22907"})
    assert r == (22907, 0, 1, 1, False)  # commHash is a 2.31 field: not filled for a 2.29.7 caller


# ---- the classes ----

def test_coll_config_initializer():
    c = b.CollConfig()
    assert (c.size_, c.magic, c.version, c.ext) == (72, 0xCAFEBEEF, 23203, 0)
    assert (c.min_ctas, c.max_ctas, c.nvls_ctas, c.cga_cluster_size, c.cta_policy) == (INT_MIN,) * 5
    assert (c.alg_selection, c.force_alg_selection, c.user_profiler_tag, c.launch_completion_event_handle) == (
        "", 1, 0, 0)
    c.alg_selection = "RING"
    c.user_profiler_tag = 2**64 - 1
    assert ctypes.string_at(struct.unpack_from("<Q", bytes(c), 40)[0]) == b"RING"
    assert struct.unpack_from("<Q", bytes(c), 56)[0] == 2**64 - 1
    with pytest.raises(OverflowError):
        c.user_profiler_tag = -1


def test_encryption_config_initializer():
    e = b.EncryptionConfig()
    assert (e.size_, e.magic, e.version, e.mode, e.psk) == (32, 0xCAFEBEEF, 23203, 0, "")
    e.mode, e.psk = 1, "secret"
    assert ctypes.string_at(struct.unpack_from("<Q", bytes(e), 24)[0]) == b"secret"


def test_dev_comm_requirements_initializer():
    r = b.DevCommRequirements()
    assert (r.size_, r.magic, r.version) == (120, 0xCAFEBEEF, 23203)
    assert (r.gin_context_count, r.gin_traffic_class, r.gin_strong_signals_required, r.gin_va_signals_required,
            r.gin_custom_stride) == (4, INT_MIN, 1, 1, 1)
    rest = ("resource_requirements_list", "team_requirements_list", "lsa_multimem", "barrier_count",
            "lsa_barrier_count", "rail_gin_barrier_count", "lsa_ll_a2a_block_count", "lsa_ll_a2a_slot_count",
            "gin_force_enable", "gin_signal_count", "gin_counter_count", "gin_connection_type",
            "gin_exclusive_contexts", "gin_queue_depth", "world_gin_barrier_count", "gin_type",
            "use_runtime_version", "cft_caps", "cft_barrier_count")
    assert [getattr(r, f) for f in rest] == [0] * len(rest)


def test_nested_struct_borrows_its_parent():
    req = b.TeamRequirements()
    team = req.team
    assert type(team) is b.Team and team.ptr == req.ptr + 8
    team.n_ranks, team.rank, team.stride = 4, 1, 2
    assert struct.unpack_from("<iii", bytes(req), 8) == (4, 1, 2)
    before = sys.getrefcount(req)
    again = req.team
    assert sys.getrefcount(req) == before + 1
    del again
    assert sys.getrefcount(req) == before
    del req
    gc.collect()
    assert (team.n_ranks, team.rank, team.stride) == (4, 1, 2)  # the parent lives while the child does


def test_nested_struct_assignment_and_read_only():
    req = b.TeamRequirements()
    t = b.Team()
    t.n_ranks, t.rank, t.stride = 8, 3, 1
    req.team = t
    assert bytes(req.team) == bytes(t)
    req.team = struct.pack("<iii", 2, 1, 4)
    assert (req.team.n_ranks, req.team.stride) == (2, 4)
    with pytest.raises(ValueError, match=r"^TeamRequirements\.team must be 12 bytes$"):
        req.team = b.MultimemHandle()
    ro = b.DevComm.from_buffer(bytes(248))
    with pytest.raises(ValueError, match=r"^This LsaBarrierHandle instance is read-only$"):
        ro.lsa_barrier.n_barriers = 1
    assert type(ro.resource_window_inlined) is b.ResourceWindowVidmem


def test_array_fields():
    p = b.CommProperties()
    support = p.gin_support
    assert (support.format, support.shape, support.readonly) == ("B", (64,), False)
    support[5] = 1
    assert bytes(p)[72 + 5] == 1
    p.gin_support = [1] * 64
    assert bytes(p)[72:136] == b"\x01" * 64
    with pytest.raises(ValueError, match=r"^CommProperties\.gin_support must be a sequence of 64 ints$"):
        p.gin_support = [1, 2]
    with pytest.raises(OverflowError):
        p.gin_support = [256] + [0] * 63
    assert bytes(p)[72:136] == b"\x01" * 64  # all or nothing
    d = b.DevComm()
    d.gin_handles = [1, 2**64 - 1, 0, 0x7F00_0000_1000]
    assert d.gin_handles.tolist() == [1, 2**64 - 1, 0, 0x7F00_0000_1000]
    assert b.dev_comm_dtype.fields["gin_handles"][0].shape == (4,)


def test_config_ext_key_and_value():
    e = b.ConfigExt()
    e.key = (0xABCDE, 7)
    e.val = -5  # an int option: its low 4 bytes
    assert struct.unpack("<QiiQ", bytes(e)) == (0, 0xABCDE, 7, 2**64 - 5)
    assert struct.unpack_from("<i", bytes(e), 16)[0] == -5
    other = b.ConfigExt()
    e.next = other  # a wrapper stands for its address
    assert e.next == other.ptr
    c = b.CollConfig()
    c.ext = e
    assert c.ext == e.ptr
    with pytest.raises(OverflowError):
        e.val = 2**64
    with pytest.raises(OverflowError):
        e.val = -(2**63) - 1
    with pytest.raises(TypeError):
        e.next = 1.5


def test_nested_dtypes():
    dt = b.team_requirements_dtype
    assert dt.fields["team"][0] == b.team_dtype and dt.fields["team"][1] == 8
    assert b.dev_comm_dtype.fields["lsa_barrier"][0] == b.lsa_barrier_handle_dtype
    arr = np.zeros(1, dtype=b.dev_comm_dtype)
    arr[0]["lsa_barrier"]["n_barriers"] = 9
    assert b.DevComm.from_data(arr).lsa_barrier.n_barriers == 9


def test_type_names_are_static():
    names = {cls: getattr(b, cls).__name__ for cls in ("Config", "DevComm", "LLA2AHandle")}
    gc.collect()
    [bytearray(96) for _ in range(1000)]
    assert repr(b.DevComm()).startswith("<nccl.bindings.nccl.DevComm object at 0x")
    assert names == {"Config": "Config", "DevComm": "DevComm", "LLA2AHandle": "LLA2AHandle"}
    assert b.Config.__module__ == "nccl.bindings.nccl"
