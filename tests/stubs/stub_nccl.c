/* A stub NCCL/RCCL library for the test suite, generated from the ABI table (src/include/abi.h).
 *
 * Every ncclResult_t row of the table becomes an exported function that
 *   1. records the call: the function and each argument widened to a uint64 (integers are
 *      sign- or zero-extended by their C type, pointers keep their bits, an ncclUniqueId passed by
 *      value is recorded as its first 8 bytes);
 *   2. runs its output hook, s_hook_<name>, if one is written by hand below: the hooks write
 *      what the real function would (a version, a handle, a count, ...) and snapshot the memory
 *      behind input pointers (unique ids, copied int/size_t arrays) into the call's record, since
 *      the binding frees its copies as soon as the call returns;
 *   3. blocks, if a test armed it, until released or until its own deadline passes (so a binding
 *      that holds the GIL fails the test instead of hanging it);
 *   4. returns the scripted status (ncclSuccess unless scripted).
 * The rows that return something else (text, a team, an int, nothing) are written by hand: they
 * record the call the same way and return a value derived from their `out` setting.
 * An ncclTeam_t passed by value is recorded as nRanks | rank << 16 | stride << 32 (16, 16 and 32
 * bits), an ncclMultimemHandle_t as its pointer.
 *
 * Control functions, all named stub_*, are driven from Python through ctypes (stubctl.py).
 *
 * Which rows a build exports is decided by a linker version script that this same file prints
 * when it is compiled as a program with -DSTUB_LIST_EXPORTS (stub_row_exported() below):
 *   -DSTUB_MAX_SINCE=<code>  leave out the NCCL rows whose minimum version is >= code
 *   -DSTUB_WITH_RCCL         also export the RCCL-only rows (the library then looks like RCCL)
 *   -DSTUB_OMIT='"a,b"'      leave out these rows by name (ncclGetVersion: "not an NCCL library")
 *   -DSTUB_VERSION=<code>    the default ncclGetVersion code (23203, NCCL 2.32.3)
 * Compile with -std=gnu11 (the argument-counting macros rely on GNU comma elision). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "abi.h"

#ifndef STUB_MAX_SINCE
#define STUB_MAX_SINCE INT_MAX
#endif
#ifndef STUB_OMIT
#define STUB_OMIT ""
#endif
#ifndef STUB_VERSION
#define STUB_VERSION 23203
#endif

#define STUB_API __attribute__((visibility("default")))
#define S_MAX_ARGS 12
#define S_RING 4096  /* calls kept; older ones are overwritten */
#define S_BLOB 1024  /* bytes of pointed-to memory kept per call */

/* ---- the table, as indices, names and versions ---- */

#define S_IDX_ROW(name, ret, params, args, since) S_IDX_##name,
enum { NCCL_ABI(S_IDX_ROW) S_NROWS };
#define S_COUNT_ROW(name, ret, params, args, since) +1
enum { S_NNCCL = 0 NCCL_ABI_NCCL(S_COUNT_ROW) };
#define S_NAME_ROW(name, ret, params, args, since) #name,
static const char *const s_names[S_NROWS] = {NCCL_ABI(S_NAME_ROW)};
#define S_SINCE_ROW(name, ret, params, args, since) since,
static const int s_since[S_NROWS] = {NCCL_ABI(S_SINCE_ROW)};

static int s_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

/* Whether this build exports row i (see the -D switches at the top). */
__attribute__((unused)) static int stub_row_exported(int i)
{
#ifndef STUB_WITH_RCCL
    if (i >= S_NNCCL)
        return 0;
#endif
    if (i < S_NNCCL && s_since[i] >= STUB_MAX_SINCE)
        return 0;
    return !s_in_list(STUB_OMIT, s_names[i]);
}

#ifdef STUB_LIST_EXPORTS
/* The version script for a shared build with the same switches. */
int main(void)
{
    printf("{\n  global:\n    stub_*;\n");
    for (int i = 0; i < S_NROWS; i++)
        if (stub_row_exported(i))
            printf("    %s;\n", s_names[i]);
    printf("  local:\n    *;\n};\n");
    return 0;
}
#else

/* ---- state, guarded by s_lock ---- */

typedef struct {
    int fn;
    int nargs;
    uint64_t args[S_MAX_ARGS];
    int blob_len;
    unsigned char blob[S_BLOB];
} s_record;

typedef struct {
    int status;       /* what the scripted calls return */
    long remaining;   /* that many calls return it; < 0: every call */
    uint64_t out;     /* the value the output hook writes */
    int armed;        /* the next call blocks */
    int blocked;      /* a call is blocked right now */
    int released;     /* the blocked call may go on */
    int timed_out;    /* a blocked call gave up at its deadline */
} s_fn_state;

static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cond;
static s_record s_ring[S_RING];
static long s_ncalls;
static s_fn_state s_fn[S_NROWS];
static int s_version = STUB_VERSION;
static int s_deadline_ms = 5000;
static char s_last_error[512];
static char s_error_strings[16][64];
static __thread s_record *s_current; /* the record of the call this thread is in */
static __thread int s_hook_rc;       /* a status the output hook decided (the emulated checks) */
static int s_struct_reader;          /* config-taking hooks read the config (stub_set_struct_reader) */
static int s_group_fill;             /* creation hooks in a group write at its end (stub_set_group_fill) */

static void s_defaults(void)
{
    memset(s_fn, 0, sizeof s_fn);
    for (int i = 0; i < S_NROWS; i++)
        s_fn[i].out = 0x57AB0000u + (uint64_t)i * 0x100u; /* handles and pointers: recognisable */
    s_fn[S_IDX_ncclCommCount].out = 4;
    s_fn[S_IDX_ncclCommUserRank].out = 1;
    s_fn[S_IDX_ncclCommCuDevice].out = 3;
    s_fn[S_IDX_ncclCommGetAsyncError].out = ncclSuccess;
    s_fn[S_IDX_ncclRedOpCreatePreMulSum].out = 17;
    s_fn[S_IDX_ncclGetUniqueId].out = 0x5A;     /* id byte i is (seed + i) & 0xff */
    s_fn[S_IDX_ncclCommGetUniqueId].out = 0x3C;
    s_fn[S_IDX_ncclGroupSimulateEnd].out = 0x40200000u; /* 2.5f, as IEEE-754 bits */
    s_fn[S_IDX_ncclCommMemStats].out = 0x123456789ull;
    s_version = STUB_VERSION;
    s_deadline_ms = 5000;
    s_last_error[0] = '\0';
    s_struct_reader = 0;
    s_group_fill = 0;
}

__attribute__((constructor)) static void s_init(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s_cond, &attr);
    pthread_condattr_destroy(&attr);
    for (int i = 0; i < 16; i++)
        snprintf(s_error_strings[i], sizeof s_error_strings[i], "stub: error string for result %d", i);
    s_defaults();
}

/* ---- recording ---- */

static s_record *s_record_call(int fn, const uint64_t *args, int nargs)
{
    s_record *r = &s_ring[s_ncalls % S_RING];
    s_ncalls++;
    r->fn = fn;
    r->nargs = nargs;
    memset(r->args, 0, sizeof r->args);
    if (nargs > 0) /* a call without arguments passes NULL, which memcpy may not be given */
        memcpy(r->args, args, (size_t)nargs * sizeof *args);
    r->blob_len = 0;
    return r;
}

static s_record *s_enter(int fn, const uint64_t *args, int nargs)
{
    pthread_mutex_lock(&s_lock);
    s_record *r = s_record_call(fn, args, nargs);
    pthread_mutex_unlock(&s_lock);
    s_current = r;
    s_hook_rc = ncclSuccess;
    return r;
}

/* Appends len bytes at p to the current call's record (output hooks only; p may be NULL). */
static void s_snap(const void *p, size_t len)
{
    s_record *r = s_current;
    if (r == NULL || p == NULL || len == 0)
        return;
    pthread_mutex_lock(&s_lock);
    size_t room = S_BLOB - (size_t)r->blob_len;
    if (len > room)
        len = room;
    memcpy(r->blob + r->blob_len, p, len);
    r->blob_len += (int)len;
    pthread_mutex_unlock(&s_lock);
}

static uint64_t s_out(int fn)
{
    pthread_mutex_lock(&s_lock);
    uint64_t v = s_fn[fn].out;
    pthread_mutex_unlock(&s_lock);
    return v;
}

/* Blocks if armed, then hands out the scripted status. */
static ncclResult_t s_leave(int fn)
{
    pthread_mutex_lock(&s_lock);
    s_fn_state *f = &s_fn[fn];
    int timed_out = 0;
    if (f->armed) {
        f->armed = 0;
        f->blocked = 1;
        pthread_cond_broadcast(&s_cond);
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += s_deadline_ms / 1000;
        deadline.tv_nsec += (long)(s_deadline_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L)
            deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
        while (!f->released && !timed_out)
            if (pthread_cond_timedwait(&s_cond, &s_lock, &deadline) == ETIMEDOUT)
                timed_out = 1;
        f->blocked = 0;
        f->released = 0;
        f->timed_out |= timed_out;
        pthread_cond_broadcast(&s_cond);
    }
    ncclResult_t rc = (ncclResult_t)s_hook_rc;
    if (f->remaining != 0) {
        rc = (ncclResult_t)f->status;
        if (f->remaining > 0)
            f->remaining--;
    }
    if (timed_out)
        rc = ncclTimeout; /* a call nobody released fails loudly */
    pthread_mutex_unlock(&s_lock);
    s_current = NULL;
    return rc;
}

/* ---- one argument as a uint64 ---- */

static uint64_t s_arg_uid(ncclUniqueId id)
{
    uint64_t v;
    memcpy(&v, id.internal, sizeof v);
    return v;
}
static uint64_t s_arg_int(int v) { return (uint64_t)(int64_t)v; }
static uint64_t s_arg_uint(unsigned int v) { return v; }
static uint64_t s_arg_long(long v) { return (uint64_t)v; }
static uint64_t s_arg_ulong(unsigned long v) { return v; }
static uint64_t s_arg_llong(long long v) { return (uint64_t)v; }
static uint64_t s_arg_ullong(unsigned long long v) { return v; }
static uint64_t s_arg_ptr(const volatile void *p) { return (uint64_t)(uintptr_t)p; }
static uint64_t s_arg_team(ncclTeam_t t)
{
    return (uint64_t)(uint16_t)t.nRanks | (uint64_t)(uint16_t)t.rank << 16 | (uint64_t)(uint32_t)t.stride << 32;
}
static uint64_t s_arg_multimem(ncclMultimemHandle_t h) { return (uint64_t)(uintptr_t)h.mcBasePtr; }
static ncclTeam_t s_team_of(uint64_t v)
{
    return (ncclTeam_t){(int)(uint16_t)v, (int)(uint16_t)(v >> 16), (int)(uint32_t)(v >> 32)};
}

/* Enumerations are compatible with unsigned int (GCC, no negative enumerators) and take that
 * branch; every pointer takes the default one. */
#define S_ARG(x)                                                                                   \
    , _Generic((x), ncclUniqueId: s_arg_uid, ncclTeam_t: s_arg_team, ncclMultimemHandle_t: s_arg_multimem, \
               int: s_arg_int, unsigned int: s_arg_uint,                                           \
               long: s_arg_long, unsigned long: s_arg_ulong, long long: s_arg_llong,               \
               unsigned long long: s_arg_ullong, default: s_arg_ptr)(x)

/* ---- mapping over an argument tuple ---- */

#define S_CAT(a, b) S_CAT_(a, b)
#define S_CAT_(a, b) a##b
#define S_UNPAREN(...) __VA_ARGS__
#define S_NARGS(...) S_NARGS_(0, ##__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define S_NARGS_(z, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define S_MAP(f, ...) S_CAT(S_MAP_, S_NARGS(__VA_ARGS__))(f, __VA_ARGS__)
#define S_MAP_0(f, ...)
#define S_MAP_1(f, x) f(x)
#define S_MAP_2(f, x, ...) f(x) S_MAP_1(f, __VA_ARGS__)
#define S_MAP_3(f, x, ...) f(x) S_MAP_2(f, __VA_ARGS__)
#define S_MAP_4(f, x, ...) f(x) S_MAP_3(f, __VA_ARGS__)
#define S_MAP_5(f, x, ...) f(x) S_MAP_4(f, __VA_ARGS__)
#define S_MAP_6(f, x, ...) f(x) S_MAP_5(f, __VA_ARGS__)
#define S_MAP_7(f, x, ...) f(x) S_MAP_6(f, __VA_ARGS__)
#define S_MAP_8(f, x, ...) f(x) S_MAP_7(f, __VA_ARGS__)
#define S_MAP_9(f, x, ...) f(x) S_MAP_8(f, __VA_ARGS__)
#define S_MAP_10(f, x, ...) f(x) S_MAP_9(f, __VA_ARGS__)
#define S_MAP_11(f, x, ...) f(x) S_MAP_10(f, __VA_ARGS__)
#define S_MAP_12(f, x, ...) f(x) S_MAP_11(f, __VA_ARGS__)

/* ---- rows returning ncclResult_t are generated; the others are written by hand ---- */

#define S_SECOND(a, b, ...) b
#define S_IS_PROBE(...) S_SECOND(__VA_ARGS__, 0, ~)
#define S_STATUS_ncclResult_t ~, 1
#define S_RETURNS_STATUS(ret) S_IS_PROBE(S_CAT_(S_STATUS_, ret))

#define S_ROW_0(name, params, args)
#define S_ROW_1(name, params, args)                                                                \
    __attribute__((weak, visibility("hidden"))) void s_hook_##name params;                         \
    STUB_API ncclResult_t name params                                                              \
    {                                                                                              \
        uint64_t a_[S_MAX_ARGS + 1] = {0 S_MAP(S_ARG, S_UNPAREN args)};                            \
        s_enter(S_IDX_##name, a_ + 1, S_NARGS args);                                               \
        if (s_hook_##name)                                                                         \
            s_hook_##name args;                                                                    \
        return s_leave(S_IDX_##name);                                                              \
    }
#define S_ROW(name, ret, params, args, since) S_CAT(S_ROW_, S_RETURNS_STATUS(ret))(name, params, args)

NCCL_ABI(S_ROW)

/* ---- the rows that do not return a status ---- */

STUB_API const char *ncclGetErrorString(ncclResult_t result)
{
    uint64_t a = s_arg_uint(result);
    s_enter(S_IDX_ncclGetErrorString, &a, 1);
    s_leave(S_IDX_ncclGetErrorString);
    unsigned r = (unsigned)result;
    return r < 16 ? s_error_strings[r] : "stub: error string for an unknown result";
}

STUB_API const char *ncclGetLastError(ncclComm_t comm)
{
    uint64_t a = s_arg_ptr(comm);
    s_enter(S_IDX_ncclGetLastError, &a, 1);
    s_leave(S_IDX_ncclGetLastError);
    return s_last_error;
}

/* The team functions return the team their `out` setting encodes (as s_arg_team records one). */
#define S_TEAM_FN(name)                                                                            \
    STUB_API ncclTeam_t name(ncclComm_t comm)                                                      \
    {                                                                                              \
        uint64_t a = s_arg_ptr(comm);                                                              \
        s_enter(S_IDX_##name, &a, 1);                                                              \
        s_leave(S_IDX_##name);                                                                     \
        return s_team_of(s_out(S_IDX_##name));                                                     \
    }
S_TEAM_FN(ncclTeamWorld)
S_TEAM_FN(ncclTeamLsa)
S_TEAM_FN(ncclTeamRail)
S_TEAM_FN(ncclTeamCftMultimem)

STUB_API ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode)
{
    uint64_t a[2] = {s_arg_ptr(comm), s_arg_uint(mode)};
    s_enter(S_IDX_ncclTeamCft, a, 2);
    s_leave(S_IDX_ncclTeamCft);
    return s_team_of(s_out(S_IDX_ncclTeamCft));
}

/* The rank conversions and the slot count return their `out` setting as an int. */
STUB_API int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank)
{
    uint64_t a[3] = {s_arg_ptr(comm), s_arg_team(team), s_arg_int(rank)};
    s_enter(S_IDX_ncclTeamRankToWorld, a, 3);
    s_leave(S_IDX_ncclTeamRankToWorld);
    return (int)s_out(S_IDX_ncclTeamRankToWorld);
}

STUB_API int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank)
{
    uint64_t a[3] = {s_arg_ptr(comm), s_arg_team(team), s_arg_int(rank)};
    s_enter(S_IDX_ncclTeamRankToLsa, a, 3);
    s_leave(S_IDX_ncclTeamRankToLsa);
    return (int)s_out(S_IDX_ncclTeamRankToLsa);
}

STUB_API int ncclLLA2ACalcSlots(int maxElts, int maxEltSize)
{
    uint64_t a[2] = {s_arg_int(maxElts), s_arg_int(maxEltSize)};
    s_enter(S_IDX_ncclLLA2ACalcSlots, a, 2);
    s_leave(S_IDX_ncclLLA2ACalcSlots);
    return (int)s_out(S_IDX_ncclLLA2ACalcSlots);
}

STUB_API void ncclParamDumpAll(void)
{
    s_enter(S_IDX_ncclParamDumpAll, NULL, 0);
    s_leave(S_IDX_ncclParamDumpAll);
}

/* ---- output hooks: what the real functions write, and snapshots of what they read ---- */

#define S_HOOK(name) __attribute__((visibility("hidden"))) void s_hook_##name
#define S_WRITE(p, v)                \
    do {                             \
        if ((p) != NULL)             \
            *(p) = (v);              \
    } while (0)

static void s_read_config(const ncclConfig_t *config);

/* ---- handles filled at the group end ----
 * NCCL may write a communicator or window created inside a group only when the group ends. With
 * stub_set_group_fill(1) the stub does so: a creation hook called while this thread's group depth
 * (counted by the ncclGroupStart/ncclGroupEnd hooks) is positive records the slot and the value,
 * and the outermost ncclGroupEnd writes them. A binding that let the slot's owner go before then
 * would have the stub write into freed memory. */
#define S_PENDING_MAX 64
static __thread int s_group_depth;
static __thread int s_npending;
static __thread struct {
    void **slot;
    void *value;
} s_pending[S_PENDING_MAX];

static void s_write_handle(void **slot, void *value)
{
    pthread_mutex_lock(&s_lock);
    int defer = s_group_fill && s_group_depth > 0;
    pthread_mutex_unlock(&s_lock);
    if (slot == NULL)
        return;
    if (!defer) {
        *slot = value;
    } else if (s_npending < S_PENDING_MAX) {
        s_pending[s_npending].slot = slot;
        s_pending[s_npending].value = value;
        s_npending++;
    } else {
        s_hook_rc = ncclInternalError; /* more creations in one group than the stub keeps */
    }
}

S_HOOK(ncclGroupStart)(void) { s_group_depth++; }
S_HOOK(ncclGroupEnd)(void)
{
    if (s_group_depth > 0 && --s_group_depth == 0) {
        for (int i = 0; i < s_npending; i++)
            *s_pending[i].slot = s_pending[i].value;
        s_npending = 0;
    }
}

static void s_fill_id(ncclUniqueId *id, uint64_t seed)
{
    for (int i = 0; id != NULL && i < NCCL_UNIQUE_ID_BYTES; i++)
        id->internal[i] = (char)(unsigned char)(seed + (uint64_t)i);
}

S_HOOK(ncclGetVersion)(int *version)
{
    pthread_mutex_lock(&s_lock);
    S_WRITE(version, s_version);
    pthread_mutex_unlock(&s_lock);
}
S_HOOK(ncclMemAlloc)(void **ptr, size_t size)
{
    (void)size;
    S_WRITE(ptr, (void *)(uintptr_t)s_out(S_IDX_ncclMemAlloc));
}
S_HOOK(ncclGetUniqueId)(ncclUniqueId *id) { s_fill_id(id, s_out(S_IDX_ncclGetUniqueId)); }
S_HOOK(ncclCommGetUniqueId)(ncclComm_t comm, ncclUniqueId *id)
{
    (void)comm;
    s_fill_id(id, s_out(S_IDX_ncclCommGetUniqueId));
}
S_HOOK(ncclCommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config)
{
    (void)nranks, (void)rank;
    s_snap(&id, sizeof id);
    s_read_config(config);
    s_write_handle((void **)comm, (void *)(uintptr_t)s_out(S_IDX_ncclCommInitRankConfig));
}
S_HOOK(ncclCommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)nranks, (void)rank;
    s_snap(&id, sizeof id);
    s_write_handle((void **)comm, (void *)(uintptr_t)s_out(S_IDX_ncclCommInitRank));
}
/* comm[k] = out + k; devlist (ndev ints) is kept. */
S_HOOK(ncclCommInitAll)(ncclComm_t *comm, int ndev, const int *devlist)
{
    uint64_t base = s_out(S_IDX_ncclCommInitAll);
    if (ndev > 0)
        s_snap(devlist, (size_t)ndev * sizeof *devlist);
    for (int k = 0; comm != NULL && k < ndev; k++)
        comm[k] = (ncclComm_t)(uintptr_t)(base + (uint64_t)k);
}
S_HOOK(ncclCommSplit)(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    (void)comm, (void)color, (void)key;
    s_read_config(config);
    s_write_handle((void **)newcomm, (void *)(uintptr_t)s_out(S_IDX_ncclCommSplit));
}
S_HOOK(ncclCommShrink)(ncclComm_t comm, int *list, int count, ncclComm_t *newcomm, ncclConfig_t *config,
                       int flags)
{
    (void)comm, (void)config, (void)flags;
    if (count > 0)
        s_snap(list, (size_t)count * sizeof *list);
    s_write_handle((void **)newcomm, (void *)(uintptr_t)s_out(S_IDX_ncclCommShrink));
}
S_HOOK(ncclCommGrow)(ncclComm_t comm, int n, const ncclUniqueId *id, int rank, ncclComm_t *newcomm,
                     ncclConfig_t *config)
{
    (void)comm, (void)n, (void)rank, (void)config;
    s_snap(id, sizeof *id);
    s_write_handle((void **)newcomm, (void *)(uintptr_t)s_out(S_IDX_ncclCommGrow));
}
S_HOOK(ncclCommInitRankScalable)(ncclComm_t *newcomm, int nranks, int myrank, int nid, ncclUniqueId *ids,
                                 ncclConfig_t *config)
{
    (void)nranks, (void)myrank, (void)config;
    if (nid > 0)
        s_snap(ids, (size_t)nid * sizeof *ids);
    s_write_handle((void **)newcomm, (void *)(uintptr_t)s_out(S_IDX_ncclCommInitRankScalable));
}
S_HOOK(ncclCommGetAsyncError)(ncclComm_t comm, ncclResult_t *state)
{
    (void)comm;
    S_WRITE(state, (ncclResult_t)s_out(S_IDX_ncclCommGetAsyncError));
}
S_HOOK(ncclCommCount)(const ncclComm_t comm, int *v)
{
    (void)comm;
    S_WRITE(v, (int)s_out(S_IDX_ncclCommCount));
}
S_HOOK(ncclCommCuDevice)(const ncclComm_t comm, int *v)
{
    (void)comm;
    S_WRITE(v, (int)s_out(S_IDX_ncclCommCuDevice));
}
S_HOOK(ncclCommUserRank)(const ncclComm_t comm, int *v)
{
    (void)comm;
    S_WRITE(v, (int)s_out(S_IDX_ncclCommUserRank));
}
S_HOOK(ncclCommRegister)(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    (void)comm, (void)buff, (void)size;
    S_WRITE(handle, (void *)(uintptr_t)s_out(S_IDX_ncclCommRegister));
}
S_HOOK(ncclCommMemStats)(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    (void)comm, (void)stat;
    S_WRITE(value, s_out(S_IDX_ncclCommMemStats));
}
S_HOOK(ncclCommWindowRegister)(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags)
{
    (void)comm, (void)buff, (void)size, (void)flags;
    s_write_handle((void **)win, (void *)(uintptr_t)s_out(S_IDX_ncclCommWindowRegister));
}
S_HOOK(ncclWinGetUserPtr)(ncclComm_t comm, ncclWindow_t win, void **out)
{
    (void)comm, (void)win;
    S_WRITE(out, (void *)(uintptr_t)s_out(S_IDX_ncclWinGetUserPtr));
}
S_HOOK(ncclRedOpCreatePreMulSum)(ncclRedOp_t *op, void *scalar, ncclDataType_t dt, ncclScalarResidence_t res,
                                 ncclComm_t comm)
{
    (void)scalar, (void)dt, (void)res, (void)comm;
    S_WRITE(op, (ncclRedOp_t)s_out(S_IDX_ncclRedOpCreatePreMulSum));
}
S_HOOK(ncclWaitSignal)(int n, ncclWaitSignalDesc_t *descs, ncclComm_t comm, cudaStream_t stream)
{
    (void)comm, (void)stream;
    if (n > 0)
        s_snap(descs, (size_t)n * sizeof *descs);
}
/* Keeps the header the binding stamped (size, magic, version), then fills the estimate. */
S_HOOK(ncclGroupSimulateEnd)(ncclSimInfo_t *info)
{
    if (s_group_depth > 0 && --s_group_depth == 0)
        s_npending = 0; /* a simulated group creates nothing */
    if (info == NULL)
        return;
    s_snap(info, sizeof *info);
    uint32_t bits = (uint32_t)s_out(S_IDX_ncclGroupSimulateEnd);
    memcpy(&info->estimatedTime, &bits, sizeof bits);
}
/* As the release the stub reports reads ncclCommProperties_t: a version above it is
 * ncclInvalidUsage; otherwise the header is kept (snapshot) and the fields of min(props.version,
 * that release) are written, the values of the RCCL fork's ABI test first: rank 3, nRanks 8,
 * cudaDev 5, nvmlDev 9, deviceApiSupport 1, multimemSupport 0, ginType PROXY (2); from 2.29.4
 * nLsaTeams 42, hostRmaSupport 1, railedGinType GDAKI (3); from 2.31 commHash 0x1234567890abcdef,
 * ginMinStride 2, ginConnectionType RAIL (2), ginSupport {0, 2, 3}, devCommRuntimeVersionSize 248;
 * from 2.32 cftSupport 1, cftMulticastSupport 0, cftCountedSupport 1. */
S_HOOK(ncclCommQueryProperties)(ncclComm_t comm, ncclCommProperties_t *p)
{
    (void)comm;
    if (p == NULL)
        return;
    s_snap(p, 16);
    pthread_mutex_lock(&s_lock);
    int lib = s_version;
    pthread_mutex_unlock(&s_lock);
    if (p->magic != NCCL_API_MAGIC || (int)p->version > lib) {
        s_hook_rc = ncclInvalidUsage;
        return;
    }
    int v = (int)p->version;
    p->rank = 3, p->nRanks = 8, p->cudaDev = 5, p->nvmlDev = 9;
    p->deviceApiSupport = 1, p->multimemSupport = 0, p->ginType = ncclGinTypeProxy;
    if (v >= NCCL_ABI_VERSION_CODE(2, 29, 4))
        p->nLsaTeams = 42, p->hostRmaSupport = 1, p->railedGinType = ncclGinTypeGdaki;
    if (v >= NCCL_ABI_VERSION_CODE(2, 31, 0)) {
        p->commHash = 0x1234567890abcdefull, p->ginMinStride = 2, p->ginConnectionType = ncclGinConnectionRail;
        memset(p->ginSupport, 0, sizeof p->ginSupport);
        p->ginSupport[0] = p->ginSupport[2] = p->ginSupport[3] = 1;
        p->devCommRuntimeVersionSize = 248;
    }
    if (v >= NCCL_ABI_VERSION_CODE(2, 32, 0))
        p->cftSupport = 1, p->cftMulticastSupport = 0, p->cftCountedSupport = 1;
}

/* The size of ncclConfig_t in a release: the layout grows at its end (nccl_abi.h). */
static size_t s_config_size(int version)
{
    if (version >= NCCL_ABI_VERSION_CODE(2, 32, 0))
        return sizeof(ncclConfig_t);
    if (version >= NCCL_ABI_VERSION_CODE(2, 31, 0))
        return offsetof(ncclConfig_t, nvlsHostMode);
    if (version >= NCCL_ABI_VERSION_CODE(2, 30, 5))
        return offsetof(ncclConfig_t, launchOrderImplicit);
    if (version >= NCCL_ABI_VERSION_CODE(2, 30, 0))
        return offsetof(ncclConfig_t, graphStreamOrdering);
    if (version >= NCCL_ABI_VERSION_CODE(2, 29, 0))
        return offsetof(ncclConfig_t, maxP2pPeers);
    if (version >= NCCL_ABI_VERSION_CODE(2, 28, 0))
        return offsetof(ncclConfig_t, graphUsageMode);
    return offsetof(ncclConfig_t, nChannelsPerNetPeer);
}

/* With stub_set_struct_reader(1), a config-taking creation function reads its config as the
 * release the stub reports does: a bad magic is ncclInvalidArgument, and min(config.size, that
 * release's size) bytes are copied (snapshot appended to the record). Off by default: most tests
 * pass made-up config addresses. */
static void s_read_config(const ncclConfig_t *config)
{
    pthread_mutex_lock(&s_lock);
    int on = s_struct_reader, lib = s_version;
    pthread_mutex_unlock(&s_lock);
    if (!on || config == NULL)
        return;
    if (config->magic != NCCL_API_MAGIC) {
        s_hook_rc = ncclInvalidArgument;
        return;
    }
    size_t n = s_config_size(lib);
    s_snap(config, config->size < n ? config->size : n);
}
S_HOOK(ncclGetLsaMultimemDevicePointer)(ncclWindow_t window, size_t offset, void **out)
{
    (void)window, (void)offset;
    S_WRITE(out, (void *)(uintptr_t)s_out(S_IDX_ncclGetLsaMultimemDevicePointer));
}
S_HOOK(ncclGetLsaDevicePointer)(ncclWindow_t window, size_t offset, int rank, void **out)
{
    (void)window, (void)offset, (void)rank;
    S_WRITE(out, (void *)(uintptr_t)s_out(S_IDX_ncclGetLsaDevicePointer));
}
S_HOOK(ncclGetPeerDevicePointer)(ncclWindow_t window, size_t offset, int peer, void **out)
{
    (void)window, (void)offset, (void)peer;
    S_WRITE(out, (void *)(uintptr_t)s_out(S_IDX_ncclGetPeerDevicePointer));
}

S_HOOK(ncclGetMultimemDevicePointer)(ncclWindow_t window, size_t offset, ncclMultimemHandle_t mm, void **out)
{
    (void)window, (void)offset, (void)mm;
    S_WRITE(out, (void *)(uintptr_t)s_out(S_IDX_ncclGetMultimemDevicePointer));
}
/* The LE queries write leId = out (low 32 bits) and leOffset = out >> 32. */
static void s_le_info(int fn, ncclCftLeId_t *leId, size_t *leOffset)
{
    uint64_t v = s_out(fn);
    S_WRITE(leId, (ncclCftLeId_t)v);
    S_WRITE(leOffset, (size_t)(v >> 32));
}
S_HOOK(ncclGetMultimemDeviceLeInfo)(ncclWindow_t window, size_t offset, ncclCftLeId_t *leId, size_t *leOffset)
{
    (void)window, (void)offset;
    s_le_info(S_IDX_ncclGetMultimemDeviceLeInfo, leId, leOffset);
}
S_HOOK(ncclGetCftDeviceLeInfo)(ncclWindow_t window, size_t offset, int peer, ncclTeam_t team, ncclCftLeId_t *leId,
                               size_t *leOffset)
{
    (void)window, (void)offset, (void)peer, (void)team;
    s_le_info(S_IDX_ncclGetCftDeviceLeInfo, leId, leOffset);
}
S_HOOK(ncclGetPeerDeviceLeInfo)(ncclWindow_t window, size_t offset, int peer, ncclCftLeId_t *leId, size_t *leOffset)
{
    (void)window, (void)offset, (void)peer;
    s_le_info(S_IDX_ncclGetPeerDeviceLeInfo, leId, leOffset);
}
/* The requirement creators fill the handle's buffer handle with `out` and zero the requirement
 * except bufferSize = 4096 (a recognisable value). */
static void s_requirement(ncclDevResourceRequirements_t *req)
{
    if (req == NULL)
        return;
    memset(req, 0, sizeof *req);
    req->bufferSize = 4096;
}
S_HOOK(ncclLsaBarrierCreateRequirement)(ncclTeam_t team, int n, ncclLsaBarrierHandle_t *h,
                                        ncclDevResourceRequirements_t *req)
{
    (void)team;
    if (h != NULL)
        h->bufHandle = (uint32_t)s_out(S_IDX_ncclLsaBarrierCreateRequirement), h->nBarriers = n;
    s_requirement(req);
}
S_HOOK(ncclGinBarrierCreateRequirement)(ncclComm_t comm, ncclTeam_t team, int n, ncclGinBarrierHandle_t *h,
                                        ncclDevResourceRequirements_t *req)
{
    (void)comm, (void)team, (void)n;
    if (h != NULL)
        h->signal0 = (uint32_t)s_out(S_IDX_ncclGinBarrierCreateRequirement), h->unused = 0;
    s_requirement(req);
}
S_HOOK(ncclLLA2ACreateRequirement)(int nBlocks, int nSlots, ncclLLA2AHandle_t *h, ncclDevResourceRequirements_t *req)
{
    (void)nBlocks;
    if (h != NULL)
        h->bufHandle = (uint32_t)s_out(S_IDX_ncclLLA2ACreateRequirement), h->nSlots = (uint32_t)nSlots;
    s_requirement(req);
}
/* The key-based parameter reads: the key is kept; the value is "stub-<key>". */
static __thread char s_param_value[96];
S_HOOK(ncclParamGetParameter)(const char *key, const char **value, int *len)
{
    if (key != NULL)
        s_snap(key, strlen(key) + 1);
    snprintf(s_param_value, sizeof s_param_value, "stub-%s", key ? key : "");
    S_WRITE(value, s_param_value);
    S_WRITE(len, (int)strlen(s_param_value));
}
/* The key table has a hole (NULL), which the readers leave out, and a key that is not UTF-8
 * (0xff), which they decode with U+FFFD in its place. */
static const char *s_param_keys[] = {"NCCL_STUB_A", NULL, "NCCL_STUB_B", "NCCL_STUB_C", "NCCL_STUB_\xff"};
S_HOOK(ncclParamGetAllParameterKeys)(const char ***table, int *len)
{
    S_WRITE(table, s_param_keys);
    S_WRITE(len, (int)(sizeof s_param_keys / sizeof s_param_keys[0]));
}
/* The encryption config is kept as the binding passed it (its 32 bytes). */
S_HOOK(ncclSetEncryption)(const ncclEncryptionConfig_t *config)
{
    s_snap(config, config ? sizeof *config : 0);
}

/* The four size_t[nranks] arrays, nranks being what ncclCommCount reports. */
static void s_snap_alltoallv(const size_t *sc, const size_t *sd, const size_t *rc, const size_t *rd)
{
    int n = (int)s_out(S_IDX_ncclCommCount);
    if (n <= 0)
        return;
    s_snap(sc, (size_t)n * sizeof *sc);
    s_snap(sd, (size_t)n * sizeof *sd);
    s_snap(rc, (size_t)n * sizeof *rc);
    s_snap(rd, (size_t)n * sizeof *rd);
}
S_HOOK(ncclAlltoAllv)(const void *sb, const size_t sc[], const size_t sd[], void *rb, const size_t rc[],
                      const size_t rd[], ncclDataType_t dt, ncclComm_t comm, hipStream_t stream)
{
    (void)sb, (void)rb, (void)dt, (void)comm, (void)stream;
    s_snap_alltoallv(sc, sd, rc, rd);
}
S_HOOK(ncclAllToAllv)(const void *sb, const size_t sc[], const size_t sd[], void *rb, const size_t rc[],
                      const size_t rd[], ncclDataType_t dt, ncclComm_t comm, hipStream_t stream)
{
    (void)sb, (void)rb, (void)dt, (void)comm, (void)stream;
    s_snap_alltoallv(sc, sd, rc, rd);
}

/* ---- control, for the tests ---- */

static int s_index(const char *name)
{
    for (int i = 0; name != NULL && i < S_NROWS; i++)
        if (strcmp(s_names[i], name) == 0)
            return i;
    return -1;
}

/* Forgets every call and script, and restores every default. */
STUB_API void stub_reset(void)
{
    pthread_mutex_lock(&s_lock);
    s_ncalls = 0;
    s_defaults();
    pthread_mutex_unlock(&s_lock);
    s_group_depth = 0; /* the calling thread's group and its pending handles */
    s_npending = 0;
}

/* Calls recorded since the last reset (the ring keeps the last S_RING of them). */
STUB_API long stub_ncalls(void)
{
    pthread_mutex_lock(&s_lock);
    long n = s_ncalls;
    pthread_mutex_unlock(&s_lock);
    return n;
}

/* Call i (0 = the first since the reset): its name, argument count and arguments (args has room
 * for 12), and up to cap bytes of its snapshot in blob. Returns the snapshot's length, or -1 when
 * call i is not (or no longer) in the ring. */
STUB_API int stub_call(long i, const char **name, int *nargs, uint64_t *args, unsigned char *blob, int cap)
{
    pthread_mutex_lock(&s_lock);
    int rc = -1;
    if (i >= 0 && i < s_ncalls && i >= s_ncalls - S_RING) {
        const s_record *r = &s_ring[i % S_RING];
        *name = s_names[r->fn];
        *nargs = r->nargs;
        memcpy(args, r->args, sizeof r->args);
        rc = r->blob_len;
        if (blob != NULL && cap > 0)
            memcpy(blob, r->blob, (size_t)(rc < cap ? rc : cap));
    }
    pthread_mutex_unlock(&s_lock);
    return rc;
}

/* The named function returns status for its next `count` calls (count < 0: for every call;
 * 0: success again). -1 for an unknown name. */
STUB_API int stub_script(const char *name, int status, long count)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    pthread_mutex_lock(&s_lock);
    s_fn[i].status = status;
    s_fn[i].remaining = count;
    pthread_mutex_unlock(&s_lock);
    return 0;
}

/* The value the named function's output hook writes (a handle, a pointer, a count, a seed ...). */
STUB_API int stub_set_out(const char *name, uint64_t value)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    pthread_mutex_lock(&s_lock);
    s_fn[i].out = value;
    pthread_mutex_unlock(&s_lock);
    return 0;
}

STUB_API uint64_t stub_get_out(const char *name)
{
    int i = s_index(name);
    return i < 0 ? 0 : s_out(i);
}

STUB_API void stub_set_version(int code)
{
    pthread_mutex_lock(&s_lock);
    s_version = code;
    pthread_mutex_unlock(&s_lock);
}

/* 1: the creation functions read their config as the reported release would (s_read_config). */
STUB_API void stub_set_struct_reader(int on)
{
    pthread_mutex_lock(&s_lock);
    s_struct_reader = on;
    pthread_mutex_unlock(&s_lock);
}

/* 1: creation calls made inside a group write their handle at the group's end (s_write_handle). */
STUB_API void stub_set_group_fill(int on)
{
    pthread_mutex_lock(&s_lock);
    s_group_fill = on;
    pthread_mutex_unlock(&s_lock);
}

/* The text ncclGetLastError returns (for every communicator). */
STUB_API void stub_set_last_error(const char *text)
{
    pthread_mutex_lock(&s_lock);
    snprintf(s_last_error, sizeof s_last_error, "%s", text ? text : "");
    pthread_mutex_unlock(&s_lock);
}

/* How long a blocked call waits for stub_unblock before it gives up and returns ncclTimeout. */
STUB_API void stub_set_block_deadline_ms(int ms)
{
    pthread_mutex_lock(&s_lock);
    s_deadline_ms = ms;
    pthread_mutex_unlock(&s_lock);
}

/* The next call of the named function blocks until stub_unblock (or its deadline). */
STUB_API int stub_block(const char *name)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    pthread_mutex_lock(&s_lock);
    s_fn[i].armed = 1;
    s_fn[i].released = 0;
    s_fn[i].timed_out = 0;
    pthread_mutex_unlock(&s_lock);
    return 0;
}

STUB_API int stub_unblock(const char *name)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    pthread_mutex_lock(&s_lock);
    s_fn[i].released = 1;
    pthread_cond_broadcast(&s_cond);
    pthread_mutex_unlock(&s_lock);
    return 0;
}

/* Waits up to timeout_ms for a call of the named function to be blocked; 1 if one is blocked now
 * (a call that already gave up at its deadline does not count), 0 if not, -1 for a bad name. */
STUB_API int stub_wait_blocked(const char *name, int timeout_ms)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L)
        deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&s_lock);
    while (!s_fn[i].blocked)
        if (pthread_cond_timedwait(&s_cond, &s_lock, &deadline) == ETIMEDOUT)
            break;
    int blocked = s_fn[i].blocked;
    pthread_mutex_unlock(&s_lock);
    return blocked;
}

/* 1 if a blocked call of the named function is still waiting right now. */
STUB_API int stub_is_blocked(const char *name)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    pthread_mutex_lock(&s_lock);
    int b = s_fn[i].blocked;
    pthread_mutex_unlock(&s_lock);
    return b;
}

/* 1 if a blocked call of the named function gave up at its deadline since the last stub_block. */
STUB_API int stub_block_timed_out(const char *name)
{
    int i = s_index(name);
    if (i < 0)
        return -1;
    pthread_mutex_lock(&s_lock);
    int t = s_fn[i].timed_out;
    pthread_mutex_unlock(&s_lock);
    return t;
}

#endif /* STUB_LIST_EXPORTS */
