#!/usr/bin/env python3
"""Fetch Debian's real RCCL (librccl1 and its dependency closure) into cached prefixes.

Debian ships RCCL as ``librccl1``: trixie's 5.4.3-3+b1 is RCCL 2.13.4 on ROCm 5.7, experimental's
7.2.4-1~exp3 is RCCL 2.27.7 on ROCm 7.2 (with ``librccl-dev`` for ``rccl.h``). Both need a newer
glibc than Debian 12's, so each prefix carries its own suite's libc6 and the library is used by
running the interpreter under that suite's dynamic loader:

    PREFIX/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \\
        --library-path PREFIX/usr/lib/x86_64-linux-gnu .venv/bin/python ...

apt runs with a private configuration (tools/debian_apt.py: its own sources.list, lists, cache and an
empty dpkg status file), so the machine's apt state is never read or changed and no root is needed. What
``apt-get -s install librccl1=VERSION`` lists is downloaded with ``apt-get download``, each file is
checked against the SHA256 of the signed index, unpacked with ``dpkg-deb -x``, and the result is
verified: every library the loader needs resolves, and ncclGetVersion reports the expected release.

Prefixes are cached under $NCCL4PY_RCCL_CACHE (default ~/.cache/nccl4py-rccl), one directory per
suite and package version; a cached prefix is verified again (a second) instead of fetched. Each
prefix has a manifest.json (read by tests/rccl), and the cache root an index.json naming the
current prefix of each suite.

    python3 tools/fetch_rccl.py                 # both suites; exit 1 if trixie fails
    python3 tools/fetch_rccl.py --suite trixie  # one suite
    python3 tools/fetch_rccl.py --list          # what is cached, fetching nothing

If the pinned experimental version has left the archive, the newest librccl1 in experimental or
sid is taken instead and the output says so. The trixie build is pinned and required; a failure of
the experimental fetch is reported and exits 1 as well unless --allow-missing-experimental is given.
"""

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from debian_apt import LDSO, LIBDIR, MIRROR, PrivateApt, cache_folder, newer

# suite: what to fetch. 'dists' are the archive suites of the private sources.list; 'target' is the
# suite apt should prefer for versioned dependencies; 'fallback' says which suites may stand in when
# the pinned version is gone (None: the pin is required).
SUITES = {
    "trixie": {
        "dists": ["trixie"],
        "target": None,
        "version": "5.4.3-3+b1",
        "rccl": "2.13.4",
        "packages": ["librccl1"],
        "fallback": None,
    },
    "experimental": {
        "dists": ["sid", "experimental"],
        "target": "experimental",
        "version": "7.2.4-1~exp3",
        "rccl": "2.27.7",
        "packages": ["librccl1", "librccl-dev"],
        "fallback": ["experimental", "sid"],
    },
}

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


def log(msg):
    print(f"fetch_rccl: {msg}", file=sys.stderr, flush=True)


def default_cache():
    return cache_folder("NCCL4PY_RCCL_CACHE", "nccl4py-rccl")


def key_of(suite, version):
    """Directory name of a prefix: suite and Debian version, with characters safe in a path."""
    return f"{suite}-" + re.sub(r"[^A-Za-z0-9.+_-]", "_", version)


def wrapper(prefix):
    """The command prefix that runs a program against this prefix's glibc and libraries."""
    return [str(prefix / LDSO), "--library-path", str(prefix / LIBDIR)]


class Apt(PrivateApt):
    """The private apt (debian_apt.py) of one suite's prefix: binary packages of `dists`."""

    def __init__(self, root, dists):
        super().__init__(root, [f"deb [arch=amd64] {MIRROR} {d} main" for d in dists])

    def versions(self, package):
        """[(version, suite)] of a package in the configured suites, as apt-cache madison lists them."""
        return [(version, suite) for version, suite, kind in self.madison(package) if kind == "Packages"]

    newer = staticmethod(newer)

    def hashes(self, pins):
        """{file name: (size, sha256)} from the signed index, via apt-get --print-uris download."""
        proc = self.run("apt-get", "--print-uris", "download", *pins)
        out = {}
        for m in re.finditer(r"^'[^']+' (\S+) (\d+) SHA256:([0-9a-f]{64})$", proc.stdout, re.M):
            out[m.group(1)] = (int(m.group(2)), m.group(3))
        if len(out) != len(pins):
            raise RuntimeError(f"apt gave {len(out)} SHA256 sums for {len(pins)} packages:\n{proc.stdout}")
        return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# Run under the prefix's loader: opens librccl.so.1 by SONAME (so it must come from the prefix),
# reports its version, path, and the HIP runtime it pulled in.
PROBE = r"""
import ctypes, json, sys
lib = ctypes.CDLL("librccl.so.1")
v = ctypes.c_int()
rc = lib.ncclGetVersion(ctypes.byref(v))
maps = open("/proc/self/maps").read()
paths = sorted({ln.split()[-1] for ln in maps.splitlines() if "/" in ln.split()[-1]})
print(json.dumps({"rc": rc, "code": v.value,
                  "rccl": [p for p in paths if "/librccl.so" in p],
                  "hip": [p for p in paths if "/libamdhip64.so" in p],
                  "libc": [p for p in paths if "/libc.so.6" in p]}))
"""


def decode(code):
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def verify(prefix, expect_rccl=None):
    """Checks the prefix is usable; returns the probe's facts. Raises RuntimeError otherwise."""
    ldso = prefix / LDSO
    if not ldso.exists():
        raise RuntimeError(f"{ldso} is missing")
    libs = sorted((prefix / LIBDIR).glob("librccl.so.*"))
    if not libs:
        raise RuntimeError(f"no librccl.so.* in {prefix / LIBDIR}")
    # Every dependency of librccl resolves inside the prefix (ld.so --list prints "not found").
    listing = subprocess.run([*wrapper(prefix), "--list", str(libs[0])], capture_output=True, text=True)
    if listing.returncode != 0 or "not found" in listing.stdout:
        raise RuntimeError(f"unresolved dependencies of {libs[0]}:\n{listing.stdout}{listing.stderr}")
    proc = subprocess.run([*wrapper(prefix), sys.executable, "-I", "-c", PROBE], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"loading librccl.so.1 under {ldso} failed:\n{proc.stdout}{proc.stderr}")
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    if facts["rc"] != 0:
        raise RuntimeError(f"ncclGetVersion returned {facts['rc']}")
    inside = str(prefix) + "/"
    for what in ("rccl", "libc"):
        if not facts[what] or not all(p.startswith(inside) for p in facts[what]):
            raise RuntimeError(f"{what} was not taken from the prefix: {facts[what]}")
    found = decode(facts["code"])
    if expect_rccl and found != expect_rccl:
        raise RuntimeError(f"ncclGetVersion reports {found}, expected RCCL {expect_rccl}")
    return facts


def read_manifest(prefix):
    try:
        m = json.loads((prefix / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return m if m.get("format") == MANIFEST_FORMAT else None


def build(suite, spec, cache, apt, work, version, note):
    """Fetches `version` of the suite's packages into a fresh prefix with `apt` (updated), working
    in `work`; returns the manifest."""
    final = cache / key_of(suite, version)
    log(f"{suite}: resolving {', '.join(p + '=' + version for p in spec['packages'])}")
    pins_wanted = [f"{p}={version}" for p in spec["packages"]]
    closure = apt.closure(pins_wanted, spec["target"])
    pins = [f"{p}={v}" for p, v in closure]
    sums = apt.hashes(pins)
    debs = work / "debs"
    debs.mkdir()
    t0 = time.monotonic()
    log(f"{suite}: downloading {len(pins)} packages ({sum(s for s, _ in sums.values()) / 1e6:.0f} MB)")
    apt.download(pins, debs)
    t_download = time.monotonic() - t0
    packages = []
    for name, (size, digest) in sorted(sums.items()):
        path = debs / name
        if not path.exists() or path.stat().st_size != size or sha256(path) != digest:
            raise RuntimeError(f"{name}: size or SHA256 differs from the archive's index")
        packages.append({"file": name, "size": size, "sha256": digest})
    root = work / "root"
    t0 = time.monotonic()
    log(f"{suite}: unpacking")
    # Two dpkg-deb at a time: the large ROCm packages dominate, and the machine has few cores.
    procs = []
    for p in packages:
        procs.append(subprocess.Popen(["dpkg-deb", "-x", str(debs / p["file"]), str(root)]))
        if len(procs) >= 2:
            if procs.pop(0).wait() != 0:
                raise RuntimeError("dpkg-deb -x failed")
    if any(p.wait() != 0 for p in procs):
        raise RuntimeError("dpkg-deb -x failed")
    t_unpack = time.monotonic() - t0
    shutil.rmtree(debs)
    # The prefix moves into place under its final name before verification (paths are absolute).
    if final.exists():
        shutil.rmtree(final)
    root.rename(final)
    facts = verify(final, spec["rccl"] if version == spec["version"] else None)
    header = final / "usr/include/rccl/rccl.h"
    manifest = {
        "format": MANIFEST_FORMAT,
        "suite": suite,
        "package": "librccl1",
        "version": version,
        "pinned": spec["version"],
        "substituted": version != spec["version"],
        "note": note,
        "rccl_version": decode(facts["code"]),
        "version_code": facts["code"],
        "prefix": str(final),
        "ldso": str(final / LDSO),
        "libdir": str(final / LIBDIR),
        "library": facts["rccl"][0],
        "hip_runtime": facts["hip"],
        "rccl_h": str(header) if header.exists() else None,
        "packages": packages,
        "download_s": round(t_download, 1),
        "unpack_s": round(t_unpack, 1),
    }
    (final / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def pick_version(spec, apt):
    """(version, note) to fetch: the pin, or for a suite with a fallback the newest available."""
    available = apt.versions("librccl1")
    if any(v == spec["version"] for v, _ in available):
        return spec["version"], None
    if not spec["fallback"]:
        raise RuntimeError(f"librccl1 {spec['version']} is no longer in {'/'.join(spec['dists'])} "
                           f"(available: {', '.join(v for v, _ in available) or 'none'})")
    candidates = [(v, s) for v, s in available if s in spec["fallback"]]
    if not candidates:
        raise RuntimeError(f"no librccl1 at all in {'/'.join(spec['fallback'])}")
    best = candidates[0]
    for v, s in candidates[1:]:
        if apt.newer(v, best[0]):
            best = (v, s)
    note = (f"librccl1 {spec['version']} has left the archive; using the newest in "
            f"{'/'.join(spec['fallback'])}: {best[0]} ({best[1]})")
    return best[0], note


def ensure(suite, cache):
    """The manifest of a verified prefix for the suite, fetching when the cache has none."""
    spec = SUITES[suite]
    index = read_index(cache)
    candidates = [cache / key_of(suite, spec["version"])]
    if suite in index:
        candidates.append(Path(index[suite]))
    for prefix in candidates:
        m = read_manifest(prefix)
        if m is None:
            continue
        # A substituted prefix is reused only while the pin stays gone: look again after a day.
        if m["substituted"] and time.time() - (prefix / MANIFEST).stat().st_mtime > 86400:
            continue
        try:
            verify(prefix, spec["rccl"] if not m["substituted"] else None)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            log(f"{suite}: cached prefix {prefix} fails verification, fetching again: {e}")
            continue
        log(f"{suite}: cached {prefix} (librccl1 {m['version']}, RCCL {m['rccl_version']})")
        return m, True
    work = Path(tempfile.mkdtemp(prefix=f".{suite}-", dir=cache))
    try:
        apt = Apt(work / "apt", spec["dists"])
        log(f"{suite}: apt-get update ({' '.join(spec['dists'])})")
        apt.update()
        version, note = pick_version(spec, apt)
        if note:
            log(f"{suite}: NOTE: {note}")
        return build(suite, spec, cache, apt, work, version, note), False
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_index(cache):
    try:
        return json.loads((cache / "index.json").read_text())
    except (OSError, ValueError):
        return {}


def write_index(cache, manifests):
    index = read_index(cache)
    index.update({m["suite"]: m["prefix"] for m in manifests})
    tmp = cache / "index.json.tmp"
    tmp.write_text(json.dumps(index, indent=1) + "\n")
    tmp.replace(cache / "index.json")
    # Prefixes of a suite other than the current one are stale versions: remove them.
    keep = set(index.values())
    for d in cache.iterdir():
        if d.is_dir() and not d.name.startswith(".") and str(d) not in keep and (d / MANIFEST).exists():
            shutil.rmtree(d, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), help="fetch only this suite (repeatable)")
    ap.add_argument("--cache", type=Path, default=default_cache(), help="cache directory (%(default)s)")
    ap.add_argument("--list", action="store_true", help="report the cached prefixes, fetch nothing")
    ap.add_argument("--allow-missing-experimental", action="store_true",
                    help="a failed experimental fetch is reported but does not fail the run")
    args = ap.parse_args(argv)
    suites = args.suite or list(SUITES)
    cache = args.cache.expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)

    if args.list:
        index = read_index(cache)
        for s in suites:
            m = read_manifest(Path(index[s])) if s in index else None
            print(f"{s}: " + (f"librccl1 {m['version']} (RCCL {m['rccl_version']}) at {m['prefix']}" if m
                              else "not fetched"))
        return 0

    status = 0
    done = []
    for s in suites:
        t0 = time.monotonic()
        try:
            m, cached = ensure(s, cache)
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            log(f"{s}: FAILED: {e}")
            if s == "trixie" or not args.allow_missing_experimental:
                status = 1
            continue
        done.append(m)
        took = time.monotonic() - t0
        print(f"{s}: librccl1 {m['version']} = RCCL {m['rccl_version']} "
              f"({'cached' if cached else 'fetched'}, {took:.0f} s){' — ' + m['note'] if m['note'] else ''}")
        print(f"  library : {m['library']}")
        print(f"  HIP     : {', '.join(m['hip_runtime']) or 'none mapped'}")
        if m["rccl_h"]:
            print(f"  rccl.h  : {m['rccl_h']}")
        print(f"  run     : {' '.join(wrapper(Path(m['prefix'])))} .venv/bin/python ...")
    if done:
        write_index(cache, done)
    return status


if __name__ == "__main__":
    sys.exit(main())
