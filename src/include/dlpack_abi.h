/* The DLPack C ABI (versions 0.x and 1.x), declared by us from the DLPack specification so the
 * build needs no dlpack.h. The one declaration shared by nccl._ext (consuming capsules in
 * src/ext/buffer_dlpack.c) and the cuda.core shim (producing and consuming them in
 * src/hip/hip_dlpack.c).
 *
 * Capsule protocol: a producer's capsule is named "dltensor" (dl_managed) or "dltensor_versioned"
 * (dl_managed_versioned, DLPack 1.0+). A consumer that takes ownership renames it to
 * "used_dltensor" / "used_dltensor_versioned" and calls the deleter itself; the capsule's own
 * destructor calls the deleter only while the capsule is still unconsumed. */
#ifndef NCCL4PY_DLPACK_ABI_H
#define NCCL4PY_DLPACK_ABI_H

#include <stdint.h>

/* DLDeviceType and DLDataTypeCode values, X(name, value) with the name after "kDL": the enums
 * below, and the cuda.core shim's DLDeviceType / DLDataTypeCode (nccl._ext._dlpack_codes). */
#define DL_DEVICE_TYPES(X)                                                                              \
    X(CPU, 1) X(CUDA, 2) X(CUDAHost, 3) X(OpenCL, 4) X(Vulkan, 7) X(Metal, 8) X(VPI, 9) X(ROCM, 10)     \
    X(ROCMHost, 11) X(ExtDev, 12) X(CUDAManaged, 13)
#define DL_DATATYPE_CODES(X)                                                                            \
    X(Int, 0) X(UInt, 1) X(Float, 2) X(OpaqueHandle, 3) X(Bfloat, 4) X(Complex, 5) X(Bool, 6)            \
    X(Float8_e4m3fn, 10) X(Float8_e5m2, 12)

#define DL_ENUM_MEMBER(name, value) kDL##name = value,
enum { DL_DEVICE_TYPES(DL_ENUM_MEMBER) };
enum { DL_DATATYPE_CODES(DL_ENUM_MEMBER) };
#undef DL_ENUM_MEMBER

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
