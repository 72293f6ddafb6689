/* Tunables of the host backend (docs/host-backend.md#tunables).
 *
 * Every variable is read exactly once, by a pthread_once routine run at the first API call that
 * needs one, into host_params_store; from then on the struct is read-only, so no getenv runs on a
 * hot path (getenv is not safe against a concurrent setenv). A bad value WARNs and falls back to
 * the default.
 *
 *   NCCL_HOST_FLAVOR              nccl        nccl | rccl
 *   NCCL_HOST_VERSION_CODE        23203       reported by ncclGetVersion (NCCL_ABI_API_VERSION, 2.32.3);
 *                                             below 23000, deadlines return ncclRemoteError
 *   NCCL_HOST_FP8                 ocp/fnuz    fp8 encoding (default by flavour)
 *   NCCL_HOST_TIMEOUT             180         seconds for every wait, fractions allowed; 0 = infinite
 *   NCCL_HOST_ROOT_IDLE_TIMEOUT   = timeout   lifetime of a root listener that never completes
 *   NCCL_HOST_SPIN_US             adaptive    longest spin before a wait sleeps, in microseconds; unset:
 *                                             HOST_SPIN_DEFAULT_US (50), adapted per communicator below
 *                                             it (worker.c); 0 = never spin. Only communicators whose
 *                                             ranks are no more than their CPUs spin (transport.c)
 *   NCCL_HOST_YIELD_US            20          longest stretch of sched_yield polling before a wait that
 *                                             did not spin sleeps, in microseconds (worker.c); 0 = sleep
 *                                             at once (every wait, small tasks' too)
 *   NCCL_HOST_YIELD_SMALL_US      400         the same for a task whose ops each move at most 64 KiB:
 *                                             the longest of a window adapted per communicator
 *                                             between NCCL_HOST_YIELD_US and it (worker.c); at or
 *                                             below NCCL_HOST_YIELD_US, small tasks use that
 *   NCCL_HOST_BCAST_EAGER         1           1: a Broadcast root returns once its data is staged in
 *                                             shared memory, and its checks against the peers' calls
 *                                             complete at its next call (coll.c); 0: the root waits for
 *                                             every peer's call; rank 0's value applies
 *   NCCL_HOST_DIRECT              auto        single-copy transfers (the receiver reads the sender's
 *                                             buffer with process_vm_readv, transport.c). auto: used
 *                                             from NCCL_HOST_DIRECT_MIN bytes when the kernel allows
 *                                             it (probed at init) and its copy is fast enough to beat
 *                                             two memcpys (measured at init); 0: never (no probe, no
 *                                             prctl); 1: whenever the kernel allows it, from every
 *                                             size unless NCCL_HOST_DIRECT_MIN is set (WARN when not
 *                                             possible)
 *   NCCL_HOST_DIRECT_MIN          65536       bytes per rank from which a collective, or a p2p
 *                                             message, goes single-copy (rank 0's value applies to
 *                                             the whole communicator)
 *   NCCL_HOST_CHUNK_BYTES         auto        per-rank slot size; unset: 4 MiB / nranks (16 MiB /
 *                                             nranks when the ranks outnumber the CPUs), at least
 *                                             262144 (host_chunk_bytes)
 *   NCCL_HOST_PIPELINE_STEPS      1           a rooted collective (Broadcast, Reduce, Gather, Scatter)
 *                                             on the segment path takes at least this many steps, each
 *                                             of 128 KiB or more, so the root's copies and the others'
 *                                             overlap; 1 = steps as large as the slot, measured best
 *                                             for cache-sized messages (rank 0's value applies to
 *                                             the whole communicator)
 *   NCCL_HOST_P2P_BYTES           65536       per-pair ring size
 *   NCCL_HOST_P2P_EAGER           0           sends up to this size complete without the receiver
 *   NCCL_HOST_CHECKS              1           0 NCCL-like (no overlap checks), 1 every check of
 *                                             docs/host-backend.md#argument-checks; 2 is accepted and
 *                                             behaves as 1 (strict extras not implemented)
 *   NCCL_HOST_SHM                 memfd       the only kind (anything else: WARN and ignored)
 *   NCCL_HOST_SHUFFLE                         not implemented: WARN and ignored
 *   NCCL_HOST_CHECK_POINTERS      0           probe buffers (NCCL_CHECK_POINTERS=1 also enables)
 *   NCCL_HOST_BIND_ADDR           127.0.0.1   listener address (loopback unless allowed)
 *   NCCL_HOST_ALLOW_NONLOOPBACK   0           1: without NCCL_HOST_BIND_ADDR, listeners bind the
 *                                             interface NCCL_SOCKET_IFNAME selects, or NCCL's default
 *                                             choice (node.c)
 *   NCCL_HOST_NUM_DEVICES         64          virtual device range
 *   NCCL_COMM_BLOCKING            unset       0/1 overrides config.blocking
 *   NCCL_MULTI_RANK_GPU_ENABLE    0           1 allows repeated devlist entries
 *   NCCL_DEBUG, NCCL_HOST_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE: see debug.c
 *
 * The ncclParam* entry points read those listed in HOST_PARAMS below by name (every tunable above
 * but the logging variables and NCCL_HOST_PIPELINE_STEPS, a speed switch for measurements): what
 * a program sees is the value in force, defaults included.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_host.h"

static host_params_t host_params_store; /* written only by params_load, under host_params_once */
static pthread_once_t host_params_once = PTHREAD_ONCE_INIT;
static char host_info_buf[160];          /* written by params_load, read-only afterwards */

static int parse_long(const char *name, long lo, long hi, long def)
{
    const char *s = getenv(name);
    char *end;
    long v;
    if (s == NULL || *s == '\0')
        return (int)def;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        HOST_WARN("%s=%s is not an integer in [%ld, %ld]; using %ld", name, s, lo, hi, def);
        return (int)def;
    }
    return (int)v;
}

static size_t parse_size(const char *name, size_t lo, size_t hi, size_t def)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    if (s == NULL || *s == '\0')
        return def;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || s[0] == '-' || v < lo || v > hi) {
        HOST_WARN("%s=%s is not a size in [%zu, %zu]; using %zu", name, s, lo, hi, def);
        return def;
    }
    return (size_t)v;
}

static double parse_seconds(const char *name, double def)
{
    const char *s = getenv(name);
    char *end;
    double v;
    if (s == NULL || *s == '\0')
        return def;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0.0) || v > 1e9) {
        HOST_WARN("%s=%s is not a number of seconds >= 0; using %g", name, s, def);
        return def;
    }
    return v;
}

static int64_t seconds_to_ns(double s)
{
    if (s <= 0.0)
        return HOST_NEVER;
    return (int64_t)llround(s * 1e9);
}

/* The bootstrap's address: NCCL_HOST_BIND_ADDR, else node.c's choice; logged either way. */
static void parse_bind_addr(host_params_t *p)
{
    const char *s = getenv("NCCL_HOST_BIND_ADDR");
    struct in_addr a;
    char text[INET_ADDRSTRLEN];
    if (s == NULL || *s == '\0') {
        host_node_bind_addr(p); /* NCCL_SOCKET_IFNAME, or NCCL's default choice */
    } else {
        p->bind_addr = htonl(INADDR_LOOPBACK);
        snprintf(p->bind_from, sizeof p->bind_from, "loopback");
        if (inet_pton(AF_INET, s, &a) != 1)
            HOST_WARN("NCCL_HOST_BIND_ADDR=%s is not an IPv4 address; using 127.0.0.1", s);
        else if ((ntohl(a.s_addr) >> 24) != 127 && !p->allow_nonloopback)
            HOST_WARN("NCCL_HOST_BIND_ADDR=%s is not loopback and NCCL_HOST_ALLOW_NONLOOPBACK is not 1; "
                      "using 127.0.0.1", s);
        else {
            p->bind_addr = a.s_addr;
            snprintf(p->bind_from, sizeof p->bind_from, "NCCL_HOST_BIND_ADDR");
        }
    }
    if (p->bind_error[0] != '\0') {
        HOST_WARN("%s", p->bind_error);
        return;
    }
    a.s_addr = p->bind_addr;
    HOST_INFO(HOST_SUB_BOOTSTRAP, "bootstrap listeners bind %s (%s)",
              inet_ntop(AF_INET, &a, text, sizeof text) ? text : "?", p->bind_from);
}

static void params_load(void)
{
    host_params_t *p = &host_params_store;
    const char *s;
    host_log_init();

    p->flavor = HOST_FLAVOR_NCCL;
    s = getenv("NCCL_HOST_FLAVOR");
    if (s != NULL && *s != '\0') {
        if (strcasecmp(s, "rccl") == 0)
            p->flavor = HOST_FLAVOR_RCCL;
        else if (strcasecmp(s, "nccl") != 0)
            HOST_WARN("NCCL_HOST_FLAVOR=%s is neither nccl nor rccl; using nccl", s);
    }
    p->version_code = parse_long("NCCL_HOST_VERSION_CODE", 1000, 999999, NCCL_ABI_API_VERSION);

    p->fp8 = p->flavor == HOST_FLAVOR_RCCL ? HOST_FP8_FNUZ : HOST_FP8_OCP;
    s = getenv("NCCL_HOST_FP8");
    if (s != NULL && *s != '\0') {
        if (strcasecmp(s, "ocp") == 0)
            p->fp8 = HOST_FP8_OCP;
        else if (strcasecmp(s, "fnuz") == 0)
            p->fp8 = HOST_FP8_FNUZ;
        else
            HOST_WARN("NCCL_HOST_FP8=%s is neither ocp nor fnuz; using the flavour's default", s);
    }

    p->timeout_s = parse_seconds("NCCL_HOST_TIMEOUT", 180.0);
    p->timeout_ns = seconds_to_ns(p->timeout_s);
    if (p->timeout_ns == HOST_NEVER)
        HOST_WARN("NCCL_HOST_TIMEOUT=0: waits have no deadline (for interactive debugging only)");
    p->root_idle_ns = seconds_to_ns(parse_seconds("NCCL_HOST_ROOT_IDLE_TIMEOUT", p->timeout_s));

    p->spin_us = parse_long("NCCL_HOST_SPIN_US", 0, 1000000, -1);
    p->yield_us = parse_long("NCCL_HOST_YIELD_US", 0, 1000000, HOST_YIELD_DEFAULT_US);
    p->yield_small_us = parse_long("NCCL_HOST_YIELD_SMALL_US", 0, 1000000, HOST_YIELD_SMALL_DEFAULT_US);
    p->bcast_eager = parse_long("NCCL_HOST_BCAST_EAGER", 0, 1, 1);
    p->direct = HOST_DIRECT_AUTO;
    s = getenv("NCCL_HOST_DIRECT");
    if (s != NULL && *s != '\0') {
        if (strcmp(s, "0") == 0)
            p->direct = HOST_DIRECT_OFF;
        else if (strcmp(s, "1") == 0)
            p->direct = HOST_DIRECT_ON;
        else if (strcasecmp(s, "auto") != 0)
            HOST_WARN("NCCL_HOST_DIRECT=%s is not 0, 1 or auto; using auto", s);
    }
    p->direct_min = parse_size("NCCL_HOST_DIRECT_MIN", 1, (size_t)1 << 40,
                               p->direct == HOST_DIRECT_ON ? 1 : HOST_DIRECT_MIN_DEFAULT);
    {
        const char *cb = getenv("NCCL_HOST_CHUNK_BYTES");
        p->chunk_auto = cb == NULL || *cb == '\0';
    }
    p->chunk_bytes = parse_size("NCCL_HOST_CHUNK_BYTES", 4096, (size_t)1 << 30, HOST_CHUNK_MIN_AUTO);
    p->chunk_bytes &= ~(size_t)(HOST_CACHELINE - 1);
    p->pipeline_steps = parse_long("NCCL_HOST_PIPELINE_STEPS", 1, 1024, HOST_PIPELINE_STEPS_DEFAULT);
    p->p2p_bytes = parse_size("NCCL_HOST_P2P_BYTES", 4096, (size_t)1 << 30, 65536);
    p->p2p_bytes &= ~(size_t)(HOST_CACHELINE - 1);
    p->p2p_eager = parse_size("NCCL_HOST_P2P_EAGER", 0, (size_t)1 << 40, 0);
    p->checks = parse_long("NCCL_HOST_CHECKS", 0, 2, 1);
    p->check_pointers = parse_long("NCCL_HOST_CHECK_POINTERS", 0, 1, 0);
    if (parse_long("NCCL_CHECK_POINTERS", 0, 1, 0))
        p->check_pointers = 1;
    p->allow_nonloopback = parse_long("NCCL_HOST_ALLOW_NONLOOPBACK", 0, 1, 0);
    parse_bind_addr(p);
    p->num_devices = parse_long("NCCL_HOST_NUM_DEVICES", 1, 1 << 20, 64);
    p->comm_blocking = parse_long("NCCL_COMM_BLOCKING", -1, 1, -1);
    p->multi_rank_gpu = parse_long("NCCL_MULTI_RANK_GPU_ENABLE", 0, 1, 0);
    /* Documented tunables this release does not implement: say so instead of ignoring them. */
    if (parse_long("NCCL_HOST_SHUFFLE", 0, 1, 0))
        HOST_WARN("NCCL_HOST_SHUFFLE=1 is not implemented in libnccl-host %s; group ops run in issue order",
                  HOST_LIB_VERSION);
    s = getenv("NCCL_HOST_SHM");
    if (s != NULL && *s != '\0' && strcasecmp(s, "memfd") != 0)
        HOST_WARN("NCCL_HOST_SHM=%s is not supported; using memfd shared memory (never named, passed to the ranks "
                  "over a Unix socket)", s);
    s = getenv("NCCL_COMM_ID");
    p->comm_id = (s != NULL && *s != '\0') ? "set" : NULL;

    snprintf(host_info_buf, sizeof host_info_buf, "libnccl-host %s flavour=%s api=%d fp8=%s timeout=%g",
             HOST_LIB_VERSION, p->flavor == HOST_FLAVOR_RCCL ? "rccl" : "nccl", p->version_code,
             p->fp8 == HOST_FP8_FNUZ ? "fnuz" : "ocp", p->timeout_s);
    host_log(HOST_LOG_VERSION, HOST_SUB_ALL, "NCCL version %d.%d.%d+host (libnccl-host %s, flavour %s, fp8 %s)",
             p->version_code / 10000, (p->version_code / 100) % 100, p->version_code % 100, HOST_LIB_VERSION,
             p->flavor == HOST_FLAVOR_RCCL ? "rccl" : "nccl", p->fp8 == HOST_FP8_FNUZ ? "fnuz" : "ocp");
    HOST_INFO(HOST_SUB_ENV, "params: timeout %gs chunk %zu p2p %zu eager %zu checks %d spin %d us yield %d us (small %d us) "
              "direct %s from %zu bcast-eager %d", p->timeout_s, p->chunk_bytes, p->p2p_bytes, p->p2p_eager, p->checks,
              p->spin_us, p->yield_us, p->yield_small_us, p->direct == HOST_DIRECT_OFF ? "off" : p->direct == HOST_DIRECT_ON ? "on" : "auto",
              p->direct_min, p->bcast_eager);
    host_fork_setup();
}

const host_params_t *host_params(void)
{
    pthread_once(&host_params_once, params_load);
    return &host_params_store;
}

/* Every collective step costs one cross-process wait, which on a loaded two-core machine is tens
 * of microseconds (a sleep and a wakeup), so large operations want few, large steps: measured at
 * 2 ranks (benchmarks/host_bandwidth.py), 1-4 MiB slots cut 2-8 MiB AllReduce/AllGather times by
 * 20-45% against 256 KiB. The slots of a communicator share a budget of 4 MiB, so small
 * communicators get large slots and from 16 ranks on the docs/host-backend.md#the-shared-segment default remains. */
size_t host_chunk_bytes(int nranks)
{
    const host_params_t *p = host_params();
    size_t v;
    if (!p->chunk_auto || nranks < 1)
        return p->chunk_bytes;
    cpu_set_t cpus;
    /* Oversubscribed, every step wait is a yield or a sleep, so fewer, larger steps pay (the
     * segment's creator, rank 0, decides, from the CPUs it may run on). */
    int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
    size_t budget = ncpu > 0 && nranks > ncpu ? HOST_CHUNK_OVERSUB_BUDGET : HOST_CHUNK_AUTO_BUDGET;
    v = (budget / (size_t)nranks) & ~(size_t)(HOST_CACHELINE - 1);
    return v > HOST_CHUNK_MIN_AUTO ? v : HOST_CHUNK_MIN_AUTO;
}

ncclResult_t host_timeout_code(void)
{
    return host_params()->version_code >= 23000 ? ncclTimeout : ncclRemoteError;
}

const char *host_info_text(void)
{
    (void)host_params();
    return host_info_buf;
}

/* ------------------------------------------------------------------------------------------ */
/* The parameter API (ncclParam*, NCCL 2.30.4) over the tunables above                         */
/* ------------------------------------------------------------------------------------------ */

/* The tunables the ncclParam* entry points serve, by variable name: an integer, or text for the ones
 * that are not numbers (flavour, fp8 encoding, address, fractional seconds). */
#define HOST_PARAMS(X)                                                                             \
    X(NCCL_HOST_FLAVOR, TEXT)                                                                      \
    X(NCCL_HOST_VERSION_CODE, INT)                                                                 \
    X(NCCL_HOST_FP8, TEXT)                                                                         \
    X(NCCL_HOST_TIMEOUT, TEXT)                                                                     \
    X(NCCL_HOST_ROOT_IDLE_TIMEOUT, TEXT)                                                           \
    X(NCCL_HOST_CHUNK_BYTES, INT)                                                                  \
    X(NCCL_HOST_P2P_BYTES, INT)                                                                    \
    X(NCCL_HOST_P2P_EAGER, INT)                                                                    \
    X(NCCL_HOST_SPIN_US, INT)                                                                      \
    X(NCCL_HOST_YIELD_US, INT)                                                                     \
    X(NCCL_HOST_YIELD_SMALL_US, INT)                                                               \
    X(NCCL_HOST_BCAST_EAGER, INT)                                                                  \
    X(NCCL_HOST_DIRECT, TEXT)                                                                      \
    X(NCCL_HOST_DIRECT_MIN, INT)                                                                   \
    X(NCCL_HOST_CHECKS, INT)                                                                       \
    X(NCCL_HOST_CHECK_POINTERS, INT)                                                               \
    X(NCCL_HOST_BIND_ADDR, TEXT)                                                                   \
    X(NCCL_HOST_ALLOW_NONLOOPBACK, INT)                                                            \
    X(NCCL_HOST_NUM_DEVICES, INT)                                                                  \
    X(NCCL_COMM_BLOCKING, INT)                                                                     \
    X(NCCL_MULTI_RANK_GPU_ENABLE, INT)

enum host_param_id {
#define HOST_PARAM_ID(key, kind) HOST_P_##key,
    HOST_PARAMS(HOST_PARAM_ID)
#undef HOST_PARAM_ID
    HOST_NPARAMS
};

/* The handle NCCL hands out is owned by the library: here, an entry of this static table. */
struct ncclParamHandle {
    const char *key;
    int is_text;
};
static const struct ncclParamHandle host_param_table[HOST_NPARAMS] = {
#define HOST_PARAM_ROW(key, kind) {#key, HOST_PARAM_IS_##kind},
#define HOST_PARAM_IS_TEXT 1
#define HOST_PARAM_IS_INT 0
    HOST_PARAMS(HOST_PARAM_ROW)
#undef HOST_PARAM_ROW
#undef HOST_PARAM_IS_TEXT
#undef HOST_PARAM_IS_INT
};
static const char *host_param_key_table[HOST_NPARAMS] = {
#define HOST_PARAM_KEY(key, kind) #key,
    HOST_PARAMS(HOST_PARAM_KEY)
#undef HOST_PARAM_KEY
};

/* Text results stay valid until the next call of the same function on the same thread. */
static __thread char host_param_str_buf[64];
static __thread char host_param_value_buf[64];

/* The table index of a handle, or -1 for anything ncclParamBind did not hand out. */
static int param_index(ncclParamHandle_t h)
{
    for (int i = 0; h != NULL && i < HOST_NPARAMS; i++)
        if (h == &host_param_table[i])
            return i;
    return -1;
}

/* NCCL_HOST_CHUNK_BYTES reads 0 while unset (slots sized per communicator); NCCL_COMM_BLOCKING
 * reads NCCL_CONFIG_UNDEF_INT while unset, as NCCL's own parameter does. */
static int64_t param_int(int id)
{
    const host_params_t *p = host_params();
    switch (id) {
    case HOST_P_NCCL_HOST_VERSION_CODE: return p->version_code;
    case HOST_P_NCCL_HOST_CHUNK_BYTES: return p->chunk_auto ? 0 : (int64_t)p->chunk_bytes;
    case HOST_P_NCCL_HOST_P2P_BYTES: return (int64_t)p->p2p_bytes;
    case HOST_P_NCCL_HOST_P2P_EAGER: return (int64_t)p->p2p_eager;
    case HOST_P_NCCL_HOST_SPIN_US: return p->spin_us < 0 ? HOST_SPIN_DEFAULT_US : p->spin_us;
    case HOST_P_NCCL_HOST_YIELD_US: return p->yield_us;
    case HOST_P_NCCL_HOST_YIELD_SMALL_US: return p->yield_small_us;
    case HOST_P_NCCL_HOST_BCAST_EAGER: return p->bcast_eager;
    case HOST_P_NCCL_HOST_DIRECT_MIN: return (int64_t)p->direct_min;
    case HOST_P_NCCL_HOST_CHECKS: return p->checks;
    case HOST_P_NCCL_HOST_CHECK_POINTERS: return p->check_pointers;
    case HOST_P_NCCL_HOST_ALLOW_NONLOOPBACK: return p->allow_nonloopback;
    case HOST_P_NCCL_HOST_NUM_DEVICES: return p->num_devices;
    case HOST_P_NCCL_COMM_BLOCKING: return p->comm_blocking < 0 ? NCCL_CONFIG_UNDEF_INT : p->comm_blocking;
    case HOST_P_NCCL_MULTI_RANK_GPU_ENABLE: return p->multi_rank_gpu;
    default: return 0;
    }
}

static void param_text(int id, char *buf, size_t n)
{
    const host_params_t *p = host_params();
    struct in_addr a;
    switch (id) {
    case HOST_P_NCCL_HOST_FLAVOR: snprintf(buf, n, "%s", p->flavor == HOST_FLAVOR_RCCL ? "rccl" : "nccl"); break;
    case HOST_P_NCCL_HOST_FP8: snprintf(buf, n, "%s", p->fp8 == HOST_FP8_FNUZ ? "fnuz" : "ocp"); break;
    case HOST_P_NCCL_HOST_TIMEOUT: snprintf(buf, n, "%g", p->timeout_s); break;
    case HOST_P_NCCL_HOST_DIRECT:
        snprintf(buf, n, "%s", p->direct == HOST_DIRECT_ON ? "1" : p->direct == HOST_DIRECT_OFF ? "0" : "auto");
        break;
    case HOST_P_NCCL_HOST_ROOT_IDLE_TIMEOUT:
        snprintf(buf, n, "%g", p->root_idle_ns == HOST_NEVER ? 0.0 : (double)p->root_idle_ns / 1e9);
        break;
    case HOST_P_NCCL_HOST_BIND_ADDR:
        a.s_addr = p->bind_addr;
        if (inet_ntop(AF_INET, &a, buf, (socklen_t)n) == NULL)
            buf[0] = '\0';
        break;
    default: snprintf(buf, n, "%lld", (long long)param_int(id)); break;
    }
}

ncclResult_t host_param_bind(ncclParamHandle_t *out, const char *key)
{
    if (out == NULL || key == NULL)
        return host_fail(ncclInvalidArgument, "ncclParamBind: %s is NULL", out == NULL ? "out" : "key");
    *out = NULL;
    for (int i = 0; i < HOST_NPARAMS; i++)
        if (strcmp(host_param_table[i].key, key) == 0) {
            *out = (ncclParamHandle_t)&host_param_table[i];
            return ncclSuccess;
        }
    return host_fail(ncclInvalidArgument, "ncclParamBind: %s is not a parameter of the host backend", key);
}

ncclResult_t host_param_get_int(ncclParamHandle_t h, int64_t lo, uint64_t hi, int64_t *out, const char *fn)
{
    int id = param_index(h);
    if (id < 0 || out == NULL)
        return host_fail(ncclInvalidArgument, "%s: %s", fn, id < 0 ? "not a handle of ncclParamBind" : "out is NULL");
    if (host_param_table[id].is_text)
        return host_fail(ncclInvalidUsage, "%s: %s is a text parameter (read it with ncclParamGetStr)", fn,
                         host_param_table[id].key);
    int64_t v = param_int(id);
    if (v < lo || (v > 0 && (uint64_t)v > hi))
        return host_fail(ncclInvalidArgument, "%s: %s = %lld does not fit the requested type", fn,
                         host_param_table[id].key, (long long)v);
    *out = v;
    return ncclSuccess;
}

ncclResult_t host_param_get_str(ncclParamHandle_t h, const char **out)
{
    int id = param_index(h);
    if (id < 0 || out == NULL)
        return host_fail(ncclInvalidArgument, "ncclParamGetStr: %s",
                         id < 0 ? "not a handle of ncclParamBind" : "out is NULL");
    param_text(id, host_param_str_buf, sizeof host_param_str_buf);
    *out = host_param_str_buf;
    return ncclSuccess;
}

/* The native representation: an int64_t for an integer parameter, the NUL-terminated text for a
 * text one. A buffer too small is ncclInvalidArgument with *len set to the size needed. */
ncclResult_t host_param_get_raw(ncclParamHandle_t h, void *out, int maxLen, int *len)
{
    char text[64];
    int64_t v;
    const void *src;
    int need;
    int id = param_index(h);
    if (id < 0 || out == NULL || len == NULL)
        return host_fail(ncclInvalidArgument, "ncclParamGet: %s",
                         id < 0 ? "not a handle of ncclParamBind" : out == NULL ? "out is NULL" : "len is NULL");
    if (host_param_table[id].is_text) {
        param_text(id, text, sizeof text);
        src = text;
        need = (int)strlen(text) + 1;
    } else {
        v = param_int(id);
        src = &v;
        need = (int)sizeof v;
    }
    *len = need;
    if (maxLen < need)
        return host_fail(ncclInvalidArgument, "ncclParamGet: %s needs %d bytes, maxLen is %d",
                         host_param_table[id].key, need, maxLen);
    memcpy(out, src, (size_t)need);
    return ncclSuccess;
}

ncclResult_t host_param_get_by_key(const char *key, const char **value, int *valueLen)
{
    ncclParamHandle_t h;
    if (key == NULL || value == NULL || valueLen == NULL)
        return host_fail(ncclInvalidArgument, "ncclParamGetParameter: %s is NULL",
                         key == NULL ? "key" : value == NULL ? "value" : "valueLen");
    *value = NULL;
    *valueLen = 0;
    ncclResult_t rc = host_param_bind(&h, key);
    if (rc != ncclSuccess)
        return rc;
    param_text(param_index(h), host_param_value_buf, sizeof host_param_value_buf);
    *value = host_param_value_buf;
    *valueLen = (int)strlen(host_param_value_buf);
    return ncclSuccess;
}

ncclResult_t host_param_keys(const char ***table, int *tableLen)
{
    if (table == NULL || tableLen == NULL)
        return host_fail(ncclInvalidArgument, "ncclParamGetAllParameterKeys: %s is NULL",
                         table == NULL ? "table" : "tableLen");
    *table = host_param_key_table;
    *tableLen = HOST_NPARAMS;
    return ncclSuccess;
}

/* One KEY=VALUE line per parameter on stdout, as NCCL prints its own. */
void host_param_dump(void)
{
    char text[64];
    for (int i = 0; i < HOST_NPARAMS; i++) {
        param_text(i, text, sizeof text);
        printf("%s=%s\n", host_param_table[i].key, text);
    }
    fflush(stdout);
}
