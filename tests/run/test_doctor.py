"""python -m nccl doctor, against the stub NCCL builds (tests/conftest.py) and the host library.

Each case runs in a fresh interpreter, because the loaded library is process-global."""

import json
import os
import subprocess
import sys

import pytest

import children

SNIPPET = """
import contextlib, io
from nccl import _doctor
{pre}
facts = _doctor.collect()
_doctor.collect = lambda: facts  # the printed report and the returned facts: one collection, one probe
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = _doctor.main()
result = (rc, buf.getvalue(), facts)
"""


def doctor(fresh_python, variant=None, env=None, pre=""):
    rc, text, facts = fresh_python(SNIPPET.format(pre=pre), variant=variant, env=env)
    return rc, text, facts


def section(text, title):
    lines = text.splitlines()
    i = lines.index(title)
    body = []
    for ln in lines[i + 2:]:
        if ln == "":
            break
        body.append(ln)
    return body


def test_stub_nccl_complete(fresh_python, stub_libs):
    rc, text, f = doctor(fresh_python, "nccl")
    assert rc == 0
    lib = f["library"]
    assert (lib["flavour"], lib["version"], lib["path"]) == ("nccl", "2.32.3", str(stub_libs["nccl"]))
    assert f"path         : {stub_libs['nccl']}" in text
    assert f["missing_symbols"] == [] and f["refused_symbols"] == []
    assert section(text, "Missing ABI symbols") == ["none: the library exports every entry point of the ABI table"]
    assert f["mapped"]["copies"] == [os.path.realpath(stub_libs["nccl"])] and not f["mapped"]["two_copies"]
    assert "WARNING" not in text
    # the rows deliberately without a binding, by name, whatever the library
    unwrapped = ["ncclParamBind", "ncclParamGet", "ncclParamGetI8", "ncclParamGetI16", "ncclParamGetI32",
                 "ncclParamGetI64", "ncclParamGetU8", "ncclParamGetU16", "ncclParamGetU32", "ncclParamGetU64",
                 "ncclParamGetStr"]
    assert f["unwrapped_symbols"] == unwrapped
    body = section(text, "ABI entry points without a binding")
    assert body[0] == ("11 entry point(s) have no nccl.bindings function: no nccl4py release names them "
                       "(param_get_parameter reads any parameter by key):")
    assert [ln.strip() for ln in body[1:]] == unwrapped


def test_stub_nccl_2_27_lists_newer_symbols_with_their_version(fresh_python):
    rc, text, f = doctor(fresh_python, "nccl_2_27", pre="from nccl import _ext; rows = _ext._abi_symbols()")
    assert rc == 0 and f["library"]["version"] == "2.27.3"
    missing = {name: since for name, since, rccl_only in f["missing_symbols"]}
    assert missing, text
    # exactly the NCCL rows introduced in 2.28.0 or later (the stub variant's -DSTUB_MAX_SINCE)
    for name, since in missing.items():
        major, minor, patch = map(int, since.split("."))
        assert (major, minor) >= (2, 28), (name, since)
    assert missing.get("ncclCommRevoke") == "2.28.7"
    body = section(text, "Missing ABI symbols")
    assert body[0].startswith(f"{len(missing)} entry point(s) absent from ")
    assert any(ln.split() == ["ncclCommRevoke", "NCCL", ">=", "2.28.7"] for ln in body[1:])


def test_stub_rccl_legacy_lists_rccl_only_rows(fresh_python):
    rc, text, f = doctor(fresh_python, "rccl_legacy")
    assert rc == 0 and f["library"]["flavour"] == "rccl"
    missing = {name: rccl_only for name, since, rccl_only in f["missing_symbols"]}
    assert missing == {"ncclAllReduceWithBias": True}
    # ncclAlltoAll and ncclAlltoAllv are served by the older spellings this build has
    assert f["aliased_symbols"] == [("ncclAlltoAll", "ncclAllToAll"), ("ncclAlltoAllv", "ncclAllToAllv")]
    body = section(text, "Missing ABI symbols")
    assert any(ln.split() == ["ncclAllReduceWithBias", "RCCL-only"] for ln in body)
    i = body.index("served under the library's older spelling (the wrappers fall back to it):")
    assert [ln.split() for ln in body[i + 1:]] == [["ncclAlltoAll", "by", "ncclAllToAll"],
                                                    ["ncclAlltoAllv", "by", "ncclAllToAllv"]]


def test_stub_rccl_with_both_spellings_lists_nothing(fresh_python):
    rc, text, f = doctor(fresh_python, "rccl")
    assert (f["missing_symbols"], f["aliased_symbols"]) == ([], [])
    assert section(text, "Missing ABI symbols") == ["none: the library exports every entry point of the ABI table"]


def test_two_copies_flagged(fresh_python, stub_libs):
    pre = f"import ctypes; ctypes.CDLL({str(stub_libs['nccl'])!r})"
    rc, text, f = doctor(fresh_python, "rccl", pre=pre)
    assert rc == 0
    assert f["mapped"]["two_copies"]
    assert set(f["mapped"]["copies"]) == {os.path.realpath(stub_libs["nccl"]), os.path.realpath(stub_libs["rccl"])}
    body = section(text, "Mapped NCCL/RCCL copies")
    assert any(ln.startswith("WARNING: 2 different NCCL/RCCL copies are mapped") for ln in body), text


def test_environment_listed(fresh_python):
    env = {"NCCL_LIBRARY": "host", "NCCL_DEBUG": "WARN", "NCCL_HOST_TIMEOUT": "7", "NCCL4PY_CUDA_CORE_SHIM": "0",
           "ROCM_PATH": "/opt/nowhere"}
    rc, text, f = doctor(fresh_python, env=env)
    assert rc == 0
    body = section(text, "Environment")
    for k, v in env.items():
        assert f"  {k}={v}" in body
    assert f["environment"]["nccl"]["NCCL_HOST_TIMEOUT"] == "7"


def test_host_library_without_gpu(fresh_python, tmp_path):
    rc, text, f = doctor(fresh_python, env={"NCCL4PY_DEV_DIR": tmp_path})
    assert rc == 0
    lib = f["library"]
    assert lib["flavour"] == "host" and lib["path"].endswith("libnccl-host.so")
    assert lib["host_info"].startswith("libnccl-host ")
    assert f["missing_symbols"] == []
    # the device API it exports but refuses, listed apart from missing symbols
    refused = f["refused_symbols"]
    assert {"ncclDevCommCreate", "ncclGetPeerDeviceLeInfo", "ncclTeamCft"} <= set(refused)
    assert not {"ncclAllReduceConfig", "ncclTeamWorld", "ncclParamGetParameter", "ncclCommWindowRegister",
                "ncclPutSignal", "ncclWaitSignal", "ncclGetPeerDevicePointer"} & set(refused)
    body = section(text, "Missing ABI symbols")
    assert body[0] == "none: the library exports every entry point of the ABI table"
    assert body[1] == (f"refused by the host backend ({len(refused)}): exported, but calling them raises "
                       "NCCLInvalidUsage (no device API on the CPU):")
    assert [ln.split()[0] for ln in body[2:]] == refused
    assert "  ncclTeamCft                      returns an empty team and sets the last error" in body
    assert "  ncclDevCommCreate" in body
    assert f["mapped"]["copies"] == []
    assert section(text, "Mapped NCCL/RCCL copies") == ["none mapped (the host backend is not a libnccl/librccl)"]
    assert section(text, "Devices")[0].startswith(f"no GPU device node in {tmp_path}")


SPIN_OFF = "; no spin (NCCL_HOST_SPIN_US=0)"
SEGMENT = "shared segment only (single copy off: "
SINGLE = "single-copy reads (process_vm_readv) from 65536 bytes, shared segment below" + SPIN_OFF


def transport(fresh_python, **env):
    env = {"NCCL_LIBRARY": "host", "NCCL_HOST_SPIN_US": "0", **env}
    rc, text, f = doctor(fresh_python, env=env)
    t = f["host_transport"]
    assert t["error"] is None and t["cpus"] == len(os.sched_getaffinity(0)), t
    body = section(text, "Host transport")
    assert body[0] == f"usable CPUs  : {t['cpus']} (sched_getaffinity)"
    assert body[2] == f"2 ranks      : {t['choice']}", (body, t)  # the text is the facts' probe
    assert t["choice"].endswith(SPIN_OFF), t
    return t["choice"], body


@pytest.mark.parametrize("direct", ["auto", "0"])
def test_host_transport_probe(fresh_python, direct):
    """The host backend's section shows what a 2-rank communicator chooses here, and why."""
    choice, body = transport(fresh_python, NCCL_HOST_DIRECT=direct)
    if direct == "0":
        assert choice == SEGMENT + "NCCL_HOST_DIRECT=0)" + SPIN_OFF
        assert len(body) == 3
    else:  # this machine's speed and kernel decide; what matters here is that text and facts agree
        assert choice == SINGLE or choice.startswith(SEGMENT), choice


# The measured speed ratio forced to either side of the rule (docs/host-backend.md#single-copy-direct-transfers):
# below break-even (0.50), in the margin above it (up to 0.55), clearly above.
SLOW = ("slower than two copies here: process_vm_readv runs at {:.2f} of memcpy's speed, below 0.50; "
        "NCCL_HOST_DIRECT=1 uses it anyway)")
NEAR = ("no faster than two copies here: process_vm_readv runs at {:.2f} of memcpy's speed, below 0.55 "
        "(break-even 0.50 plus a margin of 0.05); NCCL_HOST_DIRECT=1 uses it anyway)")


@pytest.mark.parametrize("ratio, want", [(0.3, SLOW), (0.49, SLOW), (0.5, NEAR), (0.54, NEAR)])
def test_auto_stays_on_the_segment_below_the_margin(fresh_python, ratio, want):
    choice, body = transport(fresh_python, NCCL_HOST_DIRECT="auto", NCCL_HOST_TEST_COPY_SPEED=str(ratio))
    assert choice == SEGMENT + want.format(ratio) + SPIN_OFF
    assert body[3] == "note: large messages take two copies through shared memory here (see the reason above)"


@pytest.mark.parametrize("ratio", [0.55, 0.9, 2.0])
def test_auto_takes_single_copy_from_the_margin_up(fresh_python, ratio):
    """Fast enough: the speed rule lets it through. Whether the kernel then allows the reads
    depends on this machine (Yama, seccomp); if it refuses, the reason is the kernel's, never the speed."""
    choice, _ = transport(fresh_python, NCCL_HOST_DIRECT="auto", NCCL_HOST_TEST_COPY_SPEED=str(ratio))
    assert choice == SINGLE or (choice.startswith(SEGMENT) and "memcpy's speed" not in choice), choice


def test_no_host_transport_section_for_other_libraries(fresh_python, stub_libs):
    rc, text, f = doctor(fresh_python, "nccl")
    assert f["host_transport"] is None and "Host transport" not in text


def test_device_nodes_and_visibility(fresh_python, tmp_path):
    for name in ("kfd", "nvidia0", "nvidiactl"):
        (tmp_path / name).write_text("")
    env = {"NCCL_LIBRARY": "host", "NCCL4PY_DEV_DIR": tmp_path, "CUDA_VISIBLE_DEVICES": "1,0"}
    rc, text, f = doctor(fresh_python, env=env)
    assert f["devices"]["gpu_nodes"] == [str(tmp_path / "kfd"), str(tmp_path / "nvidia0")]
    body = section(text, "Devices")
    assert body[0] == f"GPU device nodes: {tmp_path / 'kfd'} {tmp_path / 'nvidia0'}"
    assert "  CUDA_VISIBLE_DEVICES=1,0" in body
    assert any(ln.startswith("note: a GPU is present but the host backend is loaded") for ln in body)


@pytest.mark.parametrize("setting, active", [("1", True), ("0", False)])
def test_shim_state(fresh_python, setting, active):
    rc, text, f = doctor(fresh_python, env={"NCCL_LIBRARY": "host", "NCCL4PY_CUDA_CORE_SHIM": setting})
    assert f["shim"]["active"] is active
    body = section(text, "cuda.core shim")
    assert body[0].startswith("active: cuda.core is nccl._hip_compat" if active else "not active")
    assert f"  NCCL4PY_CUDA_CORE_SHIM={setting}" in body


def test_no_library(fresh_python, tmp_path):
    missing = tmp_path / "libnccl.so.2"
    rc, text, f = doctor(fresh_python, env={"NCCL_LIBRARY": missing})
    assert rc == 1
    assert not f["library"]["loaded"]
    assert f["library"]["attempts"][0][0] == str(missing)
    assert "WARNING: no NCCL/RCCL library could be loaded" in text
    assert section(text, "Missing ABI symbols") == ["(no library loaded)"]


def _cli(*args, **env):
    e = children.environment(drop=("NCCL_LIBRARY",), **env)
    return subprocess.run([sys.executable, "-m", "nccl", *args], env=e, capture_output=True, text=True, timeout=60)


def test_cli_doctor():
    r = _cli("doctor", NCCL_LIBRARY="host")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("nccl4py doctor\n")
    for title in ("Library", "Mapped NCCL/RCCL copies", "Environment", "Missing ABI symbols", "Devices",
                  "cuda.core shim"):
        assert f"\n{title}\n" in r.stdout


def test_dotted_module_is_the_same_doctor():
    """python -m nccl.doctor, as python -m nccl.run, .bench and .trace are spelt, is python -m nccl doctor."""
    dotted = subprocess.run([sys.executable, "-m", "nccl.doctor"], capture_output=True, text=True, timeout=60,
                            env=children.environment(drop=("NCCL_LIBRARY",), NCCL_LIBRARY="host"))
    plain = _cli("doctor", NCCL_LIBRARY="host")
    assert dotted.returncode == plain.returncode == 0, dotted.stderr
    assert dotted.stdout.startswith("nccl4py doctor\n") and dotted.stdout.splitlines()[:8] == plain.stdout.splitlines()[:8]
    as_json = subprocess.run([sys.executable, "-m", "nccl.doctor", "--json"], capture_output=True, text=True,
                             timeout=60, env=children.environment(drop=("NCCL_LIBRARY",), NCCL_LIBRARY="host"))
    assert json.loads(as_json.stdout)["library"]["loaded"] is True
    bad = subprocess.run([sys.executable, "-m", "nccl.doctor", "--nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("python -m nccl.doctor: error: unrecognized arguments")


def test_cli_doctor_reports_the_automatic_host_choice(tmp_path):
    r = _cli("doctor", NCCL4PY_DEV_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "flavour      : host\n" in r.stdout
    assert "notice       : HostBackendWarning: nccl4py: no GPU found" in r.stdout
    assert "HostBackendWarning" not in r.stderr  # caught by the doctor, printed once in the report


def test_cli_plain_is_the_summary():
    r = _cli(NCCL_LIBRARY="host")
    assert r.returncode == 0, r.stderr
    facts = _cli("doctor", "--json", NCCL_LIBRARY="host")
    lib = json.loads(facts.stdout)["library"]
    text = r.stdout
    assert text.startswith("nccl4py\n=======\nnccl4py      : ")
    assert section(text, "Library") == [f"version      : {lib['version']}", f"path         : {lib['path']}",
                                        "flavour      : host", f"host backend : {lib['host_info']}", "load attempts:",
                                        f"  {lib['path']}: loaded"]
    assert section(text, "Mapped NCCL/RCCL copies") == ["none mapped (the host backend is not a libnccl/librccl)"]
    assert "ABI entry points missing from the library: 0\n" in text
    assert text.rstrip().endswith("python -m nccl doctor: the full report (environment, missing entry points, "
                                  "devices, cuda.core shim)")
    for title in ("Environment", "Missing ABI symbols", "Devices", "cuda.core shim"):
        assert f"\n{title}\n" not in text


def test_cli_plain_without_a_library(tmp_path):
    r = _cli(NCCL_LIBRARY=str(tmp_path / "libnccl.so.2"))
    assert r.returncode == 1
    body = section(r.stdout, "Library")
    assert body[0] == "WARNING: no NCCL/RCCL library could be loaded"
    assert body[-1].startswith(f"  {tmp_path / 'libnccl.so.2'}: ")
    assert "ABI entry points missing" not in r.stdout


def test_cli_doctor_json_is_collect(fresh_python, stub_libs):
    r = _cli("doctor", "--json", NCCL_LIBRARY=str(stub_libs["nccl_2_27"]), NCCL_DEBUG="WARN")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    _, _, facts = doctor(fresh_python, "nccl_2_27", env={"NCCL_DEBUG": "WARN"})
    # the same facts, as JSON makes them (tuples become lists); only the interpreter path differs
    want = json.loads(json.dumps(facts))
    assert got.pop("python").split(" (")[0] == want.pop("python").split(" (")[0]
    assert got == want
    assert got["library"]["version"] == "2.27.3" and got["environment"]["nccl"]["NCCL_DEBUG"] == "WARN"
    assert ["ncclCommRevoke", "2.28.7", False] in got["missing_symbols"]


@pytest.mark.parametrize("args, message", [
    (["doctr"], "argument command: invalid choice: 'doctr' (choose from 'doctor')"),
    (["doctor", "extra"], "unrecognized arguments: extra"),
    (["--json"], "--json goes with doctor"),
])
def test_cli_bad_arguments(args, message):
    r = _cli(*args, NCCL_LIBRARY="host")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"python -m nccl: error: {message}"]
