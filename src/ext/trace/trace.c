/* The flight recorder's rings (docs/api/trace.md#what-is-recorded): one per communicator, written
 * by the thread that calls it, copied by the dump from any thread.
 *
 * A ring is plain C memory, allocated once when its communicator is created; recording a call
 * stores C values into the next entry and allocates nothing. Rings live in one process-wide list
 * (under `list_mu`, which only creation, teardown, a binding's first call on a handle and the
 * dump take: never a collective's path through nccl.core). A closed communicator's ring stays in
 * the list for dumps until NX_TRACE_KEEP_CLOSED newer closed rings push it out. */
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "group/group.h"
#include "loader/library.h"

#define NX_TRACE_DEFAULT 2000
#define NX_TRACE_MAX (1L << 24)
#define NX_TRACE_KEEP_CLOSED 64
#define NX_TRACE_GROUP_MAX 64

#define NX_TRACE_NAME(id, name, every, peer) [NX_T_##id] = name,
static const char *const op_names[NX_T_NOPS] = {NCCL_SURFACE_TRACE_OPS(NX_TRACE_NAME)};
#undef NX_TRACE_NAME
#define NX_TRACE_EVERY(id, name, every, peer) [NX_T_##id] = every,
static const unsigned char op_every_rank[NX_T_NOPS] = {NCCL_SURFACE_TRACE_OPS(NX_TRACE_EVERY)};
#undef NX_TRACE_EVERY
#define NX_TRACE_PEER(id, name, every, peer) [NX_T_##id] = peer,
static const char *const op_peer[NX_T_NOPS] = {NCCL_SURFACE_TRACE_OPS(NX_TRACE_PEER)};
#undef NX_TRACE_PEER

const char *nx_trace_op_name(int op) { return op >= 0 && op < NX_T_NOPS ? op_names[op] : "?"; }
int nx_trace_op_every_rank(int op) { return op >= 0 && op < NX_T_NOPS && op_every_rank[op]; }
const char *nx_trace_op_peer(int op) { return op >= 0 && op < NX_T_NOPS ? op_peer[op] : ""; }

struct nx_trace_ring {
    uint64_t recorded;  /* the last entry's seq; stored by the writer with release order */
    uint64_t colls;     /* collective calls recorded (the entries' "coll"); the writer's own */
    uint32_t pos;       /* the next entry's index, (recorded % size) */
    uint32_t size;
    uint32_t group;     /* the group whose GroupStart this ring has recorded */
    uint32_t children;  /* splits and shrinks made on this communicator */
    uint32_t grows;
    uint64_t stalled;   /* the last seq nx_trace_stalled returned (list_mu) */
    int refs;           /* atomic */
    int closed;         /* under list_mu */
    int origin, color, key, rank, nranks;
    uint64_t id, parent;
    int has_parent;
    ncclComm_t handle;  /* under list_mu; NULL until bound, and once closed */
    nx_trace_ring *prev, *next;
    nx_trace_site_slot sites[NX_TRACE_SITE_CACHE];
    nx_trace_entry e[];
};

/* ---- process state ---- */

static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static nx_trace_ring *list_head, *list_tail;
static int nclosed;                /* closed rings in the list (list_mu) */
static uint64_t list_gen;          /* bumped when a handle's ring changes (atomic) */
static int ever;                   /* a ring was made (atomic) */
static int first_rank = -1, first_nranks = -1; /* of the first bound ring (list_mu) */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static long default_size = NX_TRACE_DEFAULT;
/* The clock of the entries (docs/api/trace.md#cost): CLOCK_MONOTONIC_COARSE by default, whose
 * read is a few loads of the vDSO page, at the kernel tick's resolution (1-4 ms); with
 * NCCL4PY_TRACE_CLOCK=fine a counter read to the nanosecond, which costs a recorded call about
 * three times as much on CI's VM. nx_trace_clock.read is the vDSO's clock_gettime, called
 * directly: glibc's wrapper in front of it doubles the cost of a coarse read (2.5 ns against 6 ns
 * there); clock_gettime itself where there is no vDSO (qemu-user, valgrind) or its function has
 * another name. */
struct nx_trace_clock_state nx_trace_clock = {0, clock_gettime};
static int use_tsc;
static uint64_t tick0;
static double mono0;

static double clock_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The TSC is a clock only where the kernel keeps time with it (then it is invariant and the same
 * on every CPU). */
static int kernel_uses_tsc(void)
{
    char buf[16] = {0};
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f == NULL)
        return 0;
    int ok = fgets(buf, sizeof buf, f) != NULL && strcmp(buf, "tsc\n") == 0;
    fclose(f);
    return ok;
}

static void find_vdso_clock(void)
{
#if defined(__x86_64__)
    const char *name = "__vdso_clock_gettime";
#elif defined(__aarch64__)
    const char *name = "__kernel_clock_gettime";
#else
    const char *name = NULL;
#endif
    void *vdso = name != NULL ? dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *fn = vdso != NULL ? dlsym(vdso, name) : NULL;
    struct timespec ts;
    if (fn != NULL && ((nx_trace_clock_fn)fn)(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        nx_trace_clock.read = (nx_trace_clock_fn)fn;
    /* the handle stays open: the vDSO is never unloaded */
}

static void process_init(void)
{
    const char *v = getenv("NCCL4PY_TRACE_BUFFER");
    if (v != NULL && *v != '\0') {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno != 0 || *end != '\0' || n < 0 || n > NX_TRACE_MAX)
            fprintf(stderr, "nccl4py: NCCL4PY_TRACE_BUFFER=%s is not a count from 0 to %ld; using %d\n", v,
                    NX_TRACE_MAX, NX_TRACE_DEFAULT);
        else
            default_size = n;
    }
    const char *clock = getenv("NCCL4PY_TRACE_CLOCK");
    if (clock != NULL && strcmp(clock, "fine") == 0)
        nx_trace_clock.fine = 1;
    else if (clock != NULL && *clock != '\0' && strcmp(clock, "coarse") != 0)
        fprintf(stderr, "nccl4py: NCCL4PY_TRACE_CLOCK=%s is not \"coarse\" or \"fine\"; using coarse\n", clock);
#if defined(__x86_64__)
    use_tsc = nx_trace_clock.fine && kernel_uses_tsc();
#else
    (void)kernel_uses_tsc;
#endif
    find_vdso_clock();
    tick0 = nx_trace_ticks();
    mono0 = clock_seconds(CLOCK_MONOTONIC);
}

long nx_trace_default_size(void)
{
    pthread_once(&init_once, process_init);
    return default_size;
}

int nx_trace_active(void) { return __atomic_load_n(&ever, __ATOMIC_ACQUIRE); }

/* ---- the clock ---- */

uint64_t nx_trace_fine_ticks(void)
{
#if defined(__x86_64__)
    if (NX_LIKELY(use_tsc))
        return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#endif
    struct timespec ts;
    nx_trace_clock.read(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}


const char *nx_trace_clock_name(double *resolution)
{
    struct timespec res = {0, 1};
    if (!nx_trace_clock.fine)
        clock_getres(CLOCK_MONOTONIC_COARSE, &res);
    *resolution = (double)res.tv_sec + (double)res.tv_nsec * 1e-9;
    return nx_trace_clock.fine ? "fine" : "coarse";
}

double nx_trace_ticks_to_mono(const nx_trace_snapshot *s, uint64_t t)
{
    if (!nx_trace_clock.fine) /* CLOCK_MONOTONIC_COARSE is CLOCK_MONOTONIC at the last tick: no calibration */
        return (double)t * 1e-9;
    if (s->tick1 <= s->tick0)
        return s->mono0;
    double rate = (s->mono1 - s->mono0) / (double)(s->tick1 - s->tick0);
    return s->mono0 + ((double)t - (double)s->tick0) * rate;
}

/* ---- identities ---- */

uint64_t nx_trace_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t nx_trace_child_id(nx_trace_ring *parent, nx_trace_origin origin, int color)
{
    if (parent == NULL)
        return 0;
    uint32_t n = origin == NX_ORIGIN_GROW ? parent->grows++ : parent->children++;
    int32_t c = origin == NX_ORIGIN_GROW ? -2 : color;
    uint64_t h = nx_trace_fnv(NX_FNV_BASIS, &parent->id, sizeof parent->id);
    h = nx_trace_fnv(h, &n, sizeof n);
    return nx_trace_fnv(h, &c, sizeof c);
}

/* ---- the list ---- */

long nx_trace_size_arg(PyObject *o, const char *fname)
{
    if (o == NULL || o == Py_None)
        return nx_trace_default_size();
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 'trace_buffer' must be an int or None, not %.200s", fname,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    long n = PyLong_AsLong(o);
    if (n == -1 && PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_OverflowError))
        return -1;
    if (n < 0 || n > NX_TRACE_MAX || PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s() argument 'trace_buffer' must be from 0 to %ld entries", fname,
                     NX_TRACE_MAX);
        return -1;
    }
    return n;
}

nx_trace_ring *nx_trace_ring_new(long size, uint64_t id, nx_trace_origin origin, const nx_trace_ring *parent,
                                 int color, int key)
{
    pthread_once(&init_once, process_init);
    if (size <= 0)
        return NULL;
    nx_trace_ring *r = calloc(1, sizeof *r + (size_t)size * sizeof(nx_trace_entry));
    if (r == NULL)
        return NULL;
    r->size = (uint32_t)size;
    r->refs = 2; /* the caller's and the list's */
    r->origin = origin;
    r->color = color;
    r->key = key;
    r->rank = r->nranks = -1;
    r->id = id;
    r->has_parent = parent != NULL;
    r->parent = parent != NULL ? parent->id : 0;
    pthread_mutex_lock(&list_mu);
    r->prev = list_tail;
    if (list_tail != NULL)
        list_tail->next = r;
    else
        list_head = r;
    list_tail = r;
    pthread_mutex_unlock(&list_mu);
    if (!__atomic_exchange_n(&ever, 1, __ATOMIC_ACQ_REL))
        nx_trace_start_service();
    return r;
}

void nx_trace_ring_incref(nx_trace_ring *r)
{
    if (r != NULL)
        __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void nx_trace_ring_decref(nx_trace_ring *r)
{
    if (r != NULL && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(r);
}

int nx_trace_ring_unbound(const nx_trace_ring *r)
{
    return r != NULL && __atomic_load_n(&r->handle, __ATOMIC_RELAXED) == NULL && !r->closed;
}

void nx_trace_ring_bind(nx_trace_ring *r, ncclComm_t handle, int rank, int nranks)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&list_mu);
    if (!r->closed && handle != NULL) {
        __atomic_store_n(&r->handle, handle, __ATOMIC_RELAXED);
        __atomic_add_fetch(&list_gen, 1, __ATOMIC_RELEASE);
    }
    if (rank >= 0 && nranks > 0) {
        r->rank = rank;
        r->nranks = nranks;
        if (first_rank < 0) {
            first_rank = rank;
            first_nranks = nranks;
        }
    }
    pthread_mutex_unlock(&list_mu);
}

void nx_trace_ring_bind_query(nx_trace_ring *r, ncclComm_t handle, int rank, int nranks)
{
    if (r == NULL)
        return;
    if ((rank < 0 || nranks <= 0) && nx_loader_ready() && nx_api.ncclCommUserRank != NULL &&
        nx_api.ncclCommCount != NULL) {
        ncclResult_t a, b;
        Py_BEGIN_ALLOW_THREADS
        a = nx_api.ncclCommUserRank(handle, &rank);
        b = nx_api.ncclCommCount(handle, &nranks);
        Py_END_ALLOW_THREADS
        if (a != ncclSuccess || b != ncclSuccess)
            rank = nranks = -1;
    }
    nx_trace_ring_bind(r, handle, rank, nranks);
}

/* Takes r out of the list (list_mu held). */
static void unlink_ring(nx_trace_ring *r)
{
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        list_head = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    else
        list_tail = r->prev;
    r->prev = r->next = NULL;
}

void nx_trace_ring_closed(nx_trace_ring *r)
{
    if (r == NULL)
        return;
    nx_trace_ring *drop = NULL;
    pthread_mutex_lock(&list_mu);
    if (!r->closed) {
        r->closed = 1;
        __atomic_store_n(&r->handle, NULL, __ATOMIC_RELAXED);
        __atomic_add_fetch(&list_gen, 1, __ATOMIC_RELEASE);
        if (++nclosed > NX_TRACE_KEEP_CLOSED) {
            for (drop = list_head; drop != NULL && !drop->closed; drop = drop->next)
                ;
            if (drop != NULL) {
                unlink_ring(drop);
                nclosed--;
            }
        }
    }
    pthread_mutex_unlock(&list_mu);
    nx_trace_ring_decref(drop);
}

/* A binding's ring lookup: the thread's last answer while no handle changed its ring since. */
static _Thread_local struct {
    ncclComm_t handle;
    nx_trace_ring *ring;
    uint64_t gen;
} find_cache;

nx_trace_ring *nx_trace_find(ncclComm_t handle)
{
    if (handle == NULL || !nx_trace_active())
        return NULL;
    uint64_t gen = __atomic_load_n(&list_gen, __ATOMIC_ACQUIRE);
    if (NX_LIKELY(find_cache.handle == handle && find_cache.gen == gen))
        return find_cache.ring;
    nx_trace_ring *found = NULL;
    pthread_mutex_lock(&list_mu);
    for (nx_trace_ring *r = list_tail; r != NULL && found == NULL; r = r->prev)
        if (r->handle == handle)
            found = r;
    gen = __atomic_load_n(&list_gen, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&list_mu);
    find_cache.handle = handle;
    find_cache.ring = found;
    find_cache.gen = gen;
    return found;
}

/* ---- recording ---- */

/* Writes the next entry of r (seqlock: odd stamp, the fields, even stamp). */
static nx_trace_mark write_entry(nx_trace_ring *r, const nx_trace_call *c, uint32_t group, uint32_t site,
                                 uint64_t now)
{
    uint64_t seq = __atomic_load_n(&r->recorded, __ATOMIC_RELAXED) + 1;
    uint32_t pos = r->pos;
    nx_trace_entry *e = &r->e[pos];
    r->pos = pos + 1 == r->size ? 0 : pos + 1;
    __atomic_store_n(&e->stamp, 2 * seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    e->call = *c;
    e->site = site;
    e->group = group;
    e->rc = 0;
    if (c->op < NX_T_NOPS && op_every_rank[c->op])
        r->colls++;
    e->coll = r->colls;
    e->t_enter = now;
    __atomic_store_n(&e->t_return, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->stamp, 2 * seq, __ATOMIC_RELEASE);
    __atomic_store_n(&r->recorded, seq, __ATOMIC_RELEASE);
    return (nx_trace_mark){e, 2 * seq};
}

/* This thread's open group: the rings that recorded its GroupStart, each referenced until the
 * outermost group end records their GroupEnd. Rings past NX_TRACE_GROUP_MAX get no GroupEnd. */
static _Thread_local struct {
    int n;
    uint32_t group;
    nx_trace_ring *rings[NX_TRACE_GROUP_MAX];
    nx_trace_mark marks[NX_TRACE_GROUP_MAX];
} open_group;

static void forget_group(void)
{
    for (int i = 0; i < open_group.n; i++)
        nx_trace_ring_decref(open_group.rings[i]);
    open_group.n = 0;
}

static NX_COLD void group_start_entry(nx_trace_ring *r, uint32_t group, uint32_t site, uint64_t now)
{
    static const nx_trace_call start = {.op = NX_T_GROUP_START};
    r->group = group;
    nx_trace_mark m = write_entry(r, &start, group, site, now);
    nx_trace_leave(m, 0);
    if (open_group.group != group)
        forget_group(); /* the rings of a group whose end was never seen */
    open_group.group = group;
    if (open_group.n < NX_TRACE_GROUP_MAX) {
        nx_trace_ring_incref(r);
        open_group.rings[open_group.n++] = r;
    }
}

nx_trace_mark nx_trace_enter(nx_trace_ring *r, const nx_trace_call *c)
{
    if (r == NULL)
        return (nx_trace_mark){NULL, 0};
    uint32_t site = nx_trace_site(r->sites);
    uint32_t group = NX_UNLIKELY(nx_groups_open()) ? nx_group_current() : 0;
    uint64_t now = nx_trace_ticks();
    if (NX_UNLIKELY(group != 0 && r->group != group))
        group_start_entry(r, group, site, now);
    return write_entry(r, c, group, site, now);
}

void nx_trace_event(nx_trace_ring *r, const nx_trace_call *c, int rc) { nx_trace_leave(nx_trace_enter(r, c), rc); }

void nx_trace_group_end_begin(void)
{
    static const nx_trace_call end = {.op = NX_T_GROUP_END};
    uint32_t group = nx_group_current();
    if (open_group.group != group) {
        forget_group();
        return;
    }
    for (int i = 0; i < open_group.n; i++) {
        nx_trace_ring *r = open_group.rings[i];
        open_group.marks[i] = write_entry(r, &end, group, nx_trace_site(r->sites), nx_trace_ticks());
    }
}

void nx_trace_group_end_done(int rc)
{
    for (int i = 0; i < open_group.n; i++) {
        nx_trace_leave(open_group.marks[i], rc);
        nx_trace_ring_decref(open_group.rings[i]);
    }
    open_group.n = 0;
    open_group.group = 0;
}

/* ---- the snapshot ---- */

/* Copies entry seq of r into *out; 0 when it was overwritten (or kept being written). */
static int copy_entry(const nx_trace_ring *r, uint64_t seq, nx_trace_entry *out)
{
    const nx_trace_entry *e = &r->e[(seq - 1) % r->size];
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t s1 = __atomic_load_n(&e->stamp, __ATOMIC_ACQUIRE);
        uint64_t back = __atomic_load_n(&e->t_return, __ATOMIC_ACQUIRE);
        memcpy(out, (const void *)e, sizeof *out);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t s2 = __atomic_load_n(&e->stamp, __ATOMIC_RELAXED);
        if (s1 == s2 && s1 == 2 * seq) {
            out->t_return = back;
            return 1;
        }
        if (s1 > 2 * seq + 1)
            return 0;
    }
    return 0;
}

static int copy_ring(const nx_trace_ring *r, nx_trace_ring_copy *c)
{
    c->id = r->id;
    c->parent = r->parent;
    c->has_parent = r->has_parent;
    c->origin = r->origin;
    c->color = r->color;
    c->key = r->key;
    c->rank = r->rank;
    c->nranks = r->nranks;
    c->recorded = __atomic_load_n(&r->recorded, __ATOMIC_ACQUIRE);
    uint64_t n = c->recorded < r->size ? c->recorded : r->size;
    c->n = 0;
    c->e = malloc((n > 0 ? n : 1) * sizeof *c->e);
    if (c->e == NULL)
        return -1;
    for (uint64_t seq = c->recorded - n + 1; seq <= c->recorded; seq++)
        if (copy_entry(r, seq, &c->e[c->n]))
            c->n++;
    return 0;
}

nx_trace_snapshot *nx_trace_snapshot_take(void)
{
    nx_trace_snapshot *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    pthread_mutex_lock(&list_mu);
    size_t n = 0;
    for (nx_trace_ring *r = list_head; r != NULL; r = r->next)
        n++;
    s->rings = calloc(n > 0 ? n : 1, sizeof *s->rings);
    int failed = s->rings == NULL;
    for (nx_trace_ring *r = list_head; r != NULL && !failed; r = r->next)
        if (r->recorded > 0 || !r->closed)
            failed = copy_ring(r, &s->rings[s->n++]) < 0;
    s->first_rank = first_rank;
    s->first_nranks = first_nranks;
    pthread_mutex_unlock(&list_mu);
    s->tick0 = tick0;
    s->mono0 = mono0;
    s->tick1 = nx_trace_ticks();
    s->mono1 = clock_seconds(CLOCK_MONOTONIC);
    s->wall1 = clock_seconds(CLOCK_REALTIME);
    if (failed) {
        nx_trace_snapshot_free(s);
        return NULL;
    }
    return s;
}

void nx_trace_snapshot_free(nx_trace_snapshot *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->rings[i].e);
    free(s->rings);
    free(s);
}

int nx_trace_stalled(double seconds, nx_trace_stall *out, int max)
{
    if (!nx_trace_active())
        return 0;
    uint64_t now = nx_trace_ticks();
    nx_trace_snapshot cal = {.tick0 = tick0, .mono0 = mono0, .tick1 = now, .mono1 = clock_seconds(CLOCK_MONOTONIC)};
    double now_s = nx_trace_ticks_to_mono(&cal, now);
    int n = 0;
    pthread_mutex_lock(&list_mu);
    for (nx_trace_ring *r = list_head; r != NULL && n < max; r = r->next) {
        uint64_t seq = __atomic_load_n(&r->recorded, __ATOMIC_ACQUIRE);
        nx_trace_entry e;
        if (r->closed || seq == 0 || seq <= r->stalled || !copy_entry(r, seq, &e) || e.t_return != 0)
            continue;
        double waited = now_s - nx_trace_ticks_to_mono(&cal, e.t_enter);
        if (waited < seconds)
            continue;
        r->stalled = seq;
        out[n++] = (nx_trace_stall){r->id, seq, e.call.op, r->rank, e.site, waited};
    }
    pthread_mutex_unlock(&list_mu);
    return n;
}

void nx_trace_fork_prepare(void) { pthread_mutex_lock(&list_mu); }
void nx_trace_fork_done(void) { pthread_mutex_unlock(&list_mu); }
