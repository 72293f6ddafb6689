"""An arm64 CPython of a series Debian builds none of (3.10, 3.12, the free-threaded ones), cross-compiled
here from the upstream source into a sysroot of Debian's arm64 libraries: the target of those series'
aarch64 wheels and the interpreter that tests them under qemu-aarch64 (docs/developing.md#release).
tools/aarch64_python.py calls it when Debian has no arm64 build of the series; its sysroot has the
layout that module describes.

The source is the upstream tarball of a source package: Debian's (SOURCE_SUITES of tools/pythons.py,
which carry 3.13 and newer) first, else Ubuntu's (UBUNTU_SUITES: 3.10 in jammy, 3.12 in noble), taken
with a private apt (tools/debian_apt.py) whose index is signed: Debian's by the machine's archive
keyring, Ubuntu's by the Ubuntu archive key of Debian's ``ubuntu-keyring`` package (itself fetched
through the Debian index). The tarball's SHA-256 is checked against the signed index again here,
because some mirrors serve a package's tarball but not its other files.

The build: Debian SYSROOT_SUITE's arm64 SYSROOT_PACKAGES unpacked into the sysroot (``dpkg-deb -x``),
then ``configure --host=aarch64-linux-gnu`` with Debian's cross compiler (``aarch64-linux-gnu-gcc
--sysroot``), the x86-64 interpreter of the same series as ``--with-build-python`` (CPython's cross
build runs it for the generated files), tools/pythons.py's module exclusions and no PGO, and ``make
install DESTDIR=sysroot`` with prefix /usr. About 2 minutes a series on two CPUs.
"""

import hashlib
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pythons  # noqa: E402
from debian_apt import MIRROR, PrivateApt, run, upstream_version  # noqa: E402

CROSS_CC = "aarch64-linux-gnu-gcc"
UBUNTU_MIRROR = os.environ.get("NCCL4PY_UBUNTU_MIRROR", "http://archive.ubuntu.com/ubuntu")
UBUNTU_SUITES = ("jammy-updates", "jammy", "noble-updates", "noble")
UBUNTU_KEYRING = "usr/share/keyrings/ubuntu-archive-keyring.gpg"
# The arm64 libraries the interpreter is compiled against and runs with (glibc, libffi for ctypes,
# which nccl.run and doctor use, zlib; libstdc++ for numpy's wheel).
SYSROOT_SUITE = "bookworm"
SYSROOT_PACKAGES = ("libc6-dev", "libffi-dev", "zlib1g-dev", "libstdc++6")
MODULES_ENV = {k: v for k, v in pythons.FT_ENV.items() if k.startswith("py_cv_module_")}
# configure's run-time probes, answered for the target (they cannot run while cross-compiling).
CROSS_ANSWERS = ["ac_cv_file__dev_ptmx=yes", "ac_cv_file__dev_ptc=no", "ac_cv_buggy_getaddrinfo=no"]
CONFIGURE = ["--build=x86_64-linux-gnu", "--host=aarch64-linux-gnu", "--prefix=/usr",
             "--without-ensurepip", "--disable-test-modules", *CROSS_ANSWERS]
OPT = "-DNDEBUG -fwrapv -O2"


def log(msg):
    print(f"aarch64_cross_python: {msg}", file=sys.stderr, flush=True)


def ubuntu_keyring(work):
    """The Ubuntu archive keyring, from Debian's ubuntu-keyring package (verified by Debian's index)."""
    apt = PrivateApt(work / "apt-keyring", [f"deb {MIRROR} {s} main" for s in pythons.SOURCE_SUITES])
    apt.update()
    versions = apt.versions("ubuntu-keyring")
    if not versions:
        raise RuntimeError(f"Debian ({', '.join(pythons.SOURCE_SUITES)}) has no ubuntu-keyring package")
    debs = work / "keyring-deb"
    debs.mkdir()
    apt.download([f"ubuntu-keyring={versions[0]}"], debs)
    deb, = debs.glob("*.deb")
    run(["dpkg-deb", "-x", str(deb), str(work / "keyring")])
    return work / "keyring" / UBUNTU_KEYRING


def source_archives(work):
    """(name, PrivateApt of its deb-src lines) for each archive, in order of preference; Ubuntu's
    keyring is fetched only when Debian's sources are not enough (the callable)."""
    yield "Debian", lambda: PrivateApt(work / "apt-debian-src",
                                       [f"deb-src {MIRROR} {s} main" for s in pythons.SOURCE_SUITES])

    def ubuntu():
        keyring = ubuntu_keyring(work)
        return PrivateApt(work / "apt-ubuntu-src",
                          [f"deb-src [signed-by={keyring}] {UBUNTU_MIRROR} {s} main" for s in UBUNTU_SUITES])
    yield "Ubuntu", ubuntu


def orig_checksum(apt, package, version):
    """(file name, SHA-256) of the orig tarball of source `package` `version` in the signed index."""
    for record in apt.run("apt-cache", "showsrc", package).stdout.split("\n\n"):
        if not re.search(rf"^Version: {re.escape(version)}$", record, re.M) or "Checksums-Sha256:" not in record:
            continue
        for ln in record.split("Checksums-Sha256:", 1)[1].splitlines()[1:]:
            if not ln.startswith(" "):
                break
            digest, _, name = ln.split()
            if re.search(r"\.orig\.tar\.\w+$", name):
                return name, digest
    raise RuntimeError(f"{package} {version}: no orig tarball in the index")


def download_source(series, work):
    """(archive, package version, verified orig tarball) of CPython `series` ("3.12", "3.13")."""
    package, tried = f"python{series}", []
    for archive, make_apt in source_archives(work):
        apt = make_apt()
        apt.update()
        versions = apt.versions(package, kind="Sources")
        for version in versions:
            name, digest = orig_checksum(apt, package, version)
            dl = work / f"src-{archive}-{re.sub(r'[^A-Za-z0-9.+_-]', '_', version)}"
            dl.mkdir(parents=True)
            try:
                apt.run("apt-get", "source", "--download-only", f"{package}={version}", cwd=dl)
            except RuntimeError as e:
                log(f"{archive} {package} {version}: apt-get source failed ({str(e).splitlines()[-1]}); "
                    "the tarball is used if it came and matches the index")
            tarball = dl / name
            if tarball.is_file() and hashlib.sha256(tarball.read_bytes()).hexdigest() == digest:
                return archive, version, tarball
            tried.append(f"{archive} {version}")
        if not versions:
            tried.append(f"{archive}: none")
    raise RuntimeError(f"no source of CPython {series} could be downloaded ({'; '.join(tried)})")


def unpack_sysroot(sysroot, work):
    """Debian SYSROOT_SUITE's arm64 SYSROOT_PACKAGES and their dependencies, unpacked into `sysroot`."""
    apt = PrivateApt(work / "apt-arm64", [f"deb [arch=arm64] {MIRROR} {SYSROOT_SUITE} main"], arch="arm64")
    apt.update()
    pins = [f"{p}={v}" for p, v in apt.closure(list(SYSROOT_PACKAGES))]
    debs = work / "arm64-debs"
    debs.mkdir()
    apt.download(pins, debs)
    unpack_debs(debs, sysroot)
    return pins


def unpack_debs(debs, sysroot):
    """Every .deb in the folder `debs` unpacked into `sysroot` (nothing is installed). Debian from
    trixie on has a merged /usr (base-files makes /lib a link to usr/lib, and the dynamic loader's
    path is /lib/ld-linux-aarch64.so.1): the same links are made where the packages left none."""
    for deb in sorted(debs.glob("*.deb")):
        run(["dpkg-deb", "-x", str(deb), str(sysroot)])
    for top in ("lib", "bin", "sbin"):
        if not (sysroot / top).exists() and (sysroot / "usr" / top).is_dir():
            (sysroot / top).symlink_to(f"usr/{top}")
    # A -dev package's libX.so may be an absolute link (/lib/aarch64-linux-gnu/libz.so.1...): in the
    # sysroot it would dangle and the linker take the static archive, so it is made relative.
    for link in sysroot.rglob("*.so"):
        target = os.readlink(link) if link.is_symlink() else ""
        if target.startswith("/"):
            link.unlink()
            link.symlink_to(os.path.relpath(sysroot / target.lstrip("/"), link.parent))


def compile_python(src, sysroot, build_python, free_threaded):
    """configure, make and make install of the source tree `src` into `sysroot`."""
    pkgconfig = f"{sysroot}/usr/lib/aarch64-linux-gnu/pkgconfig:{sysroot}/usr/share/pkgconfig"
    # The folders --sysroot searches, also named: 3.10's setup.py looks for headers and libraries
    # (libffi) only in the -I and -L folders of CPPFLAGS and LDFLAGS.
    libdir, incdir = f"{sysroot}/usr/lib/aarch64-linux-gnu", f"{sysroot}/usr/include"
    env = {**os.environ, **MODULES_ENV, "CC": f"{CROSS_CC} --sysroot={sysroot}", "CXX": "false",
           "CPPFLAGS": f"-I{incdir} -I{incdir}/aarch64-linux-gnu", "LDFLAGS": f"-L{libdir}",
           "PKG_CONFIG_LIBDIR": pkgconfig, "PKG_CONFIG_SYSROOT_DIR": str(sysroot)}
    configure = [*CONFIGURE, f"OPT={OPT}"]
    if "with-build-python" in (src / "configure").read_text():
        configure.append(f"--with-build-python={build_python}")
    else:  # 3.10: its configure takes the first python3.10 on PATH, and its setup.py builds modules
        env["PATH"] = f"{Path(build_python).parent}:{env['PATH']}"
        # setup.py takes libffi's header folder from pkg-config (the sysroot's usr/include, while
        # Debian's ffi.h is in the multiarch folder below it) and then builds _ctypes without
        # libffi; with no pkg-config it searches the -I folders and finds the header.
        env["PKG_CONFIG"] = "false"
    if free_threaded:
        configure.append("--disable-gil")
    jobs = f"-j{os.cpu_count() or 2}"
    run(["./configure", *configure], cwd=src, env=env)
    run(["make", jobs], cwd=src, env=env)
    run(["make", "install", f"DESTDIR={sysroot}"], cwd=src, env=env)
    return configure


def build(series, cache, build_python):
    """Cross-compiles CPython `series` ("3.12", or "3.13t" free-threaded) into a sysroot in `cache`
    (``cpython-3.12.3-cross-arm64``), with `build_python` (an x86-64 interpreter of the same series);
    returns the sysroot and the manifest's fields."""
    base, free_threaded = series.rstrip("t"), series.endswith("t")
    if not shutil.which(CROSS_CC):
        raise RuntimeError(f"cross-compiling CPython {series} for aarch64 needs {CROSS_CC} "
                           "(apt-get install gcc-aarch64-linux-gnu)")
    have = run([str(build_python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
    if have != base:
        raise RuntimeError(f"the build interpreter {build_python} is CPython {have}, not {base}")
    seconds, t0 = {}, time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cross-", dir=cache))
    try:
        archive, version, tarball = download_source(base, work)
        seconds["download"] = round(time.monotonic() - t0, 1)
        dest = cache / f"cpython-{upstream_version(version)}{'t' if free_threaded else ''}-cross-arm64"
        log(f"{series}: cross-compiling {tarball.name} ({archive}'s python{base} {version}) into {dest}")
        sysroot = work / "sysroot"
        sysroot.mkdir()
        pins = unpack_sysroot(sysroot, work)
        with tarfile.open(tarball) as tf:
            tf.extractall(work / "src", filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(work / "src")
        src = next(p for p in (work / "src").iterdir() if (p / "configure").is_file())
        seconds["sysroot"] = round(time.monotonic() - t0 - seconds["download"], 1)
        configure = compile_python(src, sysroot, build_python, free_threaded)
        seconds["build"] = round(time.monotonic() - t0 - seconds["download"] - seconds["sysroot"], 1)
        if dest.exists():
            shutil.rmtree(dest)
        sysroot.rename(dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds["total"] = round(time.monotonic() - t0, 1)
    return dest, {"source": f"{archive} python{base} {version}", "tarball": tarball.name, "packages": pins,
                  "configure": configure, "env": MODULES_ENV, "build_python": str(build_python),
                  "seconds": seconds}
