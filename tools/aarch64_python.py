#!/usr/bin/env python3
"""The arm64 CPython of one series in a sysroot of its own: the target of the aarch64 wheels (its
headers, pyconfig.h and sysconfig data) and the interpreter that tests them under qemu-aarch64
(docs/developing.md#ci-on-aarch64).

    python3 tools/aarch64_python.py 3.11          # "SERIES SYSROOT PYTHON" on stdout
    python3 tools/aarch64_python.py --json 3.13   # everything get() returns, as JSON
    python3 tools/aarch64_python.py 3.12 3.13t    # cross-compiled (see below)
    python3 tools/aarch64_python.py --list        # what is cached, fetching nothing

Debian's own build where there is one: the series is looked up in SUITES in order (a released suite
before sid), arm64 binary packages only: the runtime closure of ``pythonX.Y-minimal``,
``libpythonX.Y-stdlib`` and RUNTIME on an empty system (glibc included) and ``libpythonX.Y-dev``
without its dependencies (the headers). Nothing is installed: the packages are unpacked with
``dpkg-deb -x``. Debian builds no arm64 CPython of a series it does not ship (3.10, 3.12) and no
free-threaded one (``3.13t``); those are cross-compiled from the upstream source by
tools/aarch64_cross_python.py, with an x86-64 interpreter of the series as its build interpreter
(``--build-python``, default the one running this tool where its series matches).

apt runs with a private configuration (tools/debian_apt.py) that verifies every download against
the signed index. Cache: $NCCL4PY_AARCH64_CACHE, default ~/.cache/nccl4py-aarch64-sysroot, one
folder per build with a manifest.json: ``cpython-3.11.2-6+deb12u8-arm64`` (Debian's),
``cpython-3.12.3-cross-arm64`` (cross-compiled). Where qemu-aarch64 is on PATH the interpreter is
started once to check it.
"""

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aarch64_cross_python  # noqa: E402
from debian_apt import MIRROR, PrivateApt, cache_folder, run  # noqa: E402

SUITES = ("bookworm", "trixie", "sid")
MULTIARCH = "aarch64-linux-gnu"
MANIFEST = "manifest.json"
# Beside the interpreter: what numpy's aarch64 wheel links (its libs bundle only OpenBLAS).
RUNTIME = ("libstdc++6",)
# ctypes: nccl.run and doctor import it, so an interpreter without a working _ctypes is refused.
PROBE = ("import ctypes, json, sys, sysconfig; "
         "print(json.dumps([sys.version.split()[0], sysconfig.get_config_var('EXT_SUFFIX')]))")


def log(msg):
    print(f"aarch64_python: {msg}", file=sys.stderr, flush=True)


def default_cache():
    return cache_folder("NCCL4PY_AARCH64_CACHE", "nccl4py-aarch64-sysroot")


def describe(sysroot, series):
    """What a build and a test run need from the sysroot of `series` ("3.11", "3.13t"; KeyError or
    OSError if it lacks it): the interpreter, the headers, the target's real pyconfig.h (Debian's
    include/pythonX.Y/pyconfig.h only dispatches on the architecture to the multiarch one; an
    upstream build has the real one there) and the sysconfig data its build recorded."""
    usr = sysroot / "usr"
    abiflags = "t" if series.endswith("t") else ""
    data = usr / "lib" / f"python{series}" / f"_sysconfigdata_{abiflags}_linux_{MULTIARCH}.py"
    tree = ast.parse(data.read_text())
    variables = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                     and any(getattr(t, "id", None) == "build_time_vars" for t in node.targets))
    headers = usr / "include" / f"python{series}"
    pyconfig = usr / "include" / MULTIARCH / f"python{series}" / "pyconfig.h"
    info = {"series": series, "sysroot": str(sysroot), "python": str(usr / "bin" / f"python{series}"),
            "headers": str(headers), "pyconfig": str(pyconfig if pyconfig.is_file() else headers / "pyconfig.h"),
            "sysconfigdata": str(data), "version": variables["VERSION"],
            "ext_suffix": variables["EXT_SUFFIX"], "free_threaded": bool(variables.get("Py_GIL_DISABLED"))}
    info["libstdcxx"] = str(usr / "lib" / MULTIARCH / "libstdc++.so.6")
    for key in ("python", "pyconfig", "libstdcxx"):
        if not Path(info[key]).is_file():
            raise OSError(f"{sysroot}: no {info[key]}")
    if not (headers / "Python.h").is_file():
        raise OSError(f"{sysroot}: no Python.h in {headers}")
    if info["free_threaded"] != bool(abiflags):
        raise OSError(f"{sysroot}: its CPython is {'' if info['free_threaded'] else 'not '}free-threaded")
    return info


def check_runs(info):
    """Starts the interpreter under qemu-aarch64 (when there is one) and compares what it reports."""
    qemu = shutil.which("qemu-aarch64")
    if not qemu:
        return
    version, suffix = json.loads(run([qemu, "-L", info["sysroot"], info["python"], "-c", PROBE]).stdout)
    if suffix != info["ext_suffix"]:
        raise RuntimeError(f"{info['python']} reports EXT_SUFFIX {suffix}, its sysconfig data {info['ext_suffix']}")
    info["full_version"] = version


def cached(cache, series):
    """The newest complete sysroot of `series` in the cache (Debian's or cross-compiled), or None."""
    base, free_threaded = series.rstrip("t"), series.endswith("t")
    dirs = [d for d in cache.glob(f"cpython-{base}.*-arm64")
            if bool(re.match(rf"cpython-{re.escape(base)}\.\d+t-", d.name)) == free_threaded]
    for d in sorted(dirs, key=lambda d: d.stat().st_mtime, reverse=True):
        if (d / MANIFEST).is_file():
            try:
                return describe(d, series)
            except (OSError, KeyError, StopIteration, SyntaxError, ValueError) as e:
                log(f"cached {d.name} is incomplete, ignoring it: {e}")
    return None


class NotInDebian(RuntimeError):
    """Debian has no arm64 build of the series."""


def find_suite(apt, series):
    """(suite, version) of python{series}-minimal in the first suite of SUITES that has it."""
    found = {}
    for version, suite, kind in apt.madison(f"python{series}-minimal"):
        if kind == "Packages":
            found.setdefault(suite, version)
    for suite in SUITES:
        if suite in found:
            return suite, found[suite]
    raise NotInDebian(f"Debian ({', '.join(SUITES)}) has no arm64 CPython {series}")


def get(series, cache=None, build_python=None):
    """The arm64 CPython `series` (describe()'s dict), from the cache, else Debian's arm64 build,
    else cross-compiled with `build_python` (default: this interpreter)."""
    cache = cache or default_cache()
    info = cached(cache, series)
    if info:
        return info
    if not series.endswith("t"):
        try:
            return fetch_debian(series, cache)
        except NotInDebian as e:
            log(f"{e}: cross-compiling it from the upstream source")
    dest, fields = aarch64_cross_python.build(series, cache, Path(build_python or sys.executable))
    info = describe(dest, series)
    check_runs(info)
    (dest / MANIFEST).write_text(json.dumps({**fields, **info}, indent=1) + "\n")
    log(f"{series}: {dest} in {fields['seconds']['total']} s")
    return info


def fetch_debian(series, cache):
    """Debian's arm64 CPython `series`, fetched and unpacked into the cache."""
    seconds = {}
    t0 = time.monotonic()
    apt = PrivateApt(cache / "apt", [f"deb [arch=arm64] {MIRROR} {suite} main" for suite in SUITES], arch="arm64")
    apt.update()
    suite, version = find_suite(apt, series)
    dest = cache / f"cpython-{re.sub(r'[^A-Za-z0-9.+_-]', '_', version)}-arm64"
    log(f"fetching arm64 python{series} {version} from Debian {suite} into {dest}")
    runtime = apt.closure([f"python{series}-minimal={version}", f"libpython{series}-stdlib={version}", *RUNTIME],
                          target=suite)
    pins = [f"{p}={v}" for p, v in runtime] + [f"libpython{series}-dev={version}"]
    seconds["resolve"] = round(time.monotonic() - t0, 1)
    tmp = Path(tempfile.mkdtemp(prefix="arm64-", dir=cache))
    try:
        debs = tmp / "debs"
        debs.mkdir()
        apt.download(pins, debs)
        seconds["download"] = round(time.monotonic() - t0 - seconds["resolve"], 1)
        prefix = tmp / "sysroot"
        aarch64_cross_python.unpack_debs(debs, prefix)
        if dest.exists():
            shutil.rmtree(dest)
        prefix.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info = describe(dest, series)
    check_runs(info)
    seconds["total"] = round(time.monotonic() - t0, 1)
    (dest / MANIFEST).write_text(json.dumps({"suite": suite, "debian_version": version, "packages": pins,
                                             **info, "seconds": seconds}, indent=1) + "\n")
    log(f"{series}: {dest} in {seconds['total']} s")
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("series", nargs="*", help="CPython series, e.g. 3.11, or 3.13t for a free-threaded one")
    ap.add_argument("--build-python", type=Path, help="an x86-64 CPython of the series, for a cross-compiled "
                    "one (default: this interpreter)")
    ap.add_argument("--json", action="store_true", help="print get()'s dict of each series as JSON")
    ap.add_argument("--list", action="store_true", help="what is cached, fetching nothing")
    args = ap.parse_args()
    if args.list:
        for d in sorted(default_cache().glob("cpython-*-arm64")):
            print(d)
        return 0
    status = 0
    for series in args.series:
        try:
            info = get(series, build_python=args.build_python)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            log(f"{series}: {e}")
            status = 1
            continue
        print(json.dumps(info) if args.json else f"{series} {info['sysroot']} {info['python']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
