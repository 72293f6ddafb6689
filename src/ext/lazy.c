/* Python-level objects the C core of nccl.core uses: enums, dataclasses and cuda.core helpers
 * written in Python. Each is imported on first use, because those modules import nccl._ext
 * themselves, and cached in module state. Also the NcclInvalid raiser and the datatype table. */
#include "core.h"

#include <stdarg.h>

static const struct {
    const char *module;
    const char *name;
} lazy_names[NX_NLAZY] = {
    [NX_LAZY_DATATYPE] = {"nccl.core._types", "NcclDataType"},
    [NX_LAZY_RESULT] = {"nccl._enums", "Result"},
    [NX_LAZY_UNIQUE_ID] = {"nccl.core._unique_id", "UniqueId"},
    [NX_LAZY_NCCL_CONFIG] = {"nccl.core._config", "NCCLConfig"},
    [NX_LAZY_GET_DEVICE] = {"nccl.core.cuda", "get_cuda_device"},
    [NX_LAZY_NUM_DEVICES] = {"nccl.core.cuda", "get_num_devices"},
    [NX_LAZY_WAIT_SIGNAL] = {"nccl.core._config", "WaitSignalDesc"},
    [NX_LAZY_FROM_ENV] = {"nccl.core._env", "from_env"},
    [NX_LAZY_GIN_TYPE] = {"nccl.core._types", "NcclGinType"},
};

PyObject *nx_lazy(nx_state *st, nx_lazy_kind kind)
{
    if (NX_LIKELY(st->lazy[kind] != NULL))
        return st->lazy[kind];
    PyObject *mod = PyImport_ImportModule(lazy_names[kind].module);
    if (mod == NULL)
        return NULL;
    st->lazy[kind] = PyObject_GetAttrString(mod, lazy_names[kind].name);
    Py_DECREF(mod);
    return st->lazy[kind];
}

PyObject *nx_invalid(nx_state *st, const char *fmt, ...)
{
    PyObject *cls = nx_exception_class(st, NX_EXC_NCCL_INVALID); /* borrowed */
    if (cls == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg != NULL) {
        PyErr_SetObject(cls, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* Indexed by ncclDataType_t. */
static const struct {
    const char *name;
    size_t size;
} dtypes[ncclNumTypes] = {
    [ncclInt8] = {"INT8", 1},       [ncclUint8] = {"UINT8", 1},       [ncclInt32] = {"INT32", 4},
    [ncclUint32] = {"UINT32", 4},   [ncclInt64] = {"INT64", 8},       [ncclUint64] = {"UINT64", 8},
    [ncclFloat16] = {"FLOAT16", 2}, [ncclFloat32] = {"FLOAT32", 4},   [ncclFloat64] = {"FLOAT64", 8},
    [ncclBfloat16] = {"BFLOAT16", 2}, [ncclFloat8e4m3] = {"FLOAT8E4M3", 1}, [ncclFloat8e5m2] = {"FLOAT8E5M2", 1},
};

size_t nx_dtype_size(ncclDataType_t dt) { return (unsigned)dt < ncclNumTypes ? dtypes[dt].size : 0; }

const char *nx_dtype_name(ncclDataType_t dt) { return (unsigned)dt < ncclNumTypes ? dtypes[dt].name : "<invalid>"; }
