/* A stub NCCL for the binding tests, generated from the ABI table (src/ext/abi.h).
 *
 * Every ncclResult_t entry point records its call (name and each argument widened to 64 bits) and
 * returns a scripted status. Entry points that must produce outputs write recognisable values.
 * Build with -DSTUB_WITHOUT_SINCE=<code> to leave out every row introduced at or after that NCCL
 * version, which is how an older library looks to the loader. Tests drive it through ctypes. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "abi.h"

#define STUB_API __attribute__((visibility("default")))
#define STUB_MAX_ARGS 12

typedef struct {
    char name[48];
    int nargs;
    uint64_t args[STUB_MAX_ARGS];
    unsigned char id[NCCL_UNIQUE_ID_BYTES]; /* a by-value ncclUniqueId argument */
} stub_call;

static stub_call last;
static int ncalls;
static char scripted_name[48];
static int scripted_rc;
static char last_error[256] = "stub last error";

STUB_API const stub_call *stub_last_call(void) { return &last; }
STUB_API int stub_call_count(void) { return ncalls; }
STUB_API void stub_reset(void) { memset(&last, 0, sizeof last), ncalls = 0, scripted_name[0] = '\0'; }
/* The named function returns rc (until the next stub_script or stub_reset). */
STUB_API void stub_script(const char *name, int rc)
{
    strncpy(scripted_name, name, sizeof scripted_name - 1);
    scripted_rc = rc;
}
STUB_API void stub_set_last_error(const char *text) { strncpy(last_error, text, sizeof last_error - 1); }

/* An argument's bytes as a 64-bit value (ints are zero-extended: tests read them back as int32).
 * A by-value unique id (128 bytes) is copied aside and recorded as its first 8 bytes. */
static uint64_t widen_bytes(const void *p, size_t n)
{
    uint64_t v = 0;
    if (n == sizeof(ncclUniqueId))
        memcpy(last.id, p, sizeof last.id);
    memcpy(&v, p, n < sizeof v ? n : sizeof v);
    return v;
}

#define STUB_WIDEN(x) widen_bytes(&(x), sizeof(x))

/* Blocking: the named function waits inside the call until stub_release(), or 5 s at most, so a
 * test can prove the binding released the GIL (the releasing thread must run Python meanwhile). */
static pthread_mutex_t block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cv = PTHREAD_COND_INITIALIZER;
static char block_name[48];
static int block_entered, block_released, block_timed_out;

STUB_API void stub_block(const char *name)
{
    pthread_mutex_lock(&block_mu);
    strncpy(block_name, name, sizeof block_name - 1);
    block_entered = block_released = block_timed_out = 0;
    pthread_mutex_unlock(&block_mu);
}
STUB_API int stub_entered(void) { return __atomic_load_n(&block_entered, __ATOMIC_ACQUIRE); }
STUB_API int stub_timed_out(void) { return block_timed_out; }
STUB_API void stub_release(void)
{
    pthread_mutex_lock(&block_mu);
    block_released = 1;
    block_name[0] = '\0';
    pthread_cond_broadcast(&block_cv);
    pthread_mutex_unlock(&block_mu);
}

static void maybe_block(const char *name)
{
    pthread_mutex_lock(&block_mu);
    if (block_name[0] != '\0' && strcmp(name, block_name) == 0) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 5;
        __atomic_store_n(&block_entered, 1, __ATOMIC_RELEASE);
        while (!block_released)
            if (pthread_cond_timedwait(&block_cv, &block_mu, &deadline) != 0) {
                block_timed_out = 1;
                break;
            }
    }
    pthread_mutex_unlock(&block_mu);
}

static ncclResult_t record(const char *name, int nargs, const uint64_t *args)
{
    maybe_block(name);
    strncpy(last.name, name, sizeof last.name - 1);
    last.nargs = nargs;
    memcpy(last.args, args, (size_t)nargs * sizeof *args);
    ncalls++;
    return strcmp(name, scripted_name) == 0 ? (ncclResult_t)scripted_rc : ncclSuccess;
}

#define COUNT_ARGS(...) COUNT_ARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define COUNT_ARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define WIDEN_LIST(...) WIDEN_N(COUNT_ARGS(__VA_ARGS__), __VA_ARGS__)
#define WIDEN_N(n, ...) WIDEN_N_(n, __VA_ARGS__)
#define WIDEN_N_(n, ...) WIDEN_##n(__VA_ARGS__)
#define WIDEN_1(a) STUB_WIDEN(a)
#define WIDEN_2(a, ...) STUB_WIDEN(a), WIDEN_1(__VA_ARGS__)
#define WIDEN_3(a, ...) STUB_WIDEN(a), WIDEN_2(__VA_ARGS__)
#define WIDEN_4(a, ...) STUB_WIDEN(a), WIDEN_3(__VA_ARGS__)
#define WIDEN_5(a, ...) STUB_WIDEN(a), WIDEN_4(__VA_ARGS__)
#define WIDEN_6(a, ...) STUB_WIDEN(a), WIDEN_5(__VA_ARGS__)
#define WIDEN_7(a, ...) STUB_WIDEN(a), WIDEN_6(__VA_ARGS__)
#define WIDEN_8(a, ...) STUB_WIDEN(a), WIDEN_7(__VA_ARGS__)
#define WIDEN_9(a, ...) STUB_WIDEN(a), WIDEN_8(__VA_ARGS__)
#define WIDEN_10(a, ...) STUB_WIDEN(a), WIDEN_9(__VA_ARGS__)
#define WIDEN_11(a, ...) STUB_WIDEN(a), WIDEN_10(__VA_ARGS__)
/* {0, widened args...}: the leading 0 keeps the array non-empty for (void) functions. */
#define ARG_ARRAY(...) {0 __VA_OPT__(, WIDEN_LIST(__VA_ARGS__))}

/* One weak stub per row of the table. The few that must write outputs or return text have strong
 * definitions in stub_outputs.c, which the linker prefers; which names are exported at all is
 * decided by the version script the test fixture writes (so an "older library" lacks rows). */
#define STUB_GENERIC(name, ret, params, args, since)                                   \
    STUB_API __attribute__((weak)) ret name params                                    \
    {                                                                                 \
        uint64_t a[] = ARG_ARRAY args;                                                \
        return (ret)(uintptr_t)record(#name, (int)(sizeof a / sizeof a[0]) - 1, a + 1); \
    }
NCCL_ABI(STUB_GENERIC)

/* For stub_outputs.c. */
ncclResult_t stub_record(const char *name, int nargs, const uint64_t *args) { return record(name, nargs, args); }
const char *stub_last_error_text(void) { return last_error; }
