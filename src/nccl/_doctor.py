"""python -m nccl doctor: what this process would run on, and what might go wrong.

``collect()`` gathers the facts into a dict (no printing; it loads the library), ``report(facts)``
formats them, ``main()`` prints the report and returns 0, or 1 when no library loads.

Sections: package and Python versions; the library (version, path, flavour, the host backend's
own description, every load attempt); for the host backend, the transport its communicators
choose here (single-copy reads or not, spinning or not, and why: a 2-rank probe); every
libnccl/librccl mapped in the process, flagging two
different copies; the NCCL_* (and NCCL4PY_*) environment and the other variables that steer
discovery; ABI symbols the loaded library lacks, each with the NCCL version that introduced it;
GPU device nodes and visibility variables; the cuda.core shim.
"""

import ctypes
import glob
import os
import platform
import sys
import warnings

__all__ = ["collect", "report", "main"]

# Variables that are not NCCL_* but decide which library loads or which devices are seen.
DISCOVERY_VARIABLES = ("ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
                       "LD_PRELOAD")
VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                        "GPU_DEVICE_ORDINAL")


def version_text(code):
    """An NCCL version code (2.30.7 = 23007, 2.3.0 = 2300) as X.Y.Z."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _library(ext):
    """Library facts, or {"error": text, "attempts": [...]} when nothing loads."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            path, flavour, code, host_info = ext._library_info()
            attempts = list(ext.get_load_attempts())
        except RuntimeError as exc:  # NotSupportedError: no usable library
            return {"loaded": False, "error": str(exc), "attempts": list(getattr(exc, "attempts", ()) or ())}
    return {
        "loaded": True,
        "path": path,
        "flavour": flavour,
        "version": version_text(code),
        "version_code": code,
        "host_info": host_info,
        "attempts": attempts,
        "notices": [f"{w.category.__name__}: {w.message}" for w in caught],
    }


def _missing_symbols(ext, lib):
    """[(name, min version text, rccl_only)] for ABI rows the loaded library does not export."""
    if not lib.get("loaded"):
        return []
    pointers = ext._inspect_function_pointers()
    rows = ext._abi_symbols()
    handle = None
    if lib["flavour"] == "rccl":
        try:  # the RCCL-only rows are not in the pointer dict: ask the mapped library itself
            handle = ctypes.CDLL(lib["path"], mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            handle = None
    missing = []
    for name, since, rccl_only in rows:
        if rccl_only:
            if handle is None or hasattr(handle, name):
                continue
        elif pointers.get(f"__{name}", 0):
            continue
        missing.append((name, version_text(since), bool(rccl_only)))
    return missing


def _mapped(ext, lib):
    paths = list(ext._mapped_libraries())
    real = {}
    for p in paths:
        real.setdefault(os.path.realpath(p), p)
    copies = sorted(real)
    loaded = os.path.realpath(lib["path"]) if lib.get("loaded") and lib.get("path") else None
    return {"paths": paths, "copies": copies, "two_copies": len(copies) > 1,
            "loaded_is_mapped": loaded in real if loaded else False}


PROBE_RANK = """
import os
import nccl.bindings.nccl as b
box = b.PointerBox()
b.comm_init_rank(box.address, 2, bytes.fromhex(os.environ["NCCL4PY_DOCTOR_UID"]), int(os.environ["NCCL4PY_DOCTOR_RANK"]))
b.comm_destroy(box.ptr)
"""
PROBE_TIMEOUT_S = 30


def _yama_scope():
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _host_transport(lib):
    """What a 2-rank communicator of the host backend chooses on this machine, with this
    environment: two sibling processes (as a launcher starts ranks) create one and the library's
    INFO line says which transport and why. None for other libraries."""
    if not lib.get("loaded") or lib.get("flavour") != "host":
        return None
    import subprocess

    from nccl.bindings import nccl as b

    facts = {"cpus": len(os.sched_getaffinity(0)), "yama_ptrace_scope": _yama_scope(), "choice": None, "error": None}
    env = {k: v for k, v in os.environ.items() if k not in ("NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS")}
    env.update(NCCL_LIBRARY=lib["path"], NCCL_HOST_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT",
               NCCL_HOST_TIMEOUT=str(PROBE_TIMEOUT_S - 5), NCCL4PY_DOCTOR_UID=bytes(b.get_unique_id()).hex())
    procs = [subprocess.Popen([sys.executable, "-c", PROBE_RANK], env=dict(env, NCCL4PY_DOCTOR_RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=PROBE_TIMEOUT_S)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append(p.communicate()[0])
    lines = [ln.split("transport: ", 1)[1] for ln in outs[0].splitlines() if "transport: " in ln]
    if lines and all(p.returncode == 0 for p in procs):
        facts["choice"] = lines[0]
    else:
        tail = [ln for ln in (outs[0] + outs[1]).splitlines() if ln.strip()][-3:]
        facts["error"] = "the 2-rank probe failed: " + (" | ".join(tail) or f"exit status {procs[0].returncode}")
    return facts


def _environment():
    nccl = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "NCCL4PY_"))}
    other = {k: os.environ[k] for k in DISCOVERY_VARIABLES if k in os.environ}
    return {"nccl": dict(sorted(nccl.items())), "discovery": other}


def _devices():
    dev_dir = os.environ.get("NCCL4PY_DEV_DIR") or "/dev"
    nodes = []
    kfd = os.path.join(dev_dir, "kfd")
    if os.path.exists(kfd):
        nodes.append(kfd)
    nodes += sorted(p for p in glob.glob(os.path.join(dev_dir, "nvidia*"))
                    if os.path.basename(p)[len("nvidia"):].isdigit())
    render = sorted(glob.glob(os.path.join(dev_dir, "dri", "renderD*")))
    visible = {k: os.environ[k] for k in VISIBILITY_VARIABLES if k in os.environ}
    return {"dev_dir": dev_dir, "gpu_nodes": nodes, "render_nodes": render, "visibility": visible,
            "gpu_present": bool(nodes)}


def _shim():
    from nccl import _hip_compat

    active = _hip_compat.is_cuda_core_shim_registered()
    core = sys.modules.get("cuda.core")
    if active:
        where = "nccl._hip_compat.cuda_core_shim"
    elif core is not None:
        where = getattr(core, "__file__", None) or repr(core)
    else:
        where = None
    return {"active": active, "cuda_core": where, "setting": os.environ.get("NCCL4PY_CUDA_CORE_SHIM")}


def collect():
    """Every fact the report prints, as a dict of plain values. Loads the library."""
    from nccl import _ext
    from nccl._version import __version__

    lib = _library(_ext)
    return {
        "nccl4py": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "library": lib,
        "host_transport": _host_transport(lib),
        "mapped": _mapped(_ext, lib),
        "environment": _environment(),
        "missing_symbols": _missing_symbols(_ext, lib),
        "devices": _devices(),
        "shim": _shim(),
    }


def report(f):
    """The report as text lines; a line starting with 'WARNING:' marks a problem."""
    out = []
    add = out.append
    lib = f["library"]
    add("nccl4py doctor")
    add("==============")
    add(f"nccl4py      : {f['nccl4py']}")
    add(f"python       : {f['python']}")
    add(f"platform     : {f['platform']}")
    add("")
    add("Library")
    add("-------")
    if lib["loaded"]:
        add(f"version      : {lib['version']}")
        add(f"path         : {lib['path']}")
        add(f"flavour      : {lib['flavour']}")
        if lib.get("host_info"):
            add(f"host backend : {lib['host_info']}")
        for n in lib.get("notices", ()):
            add(f"notice       : {n}")
    else:
        add("WARNING: no NCCL/RCCL library could be loaded")
        for ln in lib["error"].splitlines():
            add(f"  {ln}")
    add("load attempts:")
    for candidate, error in lib["attempts"]:
        add(f"  {candidate}: {'loaded' if error is None else error}")
    add("")
    t = f.get("host_transport")
    if t is not None:
        add("Host transport")
        add("--------------")
        add(f"usable CPUs  : {t['cpus']} (sched_getaffinity)")
        scope = t["yama_ptrace_scope"]
        add("ptrace scope : " + ("no Yama: the classic same-user rule" if scope is None
                                 else f"{scope} (kernel.yama.ptrace_scope)"))
        if t["choice"] is not None:
            add(f"2 ranks      : {t['choice']}")
            if "single copy off" in t["choice"] and "NCCL_HOST_DIRECT=0" not in t["choice"]:
                add("note: large messages take two copies through shared memory here (see the reason above)")
        else:
            add(f"WARNING: {t['error']}")
        add("")
    add("Mapped NCCL/RCCL copies")
    add("-----------------------")
    m = f["mapped"]
    if not m["copies"]:
        add("none mapped" + (" (the host backend is not a libnccl/librccl)" if lib.get("flavour") == "host" else ""))
    for p in m["copies"]:
        add(f"  {p}")
    if m["two_copies"]:
        add(f"WARNING: {len(m['copies'])} different NCCL/RCCL copies are mapped in this process; "
            "communicators of one cannot be used with another")
    add("")
    add("Environment")
    add("-----------")
    env = f["environment"]
    if not env["nccl"]:
        add("no NCCL_* variables set")
    for k, v in env["nccl"].items():
        add(f"  {k}={v}")
    for k, v in env["discovery"].items():
        add(f"  {k}={v}")
    add("")
    add("Missing ABI symbols")
    add("-------------------")
    if not lib["loaded"]:
        add("(no library loaded)")
    elif not f["missing_symbols"]:
        add("none: the library exports every entry point of the ABI table")
    else:
        add(f"{len(f['missing_symbols'])} entry point(s) absent from {lib['path']}; calling them raises "
            "FunctionNotFoundError:")
        for name, since, rccl_only in f["missing_symbols"]:
            add(f"  {name:<32} {'RCCL-only' if rccl_only else 'NCCL >= ' + since}")
    add("")
    add("Devices")
    add("-------")
    d = f["devices"]
    if d["gpu_nodes"]:
        add(f"GPU device nodes: {' '.join(d['gpu_nodes'])}")
    else:
        add(f"no GPU device node in {d['dev_dir']} (no /dev/kfd, no /dev/nvidia<N>): "
            "the host backend is the automatic choice")
    if d["render_nodes"]:
        add(f"render nodes: {' '.join(d['render_nodes'])}")
    for k, v in d["visibility"].items():
        add(f"  {k}={v}")
    if d["gpu_present"] and lib.get("flavour") == "host":
        add("note: a GPU is present but the host backend is loaded (NCCL_LIBRARY selects it)")
    add("")
    add("cuda.core shim")
    add("--------------")
    s = f["shim"]
    if s["active"]:
        add("active: cuda.core is nccl._hip_compat.cuda_core_shim")
    elif s["cuda_core"]:
        add(f"not active: cuda.core is {s['cuda_core']}")
    else:
        add("not active: cuda.core is not imported")
    if s["setting"] is not None:
        add(f"  NCCL4PY_CUDA_CORE_SHIM={s['setting']}")
    return out


def main(argv=()):
    facts = collect()
    for line in report(facts):
        print(line)
    return 0 if facts["library"]["loaded"] else 1
