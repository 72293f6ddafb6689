"""python -m nccl doctor: what this process would run on, and what might go wrong.

``collect()`` gathers the facts into a dict of plain values (no printing; it loads the library),
``report(facts)`` formats them all and ``summary(facts)`` the first sections (what ``python -m
nccl`` prints); ``main(mode)`` prints one of them, or the facts as JSON, and returns 0, or 1 when no
library loads.

Sections: package and Python versions; the library (version, path, flavour, the host backend's
own description, every load attempt); for the host backend, the transport its communicators
choose here (single-copy reads or not, spinning or not, and why: a 2-rank probe); every
libnccl/librccl mapped in the process, flagging two
different copies; the NCCL_* (and NCCL4PY_*) environment and the other variables that steer
discovery; ABI symbols the loaded library lacks, each with the NCCL version that introduced it,
the entry points it serves under an older spelling (RCCL's ncclAllToAll for ncclAlltoAll) and,
for the host backend, the entry points it exports but refuses (no device API on the CPU);
GPU device nodes and visibility variables; the cuda.core shim.
"""

import ctypes
import functools
import glob
import json
import os
import platform
import sys
import warnings

__all__ = ["collect", "report", "summary", "main"]

# Variables that are not NCCL_* but decide which library loads or which devices are seen.
DISCOVERY_VARIABLES = ("ROCM_PATH", "HIP_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
                       "LD_PRELOAD")
VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                        "GPU_DEVICE_ORDINAL")


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
        "version": ext._version_text(code),
        "version_code": code,
        "host_info": host_info,
        "attempts": attempts,
        "notices": [f"{w.category.__name__}: {w.message}" for w in caught],
    }


def _symbols(ext, lib):
    """(missing, aliased) for the loaded library.

    missing: [(name, min version text, rccl_only)] for ABI rows the library does not serve;
    aliased: [(name, older spelling)] for entry points served under the older spelling only.
    RCCL-only rows count only on RCCL. A row whose partner spelling (abi.h NCCL_ABI_ALIASES) is
    present is not missing: the loader serves one under the other.
    """
    if not lib.get("loaded"):
        return [], []
    resolved = ext._abi_resolved()
    partner, newer = {}, set()
    for name, older in ext._abi_aliases():
        partner[name], partner[older] = older, name
        newer.add(name)
    rccl = lib["flavour"] == "rccl"
    missing, aliased = [], []
    for name, since, rccl_only in ext._abi_symbols():
        if resolved[name] or (rccl_only and not rccl):
            continue
        other = partner.get(name)
        if other is not None and resolved[other]:
            if name in newer:  # served by the older spelling; an absent older one is no loss
                aliased.append((name, other))
            continue
        missing.append((name, ext._version_text(since), bool(rccl_only)))
    return missing, aliased


def _refused_symbols(lib):
    """Entry points the host backend exports but refuses with ncclInvalidUsage, as it lists them
    itself (ncclHostRefusedEntryPoints); [] for any other library."""
    if not lib.get("loaded") or lib["flavour"] != "host":
        return []
    try:
        handle = ctypes.CDLL(lib["path"], mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        fn = handle.ncclHostRefusedEntryPoints
    except (OSError, AttributeError):
        return []
    fn.restype = ctypes.c_char_p
    return (fn() or b"").decode().split()


def _unwrapped_symbols():
    """ABI rows with no nccl.bindings function, on purpose (abi.h's NCCL_ABI_NOT_WRAPPED, as
    nccl.bindings.nccl._NOT_WRAPPED exports it)."""
    from nccl.bindings import nccl as bindings

    return list(bindings._NOT_WRAPPED)


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


def _devices(ext):
    selection = ext._library_selection()  # the device nodes as the loader sees them
    dev_dir, nodes = selection["dev_dir"], selection["nodes"]
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
    missing, aliased = _symbols(_ext, lib)
    return {
        "nccl4py": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "library": lib,
        "host_transport": _host_transport(lib),
        "mapped": _mapped(_ext, lib),
        "environment": _environment(),
        "missing_symbols": missing,
        "aliased_symbols": aliased,
        "refused_symbols": _refused_symbols(lib),
        "unwrapped_symbols": _unwrapped_symbols(),
        "devices": _devices(_ext),
        "shim": _shim(),
    }


def _section(title):
    """A report section: `title`, underlined, over the lines the decorated generator yields for the
    facts; no lines at all when it yields none."""
    def decorate(gen):
        @functools.wraps(gen)
        def lines(f):
            body = list(gen(f))
            return [title, "-" * len(title), *body] if body else []
        return lines
    return decorate


@_section("Library")
def _library_lines(f):
    lib = f["library"]
    if lib["loaded"]:
        yield f"version      : {lib['version']}"
        yield f"path         : {lib['path']}"
        yield f"flavour      : {lib['flavour']}"
        if lib.get("host_info"):
            yield f"host backend : {lib['host_info']}"
        for n in lib.get("notices", ()):
            yield f"notice       : {n}"
    else:
        yield "WARNING: no NCCL/RCCL library could be loaded"
        for ln in lib["error"].splitlines():
            yield f"  {ln}"
    yield "load attempts:"
    for candidate, error in lib["attempts"]:
        yield f"  {candidate}: {'loaded' if error is None else error}"


@_section("Host transport")
def _host_transport_lines(f):
    t = f.get("host_transport")
    if t is None:
        return
    yield f"usable CPUs  : {t['cpus']} (sched_getaffinity)"
    scope = t["yama_ptrace_scope"]
    yield ("ptrace scope : " + ("no Yama: the classic same-user rule" if scope is None
                                else f"{scope} (kernel.yama.ptrace_scope)"))
    if t["choice"] is not None:
        yield f"2 ranks      : {t['choice']}"
        if "single copy off" in t["choice"] and "NCCL_HOST_DIRECT=0" not in t["choice"]:
            yield "note: large messages take two copies through shared memory here (see the reason above)"
    else:
        yield f"WARNING: {t['error']}"


@_section("Mapped NCCL/RCCL copies")
def _mapped_lines(f):
    m = f["mapped"]
    if not m["copies"]:
        host = f["library"].get("flavour") == "host"
        yield "none mapped" + (" (the host backend is not a libnccl/librccl)" if host else "")
    for p in m["copies"]:
        yield f"  {p}"
    if m["two_copies"]:
        yield (f"WARNING: {len(m['copies'])} different NCCL/RCCL copies are mapped in this process; "
               "communicators of one cannot be used with another")


@_section("Environment")
def _environment_lines(f):
    env = f["environment"]
    if not env["nccl"]:
        yield "no NCCL_* variables set"
    for k, v in env["nccl"].items():
        yield f"  {k}={v}"
    for k, v in env["discovery"].items():
        yield f"  {k}={v}"


@_section("Missing ABI symbols")
def _missing_symbol_lines(f):
    lib = f["library"]
    if not lib["loaded"]:
        yield "(no library loaded)"
    elif not f["missing_symbols"]:
        yield ("none: the library serves every entry point of the ABI table"
               if f["aliased_symbols"] else "none: the library exports every entry point of the ABI table")
    else:
        yield (f"{len(f['missing_symbols'])} entry point(s) absent from {lib['path']}; calling them raises "
               "FunctionNotFoundError:")
        for name, since, rccl_only in f["missing_symbols"]:
            yield f"  {name:<32} {'RCCL-only' if rccl_only else 'NCCL >= ' + since}"
    if lib["loaded"] and f["aliased_symbols"]:
        yield "served under the library's older spelling (the wrappers fall back to it):"
        for name, older in f["aliased_symbols"]:
            yield f"  {name:<32} by {older}"
    if f["refused_symbols"]:
        yield (f"refused by the host backend ({len(f['refused_symbols'])}): exported, but calling them raises "
               "NCCLInvalidUsage (no device API on the CPU):")
        for name in f["refused_symbols"]:
            # a team query returns a team, not a status: it cannot fail, so it refuses by its result
            yield f"  {name:<32} returns an empty team and sets the last error" if name.startswith("ncclTeam") \
                else f"  {name}"


@_section("ABI entry points without a binding")
def _unwrapped_lines(f):
    yield (f"{len(f['unwrapped_symbols'])} entry point(s) have no nccl.bindings function: no nccl4py release names "
           "them (param_get_parameter reads any parameter by key):")
    for name in f["unwrapped_symbols"]:
        yield f"  {name}"


@_section("Devices")
def _device_lines(f):
    d = f["devices"]
    if d["gpu_nodes"]:
        yield f"GPU device nodes: {' '.join(d['gpu_nodes'])}"
    else:
        yield (f"no GPU device node in {d['dev_dir']} (no /dev/kfd, no /dev/nvidia<N>): "
               "the host backend is the automatic choice")
    if d["render_nodes"]:
        yield f"render nodes: {' '.join(d['render_nodes'])}"
    for k, v in d["visibility"].items():
        yield f"  {k}={v}"
    if d["gpu_present"] and f["library"].get("flavour") == "host":
        yield "note: a GPU is present but the host backend is loaded (NCCL_LIBRARY selects it)"


@_section("cuda.core shim")
def _shim_lines(f):
    s = f["shim"]
    if s["active"]:
        yield "active: cuda.core is nccl._hip_compat.cuda_core_shim"
    elif s["cuda_core"]:
        yield f"not active: cuda.core is {s['cuda_core']}"
    else:
        yield "not active: cuda.core is not imported"
    if s["setting"] is not None:
        yield f"  NCCL4PY_CUDA_CORE_SHIM={s['setting']}"


def _lines(f, title, sections):
    out = [title, "=" * len(title), f"nccl4py      : {f['nccl4py']}", f"python       : {f['python']}",
           f"platform     : {f['platform']}"]
    for section in sections:
        lines = section(f)
        if lines:
            out += ["", *lines]
    return out


def report(f):
    """The report as text lines; a line starting with 'WARNING:' marks a problem."""
    return _lines(f, "nccl4py doctor", (_library_lines, _host_transport_lines, _mapped_lines, _environment_lines,
                                        _missing_symbol_lines, _unwrapped_lines, _device_lines, _shim_lines))


def summary(f):
    """The report's first sections (versions, the library and every load attempt, the mapped
    copies) and the count of missing ABI symbols: what ``python -m nccl`` prints."""
    out = _lines(f, "nccl4py", (_library_lines, _mapped_lines))
    if f["library"]["loaded"]:
        out += ["", f"ABI entry points missing from the library: {len(f['missing_symbols'])}"]
    out += ["", "python -m nccl doctor: the full report (environment, missing entry points, devices, cuda.core shim)"]
    return out


def main(mode="report"):
    """Prints the report (mode "report"), the summary ("summary") or collect()'s facts as JSON
    ("json"); returns 0, or 1 when no library loads."""
    facts = collect()
    if mode == "json":
        print(json.dumps(facts, indent=2))
    else:
        for line in (summary if mode == "summary" else report)(facts):
            print(line)
    return 0 if facts["library"]["loaded"] else 1
