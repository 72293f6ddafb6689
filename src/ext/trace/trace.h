/* The flight recorder (docs/api/trace.md): a ring of the last N calls per communicator, written by
 * the calling thread on the call path of both APIs, and a writer that dumps every ring of the
 * process to one file.
 *
 * Everything here is C state of the process, shared by every interpreter and never a Python
 * object: rings (trace.c), call sites as C strings (trace_site.c), the dump, its thread and the
 * SIGUSR1 handler (trace_dump.c). So a dump needs no thread state and no GIL, and the recorder
 * adds nothing that a free-threaded build would have to lock (docs/architecture.md#threads). */
#ifndef NCCL4PY_TRACE_H
#define NCCL4PY_TRACE_H

#include "module/common.h"

#include <stdint.h>
#include <time.h>

#include "nccl_surface.gen.h"

/* The calls an entry can name (nccl_surface.gen.h, from tools/nccl_surface.py's TRACE_OPS): the enum,
 * the file format's "op" names, whether every rank of the communicator makes the call (a collective
 * call, counted by the entry's "coll" ordinal, by which docs/api/trace.md#the-verdict lines up the
 * ranks' calls), and the verdict's word before the peer of a point-to-point call. */
#define NX_TRACE_ENUM(id, name, every, peer) NX_T_##id,
typedef enum { NCCL_SURFACE_TRACE_OPS(NX_TRACE_ENUM) NX_T_NOPS } nx_trace_op;
#undef NX_TRACE_ENUM

/* The "op" name of an entry, whether every rank makes the call, and the word before its peer ("to",
 * "from", "" for none): trace.c holds the tables. */
const char *nx_trace_op_name(int op);
int nx_trace_op_every_rank(int op);
const char *nx_trace_op_peer(int op);

/* Which optional fields of a call are present. */
enum {
    NX_TF_COUNT = 1,
    NX_TF_DTYPE = 2,
    NX_TF_REDOP = 4,
    NX_TF_ROOT = 8,
    NX_TF_PEER = 16,
    NX_TF_STREAM = 32,
    NX_TF_SEND = 64,
    NX_TF_RECV = 128,
};

/* What a call site hands the recorder: plain C values, copied into the entry. */
typedef struct {
    uint8_t op;      /* nx_trace_op */
    uint8_t flags;   /* NX_TF_* */
    int32_t dtype;   /* ncclDataType_t */
    int32_t redop;   /* ncclRedOp_t */
    int32_t rank;    /* the root or the peer (NX_TF_ROOT, NX_TF_PEER) */
    uint64_t count;
    uintptr_t stream, send, recv;
} nx_trace_call;

/* A collective's or point-to-point call's fields: count, datatype and stream always, the buffers
 * where they are not NULL, and the `flags` given (NX_TF_REDOP, NX_TF_ROOT, NX_TF_PEER). */
static inline nx_trace_call nx_trace_coll(int op, int flags, const void *send, const void *recv, size_t count,
                                          int dtype, int redop, int rank, cudaStream_t stream)
{
    nx_trace_call c = {(uint8_t)op,
                       (uint8_t)(flags | NX_TF_COUNT | NX_TF_DTYPE | NX_TF_STREAM | (send ? NX_TF_SEND : 0) |
                                 (recv ? NX_TF_RECV : 0)),
                       dtype, redop, rank, count, (uintptr_t)stream, (uintptr_t)send, (uintptr_t)recv};
    return c;
}

/* How a communicator came to be, for its line in the file. */
typedef enum { NX_ORIGIN_INIT, NX_ORIGIN_SPLIT, NX_ORIGIN_SHRINK, NX_ORIGIN_GROW } nx_trace_origin;

typedef struct nx_trace_ring nx_trace_ring;

/* ---- rings (trace.c) ---- */

/* The ring size N for a creation call: `o` is the trace_buffer= keyword (NULL or None: the
 * environment's NCCL4PY_TRACE_BUFFER, default 2000). 0 or more, or -1 with ValueError/TypeError. */
long nx_trace_size_arg(PyObject *o, const char *fname);

/* A new ring of `size` entries for a communicator being created (NULL when size is 0 or memory is
 * short: the communicator is then not recorded; no exception either way). id is its identity
 * (nx_trace_fnv), parent the parent's ring or NULL. The caller owns one reference; the process's
 * list holds another until the communicator is closed and its ring ages out. */
nx_trace_ring *nx_trace_ring_new(long size, uint64_t id, nx_trace_origin origin, const nx_trace_ring *parent,
                                 int color, int key);
/* The ring's identity for a child of `parent` (split, shrink: color; grow: -2 - the grow count). */
uint64_t nx_trace_child_id(nx_trace_ring *parent, nx_trace_origin origin, int color);
/* 64-bit FNV-1a of n bytes, continuing from h (start with NX_FNV_BASIS). An identifier that
 * every rank computes alike, not a cryptographic use. */
#define NX_FNV_BASIS 0xcbf29ce484222325ull
uint64_t nx_trace_fnv(uint64_t h, const void *p, size_t n);

/* The library handle the ring records for (once known: a nonblocking or grouped creation fills
 * it later), and this rank's place in it (-1: unknown). Bindings calls find the ring by handle. */
void nx_trace_ring_bind(nx_trace_ring *r, ncclComm_t handle, int rank, int nranks);
/* nx_trace_ring_bind, asking the library for the rank and size where they are not given (-1);
 * the caller holds the GIL, released around the two queries. */
void nx_trace_ring_bind_query(nx_trace_ring *r, ncclComm_t handle, int rank, int nranks);
/* The communicator was destroyed or aborted: its handle no longer finds the ring, which stays
 * for dumps until 64 newer closed rings push it out. */
void nx_trace_ring_closed(nx_trace_ring *r);
void nx_trace_ring_incref(nx_trace_ring *r);
void nx_trace_ring_decref(nx_trace_ring *r);
/* The ring bound to a library handle (borrowed: valid while the communicator is open), or NULL. */
nx_trace_ring *nx_trace_find(ncclComm_t handle);
/* Whether r still waits for its handle (the caller then binds it). */
int nx_trace_ring_unbound(const nx_trace_ring *r);

/* ---- recording (trace.c) ---- */

/* An entry being recorded: where it is and the stamp it was written with (e NULL: nothing). */
typedef struct nx_trace_entry nx_trace_entry;
typedef struct {
    nx_trace_entry *e;
    uint64_t stamp;
} nx_trace_mark;

/* Records the entry of a call on r (NULL: nothing), for nx_trace_leave (inline, at the end of this
 * file) after the library call. Reads the caller's frame and the clock; allocates nothing. */
nx_trace_mark nx_trace_enter(nx_trace_ring *r, const nx_trace_call *call);
/* A whole entry for a call that made no library call of its own, or whose return is known. */
void nx_trace_event(nx_trace_ring *r, const nx_trace_call *call, int rc);

/* The outermost group end of this thread: GroupEnd entries on every communicator that had an op
 * in the group, entered before the library call (begin) and returned after it (done). */
void nx_trace_group_end_begin(void);
void nx_trace_group_end_done(int rc);

/* ---- call sites (trace_site.c) ---- */

/* The caller's call site as an index into the process's site table (0: none, no Python frame).
 * `cache` is the ring's small cache of the last sites; a miss resolves the file and line once. */
typedef struct {
    const void *code;
    const void *filename;
    int lasti;
    int firstlineno;
    uint32_t site;
} nx_trace_site_slot;
#define NX_TRACE_SITE_CACHE 32
uint32_t nx_trace_site(nx_trace_site_slot *cache);
/* The site's file, line and function (NULL, 0, NULL for an unknown index). */
void nx_trace_site_get(uint32_t site, const char **file, int *line, const char **func);
/* The directory of the nccl package, so calls made from nccl4py's own Python code (group(),
 * from_env) are attributed to their caller (set once at the module's first exec). */
void nx_trace_set_package_dir(PyObject *module);
/* The stacklevel of PyErr_WarnEx that names the innermost frame outside nccl4py's own Python code
 * (the user's call), for notices about the user's program (library.c). */
int nx_stacklevel_outside_package(void);
/* Another directory whose code is attributed to its caller (a framework calling nccl4py for its
 * user: nccl.torch adds torch's); -1 when the small table is full or out of memory. Call it
 * before the first call from there is recorded: a site resolved earlier keeps its verdict. */
int nx_trace_add_front_dir(const char *dir);

/* ---- the clock (trace.c) ---- */

/* nx_trace_ticks (inline, at the end of this file) reads the entries' clock: CLOCK_MONOTONIC_COARSE
 * nanoseconds by default; with NCCL4PY_TRACE_CLOCK=fine a constant-rate counter (the TSC on x86-64
 * when the kernel keeps time with it, the virtual counter on AArch64, else CLOCK_MONOTONIC
 * nanoseconds), which the dump maps to CLOCK_MONOTONIC seconds by two calibration points. */
/* "coarse" or "fine", and the clock's resolution in seconds (for the dump's header). */
const char *nx_trace_clock_name(double *resolution);

/* ---- dumps (trace_dump.c) ---- */

/* A library status became an NCCLError (errors.c): remembered, and a snapshot asked of the writer
 * thread. `last` is the library's last-error text or NULL. */
void nx_trace_error(int status, const char *last);
/* Starts the writer thread, the SIGUSR1 handler and the exit hook, once per process (the first
 * ring does it). */
void nx_trace_start_service(void);
/* nccl._ext's functions: _dump_trace and the test helpers. */
int nx_trace_setup(PyObject *module, nx_state *st);

/* ---- Python stacks at a signal dump (trace_stack.c) ---- */

/* The writer thread wrote the signal dump at `dump`: the stack thread (started on the first
 * request) takes the GIL and writes every Python thread's stack beside it. Never waits. */
void nx_trace_stack_request(const char *dump);
/* fork(), from trace_dump.c's handlers: the stack thread's lock is held across the fork. */
enum { NX_FORK_PREPARE, NX_FORK_PARENT, NX_FORK_CHILD };
void nx_trace_stack_fork(int phase);
/* _trace_python_exiting, registered with atexit: no Python is called once finalizing begins. */
int nx_trace_stack_setup(PyObject *module);

/* ---- calls that wait too long (trace.c), for NCCL4PY_WAIT_WARNING (trace_dump.c) ---- */

/* A call still inside the library after the warning's time. */
typedef struct {
    uint64_t comm, seq;
    int op, rank;
    uint32_t site;
    double waited; /* seconds */
} nx_trace_stall;
/* The last call of each open communicator that has been inside the library for `seconds` or more
 * and was not returned here before; at most `max`, into out. */
int nx_trace_stalled(double seconds, nx_trace_stall *out, int max);

/* ---- the snapshot, for trace_dump.c (trace.c) ---- */

/* One entry of a ring. A seqlock per entry lets a reader on another thread copy it while the
 * calling thread writes: stamp is 2 * seq + 1 while the entry part is written, 2 * seq after;
 * the return part (rc, then t_return, stored with release order) is read after t_return. */
struct nx_trace_entry {
    uint64_t stamp;
    nx_trace_call call; /* copied whole from the call site */
    uint32_t site;
    uint32_t group;     /* 0: outside a group */
    int32_t rc;
    uint64_t coll;              /* collective calls on the ring up to this entry (every_rank ops) */
    uint64_t t_enter, t_return; /* ticks; t_return 0 while inside the call */
};

/* A ring as the dump sees it: its communicator's line and a consistent copy of its entries. */
typedef struct {
    uint64_t id, parent;
    int has_parent, origin, color, key, rank, nranks;
    uint64_t recorded;
    size_t n;
    nx_trace_entry *e; /* n entries, oldest first */
} nx_trace_ring_copy;

typedef struct {
    size_t n;
    nx_trace_ring_copy *rings;
    int first_rank, first_nranks; /* of the first communicator created (-1: none) */
    uint64_t tick0, tick1;        /* calibration: ticks at the first ring and at the snapshot... */
    double mono0, mono1;          /* ...and CLOCK_MONOTONIC seconds at the same moments */
    double wall1;                 /* CLOCK_REALTIME seconds at the snapshot */
} nx_trace_snapshot;

/* Copies every ring under the list's lock (each entry copied whole, oldest first); NULL when
 * memory is short. Freed with nx_trace_snapshot_free. */
nx_trace_snapshot *nx_trace_snapshot_take(void);
void nx_trace_snapshot_free(nx_trace_snapshot *s);
/* fork(): the list's lock is taken before and released after in both processes, so a child
 * never starts with it held by a thread it does not have (trace_dump.c registers them). */
void nx_trace_fork_prepare(void);
void nx_trace_fork_done(void);
/* CLOCK_MONOTONIC seconds of a tick count, by the snapshot's calibration. */
double nx_trace_ticks_to_mono(const nx_trace_snapshot *s, uint64_t ticks);
/* The default ring size (NCCL4PY_TRACE_BUFFER). */
long nx_trace_default_size(void);
/* Whether any ring was ever made (nothing is dumped before). */
int nx_trace_active(void);

/* ---- on the call path: the clock and the return of a call, inline (a call each costs a
 * recorded call more than its body: docs/api/trace.md#cost) ---- */

typedef int (*nx_trace_clock_fn)(clockid_t, struct timespec *);
/* Set once, before the first ring is made (trace.c): whether the clock is the fine one, and the
 * vDSO's clock_gettime (or clock_gettime itself). */
extern struct nx_trace_clock_state {
    int fine;
    nx_trace_clock_fn read;
} nx_trace_clock;
/* The fine clock's ticks (trace.c). */
uint64_t nx_trace_fine_ticks(void);

static inline uint64_t nx_trace_ticks(void)
{
    if (NX_LIKELY(!nx_trace_clock.fine)) {
        struct timespec ts;
        nx_trace_clock.read(CLOCK_MONOTONIC_COARSE, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    return nx_trace_fine_ticks();
}

/* The call of the entry returned rc (nothing if the ring wrapped over it meanwhile). */
static inline void nx_trace_leave(nx_trace_mark m, int rc)
{
    if (m.e == NULL || __atomic_load_n(&m.e->stamp, __ATOMIC_RELAXED) != m.stamp)
        return;
    uint64_t now = nx_trace_ticks();
    m.e->rc = rc;
    __atomic_store_n(&m.e->t_return, now != 0 ? now : 1, __ATOMIC_RELEASE);
}

#endif
