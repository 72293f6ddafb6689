/* The HIP runtime entry points the cuda.core shim uses: the one place a HIP symbol name is written.
 *
 * Declared by us from the documented HIP runtime API (hip_runtime_api.h), so the build needs no
 * ROCm/HIP SDK. Only entry points whose C signature has been stable since HIP 4.x (ROCm 4/5/6, the
 * "hip_4.2" symbol version) are listed. Handles are opaque pointers; hipError_t is a C enum, so an
 * int on every ABI we target.
 *
 * "Required" entry points must be exported for a candidate to count as a HIP runtime at all; a
 * missing optional one leaves its pointer NULL and only the call that needs it fails, naming the
 * library and the function. */
#ifndef NCCL4PY_HIP_API_H
#define NCCL4PY_HIP_API_H

#include <stddef.h>

typedef int hipError_t;
typedef struct nh_opaque_stream *hipStream_t;
typedef struct nh_opaque_event *hipEvent_t;
typedef int hipMemcpyKind;

/* Result codes we branch on (values are part of the HIP ABI). */
enum {
    NH_hipSuccess = 0,
    NH_hipErrorInvalidValue = 1,
    NH_hipErrorNoDevice = 100,
    NH_hipErrorInvalidDevice = 101,
    NH_hipErrorNotReady = 600,
};

/* hipPointerAttribute_t as laid out by HIP 4.x-6.x: the first field is "memoryType" before ROCm 6
 * and "type" from ROCm 6 on, same offset, but the enum's values changed (see nh_memory_type). */
typedef struct {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned int allocationFlags;
} nh_hip_pointer_attributes;

#define NH_REQUIRED 1
#define NH_OPTIONAL 0

/* X(name, return type, parameter list, need) */
#define NH_HIP_API(X)                                                                          \
    X(hipGetDeviceCount, hipError_t, (int *count), NH_REQUIRED)                                \
    X(hipGetDevice, hipError_t, (int *device), NH_REQUIRED)                                    \
    X(hipSetDevice, hipError_t, (int device), NH_REQUIRED)                                     \
    X(hipGetErrorString, const char *, (hipError_t error), NH_REQUIRED)                        \
    X(hipGetErrorName, const char *, (hipError_t error), NH_OPTIONAL)                          \
    X(hipRuntimeGetVersion, hipError_t, (int *version), NH_OPTIONAL)                           \
    X(hipDeviceGetPCIBusId, hipError_t, (char *pciBusId, int len, int device), NH_OPTIONAL)    \
    X(hipDeviceSynchronize, hipError_t, (void), NH_OPTIONAL)                                   \
    X(hipStreamCreate, hipError_t, (hipStream_t *stream), NH_OPTIONAL)                         \
    X(hipStreamCreateWithFlags, hipError_t, (hipStream_t *stream, unsigned int flags),         \
      NH_OPTIONAL)                                                                             \
    X(hipStreamCreateWithPriority, hipError_t,                                                 \
      (hipStream_t *stream, unsigned int flags, int priority), NH_OPTIONAL)                    \
    X(hipStreamDestroy, hipError_t, (hipStream_t stream), NH_OPTIONAL)                         \
    X(hipStreamSynchronize, hipError_t, (hipStream_t stream), NH_OPTIONAL)                     \
    X(hipStreamWaitEvent, hipError_t, (hipStream_t stream, hipEvent_t event, unsigned int flags), \
      NH_OPTIONAL)                                                                             \
    X(hipEventCreate, hipError_t, (hipEvent_t *event), NH_OPTIONAL)                            \
    X(hipEventCreateWithFlags, hipError_t, (hipEvent_t *event, unsigned int flags), NH_OPTIONAL) \
    X(hipEventRecord, hipError_t, (hipEvent_t event, hipStream_t stream), NH_OPTIONAL)         \
    X(hipEventSynchronize, hipError_t, (hipEvent_t event), NH_OPTIONAL)                        \
    X(hipEventQuery, hipError_t, (hipEvent_t event), NH_OPTIONAL)                              \
    X(hipEventElapsedTime, hipError_t, (float *ms, hipEvent_t start, hipEvent_t stop),         \
      NH_OPTIONAL)                                                                             \
    X(hipEventDestroy, hipError_t, (hipEvent_t event), NH_OPTIONAL)                            \
    X(hipMalloc, hipError_t, (void **ptr, size_t size), NH_OPTIONAL)                           \
    X(hipFree, hipError_t, (void *ptr), NH_OPTIONAL)                                           \
    X(hipMemcpyAsync, hipError_t,                                                              \
      (void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind, hipStream_t stream),  \
      NH_OPTIONAL)                                                                             \
    X(hipMemsetAsync, hipError_t, (void *dst, int value, size_t sizeBytes, hipStream_t stream), \
      NH_OPTIONAL)                                                                             \
    X(hipPointerGetAttributes, hipError_t,                                                     \
      (nh_hip_pointer_attributes *attributes, const void *ptr), NH_OPTIONAL)

#define NH_HIP_FIELD(name, ret, params, need) ret(*name) params;
typedef struct {
    NH_HIP_API(NH_HIP_FIELD)
} nh_hip_table;
#undef NH_HIP_FIELD

#endif
