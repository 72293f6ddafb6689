/* Array object -> nx_buffer resolution (docs/architecture.md#buffer-resolution), one file per concern:
 *
 *   buffer.c         the resolver: dispatch, the numpy/torch fast paths, cupy, cuda.core Buffer,
 *                    the buffer protocol, and the layout checks every producer shares
 *   buffer_dlpack.c  DLPack capsules (__dlpack__ / __dlpack_device__)
 *   buffer_cai.c     __cuda_array_interface__
 *   buffer_device.c  the device of a raw pointer, asked of the GPU driver (src/common/gpu_loader.c)
 *   buffer_dtypes.c  the table of numpy/DLPack/torch element types and their NCCL datatypes
 *   ncclbuffer.c     the NcclBuffer type (nccl.core.buffer.NcclBuffer)
 *
 * Error messages are built in NX_COLD functions, off the hot paths. */
#ifndef NCCL4PY_BUFFER_H
#define NCCL4PY_BUFFER_H

#include "module/common.h"

#include <stdint.h>

#define NX_DEVICE_HOST (-1) /* nx_buffer.device of host memory (pinned/managed memory carries the
                            * device its producer reports) */

typedef struct {
    void *ptr;            /* first element */
    size_t count;         /* elements of dtype */
    ncclDataType_t dtype;
    int device;           /* device ordinal, or NX_DEVICE_HOST */
    int readonly;         /* the producer marked the memory read-only */
    int logical;          /* bool elements (dtype UINT8): reductions are logical (collectives.c) */
    PyObject *keep;       /* what pins the memory while the caller uses ptr (a new reference the
                             caller releases), or NULL: a buffer-protocol export (a memoryview) or
                             an unconsumed DLPack capsule (docs/architecture.md#buffer-lifetime) */
} nx_buffer;

/* The element-type table answers with a datatype code: the NCCL datatype, plus NX_DTYPE_LOGICAL
 * for bool, which NCCL carries as UINT8 but whose sum must stay a bool (docs/api/collectives.md#bool-buffers). */
#define NX_DTYPE_LOGICAL 0x100

static inline ncclDataType_t nx_dtype_of(int code) { return (ncclDataType_t)(code & ~NX_DTYPE_LOGICAL); }

static inline void nx_buffer_set_dtype(nx_buffer *b, int code)
{
    b->dtype = nx_dtype_of(code);
    b->logical = (code & NX_DTYPE_LOGICAL) != 0;
}

/* Resolves an array object to a dense buffer per docs/architecture.md#buffer-resolution: fast paths (numpy, torch and
 * cupy when already imported), cuda.core Buffer, DLPack, __cuda_array_interface__, then (host
 * flavour only) the buffer protocol. `name` is the parameter name used in every message
 * ("sendbuf", ...). Checks layout and dtype; not the device (the communicator does that) and not
 * writability (the caller asks for it with nx_buffer_writable). 0, or -1 with NcclInvalid set
 * (and out->keep NULL). On success out->keep may hold a reference: the caller releases it once it
 * no longer uses ptr (nx_call_buffer hands it to the call). */
int nx_resolve_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out);

/* ---- the element-type table (buffer_dtypes.c) ---- */

/* Element size in bytes of a valid ncclDataType_t; 0 for anything else. */
size_t nx_dtype_size(ncclDataType_t dt);
/* The NcclDataType member name ("FLOAT32"), for messages; "<invalid>" for anything else. */
const char *nx_dtype_name(ncclDataType_t dt);

/* A numpy-style dtype (name, kind, itemsize) as a datatype code per docs/compatibility.md#names-and-types: the
 * ml_dtypes names first, then kind and itemsize (bool is UINT8 | NX_DTYPE_LOGICAL); -1 if it has no NCCL
 * equivalent. These three return datatype codes (nx_dtype_of, nx_buffer_set_dtype). */
int nx_numpy_kind_dtype(const char *dname, int kind, Py_ssize_t itemsize);

/* A DLPack (type code, bits) as a datatype; -1 if it has no NCCL equivalent. */
int nx_dlpack_dtype(int code, int bits);

/* A torch dtype's str() ("torch.float32") as a datatype; -1 if it has no NCCL equivalent. */
int nx_torch_dtype(const char *str);

/* The numpy dtype name of a datatype ("float32"), *ml_dtypes set when the dtype comes from the
 * ml_dtypes package; NULL for an invalid datatype. */
const char *nx_dtype_numpy_name(ncclDataType_t dt, int *ml_dtypes);

/* Adds nccl._ext._numpy_dtypes, the table's rows for nccl.core._types. 0 or -1. */
int nx_buffer_dtypes_setup(PyObject *module);

/* NcclInvalid("<name> is read-only ...") when b, the resolution of obj, is read-only; the message
 * names what obj is (a numpy scalar, a read-only array) and what to pass instead. */
int nx_buffer_writable(nx_state *st, const nx_buffer *b, PyObject *obj, const char *name);

/* ---- this part of the module state: interned names and caches of the resolver ---- */

/* Interned attribute names and keyword tuples (nx_buffer_cache.str). */
enum {
    NX_BSTR_DATA_PTR, NX_BSTR_NUMEL, NX_BSTR_DTYPE, NX_BSTR_IS_CONTIGUOUS, NX_BSTR_IS_CUDA, NX_BSTR_GET_DEVICE,
    NX_BSTR_DEVICE, NX_BSTR_DLPACK, NX_BSTR_DLPACK_DEVICE, NX_BSTR_KW_VERSIONED, NX_BSTR_KW_LEGACY, NX_BSTR_CAI,
    NX_BSTR_HANDLE, NX_BSTR_SIZE, NX_BSTR_STRIDE, NX_BSTR_SHAPE, NX_BSTR_IS_CPU, NX_BSTR_MINUS_ONE,
    NX_BSTR_MODULE0, /* then one module name per NX_BTYPE_* */
};

/* Classes looked up in sys.modules, never imported by us (nx_buffer_cache.types). */
enum { NX_BTYPE_NDARRAY, NX_BTYPE_TORCH, NX_BTYPE_CUPY, NX_BTYPE_CC_BUFFER, NX_BTYPE_CC_BUFFER_EXP,
       NX_BTYPE_SHIM_BUFFER, NX_NBTYPES };

#define NX_BUF_NSTR (NX_BSTR_MODULE0 + NX_NBTYPES)
#define NX_BUF_NDESCR 24
#define NX_BUF_NTORCH 16

/* One mapping of a dtype cache: a dtype object (owned) and its ncclDataType_t. Allocated whole
 * and published with one pointer store, so a reader never sees a key without its value. */
typedef struct {
    PyObject *key;
    int dtype;
} nx_dtype_entry;

/* Owned references; each array entry NULL until filled, then fixed until the state is cleared
 * (filled by compare-and-swap: the resolver runs without the GIL on free-threaded builds). */
typedef struct {
    PyObject *str[NX_BUF_NSTR];
    PyObject *types[NX_NBTYPES];            /* NULL until the framework is seen in sys.modules */
    nx_dtype_entry *np[NX_BUF_NDESCR];      /* numpy dtype objects already mapped */
    nx_dtype_entry *torch[NX_BUF_NTORCH];   /* torch.dtype objects already mapped */
} nx_buffer_cache;

int nx_buffer_cache_traverse(nx_buffer_cache *c, visitproc visit, void *arg);
void nx_buffer_cache_clear(nx_buffer_cache *c);

/* ---- shared by the buffer files ---- */

/* The datatype of a numpy dtype object (numpy arrays, cupy arrays), through the cache. -1 with
 * NcclInvalid (or another error). */
int nx_buffer_numpy_dtype(nx_state *st, PyObject *descr, const char *name);

/* Host memory: NX_DEVICE_HOST on the host flavour, NcclInvalid on a GPU flavour. 0 or -1. */
int nx_buffer_host_device(nx_state *st, const char *name, nx_buffer *out);

/* Dense in C or Fortran order; strides in units of `unit` (1 = elements). Dimensions of extent 1
 * may have any stride, and an empty array is dense (numpy's rules). */
int nx_buffer_is_dense(int nd, const int64_t *shape, const int64_t *strides, int64_t unit);

/* NcclInvalid naming the shape and strides (in elements: strides are divided by itemsize).
 * Returns -1. */
NX_COLD int nx_buffer_layout_error(nx_state *st, const char *name, int nd, const int64_t *shape,
                                   const int64_t *strides, int64_t itemsize);

/* Reads a tuple-like of at most 64 ints into v. -1 with an exception. */
int nx_buffer_read_ints(PyObject *seq, int64_t *v, int *n);

/* The producers of buffer_dlpack.c and buffer_cai.c. 0, or -1 with an exception. */
int nx_buffer_from_dlpack(nx_state *st, PyObject *obj, const char *name, nx_buffer *out);
int nx_buffer_from_cai(nx_state *st, PyObject *cai, const char *name, nx_buffer *out);

/* Adds buffer_dlpack.c's functions for the cuda.core shim (_dlpack_capsule, _dlpack_read). 0 or -1. */
int nx_buffer_dlpack_setup(PyObject *module);

/* The device ordinal of a device pointer, asked of the driver of the loaded flavour (buffer_device.c):
 * hipPointerGetAttributes on RCCL, cuPointerGetAttribute on NCCL; 0 on the host flavour (which
 * has no driver and never computes on device memory). 0, or -1 with NcclInvalid naming `name`. */
NX_COLD int nx_buffer_pointer_device(nx_state *st, const char *name, void *ptr, int *device);

#endif
