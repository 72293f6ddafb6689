"""apt-get and apt-cache with a private configuration, for the tools that fetch Debian packages
into a prefix of their own (fetch_rccl.py, pythons.py).

Everything apt reads or writes lives under one folder: its own sources.list, package lists, archive
cache and an empty dpkg status file, so the machine's apt state (sources, lists, status,
preferences, archives) is neither read nor changed and no root is needed. apt checks every file it
downloads against the signed index; unauthenticated packages are refused.
"""

import os
import re
import subprocess
from pathlib import Path

MIRROR = os.environ.get("NCCL4PY_DEBIAN_MIRROR", "http://deb.debian.org/debian")
MULTIARCH = "x86_64-linux-gnu"
LIBDIR = f"usr/lib/{MULTIARCH}"
# A prefix's own dynamic loader: its glibc is newer than the machine's, so programs run under it.
LDSO = f"{LIBDIR}/ld-linux-x86-64.so.2"


def cache_folder(env_var, name):
    """$env_var if set, else $XDG_CACHE_HOME/name (default ~/.cache/name)."""
    env = os.environ.get(env_var)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / name


def run(cmd, **kw):
    """subprocess.run with captured text output; RuntimeError with the output's tail on failure."""
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-4000:]
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{tail}")
    return proc


def parse_madison(text, package):
    """[(version, suite, kind)] from apt-cache madison's output, kind "Packages" or "Sources":
    ``python3.15 | 3.15.2-1 | http://deb.debian.org/debian sid/main amd64 Packages``."""
    out = []
    for ln in text.splitlines():
        parts = [p.strip() for p in ln.split("|")]
        if len(parts) >= 3 and parts[0] == package:
            where = parts[2].split()
            if len(where) >= 3:
                out.append((parts[1], where[1].split("/")[0], where[-1]))
    return out


def newer(a, b):
    """Whether Debian version a is newer than b (dpkg's order)."""
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def upstream_version(debver):
    """The upstream part of Debian version `debver`: "3.10.12" of "3.10.12-1~22.04.18"."""
    return debver.split(":")[-1].split("-")[0].split("~")[0]


class PrivateApt:
    """apt-get/apt-cache rooted at `root`, reading the archive `sources` (lines of a sources.list),
    resolving packages of the Debian architecture `arch` (amd64; arm64 for tools/aarch64_python.py)."""

    def __init__(self, root, sources, arch="amd64"):
        self.root = Path(root)
        for sub in ("etc", "lists/partial", "cache/archives/partial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "status").write_text("")
        (self.root / "etc" / "sources.list").write_text("\n".join(sources) + "\n")
        self.options = [
            f"-oDir::Etc::SourceList={self.root}/etc/sources.list",
            "-oDir::Etc::SourceParts=/nonexistent",
            "-oDir::Etc::Preferences=/nonexistent",
            "-oDir::Etc::PreferencesParts=/nonexistent",
            f"-oDir::State={self.root}",
            f"-oDir::State::Lists={self.root}/lists",
            f"-oDir::State::status={self.root}/status",
            f"-oDir::State::extended_states={self.root}/extended_states",
            f"-oDir::Cache={self.root}/cache",
            f"-oDir::Cache::archives={self.root}/cache/archives",
            f"-oAPT::Architecture={arch}",
            f"-oAPT::Architectures::={arch}",
            "-oAPT::Install-Recommends=false",
            "-oAPT::Get::AllowUnauthenticated=false",
            "-oAcquire::Languages=none",
            "-oDebug::NoLocking=true",
        ]
        if os.geteuid() == 0:
            # apt drops to _apt for downloads, which cannot write into a root-owned home directory.
            self.options.append("-oAPT::Sandbox::User=root")
        self.updated = False

    def run(self, tool, *args, cwd=None):
        return run([tool, *self.options, *args], cwd=cwd,
                   env={**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"})

    def update(self):
        """apt-get update, once per instance."""
        if self.updated:
            return
        proc = self.run("apt-get", "update")
        # apt-get update exits 0 on some fetch failures; a warning about a suite means no index.
        bad = [ln for ln in proc.stderr.splitlines() if ln.startswith(("W:", "E:")) and "Failed" in ln]
        if bad:
            raise RuntimeError("apt-get update could not fetch every index:\n" + "\n".join(bad))
        self.updated = True

    def madison(self, package):
        """[(version, suite, kind)] of `package` in the configured sources (see parse_madison)."""
        return parse_madison(self.run("apt-cache", "madison", package).stdout, package)

    def versions(self, package, kind="Packages"):
        """The versions of `package` (binary or, with kind="Sources", source), newest first."""
        ordered = []
        for v in {version for version, _, k in self.madison(package) if k == kind}:
            i = 0  # insertion sort with dpkg's version order
            while i < len(ordered) and newer(ordered[i], v):
                i += 1
            ordered.insert(i, v)
        return ordered

    def closure(self, requests, target=None):
        """[(package, version)] apt would install for `requests` (names, or name=version) on an
        empty system, preferring suite `target` for versioned dependencies when given."""
        args = ["-s", "install", *requests]
        if target:
            args = ["-t", target, *args]
        out = self.run("apt-get", *args).stdout
        inst = re.findall(r"^Inst (\S+) \((\S+) ", out, re.M)
        if not inst:
            raise RuntimeError(f"apt-get -s install {' '.join(requests)} lists nothing:\n{out}")
        return inst

    def download(self, pins, dest):
        """apt-get download of `pins` (name=version) into the folder `dest`."""
        self.run("apt-get", "download", *pins, cwd=dest)
