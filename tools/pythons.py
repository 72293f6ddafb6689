#!/usr/bin/env python3
"""Get the CPython interpreters the project is tested on, reproducibly, into a cache.

    python3 tools/pythons.py 3.10 stable ft   # each: "NAME PATH-OF-PYTHON" on stdout
    python3 tools/pythons.py --names          # every NAME, oldest first
    python3 tools/pythons.py --list           # what is cached, fetching nothing
    python3 tools/pythons.py --refresh stable # look for a newer Debian build than the cached one
    python3 tools/pythons.py --venv DIR ft    # also create a venv with pip at DIR

Interpreters (names on the command line):

* ``3.10``: the oldest CPython ``requires-python`` admits, and ``3.11`` ... the series before
  STABLE_SERIES (tools/build_wheels.py builds a wheel for each). Debian ships no 3.10 in any suite,
  so these are taken from pyenv (``$PYENV_ROOT`` or ~/.pyenv, the newest 3.N.x there), else from a
  ``python3.N`` on PATH, else from Debian's binary packages as ``stable`` is (sid may carry the
  series before the stable one).
* ``stable``: the newest stable CPython Debian builds (STABLE_SERIES, from sid), fetched as binary
  packages into a prefix. Its glibc and libraries are newer than Debian 12's, so the binary is
  patched (patchelf) to start under the prefix's dynamic loader with the prefix's library folder as
  its run path: the interpreter then runs from any process, which pip's and the tests' subprocesses
  (``sys.executable``) need. Debian's multiarch ``pyconfig.h`` is copied next to ``Python.h`` so a
  compiler finds it without /usr/include/x86_64-linux-gnu, and pip comes from the prefix's
  python-wheels (Debian's ensurepip looks only in /usr/share/python-wheels).
* ``ft``: a free-threaded (``--disable-gil``) CPython of FT_SERIES, built from the upstream tarball
  of Debian's source package (no PGO/LTO, no test modules), installed with ensurepip's pip.

apt runs with a private configuration (tools/debian_apt.py: its own sources.list, lists, cache and an
empty dpkg status file) under the cache folder; the machine's apt state is neither read nor written, and apt verifies
every file it downloads against the signed index. Cache: $NCCL4PY_PYTHONS_CACHE, default
~/.cache/nccl4py-pythons, one folder per interpreter named by its exact version (e.g.
``cpython-3.15.2-1-debian``; ``cpython-3.13.15t-<hash of the build options>``), each with a
manifest.json that records where it came from and how long each step took. A cached interpreter
is verified (it starts, and has the modules pip and the tests need) and used without touching the
network; --refresh looks for a newer Debian version first. Needs: apt-get, dpkg-deb, patchelf (installed with apt-get when missing and
run as root), and for ``ft`` a C compiler, make and the headers of OpenSSL, zlib and libffi.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from debian_apt import LDSO, LIBDIR, MIRROR, MULTIARCH, PrivateApt, cache_folder, run, upstream_version

SUITE = "sid"
# Source packages are looked up in these suites too (sid's pool may lack a source it lists).
SOURCE_SUITES = ("sid", "trixie")
STABLE_SERIES = "3.15"
# Free-threaded series, in order of preference; the newest source of the first series whose
# tarball downloads is built. 3.14t: numpy, ml_dtypes, mypy and mpi4py all publish cp314t wheels
# (mpi4py has none for cp315t); 3.13t: numpy<2.5, ml_dtypes<0.6 and mpi4py do.
FT_SERIES = ("3.14", "3.13")
# No test modules; -O2 without -g (CPython's default OPT has -g -O3: slower to build, no faster to
# test); none of the modules for terminals, databases or Tk, which nothing here imports.
FT_CONFIGURE = ["--disable-gil", "--disable-test-modules", "--with-ensurepip=install"]
FT_ENV = {"OPT": "-DNDEBUG -fwrapv -O2 -Wall",
          **{f"py_cv_module_{m}": "n/a" for m in ("_curses", "_curses_panel", "_dbm", "_gdbm", "readline",
                                                  "_sqlite3", "_tkinter", "xxlimited", "xxlimited_35")}}
MANIFEST = "manifest.json"
# What an interpreter must import to install wheels over HTTPS and run the tests.
REQUIRED_MODULES = ["ssl", "zlib", "ctypes", "venv", "json", "lzma", "bz2"]
PROBE = (
    "import json, sys, sysconfig\n"
    "for m in {mods!r}: __import__(m)\n"
    "print(json.dumps({{'version': sys.version.split()[0], 'executable': sys.executable,\n"
    "  'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')),\n"
    "  'include': sysconfig.get_path('include')}}))\n"
)


def log(msg):
    print(f"pythons: {msg}", file=sys.stderr, flush=True)


def default_cache():
    return cache_folder("NCCL4PY_PYTHONS_CACHE", "nccl4py-pythons")


class Steps:
    """Times named steps; the result goes into the manifest and the log."""

    def __init__(self):
        self.seconds = {}

    def run(self, name, fn, *args, **kw):
        t0 = time.monotonic()
        out = fn(*args, **kw)
        self.seconds[name] = round(time.monotonic() - t0, 1)
        log(f"  {name}: {self.seconds[name]} s")
        return out


class Apt(PrivateApt):
    """The private apt (debian_apt.py) of the cache: SUITE's binary packages, SOURCE_SUITES' sources."""

    def __init__(self, root):
        super().__init__(root, [f"deb [arch=amd64] {MIRROR} {SUITE} main",
                                *(f"deb-src {MIRROR} {suite} main" for suite in SOURCE_SUITES)])

    def version(self, package):
        found = self.versions(package)
        if not found:
            raise RuntimeError(f"{package}: not in {SUITE}")
        return found[0]


def verify(python, free_threaded):
    """Runs the interpreter: it must start, import REQUIRED_MODULES and be of the expected kind."""
    out = run([str(python), "-c", PROBE.format(mods=REQUIRED_MODULES)]).stdout
    info = json.loads(out)
    if info["free_threaded"] != free_threaded:
        raise RuntimeError(f"{python}: free_threaded is {info['free_threaded']}, expected {free_threaded}")
    if not Path(info["include"], "Python.h").is_file():
        raise RuntimeError(f"{python}: no Python.h in {info['include']}")
    return info


def cached(cache, prefix_glob, python_rel, free_threaded):
    """The newest verified cached interpreter matching `prefix_glob`, or None."""
    dirs = sorted(cache.glob(prefix_glob), key=lambda d: d.stat().st_mtime, reverse=True)
    for d in dirs:
        python = d / python_rel
        if (d / MANIFEST).is_file() and python.exists():
            try:
                verify(python, free_threaded)
                return python
            except (RuntimeError, ValueError) as e:
                log(f"cached {d.name} does not work, ignoring it: {e}")
    return None


def write_manifest(dest, **fields):
    (dest / MANIFEST).write_text(json.dumps(fields, indent=2) + "\n")


# ---- 3.10 ... the series before STABLE_SERIES: pyenv or PATH --------------------------------------

OLDEST_SERIES = "3.10"


def local_series():
    """"3.10" ... the series before STABLE_SERIES."""
    oldest, stable = int(OLDEST_SERIES.split(".")[1]), int(STABLE_SERIES.split(".")[1])
    return [f"3.{minor}" for minor in range(oldest, stable)]


def get_local(series):
    """A getter for CPython `series` from pyenv (the newest patch release there) or PATH, else from
    Debian SUITE's binary packages as for ``stable``."""
    def get(cache, apt, refresh):
        root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
        candidates = sorted(root.glob(f"versions/{series}.*/bin/python{series}"),
                            key=lambda p: [int(x) for x in p.parts[-3].split(".")[2:] if x.isdigit()],
                            reverse=True)
        which = shutil.which(f"python{series}")
        if which:
            candidates.append(Path(which))
        for python in candidates:
            try:
                info = verify(python, False)
            except (RuntimeError, ValueError) as e:
                log(f"{python} does not work: {e}")
                continue
            log(f"{series}: {python} ({info['version']})")
            return python
        try:
            return get_debian(series, cache, apt, refresh)
        except RuntimeError as e:
            raise RuntimeError(f"no CPython {series} in pyenv, on PATH or in Debian {SUITE} ({e}); "
                               f"pyenv install {series}") from e
    return get


# ---- stable: Debian's binary packages ------------------------------------------------------------

def ensure_patchelf():
    if shutil.which("patchelf"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError("patchelf is missing (apt-get install patchelf)")
    log("installing patchelf with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(["apt-get", "install", "-y", "-qq", "patchelf"], env=env, capture_output=True).returncode:
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "patchelf"], env=env)


def get_stable(cache, apt, refresh):
    return get_debian(STABLE_SERIES, cache, apt, refresh)


def get_debian(series, cache, apt, refresh):
    """CPython `series` from Debian SUITE's binary packages (RuntimeError if SUITE has none)."""
    name = "stable" if series == STABLE_SERIES else series
    rel = f"usr/bin/python{series}"
    if not refresh:
        python = cached(cache, f"cpython-{series}.*-debian", rel, False)
        if python:
            log(f"{name}: cached {python}")
            return python
    steps = Steps()
    steps.run("apt-get update", apt.update)
    version = apt.version(f"python{series}")
    dest = cache / f"cpython-{re.sub(r'[^A-Za-z0-9.+_-]', '_', version)}-debian"
    python = dest / rel
    if (dest / MANIFEST).is_file():
        verify(python, False)
        log(f"{name}: cached {python} is {SUITE}'s newest ({version})")
        return python
    log(f"{name}: fetching python{series} {version} from Debian {SUITE} into {dest}")
    ensure_patchelf()
    # The runtime closure on an empty system (glibc included), and the headers and pip without
    # their dependencies (the compilers and -dev libraries come from the machine).
    runtime = steps.run("resolve", apt.closure, [f"python{series}={version}"])
    extra = [f"libpython{series}-dev={version}", f"python{series}-dev={version}", "python3-pip-whl"]
    pins = [f"{p}={v}" for p, v in runtime] + extra
    tmp = Path(tempfile.mkdtemp(prefix="stable-", dir=cache))
    try:
        debs = tmp / "debs"
        debs.mkdir()
        steps.run("download", apt.download, pins, debs)
        prefix = tmp / "prefix"

        def unpack():
            for deb in sorted(debs.glob("*.deb")):
                run(["dpkg-deb", "-x", str(deb), str(prefix)])

        steps.run("unpack", unpack)
        inc = prefix / "usr" / "include" / f"python{series}"
        shutil.copy2(prefix / "usr" / "include" / MULTIARCH / f"python{series}" / "pyconfig.h", inc / "pyconfig.h")
        binary = prefix / rel
        binary = binary.parent / os.readlink(binary) if binary.is_symlink() else binary
        final_lib = dest / LIBDIR
        steps.run("patchelf", run, ["patchelf", "--set-interpreter", str(dest / LDSO), "--force-rpath",
                                    "--set-rpath", str(final_lib), str(binary)])
        wheels = sorted((prefix / "usr" / "share" / "python-wheels").glob("pip-*.whl"))
        if not wheels:
            raise RuntimeError("python3-pip-whl has no pip wheel")
        shutil.rmtree(debs)
        if dest.exists():
            shutil.rmtree(dest)
        prefix.rename(dest)
        info = steps.run("verify", verify, python, False)
        write_manifest(dest, name=name, series=series, debian_version=version, suite=SUITE,
                       version=info["version"], python=str(python), packages=pins,
                       pip_wheel=str(dest / wheels[-1].relative_to(prefix)), seconds=steps.seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"{name}: {python} ({info['version']}) in {sum(steps.seconds.values()):.0f} s")
    return python


# ---- ft: free-threaded, built from the upstream tarball of Debian's source package ----------------

def get_ft(cache, apt, refresh):
    if not refresh:
        for series in FT_SERIES:
            python = cached(cache, f"cpython-{series}.*t-*", f"bin/python{series}t", True)
            if python:
                log(f"ft: cached {python}")
                return python
    steps = Steps()
    steps.run("apt-get update", apt.update)
    tmp = Path(tempfile.mkdtemp(prefix="ft-", dir=cache))
    try:
        return build_ft(cache, apt, steps, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def download_source(apt, tmp):
    """(series, Debian version, orig tarball) of the first FT_SERIES source the archive serves."""
    for series in FT_SERIES:
        for debver in apt.versions(f"python{series}", kind="Sources"):
            dl = tmp / f"src-{debver}"
            dl.mkdir()
            try:
                apt.run("apt-get", "source", "--download-only", f"python{series}={debver}", cwd=dl)
            except RuntimeError as e:
                log(f"ft: python{series} {debver}: source not served ({str(e).splitlines()[-1]})")
                continue
            upstream = upstream_version(debver)
            tarballs = list(dl.glob(f"python{series}_{upstream}*.orig.tar.*"))
            if len(tarballs) != 1:
                raise RuntimeError(f"python{series} {debver}: expected one orig tarball, found {tarballs}")
            return series, debver, tarballs[0]
    raise RuntimeError(f"no source of python{'/'.join(FT_SERIES)} could be downloaded")


def build_ft(cache, apt, steps, tmp):
    series, debver, tarball = steps.run("download source", download_source, apt, tmp)
    upstream = upstream_version(debver)
    # The build options are part of the key: changing them builds anew.
    options = hashlib.sha256(json.dumps([FT_CONFIGURE, FT_ENV], sort_keys=True).encode()).hexdigest()[:8]
    dest = cache / f"cpython-{upstream}t-{options}"
    python = dest / f"bin/python{series}t"
    if (dest / MANIFEST).is_file():
        verify(python, True)
        log(f"ft: cached {python} is built from the newest source served ({debver})")
        return python
    for tool in ("cc", "make"):
        if not shutil.which(tool):
            raise RuntimeError(f"building the free-threaded CPython needs {tool}")
    log(f"ft: building CPython {upstream} --disable-gil from Debian's python{series} {debver} into {dest}")
    try:
        def extract():
            with tarfile.open(tarball) as tf:
                tf.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(tmp)

        steps.run("extract", extract)
        src = next(p for p in tmp.iterdir() if p.is_dir() and (p / "configure").is_file())
        jobs = str(os.cpu_count() or 2)
        if dest.exists():
            shutil.rmtree(dest)
        # No --enable-optimizations/--with-lto: PGO runs the test suite, far too slow here.
        steps.run("configure", run, ["./configure", f"--prefix={dest}", *FT_CONFIGURE], cwd=src,
                  env={**os.environ, **FT_ENV})
        steps.run("make", run, ["make", f"-j{jobs}"], cwd=src)
        steps.run("install", run, ["make", f"-j{jobs}", "install"], cwd=src)
        info = steps.run("verify", verify, python, True)
        missing = [m for m in ("_ssl", "zlib", "_ctypes", "_lzma", "_bz2") if not glob.glob(
            str(dest / "lib" / f"python{series}t" / "lib-dynload" / f"{m}.*.so"))]
        if missing:
            raise RuntimeError(f"built without {missing}: install the -dev packages of their libraries")
        write_manifest(dest, name="ft", series=series, debian_source=f"python{series} {debver}",
                       suites=list(SOURCE_SUITES), version=info["version"], python=str(python),
                       configure=FT_CONFIGURE, env=FT_ENV,
                       seconds=steps.seconds)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    log(f"ft: {python} ({info['version']}) in {sum(steps.seconds.values()):.0f} s")
    return python


GETTERS = {**{series: get_local(series) for series in local_series()}, "stable": get_stable, "ft": get_ft}


def make_venv(python, venv):
    """A venv with pip at `venv`. Debian's interpreter gets pip from the wheel its manifest names."""
    manifest = Path(python).resolve().parents[2] / MANIFEST
    wheel = None
    if manifest.is_file():
        wheel = json.loads(manifest.read_text()).get("pip_wheel")
    if wheel:
        run([str(python), "-m", "venv", "--without-pip", "--clear", str(venv)])
        # pip runs from its own wheel to install itself.
        run([str(Path(venv) / "bin" / "python"), f"{wheel}/pip", "install", "-q", "--no-index", wheel])
    else:
        run([str(python), "-m", "venv", "--clear", str(venv)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"{', '.join(GETTERS)}")
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--refresh", action="store_true", help="look for a newer Debian version first")
    ap.add_argument("--venv", type=Path, help="create a venv with pip there (one NAME only)")
    ap.add_argument("--list", action="store_true", help="show the cache and exit")
    ap.add_argument("--names", dest="show_names", action="store_true", help="print every NAME, oldest first, and exit")
    args = ap.parse_args()
    if args.show_names:
        print(*GETTERS)
        return 0
    if args.list:
        for m in sorted(args.cache.glob(f"*/{MANIFEST}")):
            d = json.loads(m.read_text())
            print(f"{d['name']:7} {d['version']:10} {d['python']}  ({sum(d['seconds'].values()):.0f} s)")
        return 0
    if not args.names or set(args.names) - set(GETTERS):
        ap.error(f"name one or more of {', '.join(GETTERS)}")
    if args.venv and len(args.names) != 1:
        ap.error("--venv takes one NAME")
    args.cache.mkdir(parents=True, exist_ok=True)
    apt = Apt(args.cache / "apt")
    status = 0
    for name in args.names:
        try:
            python = GETTERS[name](args.cache, apt, args.refresh)
        except RuntimeError as e:
            log(f"{name}: {e}")
            status = 1
            continue
        if args.venv:
            make_venv(python, args.venv)
        print(name, python, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
