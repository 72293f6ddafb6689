/* The HIP runtime entry points nccl4py uses (the cuda.core shim, and nccl._ext's pointer queries):
 * the one place a HIP symbol name is written. Shared by src/hip and src/ext through gpu_loader.h.
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
/* The stream tag is the one nccl_abi.h gives cudaStream_t/hipStream_t, so a file may include both
 * headers (C11 allows the repeated typedef of one type). */
typedef struct CUstream_st *hipStream_t;
typedef struct gpu_opaque_event *hipEvent_t;
typedef int hipMemcpyKind;

/* Result codes we branch on (values are part of the HIP ABI). */
enum {
    GPU_hipSuccess = 0,
    GPU_hipErrorInvalidValue = 1,
    GPU_hipErrorNoDevice = 100,
    GPU_hipErrorInvalidDevice = 101,
    GPU_hipErrorNotReady = 600,
};

/* hipPointerAttribute_t as laid out by HIP 4.x-6.x: the first field is "memoryType" before ROCm 6
 * and "type" from ROCm 6 on, same offset, but the enum's values changed (memory_type_name in
 * src/hip/hip_runtime.c reads both). */
typedef struct {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned int allocationFlags;
} gpu_hip_pointer_attributes;

#define GPU_REQUIRED 1
#define GPU_OPTIONAL 0

/* X(name, return type, parameter list, need) */
#define GPU_HIP_API(X)                                                                          \
    X(hipGetDeviceCount, hipError_t, (int *count), GPU_REQUIRED)                                \
    X(hipGetDevice, hipError_t, (int *device), GPU_REQUIRED)                                    \
    X(hipSetDevice, hipError_t, (int device), GPU_REQUIRED)                                     \
    X(hipGetErrorString, const char *, (hipError_t error), GPU_REQUIRED)                        \
    X(hipGetErrorName, const char *, (hipError_t error), GPU_OPTIONAL)                          \
    X(hipRuntimeGetVersion, hipError_t, (int *version), GPU_OPTIONAL)                           \
    X(hipDeviceGetPCIBusId, hipError_t, (char *pciBusId, int len, int device), GPU_OPTIONAL)    \
    X(hipDeviceSynchronize, hipError_t, (void), GPU_OPTIONAL)                                   \
    X(hipStreamCreate, hipError_t, (hipStream_t *stream), GPU_OPTIONAL)                         \
    X(hipStreamCreateWithFlags, hipError_t, (hipStream_t *stream, unsigned int flags),         \
      GPU_OPTIONAL)                                                                             \
    X(hipStreamCreateWithPriority, hipError_t,                                                 \
      (hipStream_t *stream, unsigned int flags, int priority), GPU_OPTIONAL)                    \
    X(hipStreamDestroy, hipError_t, (hipStream_t stream), GPU_OPTIONAL)                         \
    X(hipStreamSynchronize, hipError_t, (hipStream_t stream), GPU_OPTIONAL)                     \
    X(hipStreamWaitEvent, hipError_t, (hipStream_t stream, hipEvent_t event, unsigned int flags), \
      GPU_OPTIONAL)                                                                             \
    X(hipEventCreate, hipError_t, (hipEvent_t *event), GPU_OPTIONAL)                            \
    X(hipEventCreateWithFlags, hipError_t, (hipEvent_t *event, unsigned int flags), GPU_OPTIONAL) \
    X(hipEventRecord, hipError_t, (hipEvent_t event, hipStream_t stream), GPU_OPTIONAL)         \
    X(hipEventSynchronize, hipError_t, (hipEvent_t event), GPU_OPTIONAL)                        \
    X(hipEventQuery, hipError_t, (hipEvent_t event), GPU_OPTIONAL)                              \
    X(hipEventElapsedTime, hipError_t, (float *ms, hipEvent_t start, hipEvent_t stop),         \
      GPU_OPTIONAL)                                                                             \
    X(hipEventDestroy, hipError_t, (hipEvent_t event), GPU_OPTIONAL)                            \
    X(hipMalloc, hipError_t, (void **ptr, size_t size), GPU_OPTIONAL)                           \
    X(hipFree, hipError_t, (void *ptr), GPU_OPTIONAL)                                           \
    X(hipMemcpyAsync, hipError_t,                                                              \
      (void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind, hipStream_t stream),  \
      GPU_OPTIONAL)                                                                             \
    X(hipMemsetAsync, hipError_t, (void *dst, int value, size_t sizeBytes, hipStream_t stream), \
      GPU_OPTIONAL)                                                                             \
    X(hipPointerGetAttributes, hipError_t,                                                     \
      (gpu_hip_pointer_attributes *attributes, const void *ptr), GPU_OPTIONAL)

#define GPU_HIP_FIELD(name, ret, params, need) ret(*name) params;
typedef struct {
    GPU_HIP_API(GPU_HIP_FIELD)
} gpu_hip_table;
#undef GPU_HIP_FIELD

#endif
