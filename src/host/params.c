/* Tunables of the host backend (HOST_BACKEND.md section 12).
 *
 * Every variable is read exactly once, by a pthread_once routine run at the first API call that
 * needs one, into host_params_store; from then on the struct is read-only, so no getenv runs on a
 * hot path (getenv is not safe against a concurrent setenv). A bad value WARNs and falls back to
 * the default.
 *
 *   NCCL_HOST_FLAVOR              nccl        nccl | rccl
 *   NCCL_HOST_VERSION_CODE        23007       reported by ncclGetVersion
 *   NCCL_HOST_FP8                 ocp/fnuz    fp8 encoding (default by flavour)
 *   NCCL_HOST_TIMEOUT             180         seconds for every wait, fractions allowed; 0 = infinite
 *   NCCL_HOST_ROOT_IDLE_TIMEOUT   = timeout   lifetime of a root listener that never completes
 *   NCCL_HOST_SPIN_US             adaptive    longest spin before a wait sleeps, in microseconds; unset:
 *                                             HOST_SPIN_DEFAULT_US (50), adapted per communicator below
 *                                             it (worker.c); 0 = never spin. Only communicators whose
 *                                             ranks are no more than their CPUs spin (transport.c)
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
 *   NCCL_HOST_CHUNK_BYTES         auto        per-rank slot size; unset: 4 MiB / nranks, at least
 *                                             262144 (host_chunk_bytes)
 *   NCCL_HOST_P2P_BYTES           65536       per-pair ring size
 *   NCCL_HOST_P2P_EAGER           0           sends up to this size complete without the receiver
 *   NCCL_HOST_CHECKS              1           0 NCCL-like (no overlap checks), 1 section 6.3/6.4 checks;
 *                                             2 is accepted and behaves as 1 (strict extras not implemented)
 *   NCCL_HOST_SHUFFLE, NCCL_HOST_SHM=memfd    not implemented: WARN and ignored
 *   NCCL_HOST_CHECK_POINTERS      0           probe buffers (NCCL_CHECK_POINTERS=1 also enables)
 *   NCCL_HOST_BIND_ADDR           127.0.0.1   listener address (loopback unless allowed)
 *   NCCL_HOST_ALLOW_NONLOOPBACK   0
 *   NCCL_HOST_NUM_DEVICES         64          virtual device range
 *   NCCL_COMM_BLOCKING            unset       0/1 overrides config.blocking
 *   NCCL_MULTI_RANK_GPU_ENABLE    0           1 allows repeated devlist entries
 *   NCCL_DEBUG, NCCL_HOST_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE: see debug.c
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
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
    p->p2p_bytes = parse_size("NCCL_HOST_P2P_BYTES", 4096, (size_t)1 << 30, 65536);
    p->p2p_bytes &= ~(size_t)(HOST_CACHELINE - 1);
    p->p2p_eager = parse_size("NCCL_HOST_P2P_EAGER", 0, (size_t)1 << 40, 0);
    p->checks = parse_long("NCCL_HOST_CHECKS", 0, 2, 1);
    p->check_pointers = parse_long("NCCL_HOST_CHECK_POINTERS", 0, 1, 0);
    if (parse_long("NCCL_CHECK_POINTERS", 0, 1, 0))
        p->check_pointers = 1;
    p->allow_nonloopback = parse_long("NCCL_HOST_ALLOW_NONLOOPBACK", 0, 1, 0);
    p->bind_addr = htonl(INADDR_LOOPBACK);
    s = getenv("NCCL_HOST_BIND_ADDR");
    if (s != NULL && *s != '\0') {
        struct in_addr a;
        if (inet_pton(AF_INET, s, &a) != 1)
            HOST_WARN("NCCL_HOST_BIND_ADDR=%s is not an IPv4 address; using 127.0.0.1", s);
        else if ((ntohl(a.s_addr) >> 24) != 127 && !p->allow_nonloopback)
            HOST_WARN("NCCL_HOST_BIND_ADDR=%s is not loopback and NCCL_HOST_ALLOW_NONLOOPBACK is not 1; "
                      "using 127.0.0.1", s);
        else
            p->bind_addr = a.s_addr;
    }
    p->num_devices = parse_long("NCCL_HOST_NUM_DEVICES", 1, 1 << 20, 64);
    p->comm_blocking = parse_long("NCCL_COMM_BLOCKING", -1, 1, -1);
    p->multi_rank_gpu = parse_long("NCCL_MULTI_RANK_GPU_ENABLE", 0, 1, 0);
    /* Documented tunables this release does not implement: say so instead of ignoring them. */
    if (parse_long("NCCL_HOST_SHUFFLE", 0, 1, 0))
        HOST_WARN("NCCL_HOST_SHUFFLE=1 is not implemented in libnccl-host %s; group ops run in issue order",
                  HOST_LIB_VERSION);
    s = getenv("NCCL_HOST_SHM");
    if (s != NULL && *s != '\0' && strcasecmp(s, "posix") != 0)
        HOST_WARN("NCCL_HOST_SHM=%s is not supported; using posix shared memory (shm_open, unlinked after attach)", s);
    s = getenv("NCCL_COMM_ID");
    p->comm_id = (s != NULL && *s != '\0') ? "set" : NULL;

    snprintf(host_info_buf, sizeof host_info_buf, "libnccl-host %s flavour=%s api=%d fp8=%s timeout=%g",
             HOST_LIB_VERSION, p->flavor == HOST_FLAVOR_RCCL ? "rccl" : "nccl", p->version_code,
             p->fp8 == HOST_FP8_FNUZ ? "fnuz" : "ocp", p->timeout_s);
    host_log(HOST_LOG_VERSION, HOST_SUB_ALL, "NCCL version %d.%d.%d+host (libnccl-host %s, flavour %s, fp8 %s)",
             p->version_code / 10000, (p->version_code / 100) % 100, p->version_code % 100, HOST_LIB_VERSION,
             p->flavor == HOST_FLAVOR_RCCL ? "rccl" : "nccl", p->fp8 == HOST_FP8_FNUZ ? "fnuz" : "ocp");
    HOST_INFO(HOST_SUB_ENV, "params: timeout %gs chunk %zu p2p %zu eager %zu checks %d spin %d us direct %s from %zu",
              p->timeout_s, p->chunk_bytes, p->p2p_bytes, p->p2p_eager, p->checks, p->spin_us,
              p->direct == HOST_DIRECT_OFF ? "off" : p->direct == HOST_DIRECT_ON ? "on" : "auto", p->direct_min);
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
 * communicators get large slots and from 16 ranks on the section 11.3 default remains. */
size_t host_chunk_bytes(int nranks)
{
    const host_params_t *p = host_params();
    size_t v;
    if (!p->chunk_auto || nranks < 1)
        return p->chunk_bytes;
    v = (HOST_CHUNK_AUTO_BUDGET / (size_t)nranks) & ~(size_t)(HOST_CACHELINE - 1);
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
