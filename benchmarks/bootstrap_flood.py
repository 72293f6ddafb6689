"""Init time of a 2-rank host-backend communicator beside a hostile neighbour, side by side with
the same init undisturbed.

Each trial: a process makes the unique id (its root lives there, under a 1024-file limit), rank 1
starts, an attacker (the user nobody when this runs as root) opens --root-conns connections to the
root's listener and --mesh-conns to rank 1's control-mesh listener, silent or sending a byte every
half second (tests/host/flood_attacker.py), then rank 0 starts; rank 0's ncclCommInitRank time is
the figure (check-in at the root, the mesh, the segment). Modes run interleaved, --repeat times
each, and the medians are reported with their ratio to the undisturbed run.

    python benchmarks/bootstrap_flood.py [--repeat 5] [--root-conns 1000] [--mesh-conns 200]

Uses the installed nccl/_lib/libnccl-host.so and compiles tests/host/hostile_test.c against it
(gcc). Not a test: timings on a shared machine are noisy, hence the interleaving and medians.
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "host" / "hostile_test.c"
ATTACKER = ROOT / "tests" / "host" / "flood_attacker.py"


def build(tmp):
    lib = Path(importlib.util.find_spec("nccl").origin).parent / "_lib"
    exe = Path(tmp) / "hostile_test"
    subprocess.run([os.environ.get("CC", "gcc"), "-std=c11", "-O1", "-I", str(ROOT / "src" / "include"), str(HOSTILE),
                    "-o", str(exe), "-L", str(lib), "-l:libnccl-host.so", f"-Wl,-rpath,{lib}"], check=True)
    return exe


def listen_port(pid, limit_s=30.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                      if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
            with open(f"/proc/{pid}/net/tcp") as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:
                        return int(cols[1].split(":")[1], 16)
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"process {pid} opened no listener")


def attacker_args():
    if os.geteuid() != 0:
        return sys.executable, {}
    for python in ("/usr/bin/python3", sys.executable):
        if subprocess.run([python, "-c", "pass"], user="nobody", capture_output=True).returncode == 0:
            return python, {"user": "nobody"}
    return sys.executable, {}


def trial(exe, mode, root_conns, mesh_conns):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
    env["NCCL_HOST_TIMEOUT"] = "60"
    procs = []

    def start(*args, **kw):
        p = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, **kw)
        procs.append(p)
        return p

    try:
        holder = start(exe, "hold", 1024, stdin=subprocess.PIPE)
        uid = holder.stdout.readline().strip()
        root_port = int.from_bytes(bytes.fromhex(uid)[66:68], "big")
        r1 = start(exe, "rank", 1, 2, uid)
        mesh_port = listen_port(r1.pid)
        if mode != "none":
            python, kw = attacker_args()
            attacker = start(python, ATTACKER, "--port", f"{root_port}:{root_conns}", "--port",
                             f"{mesh_port}:{mesh_conns}", "--mode", mode, "--lifetime", 120, cwd="/", **kw)
            if not attacker.stdout.readline().startswith("ready"):
                raise RuntimeError(attacker.stderr.read())
        r0 = start(exe, "rank", 0, 2, uid)
        out0, err0 = r0.communicate(timeout=120)
        r1.communicate(timeout=120)
        if r0.returncode != 0 or r1.returncode != 0:
            raise RuntimeError(f"init failed under {mode}: {err0}")
        return float(out0.split()[2])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--root-conns", type=int, default=1000)
    ap.add_argument("--mesh-conns", type=int, default=200)
    args = ap.parse_args()
    modes = ("none", "silent", "slowloris")
    times = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        for _ in range(args.repeat):
            for m in modes:
                times[m].append(trial(exe, m, args.root_conns, args.mesh_conns))
    base = statistics.median(times["none"])
    print(f"{'neighbour':<12}{'median init (ms)':>18}{'vs none':>10}   all (ms)")
    for m in modes:
        med = statistics.median(times[m])
        print(f"{m:<12}{med * 1e3:>18.1f}{med / base:>9.2f}x   " + " ".join(f"{t * 1e3:.1f}" for t in times[m]))


if __name__ == "__main__":
    main()
