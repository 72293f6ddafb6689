/* A stub HIP runtime for the shim's tests: the hip* entry points nccl._hip_compat._hip resolves,
 * emulating devices with host memory. Test-only; built by tests/shim/conftest.py with gcc.
 *
 * Environment (read once, at the first call):
 *   STUB_HIP_DEVICE_COUNT  number of emulated devices (default 2; 0 makes hipGetDeviceCount
 *                          return hipErrorNoDevice, as the real runtime does without a GPU)
 *   STUB_HIP_VERSION       hipRuntimeGetVersion's value (default 60200000, ROCm 6.2)
 *
 * Control functions for tests (called through ctypes):
 *   stubHipLive(kind)            live allocations (0), streams (1) or events (2)
 *   stubHipCalls(name)           how many times the named hip* function was called
 *   stubHipBlock(name)           the next call of name (hipStreamSynchronize or hipRuntimeGetVersion)
 *                                blocks until stubHipRelease(), with a 20 s deadline
 *   stubHipWaitEntered(ms)       1 once a blocked call has been entered, 0 on timeout
 *   stubHipRelease()
 *   stubHipSetEventsPending(on)  hipEventQuery reports hipErrorNotReady while on
 *
 * Build-time switches: -DSTUB_OMIT_OPTIONAL drops hipStreamWaitEvent, hipEventQuery,
 * hipStreamCreateWithPriority, hipMemsetAsync and hipDeviceGetPCIBusId; -DSTUB_OMIT_REQUIRED
 * drops hipGetDeviceCount (so the library is "not a HIP runtime"). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

typedef int hipError_t;
enum {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorOutOfMemory = 2,
    hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101,
    hipErrorInvalidHandle = 400,
    hipErrorNotReady = 600,
    hipErrorLaunchTimeOut = 702,
};

typedef struct {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned int allocationFlags;
} hipPointerAttribute_t;

enum { KIND_ALLOC = 0, KIND_STREAM = 1, KIND_EVENT = 2 };

typedef struct object {
    struct object *next;
    int kind;
    int device;
    /* allocations */
    void *base;
    size_t size;
    /* streams and events */
    unsigned int flags;
    int priority;
    int recorded;
    double when_ms;
} object;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static object *objects;
static long live[3];
static int events_pending;
static char block_name[64];
static int block_entered, block_released;

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int device_count = 2;
static int runtime_version = 60200000;
static __thread int current_device = 0;

#define NCALLS 64
static struct {
    const char *name;
    long count;
} calls[NCALLS];

static void read_config(void)
{
    const char *n = getenv("STUB_HIP_DEVICE_COUNT");
    if (n != NULL && n[0] != '\0')
        device_count = atoi(n);
    const char *v = getenv("STUB_HIP_VERSION");
    if (v != NULL && v[0] != '\0')
        runtime_version = atoi(v);
}

/* Counts the call and applies a pending block on it. Returns nonzero if the block timed out. */
static int enter(const char *name)
{
    pthread_once(&config_once, read_config);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < NCALLS; i++) {
        if (calls[i].name == NULL || strcmp(calls[i].name, name) == 0) {
            calls[i].name = name;
            calls[i].count++;
            break;
        }
    }
    int timed_out = 0;
    if (block_name[0] != '\0' && strcmp(block_name, name) == 0) {
        block_name[0] = '\0';
        block_entered = 1;
        pthread_cond_broadcast(&cond);
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 20;
        while (!block_released && !timed_out)
            timed_out = pthread_cond_timedwait(&cond, &lock, &deadline) == ETIMEDOUT;
        block_released = 0;
    }
    pthread_mutex_unlock(&lock);
    return timed_out;
}

static object *find(const void *handle, int kind) /* lock held */
{
    for (object *o = objects; o != NULL; o = o->next)
        if (o->kind == kind && (const void *)o == handle)
            return o;
    return NULL;
}

static object *find_alloc(const void *ptr) /* lock held */
{
    for (object *o = objects; o != NULL; o = o->next)
        if (o->kind == KIND_ALLOC && (const char *)ptr >= (const char *)o->base &&
            (const char *)ptr < (const char *)o->base + o->size)
            return o;
    return NULL;
}

static void link_object(object *o) /* lock held */
{
    o->next = objects;
    objects = o;
    live[o->kind]++;
}

static void unlink_object(object *o) /* lock held */
{
    for (object **p = &objects; *p != NULL; p = &(*p)->next) {
        if (*p == o) {
            *p = o->next;
            live[o->kind]--;
            return;
        }
    }
}

static int valid_stream(const void *stream) /* lock held; 0 is the null stream */
{
    return stream == NULL || find(stream, KIND_STREAM) != NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- control functions ---- */

API long stubHipLive(int kind)
{
    pthread_mutex_lock(&lock);
    long n = (kind >= 0 && kind < 3) ? live[kind] : -1;
    pthread_mutex_unlock(&lock);
    return n;
}

API long stubHipCalls(const char *name)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < NCALLS && calls[i].name != NULL; i++)
        if (strcmp(calls[i].name, name) == 0)
            n = calls[i].count;
    pthread_mutex_unlock(&lock);
    return n;
}

API void stubHipBlock(const char *name)
{
    pthread_mutex_lock(&lock);
    snprintf(block_name, sizeof block_name, "%s", name);
    block_entered = 0;
    block_released = 0;
    pthread_mutex_unlock(&lock);
}

API int stubHipWaitEntered(int timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&lock);
    int rc = 0;
    while (!block_entered && rc == 0)
        rc = pthread_cond_timedwait(&cond, &lock, &deadline);
    int entered = block_entered;
    pthread_mutex_unlock(&lock);
    return entered;
}

API void stubHipRelease(void)
{
    pthread_mutex_lock(&lock);
    block_released = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

API void stubHipSetEventsPending(int on)
{
    pthread_mutex_lock(&lock);
    events_pending = on;
    pthread_mutex_unlock(&lock);
}

/* ---- the HIP runtime API ---- */

API const char *hipGetErrorName(hipError_t e)
{
    switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorNotReady: return "hipErrorNotReady";
    case hipErrorLaunchTimeOut: return "hipErrorLaunchTimeOut";
    default: return "hipErrorUnknown";
    }
}

API const char *hipGetErrorString(hipError_t e)
{
    switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorOutOfMemory: return "out of memory";
    case hipErrorNoDevice: return "no ROCm-capable device is detected";
    case hipErrorInvalidDevice: return "invalid device ordinal";
    case hipErrorInvalidHandle: return "invalid resource handle";
    case hipErrorNotReady: return "device not ready";
    case hipErrorLaunchTimeOut: return "the stub's blocked call timed out";
    default: return "unknown error";
    }
}

API hipError_t hipRuntimeGetVersion(int *version)
{
    if (enter("hipRuntimeGetVersion"))
        return hipErrorLaunchTimeOut;
    if (version == NULL)
        return hipErrorInvalidValue;
    *version = runtime_version;
    return hipSuccess;
}

#ifndef STUB_OMIT_REQUIRED
API hipError_t hipGetDeviceCount(int *count)
{
    enter("hipGetDeviceCount");
    if (count == NULL)
        return hipErrorInvalidValue;
    *count = device_count > 0 ? device_count : 0;
    return device_count > 0 ? hipSuccess : hipErrorNoDevice;
}
#endif

API hipError_t hipGetDevice(int *device)
{
    enter("hipGetDevice");
    if (device == NULL)
        return hipErrorInvalidValue;
    if (device_count <= 0)
        return hipErrorInvalidDevice;
    *device = current_device;
    return hipSuccess;
}

API hipError_t hipSetDevice(int device)
{
    enter("hipSetDevice");
    if (device < 0 || device >= device_count)
        return hipErrorInvalidDevice;
    current_device = device;
    return hipSuccess;
}

#ifndef STUB_OMIT_OPTIONAL
API hipError_t hipDeviceGetPCIBusId(char *bus_id, int len, int device)
{
    enter("hipDeviceGetPCIBusId");
    if (bus_id == NULL || len <= 0)
        return hipErrorInvalidValue;
    if (device < 0 || device >= device_count)
        return hipErrorInvalidDevice;
    snprintf(bus_id, (size_t)len, "0000:%02x:00.0", 0xc1 + device);
    return hipSuccess;
}
#endif

API hipError_t hipDeviceSynchronize(void)
{
    enter("hipDeviceSynchronize");
    return device_count > 0 ? hipSuccess : hipErrorNoDevice;
}

static hipError_t create_stream(void **stream, unsigned int flags, int priority)
{
    if (stream == NULL)
        return hipErrorInvalidValue;
    if (device_count <= 0)
        return hipErrorNoDevice;
    object *o = calloc(1, sizeof *o);
    if (o == NULL)
        return hipErrorOutOfMemory;
    o->kind = KIND_STREAM;
    o->device = current_device;
    o->flags = flags;
    o->priority = priority;
    pthread_mutex_lock(&lock);
    link_object(o);
    pthread_mutex_unlock(&lock);
    *stream = o;
    return hipSuccess;
}

API hipError_t hipStreamCreate(void **stream)
{
    enter("hipStreamCreate");
    return create_stream(stream, 0, 0);
}

API hipError_t hipStreamCreateWithFlags(void **stream, unsigned int flags)
{
    enter("hipStreamCreateWithFlags");
    if (flags > 1)
        return hipErrorInvalidValue;
    return create_stream(stream, flags, 0);
}

#ifndef STUB_OMIT_OPTIONAL
API hipError_t hipStreamCreateWithPriority(void **stream, unsigned int flags, int priority)
{
    enter("hipStreamCreateWithPriority");
    if (flags > 1 || priority < -1 || priority > 0) /* HIP's range is [-1, 0] on current GPUs */
        return hipErrorInvalidValue;
    return create_stream(stream, flags, priority);
}
#endif

API hipError_t hipStreamDestroy(void *stream)
{
    enter("hipStreamDestroy");
    pthread_mutex_lock(&lock);
    object *o = find(stream, KIND_STREAM);
    if (o != NULL)
        unlink_object(o);
    pthread_mutex_unlock(&lock);
    if (o == NULL)
        return hipErrorInvalidHandle;
    free(o);
    return hipSuccess;
}

API hipError_t hipStreamSynchronize(void *stream)
{
    if (enter("hipStreamSynchronize"))
        return hipErrorLaunchTimeOut;
    pthread_mutex_lock(&lock);
    int ok = valid_stream(stream);
    pthread_mutex_unlock(&lock);
    return ok ? hipSuccess : hipErrorInvalidHandle;
}

#ifndef STUB_OMIT_OPTIONAL
API hipError_t hipStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
    enter("hipStreamWaitEvent");
    pthread_mutex_lock(&lock);
    int ok = valid_stream(stream) && find(event, KIND_EVENT) != NULL && flags == 0;
    pthread_mutex_unlock(&lock);
    return ok ? hipSuccess : hipErrorInvalidHandle;
}
#endif

static hipError_t create_event(void **event, unsigned int flags)
{
    if (event == NULL || flags > 7)
        return hipErrorInvalidValue;
    if (device_count <= 0)
        return hipErrorNoDevice;
    object *o = calloc(1, sizeof *o);
    if (o == NULL)
        return hipErrorOutOfMemory;
    o->kind = KIND_EVENT;
    o->device = current_device;
    o->flags = flags;
    pthread_mutex_lock(&lock);
    link_object(o);
    pthread_mutex_unlock(&lock);
    *event = o;
    return hipSuccess;
}

API hipError_t hipEventCreate(void **event)
{
    enter("hipEventCreate");
    return create_event(event, 0);
}

API hipError_t hipEventCreateWithFlags(void **event, unsigned int flags)
{
    enter("hipEventCreateWithFlags");
    return create_event(event, flags);
}

API hipError_t hipEventRecord(void *event, void *stream)
{
    enter("hipEventRecord");
    pthread_mutex_lock(&lock);
    object *o = find(event, KIND_EVENT);
    int ok = o != NULL && valid_stream(stream);
    if (ok) {
        o->recorded = 1;
        o->when_ms = now_ms();
    }
    pthread_mutex_unlock(&lock);
    return ok ? hipSuccess : hipErrorInvalidHandle;
}

API hipError_t hipEventSynchronize(void *event)
{
    enter("hipEventSynchronize");
    pthread_mutex_lock(&lock);
    int ok = find(event, KIND_EVENT) != NULL;
    pthread_mutex_unlock(&lock);
    return ok ? hipSuccess : hipErrorInvalidHandle;
}

#ifndef STUB_OMIT_OPTIONAL
API hipError_t hipEventQuery(void *event)
{
    enter("hipEventQuery");
    pthread_mutex_lock(&lock);
    int ok = find(event, KIND_EVENT) != NULL, pending = events_pending;
    pthread_mutex_unlock(&lock);
    if (!ok)
        return hipErrorInvalidHandle;
    return pending ? hipErrorNotReady : hipSuccess;
}
#endif

API hipError_t hipEventElapsedTime(float *ms, void *start, void *stop)
{
    enter("hipEventElapsedTime");
    if (ms == NULL)
        return hipErrorInvalidValue;
    pthread_mutex_lock(&lock);
    object *a = find(start, KIND_EVENT), *b = find(stop, KIND_EVENT);
    hipError_t rc = hipSuccess;
    if (a == NULL || b == NULL || (a->flags & 2) || (b->flags & 2))
        rc = hipErrorInvalidHandle;
    else if (!a->recorded || !b->recorded)
        rc = hipErrorNotReady;
    else
        *ms = (float)(b->when_ms - a->when_ms);
    pthread_mutex_unlock(&lock);
    return rc;
}

API hipError_t hipEventDestroy(void *event)
{
    enter("hipEventDestroy");
    pthread_mutex_lock(&lock);
    object *o = find(event, KIND_EVENT);
    if (o != NULL)
        unlink_object(o);
    pthread_mutex_unlock(&lock);
    if (o == NULL)
        return hipErrorInvalidHandle;
    free(o);
    return hipSuccess;
}

API hipError_t hipMalloc(void **ptr, size_t size)
{
    enter("hipMalloc");
    if (ptr == NULL)
        return hipErrorInvalidValue;
    if (device_count <= 0)
        return hipErrorNoDevice;
    if (size == 0) {
        *ptr = NULL;
        return hipSuccess;
    }
    if (size > ((size_t)1 << 36))
        return hipErrorOutOfMemory;
    object *o = calloc(1, sizeof *o);
    void *base = NULL;
    if (o == NULL || posix_memalign(&base, 256, size) != 0) {
        free(o);
        return hipErrorOutOfMemory;
    }
    memset(base, 0xA5, size); /* uninitialised device memory is not zero */
    o->kind = KIND_ALLOC;
    o->device = current_device;
    o->base = base;
    o->size = size;
    pthread_mutex_lock(&lock);
    link_object(o);
    pthread_mutex_unlock(&lock);
    *ptr = base;
    return hipSuccess;
}

API hipError_t hipFree(void *ptr)
{
    enter("hipFree");
    if (ptr == NULL)
        return hipSuccess;
    pthread_mutex_lock(&lock);
    object *o = find_alloc(ptr);
    if (o != NULL && o->base == ptr)
        unlink_object(o);
    else
        o = NULL;
    pthread_mutex_unlock(&lock);
    if (o == NULL)
        return hipErrorInvalidValue;
    free(o->base);
    free(o);
    return hipSuccess;
}

API hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream)
{
    enter("hipMemcpyAsync");
    if (n > 0 && (dst == NULL || src == NULL))
        return hipErrorInvalidValue;
    if (kind < 0 || kind > 4)
        return hipErrorInvalidValue;
    pthread_mutex_lock(&lock);
    int ok = valid_stream(stream);
    pthread_mutex_unlock(&lock);
    if (!ok)
        return hipErrorInvalidHandle;
    memmove(dst, src, n);
    return hipSuccess;
}

#ifndef STUB_OMIT_OPTIONAL
API hipError_t hipMemsetAsync(void *dst, int value, size_t n, void *stream)
{
    enter("hipMemsetAsync");
    if (n > 0 && dst == NULL)
        return hipErrorInvalidValue;
    pthread_mutex_lock(&lock);
    int ok = valid_stream(stream);
    object *o = find_alloc(dst);
    int in_bounds = n == 0 || (o != NULL && (const char *)dst + n <= (const char *)o->base + o->size);
    pthread_mutex_unlock(&lock);
    if (!ok)
        return hipErrorInvalidHandle;
    if (!in_bounds)
        return hipErrorInvalidValue;
    memset(dst, value, n);
    return hipSuccess;
}
#endif

API hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attr, const void *ptr)
{
    enter("hipPointerGetAttributes");
    if (attr == NULL || ptr == NULL)
        return hipErrorInvalidValue;
    int v6 = runtime_version >= 60000000;
    pthread_mutex_lock(&lock);
    object *o = find_alloc(ptr);
    int device = o ? o->device : -1;
    pthread_mutex_unlock(&lock);
    memset(attr, 0, sizeof *attr);
    if (o == NULL) {
        if (!v6)
            return hipErrorInvalidValue; /* ROCm 5 rejects unregistered host memory */
        attr->type = 0;                  /* hipMemoryTypeUnregistered */
        attr->device = -1;
        attr->hostPointer = (void *)ptr;
        return hipSuccess;
    }
    attr->type = v6 ? 2 : 1; /* hipMemoryTypeDevice */
    attr->device = device;
    attr->devicePointer = (void *)ptr;
    return hipSuccess;
}
