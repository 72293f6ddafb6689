"""The NCCL 2.28-2.32 entry points of libnccl-host, called through ctypes in child interpreters
(the library's state is per process): the nccl*Config collectives against numpy, the ncclParam*
API over the tunables, ncclCommQueryProperties by the caller's size and version, the team
arithmetic, ncclSetEncryption, and the refusals that `python -m nccl doctor` lists."""

import json
import re
import textwrap
from pathlib import Path

import pytest

import children
import nccl

LIB = Path(nccl.__file__).resolve().parent / "_lib" / "libnccl-host.so"
API_C = Path(__file__).resolve().parents[2] / "src" / "host" / "api.c"
pytestmark = [pytest.mark.skipif(not LIB.exists(), reason="the installed package has no libnccl-host.so"),
              pytest.mark.timeout(120)]

PRELUDE = f"""
import ctypes, struct, json
import numpy as np
L = ctypes.CDLL({str(LIB)!r})
L.ncclGetLastError.restype = ctypes.c_char_p
L.ncclHostRefusedEntryPoints.restype = ctypes.c_char_p
P = ctypes.c_void_p
def last():
    return L.ncclGetLastError(None).decode()
class Team(ctypes.Structure):
    _fields_ = [("nRanks", ctypes.c_int), ("rank", ctypes.c_int), ("stride", ctypes.c_int)]
def comms(n):
    c = (P * n)()
    assert L.ncclCommInitAll(c, n, None) == 0, last()
    return [P(x) for x in c]
def coll_config(**fields):
    # ncclCollConfig_t as NCCL_COLLCONFIG_INITIALIZER stamps it (72 bytes)
    raw = bytearray(struct.pack("<QIIQiiiiQiiQQ", 72, 0xCAFEBEEF, 23203, 0, *[-2**31] * 4, 0, 1, -2**31, 0, 0))
    offsets = {{"size": (0, "<Q"), "magic": (8, "<I"), "minCTAs": (24, "<i"), "maxCTAs": (28, "<i"),
               "forceAlgSelection": (48, "<i"), "CTAPolicy": (52, "<i")}}
    for k, v in fields.items():
        struct.pack_into(offsets[k][1], raw, offsets[k][0], v)
    return ctypes.create_string_buffer(bytes(raw), len(raw))
"""


def run(code, **env):
    e = children.environment(drop=(), drop_prefix="NCCL", **env)
    return children.run_python(PRELUDE + code, env=e, timeout=100, check_exit=True).stdout


def result(code, pre="", **env):
    """Runs pre (unindented) and code (dedented) in a child; returns what it assigned to result."""
    out = run(pre + textwrap.dedent(code) + "\nprint(json.dumps(result))\n", **env)
    return json.loads(out.splitlines()[-1])


# ---- refusals ----

def test_refused_list_matches_the_refusing_code():
    """Every shell that refuses (HOST_REFUSE()) is listed, and every listed name is one."""
    shells = re.findall(r"^\w[^\n]*?\b(nccl\w+)\((.*?)^\}", API_C.read_text(), re.M | re.S)
    calls = {name for name, body in shells if "HOST_REFUSE()" in body}
    listed = result("result = L.ncclHostRefusedEntryPoints().decode().split()")
    assert sorted(listed) == sorted(set(listed)) and set(listed) == calls
    assert len(listed) == 12


def test_every_refused_entry_point_refuses_by_name():
    r = result("""
        result = {}
        for name in L.ncclHostRefusedEntryPoints().decode().split():
            fn = getattr(L, name)
            rc = fn(*([P(0)] * 12))
            result[name] = (rc, last())
    """)
    for name, (rc, text) in r.items():
        if name in ("ncclTeamCft", "ncclTeamCftMultimem"):  # they return a team, not a status
            assert f"{name} is not supported by the host backend" in text, name
            continue
        assert rc == 5, name
        assert text.startswith(f"{name} is not supported by the host backend (libnccl-host "), name


def test_refused_team_functions_return_an_empty_team():
    r = result("""
        c = comms(2)
        L.ncclTeamCft.restype = Team
        t = L.ncclTeamCft(c[0], 0)
        result = [t.nRanks, t.rank, t.stride, last()]
    """)
    assert r[:3] == [0, 0, 0] and r[3].startswith("ncclTeamCft is not supported")


# ---- nccl*Config collectives ----

def test_config_collectives_at_two_ranks():
    r = result("""
        c = comms(2)
        rng = np.random.default_rng(5)
        send = [rng.standard_normal(12).astype(np.float32) for _ in range(2)]
        recv = [np.zeros(12, np.float32) for _ in range(2)]
        cfg = coll_config(minCTAs=2, maxCTAs=8)
        def ptr(a):
            return P(a.ctypes.data)
        assert L.ncclGroupStart() == 0
        for r in range(2):
            assert L.ncclAllReduceConfig(ptr(send[r]), ptr(recv[r]), ctypes.c_size_t(12), 7, 0, c[r], None, cfg) == 0
        assert L.ncclGroupEnd() == 0
        allreduce = [x.tolist() for x in recv]
        gath = [np.zeros(24, np.float32) for _ in range(2)]
        assert L.ncclGroupStart() == 0
        for r in range(2):  # a NULL config is the plain call
            assert L.ncclAllGatherConfig(ptr(send[r]), ptr(gath[r]), ctypes.c_size_t(12), 7, c[r], None, None) == 0
        assert L.ncclGroupEnd() == 0
        bc = [send[0].copy(), np.zeros(12, np.float32)]
        assert L.ncclGroupStart() == 0
        for r in range(2):
            assert L.ncclBroadcastConfig(ptr(bc[r]), ptr(bc[r]), ctypes.c_size_t(12), 7, 0, c[r], None, cfg) == 0
        assert L.ncclGroupEnd() == 0
        result = dict(send=[x.tolist() for x in send], allreduce=allreduce, gather=[x.tolist() for x in gath],
                      bcast=[x.tolist() for x in bc])
    """)
    send = [__import__("numpy").array(x, dtype="float32") for x in r["send"]]
    expected = (send[0] + send[1]).tolist()
    assert r["allreduce"] == [expected, expected]
    cat = send[0].tolist() + send[1].tolist()
    assert r["gather"] == [cat, cat]
    assert r["bcast"] == [r["send"][0], r["send"][0]]


@pytest.mark.parametrize("fields, text", [
    ({"size": 56}, "ncclAllReduceConfig: config.size is 56, below the 64 bytes of NCCL 2.31's ncclCollConfig_t"),
    ({"magic": 7}, "ncclAllReduceConfig: config.magic is 0x7, not 0xcafebeef"),
    ({"minCTAs": 0}, "ncclAllReduceConfig: config.minCTAs = 0 is out of range"),
    ({"forceAlgSelection": 2}, "ncclAllReduceConfig: config.forceAlgSelection = 2 is out of range"),
    ({"minCTAs": 9, "maxCTAs": 4}, "ncclAllReduceConfig: config.minCTAs = 9 exceeds config.maxCTAs = 4"),
])
def test_bad_config_is_invalid_argument_and_fails_the_group(fields, text):
    r = result(f"""
        c = comms(1)
        a = np.ones(4, np.float32)
        cfg = coll_config(**{fields!r})
        bare = L.ncclAllReduceConfig(P(a.ctypes.data), P(a.ctypes.data), ctypes.c_size_t(4), 7, 0, c[0], None, cfg)
        msg = last()
        assert L.ncclGroupStart() == 0
        grouped = L.ncclAllReduceConfig(P(a.ctypes.data), P(a.ctypes.data), ctypes.c_size_t(4), 7, 0, c[0], None, cfg)
        end = L.ncclGroupEnd()
        result = [bare, msg, grouped, end, a.tolist()]
    """)
    assert r[0] == 4 and text in r[1]
    assert r[2] == 4 and r[3] != 0 and r[4] == [1.0] * 4  # nothing ran


def test_older_and_newer_coll_configs_are_read_by_size():
    """A 2.31 caller's 64-byte struct, and a larger one from a newer header, both work."""
    r = result("""
        c = comms(1)
        a = np.arange(4, dtype=np.float32)
        out = []
        for size in (64, 96):
            raw = coll_config(size=size)
            buf = ctypes.create_string_buffer(raw.raw + b"\\xff" * 32, 104)
            out.append(L.ncclAllReduceConfig(P(a.ctypes.data), P(a.ctypes.data), ctypes.c_size_t(4), 7, 0, c[0], None, buf))
        result = out
    """)
    assert r == [0, 0]


# ---- parameters ----

def test_parameter_keys_and_values_by_key():
    r = result("""
        table = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_int(-1)
        assert L.ncclParamGetAllParameterKeys(ctypes.byref(table), ctypes.byref(n)) == 0
        keys = [table[i].decode() for i in range(n.value)]
        vals = {}
        for k in keys:
            v, ln = ctypes.c_char_p(), ctypes.c_int(-1)
            assert L.ncclParamGetParameter(k.encode(), ctypes.byref(v), ctypes.byref(ln)) == 0, k
            vals[k] = (v.value.decode(), ln.value)
        v, ln = ctypes.c_char_p(b"x"), ctypes.c_int(-1)
        unknown = (L.ncclParamGetParameter(b"NCCL_NO_SUCH", ctypes.byref(v), ctypes.byref(ln)), v.value, ln.value, last())
        null = L.ncclParamGetParameter(None, ctypes.byref(v), ctypes.byref(ln))
        result = dict(keys=keys, vals=vals, unknown=unknown, null=null)
    """, NCCL_HOST_TIMEOUT="7.5", NCCL_HOST_P2P_BYTES="8192", NCCL_COMM_BLOCKING="0")
    assert r["keys"][:3] == ["NCCL_HOST_FLAVOR", "NCCL_HOST_VERSION_CODE", "NCCL_HOST_FP8"]
    assert len(r["keys"]) == 21 and len(set(r["keys"])) == 21
    vals = r["vals"]
    assert vals["NCCL_HOST_TIMEOUT"] == ["7.5", 3]
    assert vals["NCCL_HOST_P2P_BYTES"] == ["8192", 4]
    assert vals["NCCL_COMM_BLOCKING"] == ["0", 1]
    assert vals["NCCL_HOST_VERSION_CODE"] == ["23203", 5]
    assert vals["NCCL_HOST_FLAVOR"] == ["nccl", 4] and vals["NCCL_HOST_BIND_ADDR"] == ["127.0.0.1", 9]
    assert vals["NCCL_HOST_CHUNK_BYTES"] == ["0", 1]  # unset: sized per communicator
    assert vals["NCCL_HOST_SPIN_US"] == ["50", 2] and vals["NCCL_HOST_DIRECT"] == ["auto", 4]  # unset: defaults
    assert vals["NCCL_HOST_YIELD_US"] == ["20", 2] and vals["NCCL_HOST_BCAST_EAGER"] == ["1", 1]
    assert vals["NCCL_HOST_YIELD_SMALL_US"] == ["400", 3]
    assert r["unknown"] == [4, None, 0, "ncclParamBind: NCCL_NO_SUCH is not a parameter of the host backend"]
    assert r["null"] == 4


def test_parameters_by_handle():
    r = result("""
        def bind(key):
            h = P()
            rc = L.ncclParamBind(ctypes.byref(h), key)
            return rc, h
        rc, checks = bind(b"NCCL_HOST_CHECKS")
        assert rc == 0 and checks.value
        out = {}
        for name, ctype in (("I8", ctypes.c_int8), ("U16", ctypes.c_uint16), ("I32", ctypes.c_int32),
                            ("U64", ctypes.c_uint64)):
            v = ctype(99)
            out[name] = (getattr(L, "ncclParamGet" + name)(checks, ctypes.byref(v)), v.value)
        _, version = bind(b"NCCL_HOST_VERSION_CODE")
        small = ctypes.c_int8(5)
        out["too_small"] = (L.ncclParamGetI8(version, ctypes.byref(small)), small.value, last())
        _, blocking = bind(b"NCCL_COMM_BLOCKING")
        u = ctypes.c_uint32(5)
        out["negative_unsigned"] = (L.ncclParamGetU32(blocking, ctypes.byref(u)), u.value)
        i = ctypes.c_int32(5)
        out["unset_blocking"] = (L.ncclParamGetI32(blocking, ctypes.byref(i)), i.value)
        _, flavour = bind(b"NCCL_HOST_FLAVOR")
        out["text_as_int"] = (L.ncclParamGetI32(flavour, ctypes.byref(i)), last())
        s = ctypes.c_char_p()
        out["str"] = (L.ncclParamGetStr(flavour, ctypes.byref(s)), s.value.decode())
        out["int_as_str"] = (L.ncclParamGetStr(version, ctypes.byref(s)), s.value.decode())
        buf, ln = ctypes.create_string_buffer(16), ctypes.c_int(-1)
        out["raw_int"] = (L.ncclParamGet(version, buf, 16, ctypes.byref(ln)), ln.value, struct.unpack_from("<q", buf.raw)[0])
        out["raw_text"] = (L.ncclParamGet(flavour, buf, 16, ctypes.byref(ln)), ln.value, buf.raw[:5].hex())
        out["raw_small"] = (L.ncclParamGet(version, buf, 4, ctypes.byref(ln)), ln.value)
        out["foreign"] = L.ncclParamGetI32(P(id(out)), ctypes.byref(i))
        out["unknown"] = bind(b"NCCL_NOPE")[0]
        result = out
    """)
    assert r["I8"] == r["U16"] == r["I32"] == r["U64"] == [0, 1]
    assert r["too_small"][:2] == [4, 5] and "NCCL_HOST_VERSION_CODE = 23203 does not fit" in r["too_small"][2]
    assert r["negative_unsigned"] == [4, 5] and r["unset_blocking"] == [0, -2**31]
    assert r["text_as_int"][0] == 5 and "NCCL_HOST_FLAVOR is a text parameter" in r["text_as_int"][1]
    assert r["str"] == [0, "nccl"] and r["int_as_str"] == [0, "23203"]
    assert r["raw_int"] == [0, 8, 23203] and r["raw_text"] == [0, 5, b"nccl\x00".hex()]
    assert r["raw_small"] == [4, 8]  # too small: the size needed
    assert r["foreign"] == 4 and r["unknown"] == 4


def test_param_dump_all_prints_every_parameter():
    out = run("L.ncclParamDumpAll()\n", NCCL_HOST_CHECKS="0")
    lines = out.splitlines()
    assert len(lines) == 21 and "NCCL_HOST_CHECKS=0" in lines and "NCCL_HOST_FP8=ocp" in lines
    assert "NCCL_HOST_YIELD_SMALL_US=400" in lines


# ---- properties ----

PROPS = """
def props(comm, size=152, version=23203, magic=0xCAFEBEEF):
    buf = ctypes.create_string_buffer(b"\\xa5" * 160, 160)
    struct.pack_into("<QII", buf, 0, size, magic, version)
    rc = L.ncclCommQueryProperties(comm, buf)
    return rc, buf.raw
"""


def test_properties_in_the_2_32_layout():
    r = result(pre=PROPS, code="""
        c = comms(2)
        out = []
        for rank in range(2):
            rc, raw = props(c[rank])
            out.append([rc, list(struct.unpack_from("<iiiiBBxxiiBxxxi", raw, 16)), struct.unpack_from("<Q", raw, 56)[0],
                        list(struct.unpack_from("<ii", raw, 64)), raw[72:136].hex(), struct.unpack_from("<Q", raw, 136)[0],
                        raw[144:147].hex(), raw[152:160].hex()])
        result = out
    """)
    for rank, (rc, head, comm_hash, gin, support, rtsize, cft, beyond) in enumerate(r):
        assert rc == 0
        assert head == [rank, 2, rank, rank, 0, 0, 0, 1, 1, 0]  # hostRmaSupport: windows and one-sided ops
        assert gin == [0, 0] and support == "00" * 64 and rtsize == 0 and cft == "000000"
        assert beyond == "a5" * 8  # nothing written past the 152 bytes
    assert r[0][2] == r[1][2] != 0  # the same commHash on every rank


def test_properties_respect_the_callers_size_and_version():
    r = result(pre=PROPS, code="""
        c = comms(1)
        out = {}
        rc, raw = props(c[0], size=56, version=22907)       # a 2.29.7/2.30 caller's struct
        out["v2907"] = (rc, raw[16:56].hex(), raw[56:].hex())
        rc, raw = props(c[0], size=152, version=22902)      # 2.29.2: no nLsaTeams and after
        out["v2902"] = (rc, raw[40:].hex())
        rc, raw = props(c[0], size=144, version=23102)      # 2.31: up to devCommRuntimeVersionSize
        out["v2931"] = (rc, raw[56:64] != b"\\xa5" * 8, raw[144:].hex())
        rc, raw = props(c[0], size=40)                      # a small size bounds a new version too
        out["small"] = (rc, raw[40:].hex())
        out["newer"] = (props(c[0], version=23300)[0], last())
        out["magic"] = props(c[0], magic=1)[0]
        result = out
    """)
    rc, filled, rest = r["v2907"]
    assert rc == 0 and "a5" not in filled[:16] and rest == "a5" * 104
    assert r["v2902"] == [0, "a5" * 120]
    assert r["v2931"][0] == 0 and r["v2931"][1] is True and r["v2931"][2] == "a5" * 16
    assert r["small"] == [0, "a5" * 120]
    assert r["newer"][0] == 5 and "props.version 23300 is newer than this library (23203)" in r["newer"][1]
    assert r["magic"] == 5


def test_properties_of_an_emulated_older_release():
    r = result(pre=PROPS, code="""
        c = comms(1)
        result = [props(c[0])[0], props(c[0], version=22907)[0]]
    """, NCCL_HOST_VERSION_CODE="22907")
    assert r == [5, 0]


# ---- teams, slots, encryption ----

def test_team_arithmetic():
    r = result("""
        c = comms(3)
        for name in ("ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail"):
            getattr(L, name).restype = Team
        out = {}
        for rank in range(3):
            w, l, rail = (getattr(L, n)(c[rank]) for n in ("ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail"))
            out[rank] = [[w.nRanks, w.rank, w.stride], [l.nRanks, l.rank, l.stride], [rail.nRanks, rail.rank, rail.stride],
                         [L.ncclTeamRankToWorld(c[rank], w, k) for k in range(3)],
                         [L.ncclTeamRankToLsa(c[rank], l, k) for k in range(3)],
                         L.ncclTeamRankToWorld(c[rank], rail, 0)]
        bad = L.ncclTeamWorld(None)
        out["bad"] = [bad.nRanks, bad.rank, bad.stride, L.ncclTeamRankToWorld(None, bad, 0), last()]
        out["slots"] = [L.ncclLLA2ACalcSlots(32, 16), L.ncclLLA2ACalcSlots(10, 1), L.ncclLLA2ACalcSlots(3, 9)]
        result = out
    """)
    for rank in range(3):
        world, lsa, rail, to_world, to_lsa, rail0 = r[str(rank)]
        assert world == lsa == [3, rank, 1] and rail == [1, 0, 3]
        assert to_world == to_lsa == [0, 1, 2] and rail0 == rank
    assert r["bad"][:4] == [0, 0, 0, -1] and r["bad"][4].startswith("ncclTeamRankToWorld")
    assert r["slots"] == [64, 10, 6]


def test_set_encryption():
    r = result("""
        def cfg(mode, magic=0xCAFEBEEF, size=32):
            return ctypes.create_string_buffer(struct.pack("<QIIiiQ", size, magic, 23203, mode, 0, 0), 32)
        result = [L.ncclSetEncryption(cfg(0)), L.ncclSetEncryption(cfg(1)), last(), L.ncclSetEncryption(cfg(0, magic=3)),
                  L.ncclSetEncryption(cfg(0, size=24)), L.ncclSetEncryption(cfg(2)), L.ncclSetEncryption(None)]
    """)
    assert r[0] == 0 and r[1] == 5 and "PSK encryption is not supported by the host backend" in r[2]
    assert r[3:] == [4, 4, 4, 4]


# ---- windows and one-sided operations, two ranks driven by one thread ----

def test_windows_and_puts_of_two_ranks_in_one_process():
    """ncclCommInitAll ranks (one process, so both windows are registered in one group and run on
    the workers): windows over ncclMemAlloc blocks, a put each way in one group, one wait per rank
    in another, peer pointers, deregistration in a group; a window over ctypes memory refuses puts
    but registers."""
    r = result("""
        c = comms(2)
        Z = ctypes.c_size_t
        L.ncclPutSignal.argtypes = [P, Z, ctypes.c_int, ctypes.c_int, P, Z, ctypes.c_int, ctypes.c_int, ctypes.c_uint, P, P]
        L.ncclGetPeerDevicePointer.argtypes = [P, Z, ctypes.c_int, ctypes.POINTER(P)]
        L.ncclCommWindowRegister.argtypes = [P, P, Z, ctypes.POINTER(P), ctypes.c_int]
        bufs = [P(), P()]
        for b in bufs:
            assert L.ncclMemAlloc(ctypes.byref(b), 4096) == 0
        arrs = [np.frombuffer((ctypes.c_char * 4096).from_address(b.value), np.float32) for b in bufs]
        for a in arrs:
            a[:] = 0
        wins = [P(), P()]
        assert L.ncclGroupStart() == 0
        for k in range(2):
            assert L.ncclCommWindowRegister(c[k], bufs[k], 4096, ctypes.byref(wins[k]), 0) == 0
        inside = [w.value for w in wins]
        assert L.ncclGroupEnd() == 0, last()
        src = [np.arange(8, dtype=np.float32) + 100 * k for k in range(2)]
        assert L.ncclGroupStart() == 0
        for k in range(2):
            assert L.ncclPutSignal(src[k].ctypes.data, 8, 7, 1 - k, wins[k], 16 * (k + 1), 0, 0, 0, c[k], None) == 0
        assert L.ncclGroupEnd() == 0, last()
        desc = [(ctypes.c_int * 4)(1, 1 - k, 0, 0) for k in range(2)]
        assert L.ncclGroupStart() == 0
        for k in range(2):
            assert L.ncclWaitSignal(1, desc[k], c[k], None) == 0, last()
        assert L.ncclGroupEnd() == 0, last()
        ptr = P()
        assert L.ncclGetPeerDevicePointer(wins[0], 16, 1, ctypes.byref(ptr)) == 0
        mapped = np.frombuffer((ctypes.c_char * 16).from_address(ptr.value), np.float32).copy()
        other = (ctypes.c_float * 16)()
        w3 = [P(), P()]
        assert L.ncclGroupStart() == 0
        for k in range(2):
            assert L.ncclCommWindowRegister(c[k], ctypes.addressof(other), 64, ctypes.byref(w3[k]), 0) == 0
        assert L.ncclGroupEnd() == 0, last()
        bad = L.ncclPutSignal(src[0].ctypes.data, 1, 7, 1, w3[0], 0, 0, 0, 0, c[0], None), last()
        assert L.ncclGetPeerDevicePointer(w3[0], 0, 1, ctypes.byref(ptr)) == 0
        foreign_ptr = ptr.value
        assert L.ncclGroupStart() == 0
        for k in range(2):
            assert L.ncclCommWindowDeregister(c[k], wins[k]) == 0
            assert L.ncclCommWindowDeregister(c[k], w3[k]) == 0
        assert L.ncclGroupEnd() == 0, last()
        result = dict(inside=inside, handles=[w.value is not None for w in wins],
                      a0=arrs[0][:16].tolist(), a1=arrs[1][:16].tolist(), mapped=mapped.tolist(), bad=bad,
                      foreign_ptr=foreign_ptr)
        for b in bufs:
            assert L.ncclMemFree(b) == 0
    """)
    assert r["inside"] == [None, None] and r["handles"] == [True, True]
    want0 = [0.0] * 8 + list(range(100, 108))   # rank 1 put at byte 32 of rank 0's window
    want1 = [0.0] * 4 + list(range(0, 8)) + [0.0] * 4  # rank 0 put at byte 16 of rank 1's
    assert r["a0"] == want0 and r["a1"] == want1
    assert r["mapped"] == [0.0, 1.0, 2.0, 3.0]  # rank 0's mapping of bytes 16-31 of rank 1's part
    assert r["bad"][0] == 5 and "rank 1's part of the window is not ncclMemAlloc memory" in r["bad"][1]
    assert r["foreign_ptr"] is None
