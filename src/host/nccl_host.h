/* Internal declarations of libnccl-host, the host-memory implementation of the NCCL C ABI.
 *
 * Semantics: docs/host-backend.md.
 * Everything here is internal: host_/HOST_ names, hidden visibility. The exported nccl* functions
 * live in api.c as thin shells over the host_* functions declared below.
 *
 * Components (one file each):
 *   params.c     tunables, read once (pthread_once) into host_params
 *   debug.c      logging by level and subsystem, the process-global last-error text
 *   sys.c        clocks, futexes and event counts, random bytes, CRC-32, socket helpers (host_sys.h)
 *   handle.c     the process-wide handle table, entering/leaving a communicator, fork detection
 *   config.c     size- and version-aware ncclConfig_t parsing
 *   root.c       unique ids and the process's one bootstrap root (a thread and a listener)
 *   gate.c       accepting on listeners anyone may reach: bounded, deadlined, never blocking
 *   bootstrap.c  a rank's check-in at the root, the control mesh, the segment handshake
 *   monitor.c    one thread per process reading every control socket (peer death, notices, mail)
 *   shm.c        the per-communicator shared segment: layout, create (memfd), attach
 *   comm.c       communicator lifecycle: init, finalize, destroy, abort, queries (split.c: split, shrink)
 *   grow.c       ncclCommGetUniqueId and ncclCommGrow: a larger communicator, existing ranks kept
 *   worker.c     per-communicator worker thread and its task FIFO; the op-task progress loop
 *   transport.c  per-communicator choices (spin, single copy) and the single-copy reads
 *   coll.c       collectives as non-blocking state machines over the segment's slots
 *   coll_direct.c  the single-copy form of the large collectives (reads of peers' buffers)
 *   p2p.c        send/recv over per-pair rings in the segment (large messages: single copy)
 *   group.c      thread-local group state and the entry path of every communication call
 *   redop.c      ncclRedOpCreatePreMulSum / ncclRedOpDestroy
 *   mem.c        ncclMemAlloc/Free (one sealed memfd per block, mappable by peers), ncclCommRegister
 *   window.c     windows: collective registration (peers' blocks mapped), user and peer pointers
 *   rma.c        one-sided ops: ncclPutSignal, ncclSignal, ncclWaitSignal over windows and signals
 *   api.c        the exported entry points
 *
 * Lock order (outer first): host_handles_lock -> monitor registry lock -> comm->lock; window.c's
 * registry lock -> comm->lock.
 * No lock is ever held while waiting for another rank. */
#ifndef NCCL_HOST_H
#define NCCL_HOST_H

#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "abi.h"
#include "nccl_surface.gen.h"
#include "reduce.h"

#define HOST_API __attribute__((visibility("default")))
#define HOST_COLD __attribute__((cold, noinline))
#define HOST_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define HOST_LIKELY(x) __builtin_expect(!!(x), 1)
#define HOST_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The exported entry points: every row of abi.h, and the host backend's own ncclHost* extras. */
#define HOST_DECL(name, ret, params, args, since) HOST_API ret name params;
NCCL_ABI(HOST_DECL)
#undef HOST_DECL
HOST_API const char *ncclHostGetInfo(void);
HOST_API ncclResult_t ncclHostSetDevice(int device);
HOST_API ncclResult_t ncclHostGetDevice(int *device);
/* The entry points this backend refuses, space-separated (NCCL_HOST_REFUSED_SYMBOL in abi.h). */
HOST_API const char *ncclHostRefusedEntryPoints(void);
/* Refuses fn: ncclInvalidUsage with a last-error text naming it (api.c). */
ncclResult_t host_refuse(const char *fn);

#define HOST_LIB_VERSION "0.1.0"
#define HOST_LIB_VERSION_NUM 100      /* compared in the bootstrap handshake */
#define HOST_PROTO_VERSION 3          /* wire protocol of the bootstrap and the mesh */
#define HOST_ID_LAYOUT 2              /* unique id layout version (docs/host-backend.md#unique-ids-and-bootstrap) */
#define HOST_SEG_LAYOUT 7             /* shared segment layout version (4: first causes; 5: signal counters;
                                       * 6: pipeline steps, wait flags; 7: error claim) */
#define HOST_TOKEN_BYTES 16
#define HOST_SECRET_BYTES 16
#define HOST_MAX_RANKS 4096
#define HOST_CACHELINE 64

/* ------------------------------------------------------------------------------------------ */
/* params.c: tunables (docs/host-backend.md#tunables). Read once; const afterwards.                              */
/* ------------------------------------------------------------------------------------------ */

enum { HOST_FLAVOR_NCCL = 0, HOST_FLAVOR_RCCL = 1 };

typedef struct {
    int flavor;               /* NCCL_HOST_FLAVOR */
    int version_code;         /* NCCL_HOST_VERSION_CODE */
    host_fp8_mode fp8;        /* NCCL_HOST_FP8 */
    double timeout_s;         /* NCCL_HOST_TIMEOUT; 0 = infinite */
    int64_t timeout_ns;       /* INT64_MAX when infinite */
    int64_t root_idle_ns;     /* NCCL_HOST_ROOT_IDLE_TIMEOUT */
    size_t chunk_bytes;       /* NCCL_HOST_CHUNK_BYTES */
    int chunk_auto;           /* NCCL_HOST_CHUNK_BYTES unset: sized per communicator */
    int pipeline_steps;       /* NCCL_HOST_PIPELINE_STEPS: rooted collectives' least number of steps */
    size_t p2p_bytes;         /* NCCL_HOST_P2P_BYTES */
    size_t p2p_eager;         /* NCCL_HOST_P2P_EAGER */
    int checks;               /* NCCL_HOST_CHECKS */
    int check_pointers;       /* NCCL_HOST_CHECK_POINTERS / NCCL_CHECK_POINTERS */
    uint32_t bind_addr;       /* NCCL_HOST_BIND_ADDR or node.c's choice, network byte order;
                               * INADDR_NONE when none could be chosen (bind_error says why) */
    char bind_from[96];       /* where bind_addr comes from, for the log */
    char bind_error[256];     /* why no address could be chosen; "" when one was */
    int allow_nonloopback;    /* NCCL_HOST_ALLOW_NONLOOPBACK */
    int num_devices;          /* NCCL_HOST_NUM_DEVICES */
    int comm_blocking;        /* NCCL_COMM_BLOCKING: -1 unset, 0, 1 */
    int multi_rank_gpu;       /* NCCL_MULTI_RANK_GPU_ENABLE */
    const char *comm_id;      /* NCCL_COMM_ID (not supported: reported at GetUniqueId) */
    int spin_us;              /* NCCL_HOST_SPIN_US: -1 unset (HOST_SPIN_DEFAULT_US), 0 never spin */
    int yield_us;             /* NCCL_HOST_YIELD_US: 0 sleep without yielding first */
    int yield_small_us;       /* NCCL_HOST_YIELD_SMALL_US: longest yield window of a small task */
    int bcast_eager;          /* NCCL_HOST_BCAST_EAGER: 0 or 1 */
    int direct;               /* NCCL_HOST_DIRECT: HOST_DIRECT_* */
    size_t direct_min;        /* NCCL_HOST_DIRECT_MIN; 1 under NCCL_HOST_DIRECT=1 */
} host_params_t;

enum { HOST_DIRECT_AUTO = 0, HOST_DIRECT_OFF = 1, HOST_DIRECT_ON = 2 };
/* Longest spin before sleeping when NCCL_HOST_SPIN_US is unset (worker.c adapts below it). */
#define HOST_SPIN_DEFAULT_US 50
/* Longest sched_yield polling before sleeping when NCCL_HOST_YIELD_US is unset (worker.c). */
#define HOST_YIELD_DEFAULT_US 20
/* Longest, adaptive, yield window of a task of small ops when NCCL_HOST_YIELD_SMALL_US is unset
 * (worker.c). */
#define HOST_YIELD_SMALL_DEFAULT_US 400
/* Single-copy threshold when NCCL_HOST_DIRECT_MIN is unset: bytes per rank of a collective, or
 * of a p2p message (measured with benchmarks/host_bandwidth.py, see params.c). */
#define HOST_DIRECT_MIN_DEFAULT ((size_t)65536)
/* Under NCCL_HOST_DIRECT=auto, single copy needs process_vm_readv at this fraction of memcpy's
 * throughput at least: one copy at half speed is as fast as two (transport.c). */
#define HOST_DIRECT_MIN_SPEED 0.5f
/* Single-copy reductions combine peers' inputs piece by piece through per-communicator scratch
 * (three pieces): small enough to stay in cache, large enough to amortise a read's syscall. */
#define HOST_DIRECT_PIECE ((size_t)131072)
/* Collectives whose output on a rank is at least this large write it with non-temporal stores
 * on the segment path (coll.c copy_out): half the 32 MiB shared cache of the machine measured. */
#define HOST_STREAM_MIN ((size_t)16 << 20)
/* A rooted collective (Broadcast, Reduce, Gather, Scatter) on the segment path is cut into at
 * least NCCL_HOST_PIPELINE_STEPS steps (default below), none smaller than HOST_PIPELINE_MIN_STEP
 * bytes, so that the root's copies and the other ranks' overlap (coll.c; rank 0's value, kept in
 * the segment header, applies to the communicator). */
#define HOST_PIPELINE_STEPS_DEFAULT 1
#define HOST_PIPELINE_MIN_STEP ((size_t)128 << 10)
/* Step sizes at which a Broadcast root streams its step data into the segment (coll.c). */
#define HOST_STAGE_STREAM_MIN ((size_t)16 << 10)
#define HOST_STAGE_STREAM_MAX ((size_t)512 << 10)

/* Loads the tunables on first use (pthread_once) and returns them. Never NULL. */
const host_params_t *host_params(void);
/* Per-rank slot size of a communicator of nranks: NCCL_HOST_CHUNK_BYTES, or when it is unset
 * HOST_CHUNK_AUTO_BUDGET / nranks (HOST_CHUNK_OVERSUB_BUDGET when the ranks outnumber the CPUs
 * this process may run on), at least HOST_CHUNK_MIN_AUTO (docs/host-backend.md#automatic-chunk-size). */
#define HOST_CHUNK_AUTO_BUDGET ((size_t)4 << 20)
#define HOST_CHUNK_OVERSUB_BUDGET ((size_t)16 << 20)
#define HOST_CHUNK_MIN_AUTO ((size_t)262144)
size_t host_chunk_bytes(int nranks);
/* ncclTimeout, or ncclRemoteError when mimicking a release without it (docs/host-backend.md#tunables). */
ncclResult_t host_timeout_code(void);
const char *host_info_text(void);
/* The parameter API (ncclParam*) over the tunables above, by their variable names. */
ncclResult_t host_param_bind(ncclParamHandle_t *out, const char *key);
/* Integer value of a bound parameter in [lo, hi]; ncclInvalidUsage for a text parameter. */
ncclResult_t host_param_get_int(ncclParamHandle_t h, int64_t lo, uint64_t hi, int64_t *out, const char *fn);
ncclResult_t host_param_get_str(ncclParamHandle_t h, const char **out);
ncclResult_t host_param_get_raw(ncclParamHandle_t h, void *out, int maxLen, int *len);
ncclResult_t host_param_get_by_key(const char *key, const char **value, int *valueLen);
ncclResult_t host_param_keys(const char ***table, int *tableLen);
void host_param_dump(void);

/* ------------------------------------------------------------------------------------------ */
/* debug.c: logging and the last-error text (docs/host-backend.md#errors-and-logging)                           */
/* ------------------------------------------------------------------------------------------ */

enum { HOST_LOG_NONE = 0, HOST_LOG_VERSION = 1, HOST_LOG_WARN = 2, HOST_LOG_INFO = 3, HOST_LOG_TRACE = 5 };
enum {
    HOST_SUB_INIT = 1u << 0,
    HOST_SUB_BOOTSTRAP = 1u << 1,
    HOST_SUB_COLL = 1u << 2,
    HOST_SUB_P2P = 1u << 3,
    HOST_SUB_SHM = 1u << 4,
    HOST_SUB_ENV = 1u << 5,
    HOST_SUB_ALLOC = 1u << 6,
    HOST_SUB_CALL = 1u << 7,
    HOST_SUB_ALL = 0xffffffffu
};

extern int host_log_level;        /* written once by host_log_init (params once routine) */
extern unsigned host_log_subsys;
void host_log_init(void);
void host_log(int level, unsigned subsys, const char *fmt, ...) HOST_PRINTF(3, 4);
void host_vlog(int level, unsigned subsys, const char *fmt, va_list ap);
/* The calling thread's rank for the log prefix (-1: none). */
void host_log_set_rank(int rank);
int host_log_get_rank(void);
/* The calling thread serves no API call (the bootstrap root): its WARNs are logged but do not
 * become the last error, which belongs to the calls of other threads. */
void host_log_set_background(void);
/* A copy of the last WARN text, in a thread-local buffer. */
const char *host_last_error(void);
/* NCCL 2.30's fixed strings (docs/host-backend.md#errors-and-logging), flavour-aware. */
const char *host_error_string(ncclResult_t rc);
/* WARN (sets the last-error text) and return rc. */
ncclResult_t host_fail(ncclResult_t rc, const char *fmt, ...) HOST_PRINTF(2, 3) HOST_COLD;

#define HOST_WARN(...) host_log(HOST_LOG_WARN, HOST_SUB_ALL, __VA_ARGS__)
#define HOST_INFO(sub, ...)                                                                    \
    do {                                                                                       \
        if (HOST_UNLIKELY(host_log_level >= HOST_LOG_INFO && (host_log_subsys & (sub))))        \
            host_log(HOST_LOG_INFO, (sub), __VA_ARGS__);                                       \
    } while (0)
#define HOST_TRACE(sub, ...)                                                                   \
    do {                                                                                       \
        if (HOST_UNLIKELY(host_log_level >= HOST_LOG_TRACE && (host_log_subsys & (sub))))       \
            host_log(HOST_LOG_TRACE, (sub), __VA_ARGS__);                                      \
    } while (0)

/* Error propagation leaves a file:line breadcrumb at TRACE, so NCCL_DEBUG=TRACE reads like a
 * backtrace (docs/developing.md#code-habits). HOST_FAILED only adds the location; the return or goto stays at
 * the call site:
 *     if (HOST_FAILED(rc = host_comm_enter(comm, fn, &c)))
 *         return rc;
 *     if (HOST_FAILED(rc = host_comm_start(c)))
 *         goto fail;
 */
#define HOST_FAILED(rc) host_failed((rc), __FILE__, __LINE__)
static inline int host_failed(ncclResult_t rc, const char *file, int line)
{
    if (HOST_LIKELY(rc == ncclSuccess))
        return 0;
    HOST_TRACE(HOST_SUB_ALL, "%s:%d -> %d", file, line, (int)rc);
    return 1;
}
/* Cleanup paths keep the first error. */
#define HOST_CHECKIGNORE(call, res)                                                            \
    do {                                                                                       \
        ncclResult_t r_ = (call);                                                              \
        if (r_ != ncclSuccess && (res) == ncclSuccess)                                         \
            (res) = r_;                                                                        \
    } while (0)

/* Clocks, futexes, sockets, the gate (sys.c, gate.c). */
#include "host_sys.h"

/* Wire messages of the bootstrap and the control mesh. */
#include "wire.h"

/* ------------------------------------------------------------------------------------------ */
/* The shared segment (shm.c; docs/host-backend.md#the-shared-segment)
 * */
/* ------------------------------------------------------------------------------------------ */

enum { HOST_RANK_ALIVE = 0, HOST_RANK_LEFT = 1, HOST_RANK_ABORTED = 2 };

typedef struct {
    host_bell bell;                 /* rung whenever something rank r waits for may have changed */
    _Atomic uint32_t state;         /* HOST_RANK_* written by the rank itself */
    uint32_t pid;
    _Atomic uint64_t done;          /* last collective step this rank finished reading */
    _Atomic int32_t cpu;            /* the CPU this rank ran on when it last began to wait */
    _Atomic uint32_t cause;         /* the first cause of this rank's failure, written when the
                                     * rank notes it and before it leaves or aborts (HOST_CAUSE;
                                     * 0 = none; handle.c) */
    _Atomic uint32_t wants_done;    /* 1 while this rank waits for a peer's `done` (coll.c): only
                                     * then does publishing `done` ring it */
    char pad[HOST_CACHELINE - 36];
} host_seg_rank;
_Static_assert(sizeof(host_seg_rank) == HOST_CACHELINE, "per-rank words are one cache line");

typedef struct {
    uint64_t magic;
    uint32_t layout;
    uint32_t nranks;
    uint64_t chunk_bytes;
    uint64_t p2p_bytes;
    uint64_t slot_stride;            /* per rank: two step buffers */
    uint64_t buf_bytes, buf_stride;  /* data bytes of one step buffer; header + data, aligned */
    uint64_t ring_stride;
    uint64_t off_ranks, off_slots, off_rings;
    uint64_t off_signals;            /* n x n signal counters (rma.c) */
    uint64_t total_bytes;
    uint32_t pipeline_steps;         /* rank 0's NCCL_HOST_PIPELINE_STEPS (coll.c) */
    _Atomic uint32_t error_claim;    /* 1 once a rank owns error_* (host_seg_error); error_code publishes them */
    uint8_t token[HOST_TOKEN_BYTES]; /* proves the attacher opened the right object */
    _Atomic uint32_t error_code;     /* first cross-rank failure (mismatch), 0 = none */
    int32_t error_rank;              /* rank that detected it */
    uint32_t error_cause;            /* its first cause (HOST_CAUSE), written before error_text */
    char error_text[256];
} host_seg_header;

/* Descriptor a rank publishes with every collective step (docs/host-backend.md#cross-rank-mismatch-detection). */
typedef struct {
    _Atomic uint64_t seq;  /* step number; written last (release) */
    uint64_t coll_seq;     /* collective number on this comm */
    int32_t kind, datatype, opkind, root;
    uint64_t count;
    uint64_t stepi, nsteps;
    uint64_t total;        /* AllToAllv: max pair count seen by this rank; others: 0 */
    uint8_t scalar[8];     /* PreMulSum scalar of this rank */
    uint64_t src, dst;     /* single copy: this rank's sendbuff and recvbuff, read by peers */
    int32_t direct;        /* 1: this step is a single-copy step (no data in the slot) */
    char pad[128 - 96];
} host_slot_hdr;
_Static_assert(sizeof(host_slot_hdr) == 128, "slot descriptor is two cache lines");

typedef struct {
    _Atomic uint64_t head; /* bytes written by the sender */
    char pad0[HOST_CACHELINE - 8];
    _Atomic uint64_t tail; /* bytes consumed by the receiver */
    char pad1[HOST_CACHELINE - 8];
} host_ring_hdr;

/* One p2p message header inside a ring's byte stream. */
typedef struct {
    uint64_t count;
    uint32_t datatype;
    uint32_t magic;        /* HOST_P2P_MSG_MAGIC: payload follows; HOST_P2P_DIRECT_MAGIC: none */
    uint64_t addr;         /* single copy: the sender's buffer, read by the receiver */
    uint64_t pad;
} host_p2p_msg;
#define HOST_P2P_MSG_MAGIC 0x50325021u
#define HOST_P2P_DIRECT_MAGIC 0x50325044u

typedef struct {
    void *base;
    size_t size;
    host_seg_header *hdr;
    int nranks;
    size_t chunk_bytes, p2p_bytes;
    size_t buf_bytes;      /* data bytes per step buffer: half the slot's chunk */
    int pipeline_steps;    /* rooted collectives' least number of steps (coll.c) */
} host_seg;

/* Creates and maps the segment as an anonymous memory file (memfd, sealed at its size); *fd is
 * what peers get over a Unix-domain socket (bootstrap.c). No name exists at any instant. */
ncclResult_t host_seg_create(host_seg *seg, int nranks, const uint8_t token[HOST_TOKEN_BYTES], int *fd);
/* Maps a segment received as fd after checking owner, seals, size, header and token. */
ncclResult_t host_seg_attach(host_seg *seg, int fd, int nranks, const uint8_t token[HOST_TOKEN_BYTES]);
void host_seg_unmap(host_seg *seg);
static inline host_seg_rank *host_seg_rankp(const host_seg *s, int r)
{
    return (host_seg_rank *)((char *)s->base + s->hdr->off_ranks) + r;
}
/* Rank r's buffer for collective step `step`. Each rank's slot holds two, used by odd and even
 * steps, so a rank may publish step s+1 while its peers still read step s (coll.c). */
static inline host_slot_hdr *host_seg_slot(const host_seg *s, int r, uint64_t step)
{
    return (host_slot_hdr *)((char *)s->base + s->hdr->off_slots + (size_t)r * s->hdr->slot_stride +
                             (size_t)(step & 1) * s->hdr->buf_stride);
}
static inline unsigned char *host_seg_slot_data(const host_seg *s, int r, uint64_t step)
{
    return (unsigned char *)host_seg_slot(s, r, step) + sizeof(host_slot_hdr);
}
/* Ring carrying src -> dst (src != dst). */
static inline host_ring_hdr *host_seg_ring(const host_seg *s, int src, int dst)
{
    int n = s->nranks;
    size_t idx = (size_t)src * (size_t)(n - 1) + (size_t)(dst < src ? dst : dst - 1);
    return (host_ring_hdr *)((char *)s->base + s->hdr->off_rings + idx * s->hdr->ring_stride);
}
static inline unsigned char *host_seg_ring_data(const host_seg *s, int src, int dst)
{
    return (unsigned char *)host_seg_ring(s, src, dst) + sizeof(host_ring_hdr);
}
/* The count of ncclPutSignal/ncclSignal operations src has completed towards dst: written by
 * src only (release), read by dst (acquire). */
static inline _Atomic uint64_t *host_seg_signal(const host_seg *s, int dst, int src)
{
    return (_Atomic uint64_t *)((char *)s->base + s->hdr->off_signals) + (size_t)dst * (size_t)s->nranks + src;
}

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* The operations a communication call carries into a task (nccl_surface.gen.h, written from
 * tools/nccl_surface.py): collectives, point-to-point, one-sided (rma.c: they run in program
 * order among themselves) and window (de)registration (window.c: run first, in order). 0 names
 * none: a descriptor not yet published is zeroed memory. */
typedef enum {
    HOST_K_NONE,
#define HOST_KIND_ENUM(id, entry, cls, reduces, rooted) HOST_K_##id,
    NCCL_SURFACE_HOST_KINDS(HOST_KIND_ENUM)
#undef HOST_KIND_ENUM
    HOST_NKINDS
} host_kind;
typedef enum { HOST_CLASS_NONE, HOST_CLASS_COLL, HOST_CLASS_P2P, HOST_CLASS_RMA, HOST_CLASS_WIN } host_kind_class;
/* What each kind is (group.c holds the table, from the same rows): its class, the entry point its
 * messages name, whether it reduces (takes an op) and whether it has a root. */
typedef struct {
    host_kind_class cls;
    const char *entry;
    int reduces, rooted;
} host_kind_info;
extern const host_kind_info host_kinds[HOST_NKINDS];
static inline int host_kind_is_coll(host_kind k) { return host_kinds[k].cls == HOST_CLASS_COLL; }
static inline int host_kind_is_rma(host_kind k) { return host_kinds[k].cls == HOST_CLASS_RMA; }
static inline int host_kind_is_win(host_kind k) { return host_kinds[k].cls == HOST_CLASS_WIN; }

/* What a communication call carries into a task: a copy of its arguments and op state. */
typedef struct host_opd {
    host_kind kind;
    const char *name;          /* API name for messages */
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    ncclDataType_t datatype;
    union {
        int root;              /* a rooted collective's root */
        int peer;              /* a send's, recv's or one-sided op's peer */
    };                         /* -1 when unused */
    int has_op;                /* a reduction: opkind holds the caller's ncclRedOp_t until resolved */
    int opkind;                /* host_op_kind after validation, -1 for non-reductions */
    uint8_t scalar[8];         /* PreMulSum host-immediate scalar */
    const void *scalar_ptr;    /* PreMulSum device-residence scalar, read at execution */
    const void *acc;           /* AllReduceWithBias */
    size_t *v;                 /* AllToAllv: sendcounts, sdispls, recvcounts, rdispls (4*n); WaitSignal:
                                * signals wanted per peer (n); owned */
    size_t nv;                 /* entries of v */
    const size_t *uv[4];       /* AllToAllv: the caller's arrays, copied into v at the call */
    ncclWindow_t win;          /* Put, WinDereg: the window's handle (host_win_find); WinReg: NULL */
    ncclWindow_t *winp;        /* WinReg: where the handle goes when the registration completes */
    size_t offset;             /* Put: byte offset into the peer's part of the window */
    int flags;                 /* WinReg: winFlags */
    int started;               /* WaitSignal: v holds absolute targets */
    const ncclWaitSignalDesc_t *descs; /* WaitSignal: the caller's array, summed into v at the call */
    int ndesc;
    struct host_opd *next;
} host_opd;

typedef enum {
    HOST_TASK_INIT = 1,     /* bootstrap */
    HOST_TASK_OPS,          /* collectives and p2p */
    HOST_TASK_SPLIT,
    HOST_TASK_SHRINK,
    HOST_TASK_GROW,         /* an existing rank's part of ncclCommGrow (grow.c) */
    HOST_TASK_FINALIZE,
    HOST_TASK_EXIT
} host_task_kind;

struct host_comm;
typedef struct host_split_args {
    int color, key;                 /* split */
    int *exclude;                   /* shrink: sorted, deduplicated */
    int nexclude;
    int flags;
    ncclComm_t *newcomm;            /* written when the job ends */
    int child_blocking;
    char child_name[64];
    int child_device;
    int grow_nranks;                /* grow: the grown size */
    int grow_passed;                /* grow: the caller passed grow_id */
    ncclUniqueId grow_id;
} host_split_args;

typedef struct host_task {
    host_task_kind kind;
    struct host_task *next;
    host_opd *ops;                  /* OPS: owned list */
    host_split_args *split;         /* SPLIT/SHRINK: owned */
    uint64_t epoch;                 /* cancellation epoch at submission */
    int detached;                   /* nobody waits: the worker frees it */
    int done;                       /* guarded by comm->lock */
    ncclResult_t result;
} host_task;

typedef struct host_userop {
    ncclRedOp_t value;
    ncclDataType_t datatype;
    ncclScalarResidence_t residence;
    uint8_t scalar[8];
    const void *scalar_ptr;
    struct host_userop *next;
} host_userop;

typedef struct host_reg {
    void *buff;
    size_t size;
    uintptr_t id;                /* the handle ncclCommRegister returned (mem.c): never reused */
    struct host_reg *next;
} host_reg;

typedef struct host_mail {
    int from;
    uint64_t tag;
    uint32_t len;
    struct host_mail *next;
    unsigned char data[];
} host_mail;

enum { HOST_PEER_ALIVE = 0, HOST_PEER_LEFT = 1, HOST_PEER_DEAD = 2, HOST_PEER_ABORTED = 3 };

/* A first cause (docs/host-backend.md#peer-death-and-abort): the peer whose loss made a rank fail
 * and how it was lost (HOST_PEER_*), packed in one word so it is read and written whole; 0 = none. */
#define HOST_CAUSE(rank, how) (((uint32_t)(rank) + 1u) | ((uint32_t)(how) << 24))
#define HOST_CAUSE_RANK(cause) ((int)((cause) & 0xffffffu) - 1)
#define HOST_CAUSE_HOW(cause) ((int)((cause) >> 24))

typedef struct {
    int fd;                      /* control socket, -1 for self */
    pthread_mutex_t send_lock;   /* one writer at a time on fd */
    _Atomic int gone;            /* HOST_PEER_*, set by the monitor or teardown */
    uint32_t pid;
} host_peer;

enum { HOST_PHASE_INIT = 0, HOST_PHASE_READY = 1, HOST_PHASE_FINALIZED = 2 };

/* The public handle: a small header that is never freed, so a stale handle is recognised. */
struct ncclComm {
    uint64_t magic;
    struct host_comm *impl;      /* NULL once destroyed/aborted; guarded by host_handles_lock */
};
#define HOST_HANDLE_MAGIC 0x6e63636c686f7374ull

typedef struct host_comm {
    struct ncclComm *handle;
    pthread_mutex_t lock;        /* state below, task queue, mailbox */
    pthread_cond_t cv;           /* CLOCK_MONOTONIC; task completion, mail, state */
    int nranks, rank, device;
    int blocking;
    char name[64];
    ncclConfig_t config;         /* parsed copy (for split/shrink inheritance) */
    uint64_t fork_gen;

    /* state (docs/host-backend.md#communicator-lifecycle) */
    int phase;                   /* HOST_PHASE_*; guarded by lock */
    _Atomic int error;           /* first asynchronous/fatal error, 0 = none */
    char error_why[200];         /* what caused it, when known ("" otherwise); guarded by lock */
    _Atomic uint32_t cause;      /* the first peer whose loss failed an operation (HOST_CAUSE) */
    _Atomic int aborted;         /* ncclCommAbort called */
    _Atomic int finalizing;      /* finalize issued */
    _Atomic int suspended;
    _Atomic int revoked;         /* ncclCommRevoke: collectives -> IU, split/shrink/destroy still allowed */
    int inflight;                /* submitted, unfinished tasks (guarded by lock) */
    int inapi;                   /* threads inside the API on this comm (host_handles_lock) */
    pthread_t active_thread;     /* thread in an exclusive call (guarded by lock) */
    int active;
    void *group_owner;           /* thread group state holding queued work (guarded by lock) */
    _Atomic uint64_t cancel_epoch;

    /* bootstrap */
    ncclUniqueId id;
    int nids;
    uint64_t idhash;             /* scalable-init hash of all ids */
    ncclUniqueId *extra_ids;     /* InitRankScalable: roots to dismiss (rank 0) */
    int listen_fd;               /* this rank's mesh listener until the mesh is complete */
    uint16_t listen_port_be;
    int wake_fd;                 /* eventfd made readable by abort: ends bootstrap polls */
    uint8_t token[HOST_TOKEN_BYTES];
    int uds_path;                /* ranks span network namespaces: Unix sockets are paths in
                                  * HOST_UDS_DIR, not abstract names (sys.c host_uds_name) */
    host_peer *peers;
    host_mail *mail;             /* mailbox (guarded by lock) */
    uint64_t mgmt_seq;           /* exchanges among every rank (split, grow, windows, setup) */
    uint64_t subset_seq;         /* exchanges among some ranks (shrink) */
    int grow_pending;            /* ncclCommGetUniqueId made grow_id, no grow consumed it yet (lock) */
    ncclUniqueId grow_id;
    int monitored;

    /* data plane */
    host_seg seg;
    uint64_t step;               /* last collective step used */
    uint64_t coll_seq;
    uint64_t *send_pos;          /* per peer: bytes I wrote into my ring to it */
    uint64_t *recv_pos;          /* per peer: bytes I consumed from its ring to me */

    /* transport (transport.c): agreed by every rank at setup, then read-only */
    int direct;                  /* single-copy reads between the ranks are possible and on */
    size_t direct_min;           /* bytes per rank from which an operation goes single-copy */
    int *pidfd;                  /* per peer in another process: pidfd (liveness); -1 otherwise */
    int ptracer_ref;             /* holds a reference on the process's Yama ptracer declaration */
    uint64_t probe_cookie;       /* read by the peers at setup, proving the reads work */
    unsigned char *scratch;      /* single-copy reductions: 3 x HOST_DIRECT_PIECE, on first use */
    int64_t spin_max_ns;         /* longest spin before sleeping; 0: never spin */
    int64_t spin_ns;             /* the current, adaptive, spin window (worker.c) */
    int64_t yield_ns;            /* longest sched_yield polling of a wait that did not spin */
    int64_t yield_small_max_ns;  /* the same for a task of small ops (worker.c), at least yield_ns */
    int64_t yield_small_ns;      /* its current, adaptive, window */
    int bcast_eager;             /* a Broadcast root returns once staged (NCCL_HOST_BCAST_EAGER, coll.c) */
    uint64_t bcast_unchecked;    /* a Broadcast root's step whose peers' descriptors are still unchecked; 0 none */

    /* worker */
    pthread_t worker;
    int worker_started;
    int worker_busy;             /* executing a task (guarded by lock) */
    int inline_busy;             /* an API thread runs an OPS task itself (guarded by lock); the
                                  * worker takes no task meanwhile, so FIFO order holds */
    host_task *q_head, *q_tail;  /* guarded by lock */

    host_userop *userops;        /* guarded by lock */
    host_reg *regs;              /* guarded by lock */
    struct host_win *wins;       /* registered windows (window.c); guarded by lock */
    uint64_t win_serial;         /* windows registered so far: the same on every rank */
    uint64_t *sig_seen;          /* per peer: signals consumed by ncclWaitSignal (rma.c), lazily */
} host_comm;

/* handle.c */
ncclResult_t host_handle_new(host_comm *c, ncclComm_t *out);
/* Checks a handle and pins its communicator (inapi++). IA for NULL/foreign/dead handles. */
ncclResult_t host_comm_enter(ncclComm_t h, const char *fn, host_comm **out);
void host_comm_leave(host_comm *c);
/* Marks the handle dead and waits until no other thread is inside the API on it. */
ncclResult_t host_handle_kill(host_comm *c, int64_t deadline);
extern _Atomic uint64_t host_fork_gen;
void host_fork_setup(void);
void host_monitor_atfork_child(void);

/* State checks for an operation (docs/host-backend.md#argument-checks): IA for INIT/BUSY, the error for ERROR, IU for
 * FINALIZED/suspended/forked. */
ncclResult_t host_comm_usable(host_comm *c, const char *fn);
/* The same, but a revoked communicator passes (split, shrink). */
ncclResult_t host_comm_usable_revoked(host_comm *c, const char *fn);
/* Records a fatal error (first wins) and wakes every waiter. */
void host_comm_set_error(host_comm *c, ncclResult_t rc);
/* The same with what caused it ("peer rank 2 (pid 4711) exited ..."), told by later errors. */
void host_comm_set_error_why(host_comm *c, ncclResult_t rc, const char *why);
ncclResult_t host_comm_error(host_comm *c);
/* ": <what caused the error>" for appending to a message, or "" when nothing was recorded. */
const char *host_comm_error_why(host_comm *c, char *buf, size_t len);
/* The first cause of peer r's loss as this rank sees it: the cause a gone peer published when
 * it has one (so a death travels through the ranks that aborted, finalized, destroyed or ended
 * because of it), else r itself and how it went. */
uint32_t host_peer_cause(host_comm *c, int r);
/* Records the communicator's first cause (first wins; 0 is ignored) and publishes it in this
 * rank's words of the segment; nothing once this rank has aborted or left, since its departure
 * told the peers what it had. */
void host_comm_note_cause(host_comm *c, uint32_t cause);
/* "peer rank 2 (pid 4711) died": a first cause in words. */
const char *host_cause_text(host_comm *c, uint32_t cause, char *buf, size_t len);
/* How peer r is gone, naming the first cause: "died", "aborted", "aborted after rank 2 (pid 4711)
 * died", "left the communicator (finalize/destroy)", "left the communicator (finalize/destroy)
 * after rank 2 (pid 4711) died". */
const char *host_peer_gone_text(host_comm *c, int r, char *buf, size_t len);
/* Whether peer r is gone: its state word says it left or aborted, or the monitor saw it go. */
int host_peer_is_gone(host_comm *c, int r);
/* Whether peer r left the communicator (finalize, destroy, or its process ended after either):
 * it reads nothing of this rank's any more, so what it had still to read no longer holds back
 * the reuse of a buffer. An abort or a death is not a departure of this kind. */
int host_peer_left(host_comm *c, int r);
/* Fails (ncclRemoteError) an operation `what` that needs peer r, which is gone, after noting the
 * first cause of its loss: "<comm> rank 1: ncclAllReduce needs rank 0 (pid 4700), which aborted
 * after rank 2 (pid 4711) died" (docs/host-backend.md#peer-death-and-abort). */
ncclResult_t host_fail_peer_gone(host_comm *c, const char *what, int r);
/* Wakes the worker and every waiter of this comm (abort, errors from the monitor). */
void host_comm_wake(host_comm *c);

/* config.c */
ncclResult_t host_config_parse(const ncclConfig_t *in, ncclConfig_t *out, const char *fn);
void host_config_default(ncclConfig_t *out);
/* A nccl*Config collective's config (NULL is the plain call): size, magic, field ranges. */
ncclResult_t host_coll_config_check(const ncclCollConfig_t *in, const char *fn);
/* ncclSetEncryption's config: size, magic, mode (written to *mode). */
ncclResult_t host_encryption_check(const ncclEncryptionConfig_t *in, int *mode);

/* comm.c, and split.c (host_split, host_shrink, host_submit_child, host_child_*, host_run_split) */
ncclResult_t host_comm_create(int nranks, int rank, const ncclConfig_t *cfg, host_comm **out);
void host_comm_free(host_comm *c);
ncclResult_t host_init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *ids, int nids, int rank,
                            const ncclConfig_t *config, const char *fn);
/* host_init_rank after the ids were checked (a grow's new rank comes in here with its grow id). */
ncclResult_t host_init_checked(ncclComm_t *comm, int nranks, const ncclUniqueId *ids, int nids, int rank,
                               const ncclConfig_t *config, const char *fn);
ncclResult_t host_init_all(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t host_finalize(ncclComm_t comm);
ncclResult_t host_destroy(ncclComm_t comm);
ncclResult_t host_abort(ncclComm_t comm);
ncclResult_t host_split(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config);
ncclResult_t host_shrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm, ncclConfig_t *config,
                         int flags);
ncclResult_t host_get_async_error(ncclComm_t comm, ncclResult_t *err);
ncclResult_t host_comm_query(ncclComm_t comm, int what, int *out, const char *fn);
ncclResult_t host_query_properties(ncclComm_t comm, ncclCommProperties_t *props);
ncclResult_t host_suspend(ncclComm_t comm, int flags, int resume);
ncclResult_t host_revoke(ncclComm_t comm, int flags);
ncclResult_t host_mem_stats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);
/* Queues a SPLIT/SHRINK/GROW task on the parent c (or a group job inside a group); a consumes. */
ncclResult_t host_submit_child(host_comm *c, ncclComm_t comm, host_task_kind kind, host_split_args *a);
/* A split's, shrink's or grow's task arguments (*out, NULL on failure) with newcomm and the child's
 * blocking mode and name from config (NULL: the parent's). */
ncclResult_t host_child_args(host_comm *parent, ncclComm_t *newcomm, ncclConfig_t *config, const char *fn,
                             host_split_args **out);
/* On the parent's worker: the child (*child, with handle *h) of a's blocking mode and name and the parent's device. */
ncclResult_t host_child_create(host_comm *parent, const host_split_args *a, int nranks, int rank, host_comm **child,
                               ncclComm_t *h);
/* After connecting the child (rc): unless that failed or the parent was aborted, its transport (when
 * transport is set: connecting did not set it up) and worker start and *a->newcomm = h; else it is destroyed. */
ncclResult_t host_child_start(host_comm *parent, host_comm *child, ncclComm_t h, ncclResult_t rc, int transport,
                              const host_split_args *a, const char *fn);
/* Run by the worker for SPLIT/SHRINK tasks and by the INIT task. */
ncclResult_t host_run_split(host_comm *parent, host_task *t);
ncclResult_t host_run_init(host_comm *c);
ncclResult_t host_run_finalize(host_comm *c);
/* Thread-local "current device" (docs/host-backend.md#communicator-lifecycle). */
ncclResult_t host_set_device(int dev);
ncclResult_t host_get_device(int *dev);
int host_current_device(void);
/* The group layer starts queued init/split jobs through these. */
ncclResult_t host_comm_start(host_comm *c);           /* starts the worker with the INIT task */
ncclResult_t host_comm_wait_init(host_comm *c);
void host_comm_teardown(host_comm *c, int abort);
ncclResult_t host_destroy_impl(host_comm *c, int abort);

/* node.c: the bootstrap's address (params.c calls it once) and the machine as the bootstrap
 * compares it */
void host_node_bind_addr(host_params_t *p);
void host_node_get(host_node *n);
/* Why ranks on a and b could not share memory, or NULL when they can. */
const char *host_node_differs(const host_node *a, const host_node *b);

/* root.c: unique ids and the process's one bootstrap root */
ncclResult_t host_unique_id(ncclUniqueId *id);
ncclResult_t host_id_check(const ncclUniqueId *id, const char *fn);
/* A grow id (ncclCommGetUniqueId): an id of this process's root that also names the parent
 * communicator's size and hash. */
ncclResult_t host_grow_id(ncclUniqueId *id, int parent_nranks, uint64_t parent_hash);
/* Checks a grow id as host_id_check does an init id; reports the parent's size and hash. */
ncclResult_t host_grow_id_check(const ncclUniqueId *id, const char *fn, int *parent_nranks, uint64_t *parent_hash);
uint64_t host_ids_hash(const ncclUniqueId *ids, int nids);
/* The root's address and the id's secret. */
void host_id_root(const ncclUniqueId *id, uint32_t *addr_be, uint16_t *port_be, uint8_t *secret);
uint32_t host_id_pid(const ncclUniqueId *id);
/* The machine of the process that made the id (its host name truncated to 20 bytes). */
void host_id_node(const ncclUniqueId *id, host_node *node);
void host_dismiss_roots(const ncclUniqueId *ids, int nids);
void host_root_atfork_child(void);

/* grow.c */
ncclResult_t host_comm_get_unique_id(ncclComm_t comm, ncclUniqueId *id);
ncclResult_t host_grow(ncclComm_t comm, int nranks, const ncclUniqueId *id, int rank, ncclComm_t *newcomm,
                       ncclConfig_t *config);
ncclResult_t host_run_grow(host_comm *parent, host_task *t);

/* bootstrap.c */
ncclResult_t host_bootstrap(host_comm *c);     /* phase 1 via the root, then host_mesh_build */
ncclResult_t host_mesh_build(host_comm *c, const host_peer_addr *peers);
/* Control-mesh sends (any thread; per-peer send lock); fn names the operation in an error. */
ncclResult_t host_ctl_send(host_comm *c, int peer, uint32_t type, uint64_t tag, const void *payload, uint32_t len,
                           int64_t deadline, const char *fn);
/* Allgather of a fixed-size record among `members` (parent ranks, ascending, including me) over
 * the control mesh, tagged with the comm's next mgmt sequence. out has nmembers*len bytes. */
ncclResult_t host_mgmt_allgather(host_comm *c, const int *members, int nmembers, const void *mine, uint32_t len,
                                 void *out, const char *fn);

/* monitor.c */
ncclResult_t host_monitor_add(host_comm *c);
void host_monitor_remove(host_comm *c);

/* worker.c */
ncclResult_t host_worker_start(host_comm *c);
/* Queues a task; with wait, blocks until it finished and returns its result (task freed). */
ncclResult_t host_task_submit(host_comm *c, host_task *t);
ncclResult_t host_task_wait(host_comm *c, host_task *t);
/* Runs an OPS task of a blocking communicator on the calling thread when its worker is idle and
 * its queue empty (the same host_run_ops the worker would run). Returns 0, running nothing, when
 * the worker must take it; otherwise 1, with the task's result in *rc (the task is not freed). */
int host_task_try_inline(host_comm *c, host_task *t, ncclResult_t *rc);
void host_task_free(host_task *t);
void host_worker_stop(host_comm *c, int64_t deadline);
ncclResult_t host_run_ops(host_comm *c, host_task *t);
/* ncclCommFinalize first settles an eager Broadcast this rank was the root of, so that a
 * mismatch in it is finalize's error (docs/host-backend.md#broadcast-without-a-barrier). */
ncclResult_t host_settle_before_leaving(host_comm *c);

/* What a progress function is stuck on, for the deadline message and the departure check
 * (docs/host-backend.md#what-a-departure-means-for-a-peers-call). */
typedef struct {
    int peer;            /* first peer we are waiting for, -1 if none */
    const char *what;    /* "collective step", "send", ... */
    const char *opname;
    int check_gone;      /* in: this pass comes before sleeping; a wait also asks whether the peer it
                          * waits for is gone, and if so looks again at what it waits for */
    int gone;            /* out (check_gone): a peer that is gone without having provided what an
                          * op still needs from it, -1 if none */
    const char *gone_op; /* the op that needs it */
} host_blocked;
/* A fresh host_blocked for one op of a pass that checks departures or not. */
static inline host_blocked host_blocked_init(int check_gone)
{
    return (host_blocked){-1, NULL, NULL, check_gone, -1, NULL};
}
/* Whether peer r, which has not yet provided what an op waits for, is gone (asked only in a pass
 * with b->check_gone). The caller then looks again at the word it waits on and, only if that is
 * still missing, records the unmet need with host_blocked_gone (the first one wins): a departing
 * rank stores its state word after everything it provided (docs/host-backend.md#memory-order). */
static inline int host_blocked_check(const host_blocked *b, host_comm *c, int r)
{
    return b->check_gone && r != c->rank && host_peer_is_gone(c, r);
}
static inline void host_blocked_gone(host_blocked *b, int r, const char *opname)
{
    if (b->gone < 0) {
        b->gone = r;
        b->gone_op = opname;
    }
}

/* coll.c: a collective in progress */
typedef struct {
    host_opd *op;
    uint64_t nsteps, stepi;
    uint64_t s;          /* global step number of the current step */
    int phase;           /* 0: waiting to publish, 1: waiting for peers, 2: single copy: waiting
                          * until every peer is done reading our buffers */
    int direct;          /* single-copy form (coll_direct.c) */
    int stream;          /* output copies bypass the cache (the output is >= HOST_STREAM_MIN) */
    uint64_t s_first;    /* the first step this rank published, 0 before */
    size_t elems;        /* elements per slot (or per sub-block) */
    uint64_t maxv;       /* AllToAllv: largest pair count */
    uint64_t coll_seq;   /* collective number on this comm */
    uint8_t scalar[8];   /* this rank's PreMulSum scalar, captured at execution */
} host_coll_run;
ncclResult_t host_coll_begin(host_comm *c, host_coll_run *run, host_opd *op);
/* Advances as far as possible without blocking. *progress set when something moved; *done when
 * the collective finished on this rank. */
ncclResult_t host_coll_progress(host_comm *c, host_coll_run *run, int *progress, int *done, host_blocked *b);
/* Completes the checks an eager Broadcast root left for its next call (c->bcast_unchecked); *ready
 * 0 while a peer has not yet published that step (b says which). */
ncclResult_t host_coll_settle(host_comm *c, int *ready, host_blocked *b);

/* Records a cross-rank failure (first wins) in the segment header and rings every rank, so
 * ranks waiting elsewhere fail with it too. */
void host_seg_error(host_comm *c, ncclResult_t rc, const char *text);

/* The op of rank j's contribution at the current step: the kind, and j's PreMulSum scalar. */
void host_coll_slot_op(const host_comm *c, const host_coll_run *run, int j, host_op *hop);

/* coll_direct.c: the single-copy collectives */
/* Whether op runs in single-copy form on c: the same answer on every rank whose arguments match. */
int host_coll_direct_eligible(const host_comm *c, const host_opd *op);
/* Whether a peer may be reading this rank's buffers for the single-copy collective run: some
 * step of it that every rank published, that some peer has not finished. */
int host_coll_direct_exposed(const host_comm *c, const host_coll_run *run);
/* Steps of the single-copy form of op (AllReduce: 2, the others: 1). */
uint64_t host_coll_direct_steps(const host_opd *op);
/* Step run->stepi after every rank published it: reads the peers' buffers (addresses in their
 * step descriptors) and writes this rank's output. */
ncclResult_t host_coll_direct_consume(host_comm *c, host_coll_run *run);

/* transport.c */
/* After the bootstrap, on every rank: chooses spin and single copy for c (two exchanges). */
ncclResult_t host_transport_setup(host_comm *c);
void host_transport_free(host_comm *c);
/* Reads len bytes at src in peer's address space into dst (process_vm_readv), then checks that
 * the peer's process still lives. Failures are recorded in the segment (every rank fails):
 * ncclRemoteError for a dead peer, ncclInvalidArgument for a bad address. */
ncclResult_t host_direct_read(host_comm *c, int peer, void *dst, uint64_t src, size_t len);
/* The communicator's scratch for single-copy reductions (allocated on first use), or NULL. */
unsigned char *host_direct_scratch(host_comm *c);

/* p2p.c */
typedef struct {
    host_opd *op;
    uint64_t start, end;  /* byte positions of this message in the ring stream */
    uint64_t pos;         /* next byte to move */
    int started;
    host_p2p_msg hdr;     /* the message header (built by the sender, read by the receiver) */
} host_p2p_run;
ncclResult_t host_p2p_progress(host_comm *c, host_p2p_run *run, int *progress, int *done, host_blocked *b);
/* Whether the receiver of the single-copy send run may be reading its buffer right now. */
int host_p2p_direct_exposed(const host_comm *c, const host_p2p_run *run);

/* group.c */
int host_group_depth(void);
ncclResult_t host_group_start(void);
ncclResult_t host_group_end(ncclSimInfo_t *sim, int simulate);
/* Management jobs (init, split, shrink, finalize, destroy) inside a group. */
typedef enum {
    HOST_JOB_INIT = 1, HOST_JOB_SPLIT, HOST_JOB_SHRINK, HOST_JOB_FINALIZE, HOST_JOB_DESTROY, HOST_JOB_GROW
} host_job_kind;
ncclResult_t host_group_add_job(host_job_kind kind, ncclComm_t comm, host_split_args *args);
void host_group_record(ncclResult_t rc);
void host_group_drop_comm(ncclComm_t comm);  /* abort inside a group */
ncclResult_t host_coll_call(host_opd *op, ncclComm_t comm);

/* redop.c */
ncclResult_t host_redop_create(ncclRedOp_t *op, void *scalar, ncclDataType_t dt, ncclScalarResidence_t res,
                               ncclComm_t comm);
ncclResult_t host_redop_destroy(ncclRedOp_t op, ncclComm_t comm);
/* Resolves an op value for a call on c into opd (kind, scalar). IA if unknown or mismatched. */
ncclResult_t host_redop_resolve(host_comm *c, ncclRedOp_t op, ncclDataType_t dt, host_opd *opd);
void host_redop_free_all(host_comm *c);

/* mem.c */
/* Whether [buff, buff+size) lies inside one ncclMemAlloc block: then *fd is a duplicate of the
 * block's memfd (the caller closes it) and *off the range's offset in it. */
int host_mem_lookup(const void *buff, size_t size, int *fd, size_t *off);
/* Registration's check that [buff, buff + size) is live memory of this process (size 0: nothing
 * to check): inside one ncclMemAlloc block, which is then pinned (*block: the block's start;
 * ncclMemFree refuses it until host_mem_unpin), or mapped memory outside every block (*block
 * NULL). ncclInvalidArgument, named after fn, for a range that wraps, runs past the end of the
 * block it starts in, lies in a freed block or is not mapped. */
ncclResult_t host_mem_pin(const void *buff, size_t size, const char *fn, void **block);
void host_mem_unpin(void *block);
void host_mem_atfork_child(void);
ncclResult_t host_mem_alloc(void **ptr, size_t size);
ncclResult_t host_mem_free(void *ptr);
ncclResult_t host_register(ncclComm_t comm, void *buff, size_t size, void **handle);
ncclResult_t host_deregister(ncclComm_t comm, void *handle);
void host_reg_free_all(host_comm *c);

/* window.c (docs/host-backend.md#windows-and-one-sided-operations) */
typedef struct {
    unsigned char *base;         /* this rank's address of rank j's part (NULL: not mappable) */
    size_t size;                 /* bytes rank j registered */
    void *map;                   /* our mapping of rank j's block (munmap), NULL for self */
    size_t map_len;
} host_win_part;
typedef struct host_win {
    host_comm *comm;
    ncclWindow_t handle;         /* what the user holds: a number, never this record's address */
    uint64_t serial;             /* registration number on the communicator */
    void *block;                 /* the ncclMemAlloc block this window pins (mem.c), NULL if none */
    void *buff;                  /* the user pointer */
    size_t size;
    int flags;
    host_win_part *part;         /* per rank */
    struct host_win *next;       /* the communicator's list */
    struct host_win *gnext;      /* the process-wide registry */
} host_win;
ncclResult_t host_win_register(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags);
ncclResult_t host_win_deregister(ncclComm_t comm, ncclWindow_t win);
/* *o: a window or one-sided op (window.c, rma.c) with nothing but kind, name and peer (-1: none) set:
 * int8, no reduction; the caller sets the fields its kind uses. Inline: built on every call. */
static inline void host_win_opd(host_opd *o, host_kind kind, const char *name, int peer)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->name = name;
    o->datatype = ncclInt8;
    o->peer = peer;
    o->opkind = -1;
}
ncclResult_t host_win_user_ptr(ncclComm_t comm, ncclWindow_t win, void **out);
ncclResult_t host_win_peer_ptr(ncclWindow_t win, size_t offset, int peer, void **out, const char *fn);
/* The window of handle w if it is registered on c (c->lock held or the task thread), else NULL. */
host_win *host_win_find(host_comm *c, ncclWindow_t w);
/* Runs a WINREG/WINDEREG op on the task thread: collective over the control mesh. */
ncclResult_t host_win_run(host_comm *c, host_opd *op);
void host_win_free_all(host_comm *c);
void host_win_atfork_child(void);

/* rma.c */
ncclResult_t host_put_signal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned flags,
                             ncclComm_t comm);
ncclResult_t host_signal(int peer, int sigIdx, int ctx, unsigned flags, ncclComm_t comm);
ncclResult_t host_wait_signal(int nDesc, const ncclWaitSignalDesc_t *descs, ncclComm_t comm);
/* At the call: a WaitSignal's descriptors checked and summed per peer into op->v. */
ncclResult_t host_rma_descs(host_comm *c, host_opd *op);
/* Argument checks of the one-sided and window ops, on the calling thread (group.c's validate). */
ncclResult_t host_rma_validate(host_comm *c, host_opd *op);
/* Advances a PUT/SIGNAL/WAITSIG op; puts and signals finish at once, waits when satisfied. */
ncclResult_t host_rma_progress(host_comm *c, host_opd *op, int *progress, int *done, host_blocked *b);

/* Names for messages. */
const char *host_kind_name(host_kind k);
const char *host_type_name(ncclDataType_t dt);
const char *host_op_name(int opkind);

#endif
