/* Module state of nccl._ext and the helpers every file shares. */
#ifndef NCCL4PY_MODULE_H
#define NCCL4PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"
#include "compat.h"

#define NX_COLD __attribute__((cold, noinline))
#define NX_LIKELY(x) __builtin_expect(!!(x), 1)
#define NX_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The struct wrapper classes of nccl.bindings.nccl (structs.c). */
typedef enum {
    NX_STRUCT_UNIQUE_ID,
    NX_STRUCT_CONFIG,
    NX_STRUCT_SIM_INFO,
    NX_STRUCT_WAIT_SIGNAL_DESC,
    NX_STRUCT_COMM_PROPERTIES,
    NX_NSTRUCTS
} nx_struct_kind;

/* Exception classes defined in Python (nccl/_errors.py), fetched on first use: raising is the
 * cold path, and importing them at exec time would tie the import order of the packages. */
typedef enum {
    NX_EXC_NCCL_ERROR,
    NX_EXC_FUNCTION_NOT_FOUND,
    NX_EXC_NOT_SUPPORTED,
    NX_EXC_HOST_BACKEND_WARNING,
    NX_EXC_NCCL_INVALID,
    NX_NEXC
} nx_exc_kind;

/* Python-level objects nccl.core's C code uses, fetched on first use (lazy.c). */
typedef enum {
    NX_LAZY_DATATYPE,      /* nccl.core._types.NcclDataType */
    NX_LAZY_RESULT,        /* nccl._enums.Result */
    NX_LAZY_UNIQUE_ID,     /* nccl.core._unique_id.UniqueId */
    NX_LAZY_NCCL_CONFIG,   /* nccl.core._config.NCCLConfig */
    NX_LAZY_GET_DEVICE,    /* nccl.core.cuda.get_cuda_device(device_id) -> cuda.core Device */
    NX_LAZY_NUM_DEVICES,   /* nccl.core.cuda.get_num_devices() -> int */
    NX_LAZY_WAIT_SIGNAL,   /* nccl.core._config.WaitSignalDesc */
    NX_LAZY_FROM_ENV,      /* nccl.core._env.from_env(cls, **kwargs) -> Communicator */
    NX_LAZY_GIN_TYPE,      /* nccl.core._types.NcclGinType */
    NX_NLAZY
} nx_lazy_kind;

/* The heap types of nccl.core defined in C. */
typedef enum {
    NX_TYPE_COMMUNICATOR,
    NX_TYPE_NCCL_BUFFER,
    NX_TYPE_COMM_RESOURCE,
    NX_TYPE_REGISTERED_BUFFER,
    NX_TYPE_REGISTERED_WINDOW,
    NX_TYPE_CUSTOM_RED_OP,
    NX_NCORE_TYPES
} nx_core_type;

typedef struct {
    PyTypeObject *struct_types[NX_NSTRUCTS];
    PyTypeObject *pointer_box_type;
    PyObject *exc[NX_NEXC];     /* NULL until first needed */
    PyObject *ndarray_type;     /* numpy.ndarray, registered by nccl.bindings.nccl */
    PyObject *struct_dtypes[NX_NSTRUCTS]; /* numpy dtypes, registered likewise */
    PyTypeObject *core_types[NX_NCORE_TYPES]; /* nccl.core's C types */
    PyObject *lazy[NX_NLAZY];                 /* NULL until first needed */

    /* buffer.c and stream.c caches (owned references, visited and cleared in module.c) */
#define NX_BUF_NSTR 32
#define NX_BUF_NDESCR 24
#define NX_BUF_NTORCH 16
#define NX_STREAM_NSTR 8
#define NX_BUF_NTYPES 8
#define NX_STREAM_NTYPES 6
    PyObject *buf_str[NX_BUF_NSTR];       /* interned attribute names and kwnames (buffer.c) */
    PyObject *buf_types[NX_BUF_NTYPES];               /* ndarray, torch.Tensor, cupy.ndarray, cuda.core Buffers; NULL until seen */
    PyObject *np_descr[NX_BUF_NDESCR];    /* numpy dtype objects already mapped ... */
    signed char np_dtype[NX_BUF_NDESCR];  /* ... to these ncclDataType_t */
    PyObject *torch_dtype_obj[NX_BUF_NTORCH];
    signed char torch_dtype[NX_BUF_NTORCH];
    PyObject *stream_str[NX_STREAM_NSTR]; /* stream.c */
    PyObject *stream_types[NX_STREAM_NTYPES];            /* cuda.core Streams, torch.cuda.Stream, cupy.cuda.Stream */

    /* resources.c */
    PyObject *numpy; /* the numpy module, imported on first create_pre_mul_sum */
} nx_state;

static inline nx_state *nx_get_state(PyObject *module) { return (nx_state *)PyModule_GetState(module); }

extern struct PyModuleDef nx_module_def;

/* The state of the module that defined tp or one of its bases (for slots of heap types, which
 * get no defining class); NULL with TypeError if none did. */
static inline nx_state *nx_state_of_type(PyTypeObject *tp)
{
    PyObject *m = PyType_GetModuleByDef(tp, &nx_module_def);
    return m ? nx_get_state(m) : NULL;
}

/* PointerBox (pointerbox.c): one pointer slot at a stable address. */
typedef struct {
    PyObject_HEAD
    void *slot;
} nx_PointerBox;

/* Setup functions, called by the module's exec slot in this order. */
int nx_errors_setup(PyObject *module, nx_state *st);
int nx_library_setup(PyObject *module, nx_state *st);
int nx_structs_setup(PyObject *module, nx_state *st);
int nx_pointer_box_setup(PyObject *module, nx_state *st);
int nx_bindings_setup(PyObject *module, nx_state *st);
int nx_rocm_extensions_setup(PyObject *module, nx_state *st);
/* nccl.core's C side (core.h): lazy, buffer, stream, resources, communicator. */

#endif
