/* Thin functions over the HIP runtime: ints in, ints out, HipError on failure.
 *
 * Each copies its arguments into C locals, releases the GIL around every HIP call and raises
 * after taking it back. Functions with a `device` argument run on that device and restore the
 * caller's current device before returning (-1 means "the current device"), so the device switch
 * and the call are one step that no other Python code on this thread can interleave with. */
#include "hip_module.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_loader.h"

/* The first failing call of a sequence made without the GIL. */
typedef struct {
    const char *function;
    hipError_t code;
    int previous;
    int switched;
} nh_call;

static void note(nh_call *c, const char *function, hipError_t code)
{
    if (code != GPU_hipSuccess && c->function == NULL) {
        c->function = function;
        c->code = code;
    }
}

/* GIL released. Makes `device` current unless it is -1 or already current. */
static int enter_device(nh_call *c, int device)
{
    c->function = NULL;
    c->code = GPU_hipSuccess;
    c->switched = 0;
    if (device < 0)
        return 0;
    hipError_t rc = gpu_hip.hipGetDevice(&c->previous);
    if (rc != GPU_hipSuccess) {
        /* No current device yet (e.g. a fresh thread on some runtimes): nothing to restore. */
        c->previous = -1;
    } else if (c->previous == device) {
        return 0;
    }
    rc = gpu_hip.hipSetDevice(device);
    note(c, "hipSetDevice", rc);
    if (rc != GPU_hipSuccess)
        return -1;
    c->switched = c->previous >= 0;
    return 0;
}

/* GIL released. Restores the caller's device after enter_device. */
static void leave_device(nh_call *c)
{
    if (c->switched)
        note(c, "hipSetDevice", gpu_hip.hipSetDevice(c->previous));
}

static PyObject *fail(nh_state *st, const nh_call *c) { return nh_raise_hip(st, c->function, c->code); }

PyDoc_STRVAR(get_device_count__doc__, "get_device_count()\n--\n\n"
"hipGetDeviceCount(). A runtime that reports hipErrorNoDevice counts as 0 devices.");

static PyObject *get_device_count(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    nh_state *st = nh_get_state(module);
    if (nh_ensure_loaded(st) < 0)
        return NULL;
    int count = 0;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipGetDeviceCount(&count);
    Py_END_ALLOW_THREADS
    if (rc == GPU_hipErrorNoDevice)
        count = 0;
    else if (rc != GPU_hipSuccess)
        return nh_raise_hip(st, "hipGetDeviceCount", rc);
    return PyLong_FromLong(count);
}

PyDoc_STRVAR(get_device__doc__, "get_device()\n--\n\nhipGetDevice(): the calling thread's current device.");

static PyObject *get_device(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    nh_state *st = nh_get_state(module);
    if (nh_ensure_loaded(st) < 0)
        return NULL;
    int device = -1;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipGetDevice(&device);
    Py_END_ALLOW_THREADS
    if (rc != GPU_hipSuccess)
        return nh_raise_hip(st, "hipGetDevice", rc);
    return PyLong_FromLong(device);
}

PyDoc_STRVAR(set_device__doc__, "set_device(device, /)\n--\n\nhipSetDevice(device) for the calling thread.");

static PyObject *set_device(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int device;
    if (!nh_check_nargs("set_device", nargs, 1, 1) || !nh_int_converter(args[0], &device))
        return NULL;
    if (nh_ensure_loaded(st) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipSetDevice(device);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipSetDevice", rc);
}

PyDoc_STRVAR(device_synchronize__doc__, "device_synchronize(device=-1, /)\n--\n\n"
"hipDeviceSynchronize() on device (-1: the current one). Blocks until its work is done.");

static PyObject *device_synchronize(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int device = -1;
    if (!nh_check_nargs("device_synchronize", nargs, 0, 1) || (nargs > 0 && !nh_int_converter(args[0], &device)))
        return NULL;
    if (nh_need(st, &gpu_hip.hipDeviceSynchronize) < 0)
        return NULL;
    nh_call c;
    Py_BEGIN_ALLOW_THREADS
    if (enter_device(&c, device) == 0) {
        note(&c, "hipDeviceSynchronize", gpu_hip.hipDeviceSynchronize());
        leave_device(&c);
    }
    Py_END_ALLOW_THREADS
    if (c.function != NULL)
        return fail(st, &c);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(device_get_pci_bus_id__doc__, "device_get_pci_bus_id(device, /)\n--\n\n"
"hipDeviceGetPCIBusId(): the device's PCI address as 'domain:bus:device.function'.");

static PyObject *device_get_pci_bus_id(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int device;
    if (!nh_check_nargs("device_get_pci_bus_id", nargs, 1, 1) || !nh_int_converter(args[0], &device))
        return NULL;
    if (nh_need(st, &gpu_hip.hipDeviceGetPCIBusId) < 0)
        return NULL;
    char bus_id[64];
    hipError_t rc;
    memset(bus_id, 0, sizeof bus_id);
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipDeviceGetPCIBusId(bus_id, (int)sizeof bus_id - 1, device);
    Py_END_ALLOW_THREADS
    if (rc != GPU_hipSuccess)
        return nh_raise_hip(st, "hipDeviceGetPCIBusId", rc);
    return PyUnicode_DecodeASCII(bus_id, (Py_ssize_t)strnlen(bus_id, sizeof bus_id), "replace");
}

PyDoc_STRVAR(stream_create__doc__, "stream_create(flags=0, priority=None, device=-1, /)\n--\n\n"
"Create a stream on device (-1: the current one): hipStreamCreateWithFlags, or\n"
"hipStreamCreateWithPriority when priority is not None. Returns the handle.");

static PyObject *stream_create(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int flags = 0, priority = 0, has_priority = 0, device = -1;
    if (!nh_check_nargs("stream_create", nargs, 0, 3) || (nargs > 0 && !nh_int_converter(args[0], &flags)))
        return NULL;
    if (nargs > 1 && args[1] != Py_None) {
        if (!nh_int_converter(args[1], &priority))
            return NULL;
        has_priority = 1;
    }
    if (nargs > 2 && !nh_int_converter(args[2], &device))
        return NULL;
    if (nh_ensure_loaded(st) < 0)
        return NULL;
    if (has_priority) {
        if (nh_need(st, &gpu_hip.hipStreamCreateWithPriority) < 0)
            return NULL;
    } else if (gpu_hip.hipStreamCreateWithFlags == NULL && (flags != 0 || gpu_hip.hipStreamCreate == NULL)) {
        return nh_raise_missing(st, "hipStreamCreateWithFlags");
    }
    hipStream_t stream = NULL;
    nh_call c;
    Py_BEGIN_ALLOW_THREADS
    if (enter_device(&c, device) == 0) {
        if (has_priority)
            note(&c, "hipStreamCreateWithPriority",
                 gpu_hip.hipStreamCreateWithPriority(&stream, (unsigned int)flags, priority));
        else if (gpu_hip.hipStreamCreateWithFlags != NULL)
            note(&c, "hipStreamCreateWithFlags", gpu_hip.hipStreamCreateWithFlags(&stream, (unsigned int)flags));
        else
            note(&c, "hipStreamCreate", gpu_hip.hipStreamCreate(&stream));
        leave_device(&c);
        if (c.function != NULL && stream != NULL) {
            if (gpu_hip.hipStreamDestroy != NULL)
                (void)gpu_hip.hipStreamDestroy(stream); /* the device could not be restored; drop it */
            stream = NULL;
        }
    }
    Py_END_ALLOW_THREADS
    if (c.function != NULL)
        return fail(st, &c);
    return PyLong_FromVoidPtr(stream);
}

/* ---- one-handle functions: parse, check the symbol, call without the GIL ---- */

/* The handle argument of a one-handle function, and the runtime with its entry point at slot. */
static int one_handle(nh_state *st, const char *name, PyObject *const *args, Py_ssize_t nargs, const void *slot,
                      uintptr_t *handle)
{
    if (!nh_check_nargs(name, nargs, 1, 1) || !nh_handle_converter(args[0], handle))
        return -1;
    if (nh_need(st, slot) < 0)
        return -1;
    return 0;
}

PyDoc_STRVAR(stream_destroy__doc__, "stream_destroy(stream, /)\n--\n\nhipStreamDestroy(stream).");
static PyObject *stream_destroy(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t handle;
    if (one_handle(st, "stream_destroy", args, nargs, &gpu_hip.hipStreamDestroy, &handle) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipStreamDestroy((hipStream_t)handle);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipStreamDestroy", rc);
}

PyDoc_STRVAR(stream_synchronize__doc__, "stream_synchronize(stream, /)\n--\n\n"
"hipStreamSynchronize(stream): blocks until the stream's work is done.");
static PyObject *stream_synchronize(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t handle;
    if (one_handle(st, "stream_synchronize", args, nargs, &gpu_hip.hipStreamSynchronize, &handle) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipStreamSynchronize((hipStream_t)handle);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipStreamSynchronize", rc);
}

PyDoc_STRVAR(event_synchronize__doc__, "event_synchronize(event, /)\n--\n\n"
"hipEventSynchronize(event): blocks until the event has completed.");
static PyObject *event_synchronize(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t handle;
    if (one_handle(st, "event_synchronize", args, nargs, &gpu_hip.hipEventSynchronize, &handle) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipEventSynchronize((hipEvent_t)handle);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipEventSynchronize", rc);
}

PyDoc_STRVAR(event_destroy__doc__, "event_destroy(event, /)\n--\n\nhipEventDestroy(event).");
static PyObject *event_destroy(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t handle;
    if (one_handle(st, "event_destroy", args, nargs, &gpu_hip.hipEventDestroy, &handle) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipEventDestroy((hipEvent_t)handle);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipEventDestroy", rc);
}

PyDoc_STRVAR(hip_free__doc__, "free(ptr, /)\n--\n\nhipFree(ptr). Synchronizes the device.");
static PyObject *hip_free(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t handle;
    if (one_handle(st, "free", args, nargs, &gpu_hip.hipFree, &handle) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipFree((void *)handle);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipFree", rc);
}

PyDoc_STRVAR(stream_wait_event__doc__, "stream_wait_event(stream, event, flags=0, /)\n--\n\n"
"hipStreamWaitEvent(): later work on stream waits for event. Does not block the host.");

static PyObject *stream_wait_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t stream, event;
    int flags = 0;
    if (!nh_check_nargs("stream_wait_event", nargs, 2, 3) || !nh_handle_converter(args[0], &stream) ||
        !nh_handle_converter(args[1], &event) || (nargs > 2 && !nh_int_converter(args[2], &flags)))
        return NULL;
    if (nh_need(st, &gpu_hip.hipStreamWaitEvent) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipStreamWaitEvent((hipStream_t)stream, (hipEvent_t)event, (unsigned int)flags);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipStreamWaitEvent", rc);
}

PyDoc_STRVAR(event_create__doc__, "event_create(flags=0, device=-1, /)\n--\n\n"
"hipEventCreateWithFlags() on device (-1: the current one). Returns the handle.");

static PyObject *event_create(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int flags = 0, device = -1;
    if (!nh_check_nargs("event_create", nargs, 0, 2) || (nargs > 0 && !nh_int_converter(args[0], &flags)) ||
        (nargs > 1 && !nh_int_converter(args[1], &device)))
        return NULL;
    if (nh_ensure_loaded(st) < 0)
        return NULL;
    if (gpu_hip.hipEventCreateWithFlags == NULL && (flags != 0 || gpu_hip.hipEventCreate == NULL))
        return nh_raise_missing(st, "hipEventCreateWithFlags");
    hipEvent_t event = NULL;
    nh_call c;
    Py_BEGIN_ALLOW_THREADS
    if (enter_device(&c, device) == 0) {
        if (gpu_hip.hipEventCreateWithFlags != NULL)
            note(&c, "hipEventCreateWithFlags", gpu_hip.hipEventCreateWithFlags(&event, (unsigned int)flags));
        else
            note(&c, "hipEventCreate", gpu_hip.hipEventCreate(&event));
        leave_device(&c);
        if (c.function != NULL && event != NULL) {
            if (gpu_hip.hipEventDestroy != NULL)
                (void)gpu_hip.hipEventDestroy(event); /* the device could not be restored; drop it */
            event = NULL;
        }
    }
    Py_END_ALLOW_THREADS
    if (c.function != NULL)
        return fail(st, &c);
    return PyLong_FromVoidPtr(event);
}

PyDoc_STRVAR(event_record__doc__, "event_record(event, stream, /)\n--\n\n"
"hipEventRecord(event, stream): the event completes when the stream's earlier work has.");

static PyObject *event_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t event, stream;
    if (!nh_check_nargs("event_record", nargs, 2, 2) || !nh_handle_converter(args[0], &event) ||
        !nh_handle_converter(args[1], &stream))
        return NULL;
    if (nh_need(st, &gpu_hip.hipEventRecord) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipEventRecord((hipEvent_t)event, (hipStream_t)stream);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipEventRecord", rc);
}

PyDoc_STRVAR(event_query__doc__, "event_query(event, /)\n--\n\n"
"hipEventQuery(): True if the event has completed, False while it is pending (hipErrorNotReady).");

static PyObject *event_query(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t event;
    if (!nh_check_nargs("event_query", nargs, 1, 1) || !nh_handle_converter(args[0], &event))
        return NULL;
    if (nh_need(st, &gpu_hip.hipEventQuery) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipEventQuery((hipEvent_t)event);
    Py_END_ALLOW_THREADS
    if (rc == GPU_hipErrorNotReady)
        Py_RETURN_FALSE;
    if (rc != GPU_hipSuccess)
        return nh_raise_hip(st, "hipEventQuery", rc);
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(event_elapsed_time__doc__, "event_elapsed_time(start, end, /)\n--\n\n"
"hipEventElapsedTime(): milliseconds from start to end, both recorded with timing enabled.");

static PyObject *event_elapsed_time(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t start, end;
    if (!nh_check_nargs("event_elapsed_time", nargs, 2, 2) || !nh_handle_converter(args[0], &start) ||
        !nh_handle_converter(args[1], &end))
        return NULL;
    if (nh_need(st, &gpu_hip.hipEventElapsedTime) < 0)
        return NULL;
    float ms = 0.0f;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipEventElapsedTime(&ms, (hipEvent_t)start, (hipEvent_t)end);
    Py_END_ALLOW_THREADS
    if (rc != GPU_hipSuccess)
        return nh_raise_hip(st, "hipEventElapsedTime", rc);
    return PyFloat_FromDouble((double)ms);
}

PyDoc_STRVAR(malloc__doc__, "malloc(size, device=-1, /)\n--\n\n"
"hipMalloc(size) on device (-1: the current one). size must be positive. Returns the pointer.");

static PyObject *hip_malloc(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    size_t size;
    int device = -1;
    if (!nh_check_nargs("malloc", nargs, 1, 2) || !nh_size_converter(args[0], &size) ||
        (nargs > 1 && !nh_int_converter(args[1], &device)))
        return NULL;
    if (size == 0) {
        PyErr_SetString(PyExc_ValueError, "size must be positive, got 0");
        return NULL;
    }
    if (nh_need(st, &gpu_hip.hipMalloc) < 0)
        return NULL;
    if (nh_need(st, &gpu_hip.hipFree) < 0)
        return NULL;
    void *ptr = NULL;
    nh_call c;
    Py_BEGIN_ALLOW_THREADS
    if (enter_device(&c, device) == 0) {
        note(&c, "hipMalloc", gpu_hip.hipMalloc(&ptr, size));
        leave_device(&c);
        if (c.function != NULL && ptr != NULL) {
            (void)gpu_hip.hipFree(ptr); /* the device could not be restored; drop the allocation */
            ptr = NULL;
        }
    }
    Py_END_ALLOW_THREADS
    if (c.function != NULL)
        return fail(st, &c);
    return PyLong_FromVoidPtr(ptr);
}

PyDoc_STRVAR(memcpy_async__doc__, "memcpy_async(dst, src, nbytes, kind, stream, /)\n--\n\n"
"hipMemcpyAsync(): stream-ordered copy of nbytes; kind is a hipMemcpyKind (4: inferred).");

static PyObject *memcpy_async(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t dst, src, stream;
    size_t nbytes;
    int kind;
    if (!nh_check_nargs("memcpy_async", nargs, 5, 5) || !nh_handle_converter(args[0], &dst) ||
        !nh_handle_converter(args[1], &src) || !nh_size_converter(args[2], &nbytes) ||
        !nh_int_converter(args[3], &kind) || !nh_handle_converter(args[4], &stream))
        return NULL;
    if (nh_need(st, &gpu_hip.hipMemcpyAsync) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipMemcpyAsync((void *)dst, (const void *)src, nbytes, kind, (hipStream_t)stream);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipMemcpyAsync", rc);
}

PyDoc_STRVAR(memset_async__doc__, "memset_async(dst, value, nbytes, stream, /)\n--\n\n"
"hipMemsetAsync(): stream-ordered fill of nbytes with the byte value (0-255).");

static PyObject *memset_async(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t dst, stream;
    size_t nbytes;
    int value;
    if (!nh_check_nargs("memset_async", nargs, 4, 4) || !nh_handle_converter(args[0], &dst) ||
        !nh_int_converter(args[1], &value) || !nh_size_converter(args[2], &nbytes) ||
        !nh_handle_converter(args[3], &stream))
        return NULL;
    if (value < 0 || value > 255) {
        PyErr_Format(PyExc_ValueError, "value must be a byte (0-255), got %d", value);
        return NULL;
    }
    if (nh_need(st, &gpu_hip.hipMemsetAsync) < 0)
        return NULL;
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipMemsetAsync((void *)dst, value, nbytes, (hipStream_t)stream);
    Py_END_ALLOW_THREADS
    return nh_none_or_raise(st, "hipMemsetAsync", rc);
}

/* hipMemoryType changed values in ROCm 6.0 (HIP 6 aligned it with CUDA's cudaMemoryType). */
static const char *memory_type_name(int type, int is_managed)
{
    if (is_managed)
        return "managed";
    if (gpu_hip_runtime_version() >= 60000000) {
        switch (type) {
        case 0: return "unregistered";
        case 1: return "host";
        case 2: return "device";
        case 3: return "managed";
        case 10: return "array";
        case 11: return "unified";
        default: return "unknown";
        }
    }
    switch (type) {
    case 0: return "host";
    case 1: return "device";
    case 2: return "array";
    case 3: return "unified";
    case 4: return "managed";
    default: return "unknown";
    }
}

PyDoc_STRVAR(pointer_get_attributes__doc__, "pointer_get_attributes(ptr, /)\n--\n\n"
"hipPointerGetAttributes() as (memory_type, device, device_pointer, host_pointer, is_managed);\n"
"memory_type is 'host', 'device', 'managed', 'unregistered', 'array', 'unified' or 'unknown',\n"
"decoded for the runtime's version.");

static PyObject *pointer_get_attributes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    uintptr_t ptr;
    if (!nh_check_nargs("pointer_get_attributes", nargs, 1, 1) || !nh_handle_converter(args[0], &ptr))
        return NULL;
    if (nh_need(st, &gpu_hip.hipPointerGetAttributes) < 0)
        return NULL;
    /* Room beyond the documented layout, in case a runtime's struct grows at the end. */
    union {
        gpu_hip_pointer_attributes attributes;
        unsigned char room[256];
    } u;
    memset(&u, 0, sizeof u);
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipPointerGetAttributes(&u.attributes, (const void *)ptr);
    Py_END_ALLOW_THREADS
    if (rc != GPU_hipSuccess)
        return nh_raise_hip(st, "hipPointerGetAttributes", rc);
    const gpu_hip_pointer_attributes *a = &u.attributes;
    return Py_BuildValue("(siNNO)", memory_type_name(a->type, a->isManaged), a->device,
                         PyLong_FromVoidPtr(a->devicePointer), PyLong_FromVoidPtr(a->hostPointer),
                         a->isManaged ? Py_True : Py_False);
}

PyDoc_STRVAR(get_error_string__doc__, "get_error_string(code, /)\n--\n\nhipGetErrorString(code). Loads the runtime.");

static PyObject *get_error_string(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int code;
    if (!nh_check_nargs("get_error_string", nargs, 1, 1) || !nh_int_converter(args[0], &code))
        return NULL;
    if (nh_ensure_loaded(st) < 0)
        return NULL;
    const char *text = gpu_hip.hipGetErrorString(code); /* a string lookup: does not block */
    return PyUnicode_FromString(text ? text : "");
}

PyDoc_STRVAR(get_error_name__doc__, "get_error_name(code, /)\n--\n\nhipGetErrorName(code). Loads the runtime.");

static PyObject *get_error_name(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    nh_state *st = nh_get_state(module);
    int code;
    if (!nh_check_nargs("get_error_name", nargs, 1, 1) || !nh_int_converter(args[0], &code))
        return NULL;
    if (nh_need(st, &gpu_hip.hipGetErrorName) < 0)
        return NULL;
    const char *name = gpu_hip.hipGetErrorName(code); /* a string lookup: does not block */
    return PyUnicode_FromString(name ? name : "");
}

/* Host memory for the shim's host-flavour backend (no HIP involved): page-aligned, zeroed. */

PyDoc_STRVAR(host_malloc__doc__, "host_malloc(size, /)\n--\n\n"
"Zeroed, 4096-byte aligned host memory for the host-flavour backend. size must be positive.");

static PyObject *host_malloc(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    size_t size;
    if (!nh_check_nargs("host_malloc", nargs, 1, 1) || !nh_size_converter(args[0], &size))
        return NULL;
    if (size == 0) {
        PyErr_SetString(PyExc_ValueError, "size must be positive, got 0");
        return NULL;
    }
    void *ptr = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = posix_memalign(&ptr, 4096, size);
    if (rc == 0)
        memset(ptr, 0, size);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return PyErr_NoMemory();
    return PyLong_FromVoidPtr(ptr);
}

PyDoc_STRVAR(host_free__doc__, "host_free(ptr, /)\n--\n\nFree memory from host_malloc (0 is ignored).");

static PyObject *host_free(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    uintptr_t ptr;
    if (!nh_check_nargs("host_free", nargs, 1, 1) || !nh_handle_converter(args[0], &ptr))
        return NULL;
    free((void *)ptr);
    Py_RETURN_NONE;
}

#define NH_FASTCALL(name, fn) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, fn##__doc__}

PyMethodDef nh_runtime_methods[] = {
    {"get_device_count", get_device_count, METH_NOARGS, get_device_count__doc__},
    {"get_device", get_device, METH_NOARGS, get_device__doc__},
    NH_FASTCALL("set_device", set_device),
    NH_FASTCALL("device_synchronize", device_synchronize),
    NH_FASTCALL("device_get_pci_bus_id", device_get_pci_bus_id),
    NH_FASTCALL("stream_create", stream_create),
    NH_FASTCALL("stream_destroy", stream_destroy),
    NH_FASTCALL("stream_synchronize", stream_synchronize),
    NH_FASTCALL("stream_wait_event", stream_wait_event),
    NH_FASTCALL("event_create", event_create),
    NH_FASTCALL("event_record", event_record),
    NH_FASTCALL("event_synchronize", event_synchronize),
    NH_FASTCALL("event_query", event_query),
    NH_FASTCALL("event_elapsed_time", event_elapsed_time),
    NH_FASTCALL("event_destroy", event_destroy),
    {"malloc", (PyCFunction)(void (*)(void))hip_malloc, METH_FASTCALL, malloc__doc__},
    NH_FASTCALL("free", hip_free),
    NH_FASTCALL("memcpy_async", memcpy_async),
    NH_FASTCALL("memset_async", memset_async),
    NH_FASTCALL("pointer_get_attributes", pointer_get_attributes),
    NH_FASTCALL("get_error_string", get_error_string),
    NH_FASTCALL("get_error_name", get_error_name),
    NH_FASTCALL("host_malloc", host_malloc),
    NH_FASTCALL("host_free", host_free),
    {NULL, NULL, 0, NULL},
};
