"""Departure stress on the host backend: ranks that finish their part leave at once, and no
peer's call may fail for it (docs/host-backend.md#what-a-departure-means-for-a-peers-call).

A trial is a random program, made from its seed alone (make_plan): 2 to 8 ranks, sometimes a
grow from fewer, then a sequence of collectives (every kind, Broadcast weighted up, in place or
not, segment-sized to multi-step), point-to-point (a single pair, or a grouped pattern), groups of
collectives over one or two communicators, split and shrink children, and one-sided put_signal/
wait_signal rounds over a window. Every rank runs its part with random delays before and after
each call (sleeps, sched_yield storms, busy spins) while the launcher SIGSTOPs and SIGCONTs ranks
for a moment, and destroys each communicator as soon as its own last call on it has returned;
once it has none left it exits. The oracle: every call of every rank returned exactly what numpy
computes from the inputs, which every rank derives from the seed.

With kill=True one rank (the victim) is killed with SIGKILL, or in one trial in three aborts its
communicator (ncclCommAbort, from another thread when it comes during a call) and ends, at a
random moment after the communicator of every rank exists, before its last call, and every rank's
program ends with an AllReduce over that communicator: every survivor must then fail, naming the
victim's pid as the first cause, dead or aborted (docs/host-backend.md#peer-death-and-abort),
within LATE_S of the kill, and every call that returned before must have been right.

As in ranks_faults.py, one harness rank (init=False) is the launcher: it imports everything once
and forks each trial's ranks, which are real processes with their own communicators, segment
and exit. Settings read once per process (NCCL_HOST_DIRECT, ...) are the launcher's."""

import json
import os
import random
import re
import select
import signal
import threading
import time

import numpy as np

import nccl.bindings.nccl as b
import nccl.core as nc
from nccl.core import Communicator, UniqueId, WaitSignalDesc
from ranks_faults import FIRST_DEATH

# A first cause that is an abort, as FIRST_DEATH words a death: "rank 2 (pid 4711) aborted" or
# "rank 2 (pid 4711), which aborted", not followed by " after" (one that aborted after another's loss).
FIRST_ABORT = re.compile(r"rank (\d+) \(pid (\d+)\)(?:, which)? aborted(?! after)")

TRIAL_LIMIT_S = 60.0  # the launcher kills what is left of a trial after this: a failure
LATE_S = 10.0  # a survivor's error this long after the kill is a failure (the monitor takes milliseconds)
SIZES = (2, 2, 3, 3, 4, 4, 5, 6, 7, 8)
COLLS = ("broadcast", "broadcast", "broadcast", "allreduce", "reduce", "allgather", "reduce_scatter", "alltoall",
         "gather", "scatter")
OPS = {"sum": nc.SUM, "prod": nc.PROD, "max": nc.MAX, "min": nc.MIN}
NP_OPS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
DTYPES = ("float64", "int32", "int64", "float32")
_KEEP = []  # window memory of a one-sided round that failed: still registered, never freed


# ---- the plan: one random program per seed ----

def _count(rnd):
    """Elements per rank: mostly small, some above the single-copy threshold, a few over one step."""
    x = rnd.random()
    if x < 0.8:
        return rnd.randint(1, 300)
    if x < 0.97:
        return rnd.randint(9000, 40000)
    return rnd.randint(150000, 300000)


def _coll(rnd, comm, m):
    kind = rnd.choice(COLLS)
    call = {"op": kind, "comm": comm, "count": _count(rnd), "dtype": rnd.choice(DTYPES),
            "root": rnd.randrange(m), "red": rnd.choice(tuple(OPS)), "inplace": rnd.random() < 0.3}
    if call["count"] > 40000 and kind in ("allgather", "reduce_scatter", "alltoall", "gather", "scatter"):
        call["count"] //= m  # these move m times the count per rank
    return call


def _p2p(rnd, comm, m):
    """A single ungrouped pair, or a grouped pattern of sends and receives (a ring shift, or
    random pairs, several messages per pair)."""
    count, dtype = _count(rnd), rnd.choice(DTYPES)
    if rnd.random() < 0.35:
        src = rnd.randrange(m)
        dst = rnd.choice([r for r in range(m) if r != src])
        return {"op": "p2p", "comm": comm, "grouped": False, "msgs": [[src, dst, count, dtype]]}
    if rnd.random() < 0.5:
        k = rnd.randint(1, m - 1)
        msgs = [[r, (r + k) % m, count, dtype] for r in range(m)]
    else:
        msgs = [[s, d, rnd.randint(1, 200), dtype] for s in range(m) for d in range(m)
                if s != d and rnd.random() < 0.4]
        msgs = msgs or [[0, 1, count, dtype]]
    return {"op": "p2p", "comm": comm, "grouped": True, "msgs": msgs}


class _Plan:
    """What make_plan builds: comms[name] = the members (world ranks, in the order of their ranks
    in that communicator) and the calls in program order, drawn from rnd."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.comms, self.calls = {}, []
        # One shrink of the world at most: a second one by other survivors is not supported
        # (docs/host-backend.md#communicator-lifecycle). Splits, window registrations and
        # collectives of every rank on the world after it are.
        self.shrunk = False

    def size(self, comm):
        return len(self.comms[comm])

    def add_ops(self, comm, count, others=()):
        """count random calls on comm; a group may also take a call on one of others."""
        rnd, m = self.rnd, self.size(comm)
        for _ in range(count):
            x = rnd.random()
            if m > 1 and x < 0.22:
                self.calls.append(_p2p(rnd, comm, m))
            elif x < 0.34:
                items = [_coll(rnd, comm, m) for _ in range(rnd.randint(2, 3))]
                if others and rnd.random() < 0.5:
                    other = rnd.choice(others)
                    items.insert(rnd.randrange(len(items) + 1), _coll(rnd, other, self.size(other)))
                self.calls.append({"op": "group", "items": items})
            elif m > 1 and x < 0.38:
                self.calls.append({"op": "rma", "comm": comm, "shift": rnd.randint(1, m - 1),
                                   "count": rnd.randint(1, 500), "rounds": rnd.randint(1, 3)})
            else:
                self.calls.append(_coll(rnd, comm, m))

    def add_split(self, name):
        rnd, n = self.rnd, self.size("world")
        ncolors = rnd.randint(1, min(3, n))
        colors = [rnd.randrange(ncolors) if rnd.random() > 0.1 else None for _ in range(n)]
        keys = [rnd.randrange(4) for _ in range(n)]
        self.calls.append({"op": "split", "comm": "world", "name": name, "colors": colors, "keys": keys})
        children = []
        for col in sorted({c for c in colors if c is not None}):
            members = sorted((r for r in range(n) if colors[r] == col), key=lambda r: (keys[r], r))
            self.comms[f"{name}.{col}"] = members
            children.append(f"{name}.{col}")
        return children

    def add_shrink(self, name):
        rnd, n = self.rnd, self.size("world")
        exclude = sorted(rnd.sample(range(n), rnd.randint(1, n - 1)))
        self.calls.append({"op": "shrink", "comm": "world", "name": name, "exclude": exclude})
        self.shrunk = True
        self.comms[name] = [r for r in range(n) if r not in exclude]
        return [name]


def make_plan(seed, kill=False):
    """The trial of seed: {"seed", "n", "old" (ranks before a grow; n when none), "comms",
    "calls", "victim", "kill_at" (an index into the victim's calls, _my_calls), "kill_phase"
    ("before", "during" or "after" that call), "kill_how" ("kill" or "abort"), "stops" (whether the launcher SIGSTOPs ranks),
    "slow" (a rank that sleeps longer more often, or None)}.

    With kill, the random part ends with an AllReduce over the world (a fence: once the victim has
    returned from it, every rank has finished every call before it, those on children included),
    followed by random calls on the world and a last AllReduce that every survivor needs the victim
    for. The victim dies after the fence and before that last call, so every survivor's loss
    happens on a communicator that includes the victim and every survivor must fail."""
    p = _Plan(seed)
    rnd = p.rnd
    n = rnd.choice(SIZES)
    old = rnd.randint(1, n - 1) if n >= 3 and rnd.random() < 0.2 else n
    if old < n:
        p.comms["base"] = list(range(old))
        p.add_ops("base", rnd.randint(0, 2))
        p.calls.append({"op": "grow", "coordinator": rnd.randrange(old)})
    p.comms["world"] = list(range(n))
    p.add_ops("world", rnd.randint(1, 6))
    for i in range(rnd.choice((0, 0, 1, 1, 2))):
        shrink = n > 2 and not p.shrunk and rnd.random() < 0.3
        children = p.add_shrink(f"shrink{i}") if shrink else p.add_split(f"split{i}")
        for child in children:
            p.add_ops(child, rnd.randint(1, 3), others=["world"])
        p.add_ops("world", rnd.randint(0, 3), others=children)
    if old < n and rnd.random() < 0.5:
        p.add_ops("base", rnd.randint(1, 2))  # the parent of a grow stays usable
    if rnd.random() < 0.4:
        # Broadcasts last: their non-roots wait for the root only, so the ranks that are done
        # leave while the others, a root settling its last Broadcast included, still wait.
        for _ in range(rnd.randint(2, 4)):
            call = _coll(rnd, "world", n)
            call["op"] = "broadcast"
            p.calls.append(call)
    plan = {"seed": seed, "n": n, "old": old, "comms": p.comms, "calls": p.calls, "victim": None,
            "kill_at": None, "kill_phase": None, "kill_how": None, "stops": rnd.random() < 0.6,
            "slow": rnd.randrange(n) if rnd.random() < 0.5 else None}
    if kill:
        fence = {"op": "allreduce", "comm": "world", "count": 4, "dtype": "int64", "root": 0, "red": "sum",
                 "inplace": False}
        p.calls.append(fence)
        p.add_ops("world", rnd.randint(0, 4))
        p.calls.append(dict(fence))
        plan["victim"] = victim = rnd.randrange(n)
        mine = _my_calls(plan, victim)
        after_fence = next(i for i, (k, _, _) in enumerate(mine) if p.calls[k] is fence) + 1
        plan["kill_at"] = rnd.randrange(after_fence, len(mine))
        plan["kill_phase"] = rnd.choice(("before", "during", "after")) if plan["kill_at"] < len(mine) - 1 \
            else "before"
        plan["kill_how"] = rnd.choice(("kill", "kill", "abort"))
    return plan


def _my_calls(plan, rank):
    """[(index into plan["calls"], the communicators of this rank the call uses, the one it
    makes or None)] for the calls rank takes part in."""
    out = []
    for k, call in enumerate(plan["calls"]):
        made = None
        if call["op"] == "group":
            used = sorted({it["comm"] for it in call["items"] if rank in plan["comms"][it["comm"]]})
        elif call["op"] == "grow":
            out.append((k, ["base"] if rank < plan["old"] else [], "world"))  # joiners take part too
            continue
        elif call["op"] == "p2p":
            members = plan["comms"][call["comm"]]
            me = members.index(rank) if rank in members else -1
            used = [call["comm"]] if any(me in (s, d) for s, d, _, _ in call["msgs"]) else []
        elif call["op"] == "split":
            used = ["world"]
            made = None if call["colors"][rank] is None else f"{call['name']}.{call['colors'][rank]}"
        elif call["op"] == "shrink":
            used, made = ([], None) if rank in call["exclude"] else (["world"], call["name"])
        else:
            used = [call["comm"]] if rank in plan["comms"][call["comm"]] else []
        if used:
            out.append((k, used, made))
    return out


# ---- the data every rank can compute ----

def _input(seed, k, who, count, dtype, red="sum", salt=0):
    """Rank `who`'s (comm rank) input of call k: small integers, exact in every dtype and under
    every reduction of up to 8 ranks."""
    rng = np.random.default_rng([seed, k, who, salt])
    lo, hi = (-2, 3) if red == "prod" else (-100, 101)
    return rng.integers(lo, hi, size=count).astype(dtype)


def _reduce(arrays, red):
    out = arrays[0].copy()
    for a in arrays[1:]:
        out = NP_OPS[red](out, a)
    return out


class _Checker:
    """Collects (what, got, want) of every call; judged after the rank has left."""

    def __init__(self):
        self.items = []

    def add(self, what, got, want):
        self.items.append((what, got, want))

    def wrong(self):
        bad = []
        for what, got, want in self.items:
            if got.shape != want.shape or not np.array_equal(got, want):
                diff = np.flatnonzero(got != want)[:3] if got.shape == want.shape else "shape"
                bad.append(f"{what}: wrong data (first differing elements {diff})")
        return bad


def _coll_call(comm, call, k, seed, me, m, chk, tag):
    """Issues collective call k on comm (comm rank me of m) and records what it must give."""
    op, cnt, dt, root, red = call["op"], call["count"], call["dtype"], call["root"], call["red"]
    inp = lambda who, size=cnt: _input(seed, k, who, size, dt, red, salt=tag)  # noqa: E731
    what = f"call {k} {op} on {call['comm']} (count {cnt}, {dt}, root {root}, {red})"
    if op == "allreduce":
        x = inp(me)
        y = x if call["inplace"] else np.zeros(cnt, dt)
        comm.allreduce(x, y, OPS[red])
        chk.add(what, y, _reduce([inp(j) for j in range(m)], red))
    elif op == "broadcast":
        y = inp(me) if me == root else np.zeros(cnt, dt)
        x = y if call["inplace"] or me != root else inp(me)
        comm.broadcast(x if me == root else None, y, root)
        chk.add(what, y, inp(root))
    elif op == "reduce":
        x = inp(me)
        y = (x if call["inplace"] else np.zeros(cnt, dt)) if me == root else None
        comm.reduce(x, y, OPS[red], root)
        if me == root:
            chk.add(what, y, _reduce([inp(j) for j in range(m)], red))
    elif op == "allgather":
        y = np.zeros(m * cnt, dt)
        x = inp(me)
        if call["inplace"]:
            y[me * cnt:(me + 1) * cnt] = x
            x = y[me * cnt:(me + 1) * cnt]
        comm.allgather(x, y)
        chk.add(what, y, np.concatenate([inp(j) for j in range(m)]))
    elif op == "reduce_scatter":
        x = inp(me, m * cnt)
        y = x[me * cnt:(me + 1) * cnt] if call["inplace"] else np.zeros(cnt, dt)
        comm.reduce_scatter(x, y, OPS[red])
        chk.add(what, y, _reduce([inp(j, m * cnt) for j in range(m)], red)[me * cnt:(me + 1) * cnt])
    elif op == "alltoall":
        x, y = inp(me, m * cnt), np.zeros(m * cnt, dt)
        comm.alltoall(x, y)
        chk.add(what, y, np.concatenate([inp(j, m * cnt)[me * cnt:(me + 1) * cnt] for j in range(m)]))
    elif op == "gather":
        x = inp(me)
        y = np.zeros(m * cnt, dt) if me == root else None
        if y is not None and call["inplace"]:
            y[me * cnt:(me + 1) * cnt] = x
            x = y[me * cnt:(me + 1) * cnt]
        comm.gather(x, y, root)
        if me == root:
            chk.add(what, y, np.concatenate([inp(j) for j in range(m)]))
    elif op == "scatter":
        x = inp(me, m * cnt) if me == root else None
        y = x[me * cnt:(me + 1) * cnt] if me == root and call["inplace"] else np.zeros(cnt, dt)
        comm.scatter(x, y, root)
        chk.add(what, y, inp(root, m * cnt)[me * cnt:(me + 1) * cnt])


def _p2p_call(comm, call, k, seed, me, chk):
    """My sends and receives of call k, in message order (grouped, or one ungrouped pair)."""
    recvs = []
    if call["grouped"]:
        nc.group_start()
    try:
        for i, (s, d, cnt, dt) in enumerate(call["msgs"]):
            if s == me:
                comm.send(_input(seed, k, s, cnt, dt, salt=1000 + i), d)
            if d == me:
                y = np.zeros(cnt, dt)
                comm.recv(y, s)
                recvs.append((i, s, cnt, dt, y))
    finally:
        if call["grouped"]:
            nc.group_end()
    for i, s, cnt, dt, y in recvs:
        chk.add(f"call {k} p2p message {i} from comm rank {s} on {call['comm']} ({cnt} x {dt})", y,
                _input(seed, k, s, cnt, dt, salt=1000 + i))


def _rma_call(comm, call, k, seed, me, m, chk):
    """put_signal to (me + shift) % m and wait_signal from (me - shift) % m, `rounds` times, over a
    window registered and deregistered around them (both collective). The memory is freed only
    once the window is gone: after a failure it stays registered (and kept) until the process
    ends."""
    cnt, shift, rounds = call["count"], call["shift"], call["rounds"]
    src = (me - shift) % m
    buf = nc.mem_alloc(cnt * 8 * rounds)
    _KEEP.append(buf)
    win = comm.register_window(buf)
    for i in range(rounds):
        comm.put_signal(_input(seed, k, me, cnt, "float64", salt=i), (me + shift) % m, win, i * cnt)
        comm.wait_signal(WaitSignalDesc(src))
    got = np.from_dlpack(buf).view(np.float64).copy()
    win.close()
    _KEEP.remove(buf)
    nc.mem_free(buf)
    want = np.concatenate([_input(seed, k, src, cnt, "float64", salt=i) for i in range(rounds)])
    chk.add(f"call {k} rma on {call['comm']} (shift {shift}, {cnt} doubles x {rounds})", got, want)


# ---- one rank of a trial ----

def _delay(rnd, slow=False):
    """Nothing, a short or a longer sleep, a sched_yield storm, or a busy spin; a slow rank
    (the plan's laggard) sleeps longer more often."""
    x = rnd.random()
    if slow and x < 0.4:
        time.sleep(rnd.uniform(0.002, 0.03))
    elif x < 0.45:
        return
    elif x < 0.65:
        time.sleep(rnd.uniform(0.0, 0.002))
    elif x < 0.72:
        time.sleep(rnd.uniform(0.005, 0.02))
    elif x < 0.9:
        for _ in range(rnd.randint(1, 2000)):
            os.sched_yield()
    else:
        until = time.perf_counter() + rnd.uniform(0.0, 0.001)
        while time.perf_counter() < until:
            pass


def _report(fd, doc):
    """One JSON line, below PIPE_BUF so that the write is atomic (long texts are cut)."""
    line = json.dumps(doc)
    if len(line) > 3800:
        wrong = doc.get("wrong", [])
        doc = dict(doc, wrong=[w[:400] for w in wrong[:3]] + [f"... {len(wrong) - 3} more"] * (len(wrong) > 3))
        for key in ("error", "crash"):
            if doc.get(key):
                doc[key] = doc[key][:1200]
        line = json.dumps(doc)
    os.write(fd, (line + "\n").encode())


def _read_grow_id(fd, limit=30.0):
    data, deadline = b"", time.monotonic() + limit
    while len(data) < 128:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError("no grow id from the coordinator")
        chunk = os.read(fd, 128 - len(data))
        if not chunk:
            raise EOFError("the coordinator closed the grow id pipe")
        data += chunk
    return UniqueId.from_bytes(data)


class _Rank:
    """One rank's run of a plan: its communicators by name, and the calls it makes."""

    def __init__(self, plan, rank, uid, grow_fds):
        self.plan, self.rank, self.uid, self.grow_fds = plan, rank, uid, grow_fds
        self.comms, self.chk = {}, _Checker()
        self.rnd = random.Random(plan["seed"] * 1009 + rank)  # the delays: per seed and rank
        self.slow = plan["slow"] == rank

    def me(self, name):
        return self.plan["comms"][name].index(self.rank)

    def start(self):
        plan, r = self.plan, self.rank
        if plan["old"] == plan["n"]:
            self.comms["world"] = Communicator.init(plan["n"], r, UniqueId.from_bytes(self.uid))
        elif r < plan["old"]:
            self.comms["base"] = Communicator.init(plan["old"], r, UniqueId.from_bytes(self.uid))

    def grow(self, call):
        plan, r = self.plan, self.rank
        if r >= plan["old"]:
            uid = _read_grow_id(self.grow_fds[0])
            self.comms["world"] = Communicator().grow(plan["n"], uid, rank=r)
        elif r == call["coordinator"]:
            uid = self.comms["base"].get_unique_id()
            for _ in range(plan["n"] - plan["old"]):
                os.write(self.grow_fds[1], bytes(uid))
            self.comms["world"] = self.comms["base"].grow(plan["n"], uid)
        else:
            self.comms["world"] = self.comms["base"].grow(plan["n"])

    def call(self, k):
        call, seed, chk = self.plan["calls"][k], self.plan["seed"], self.chk
        op = call["op"]
        if op == "grow":
            self.grow(call)
        elif op == "split":
            color = call["colors"][self.rank]
            child = self.comms["world"].split(color, call["keys"][self.rank])
            if color is not None:
                self.comms[f"{call['name']}.{color}"] = child
        elif op == "shrink":
            self.comms[call["name"]] = self.comms["world"].shrink(call["exclude"])
        elif op == "group":
            recorded = len(chk.items)
            try:
                nc.group_start()
                try:
                    for tag, it in enumerate(call["items"]):
                        if self.rank in self.plan["comms"][it["comm"]]:
                            _coll_call(self.comms[it["comm"]], it, k, seed, self.me(it["comm"]),
                                       len(self.plan["comms"][it["comm"]]), chk, tag)
                finally:
                    nc.group_end()
            except BaseException:
                del chk.items[recorded:]  # a group that failed produced nothing
                raise
        elif op == "p2p":
            _p2p_call(self.comms[call["comm"]], call, k, seed, self.me(call["comm"]), chk)
        elif op == "rma":
            _rma_call(self.comms[call["comm"]], call, k, seed, self.me(call["comm"]),
                      len(self.plan["comms"][call["comm"]]), chk)
        else:
            _coll_call(self.comms[call["comm"]], call, k, seed, self.me(call["comm"]),
                       len(self.plan["comms"][call["comm"]]), chk, 0)

    def run(self, on_call=None):
        """Every call of this rank, with delays; each communicator destroyed right after this
        rank's last call on it (no delay in between). on_call(i, make_the_call) makes call i
        instead, when given (the victim's kill)."""
        mine = _my_calls(self.plan, self.rank)
        last = {name: -1 for name in self.comms}
        for i, (_, used, made) in enumerate(mine):
            for name in used + ([made] if made else []):
                last[name] = i
        self.leave_unused(last, -1)
        for i, (k, _, _) in enumerate(mine):
            _delay(self.rnd, self.slow)
            if on_call is not None:
                on_call(i, lambda: self.call(k))
            else:
                self.call(k)
            if not self.leave_unused(last, i):
                _delay(self.rnd, self.slow)
        assert not self.comms, f"communicators left after the last call: {sorted(self.comms)}"

    def leave_unused(self, last, i):
        """Destroys the communicators whose last call was call i; whether there were any."""
        done = [name for name in self.comms if last.get(name, i) == i]
        for name in done:
            self.comms.pop(name).destroy()
        return bool(done)

    def leave_after_failure(self, how):
        for c in self.comms.values():
            try:
                if how == "destroy":
                    c.destroy()
                elif how == "abort":
                    c.abort()
            except b.NCCLError:
                pass
        if how != "exit":
            self.comms.clear()


def _trial_rank(fd, plan, rank, uid, grow_fds):
    """One rank of a trial, in a forked child: never returns (os._exit)."""
    doc = {"rank": rank, "pid": os.getpid(), "error": None, "wrong": []}
    me = _Rank(plan, rank, uid, grow_fds)
    try:
        try:
            me.start()
            if rank == plan["victim"]:
                me.run(on_call=lambda i, call: _victim_call(fd, doc, me, i, call))
            else:
                me.run()
        except b.NCCLError as exc:
            doc.update(at=time.monotonic(), error=f"{type(exc).__name__}: {exc.last_error or exc}")
            if plan["victim"] is not None:
                me.leave_after_failure(me.rnd.choice(("destroy", "abort", "exit")))
        doc["wrong"] = me.chk.wrong()
    except BaseException as exc:  # noqa: BLE001 - reported to the launcher
        doc["crash"] = f"{type(exc).__name__}: {exc}"
    _report(fd, doc)
    os._exit(0)


def _victim_call(fd, doc, me, i, call):
    """The victim's call i: made, unless the kill comes at it (before, during or after it). A
    kill is SIGKILL; an abort is ncclCommAbort of the world (the only communicator it holds
    after the fence), after which the victim ends at once or a moment later."""
    plan = me.plan
    if i != plan["kill_at"]:
        return call()
    how, phase = plan["kill_how"], plan["kill_phase"]
    rnd = random.Random(plan["seed"])

    def strike():
        if how == "kill":
            _report(fd, dict(doc, killed_at=time.monotonic()))
            os.kill(os.getpid(), signal.SIGKILL)
        at = time.monotonic()
        b.comm_abort(me.comms["world"].ptr)
        _report(fd, dict(doc, killed_at=at))

    timer = threading.Timer(rnd.uniform(0.0, 0.003), strike) if phase == "during" else None
    if phase == "before":
        strike()
    else:
        if timer is not None:
            timer.start()
        try:
            call()
        except b.NCCLError:
            if how == "kill" or timer is None:
                raise
        if timer is not None:
            timer.join()  # a kill never returns from it
        if phase == "after":
            strike()
    time.sleep(rnd.uniform(0.0, 0.05))
    os._exit(0)


# ---- the launcher ----

def _stopper(rnd, pids, stop):
    """SIGSTOPs a random rank for a moment, again and again, until stop is set. Every stop is
    followed by its SIGCONT; the ranks are reaped only after this thread ended (_collect), so no
    signal can reach a reused pid."""
    while not stop.wait(rnd.uniform(0.001, 0.02)):
        pid = rnd.choice(pids)
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(rnd.uniform(0.0002, 0.005))
        finally:
            os.kill(pid, signal.SIGCONT)


def _collect(rfd, pids, stopper, deadline):
    """The trial's reports, once every rank closed its end of the pipe or the deadline passed;
    then the stopper (a thread and its stop event, or None) ends, and only then are stragglers
    killed and every child reaped. Returns (reports, the number killed by us)."""
    data, killed = b"", 0
    while time.monotonic() < deadline:
        if not select.select([rfd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        data += chunk
    if stopper is not None:
        stopper[1].set()
        stopper[0].join()
    reap_by = max(deadline, time.monotonic() + 5.0)
    for pid in pids:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= reap_by:
                killed += 1
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.001)
    os.close(rfd)
    reports = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            reports.append(json.loads(line))
        except ValueError:
            reports.append({"rank": -1, "crash": f"unreadable report {line[:200]!r}"})
    return reports, killed


def judge(plan, reports, pids):
    """What is wrong with one trial (empty: nothing). Without a victim: every rank reported, no
    error, every call right. With one: the victim reported its kill, and every survivor failed
    with an error whose first cause is the victim's death (its pid), every call before right."""
    wrong, victim = [], plan["victim"]
    got = {r["rank"]: r for r in reports if "killed_at" not in r}
    killed_at = [r["killed_at"] for r in reports if "killed_at" in r]
    wrong += [f"{r['crash']}" for r in reports if r.get("rank") == -1]
    for rank in range(plan["n"]):
        if rank == victim:
            continue
        r = got.get(rank)
        if r is None:
            wrong.append(f"rank {rank} reported nothing")
            continue
        if "crash" in r:
            wrong.append(f"rank {rank} crashed: {r['crash']}")
        wrong += [f"rank {rank}: {w}" for w in r["wrong"]]
        if victim is None and r["error"] is not None:
            wrong.append(f"rank {rank} failed: {r['error']}")
        if victim is not None:
            first = FIRST_DEATH if plan["kill_how"] == "kill" else FIRST_ABORT
            named = {pid for _, pid in first.findall(r["error"] or "")}
            if named != {str(pids[victim])}:
                wrong.append(f"rank {rank} does not name the victim (pid {pids[victim]}, {plan['kill_how']}) as the "
                             f"first cause: {r['error']}")
            elif killed_at and r["at"] - killed_at[0] > LATE_S:
                wrong.append(f"rank {rank} failed {r['at'] - killed_at[0]:.1f} s after the kill: {r['error']}")
    if victim is not None and not killed_at:
        wrong.append("the victim did not report its kill")
    return wrong


def _trial(seed, kill):
    """Runs the trial of seed; returns (plan, reports, pids, number of ranks we had to kill)."""
    plan = make_plan(seed, kill)
    uid = bytes(b.get_unique_id())
    rfd, wfd = os.pipe()
    gr, gw = os.pipe()
    pids = []
    for rank in range(plan["n"]):
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            _trial_rank(wfd, plan, rank, uid, (gr, gw))
        pids.append(pid)
    for fd in (wfd, gr, gw):
        os.close(fd)
    stopper = None
    if plan["stops"]:
        stop = threading.Event()
        stopper = (threading.Thread(target=_stopper, args=(random.Random(seed), pids, stop), daemon=True), stop)
        stopper[0].start()
    reports, killed = _collect(rfd, pids, stopper, time.monotonic() + TRIAL_LIMIT_S)
    return plan, reports, pids, killed


def trials(ctx):
    """ctx.params: {"seed": the first trial's seed, "count": trials (seeds seed, seed + 1, ...),
    "kill": bool}. Returns {"trials", "failures" ([seed, text]), "stragglers", "sizes" (trials per
    number of ranks), "calls" (calls per kind), "latency_ms" (kill to survivor's error)}."""
    p = ctx.params
    out = {"trials": 0, "failures": [], "stragglers": 0, "sizes": {}, "calls": {}, "latency_ms": [], "grown": 0,
           "stopped": 0}
    for seed in range(p["seed"], p["seed"] + p["count"]):
        plan, reports, pids, killed = _trial(seed, p["kill"])
        out["trials"] += 1
        out["stragglers"] += killed
        out["sizes"][plan["n"]] = out["sizes"].get(plan["n"], 0) + 1
        out["grown"] += plan["old"] < plan["n"]
        out["stopped"] += plan["stops"]
        for call in plan["calls"]:
            for it in call.get("items", [call]):
                out["calls"][it["op"]] = out["calls"].get(it["op"], 0) + 1
        wrong = judge(plan, reports, pids) + ([f"{killed} rank(s) still running after {TRIAL_LIMIT_S} s"]
                                              if killed else [])
        out["failures"] += [[seed, w] for w in wrong]
        at = [r["killed_at"] for r in reports if "killed_at" in r]
        if at:
            out["latency_ms"] += [round((r["at"] - at[0]) * 1e3, 2) for r in reports if r.get("at") is not None]
    return out
