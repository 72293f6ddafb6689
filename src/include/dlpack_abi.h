/* The DLPack C ABI (versions 0.x and 1.x), declared by us from the DLPack specification so the
 * build needs no dlpack.h. The one declaration shared by nccl._ext (consuming capsules in
 * src/ext/buffer/buffer_dlpack.c) and the cuda.core shim (producing and consuming them in
 * src/hip/hip_dlpack.c).
 *
 * Capsule protocol: a producer's capsule is named "dltensor" (dl_managed) or "dltensor_versioned"
 * (dl_managed_versioned, DLPack 1.0+). A consumer that takes ownership renames it to
 * "used_dltensor" / "used_dltensor_versioned" and calls the deleter itself; the capsule's own
 * destructor calls the deleter only while the capsule is still unconsumed. */
#ifndef NCCL4PY_DLPACK_ABI_H
#define NCCL4PY_DLPACK_ABI_H

#include <stdint.h>

/* The capsule names of the protocol above (string literals: PyCapsule keeps the pointer). */
#define DL_CAPSULE "dltensor"
#define DL_CAPSULE_VERSIONED "dltensor_versioned"
#define DL_CAPSULE_USED "used_dltensor"
#define DL_CAPSULE_USED_VERSIONED "used_dltensor_versioned"

/* DLDeviceType values, X(name after "kDL", value, memory) with the memory a tensor there is in:
 * host memory, device memory, device-accessible host memory (pinned or managed), or none nccl4py
 * accepts. The enum below, the resolver's device rule (src/ext/buffer/buffer_dlpack.c), and the cuda.core
 * shim's DLDeviceType and device-accessible set (nccl._ext._dlpack_codes). */
enum { DL_MEM_NONE, DL_MEM_HOST, DL_MEM_DEVICE, DL_MEM_PINNED };
#define DL_DEVICE_TYPES(X)                                                                              \
    X(CPU, 1, DL_MEM_HOST) X(CUDA, 2, DL_MEM_DEVICE) X(CUDAHost, 3, DL_MEM_PINNED) X(OpenCL, 4, DL_MEM_NONE) \
    X(Vulkan, 7, DL_MEM_NONE) X(Metal, 8, DL_MEM_NONE) X(VPI, 9, DL_MEM_NONE) X(ROCM, 10, DL_MEM_DEVICE)  \
    X(ROCMHost, 11, DL_MEM_PINNED) X(ExtDev, 12, DL_MEM_NONE) X(CUDAManaged, 13, DL_MEM_PINNED)
/* DLDataTypeCode values, X(name after "kDL", value): the enum below and the shim's DLDataTypeCode. */
#define DL_DATATYPE_CODES(X)                                                                            \
    X(Int, 0) X(UInt, 1) X(Float, 2) X(OpaqueHandle, 3) X(Bfloat, 4) X(Complex, 5) X(Bool, 6)            \
    X(Float8_e4m3fn, 10) X(Float8_e5m2, 12)

#define DL_DEVICE_MEMBER(name, value, memory) kDL##name = value,
#define DL_CODE_MEMBER(name, value) kDL##name = value,
enum { DL_DEVICE_TYPES(DL_DEVICE_MEMBER) };
enum { DL_DATATYPE_CODES(DL_CODE_MEMBER) };
#undef DL_DEVICE_MEMBER
#undef DL_CODE_MEMBER

typedef struct {
    int32_t device_type;
    int32_t device_id;
} dl_device;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dl_dtype;

typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* NULL: compact row-major */
    uint64_t byte_offset;
} dl_tensor;

/* DLManagedTensor (DLPack 0.x, capsule "dltensor"). */
typedef struct dl_managed {
    dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed;

typedef struct {
    uint32_t major;
    uint32_t minor;
} dl_version;

/* DLManagedTensorVersioned (DLPack 1.0+, capsule "dltensor_versioned"). */
typedef struct dl_managed_versioned {
    dl_version version;
    void *manager_ctx;
    void (*deleter)(struct dl_managed_versioned *self);
    uint64_t flags;
    dl_tensor dl_tensor;
} dl_managed_versioned;

#define DL_FLAG_READ_ONLY (UINT64_C(1) << 0)

#endif
