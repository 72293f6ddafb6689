/* Python-level objects the C core of nccl.core uses: enums, dataclasses and cuda.core helpers
 * written in Python. Each is imported on first use, because those modules import nccl._ext
 * themselves, and cached in module state. Also the NcclInvalid raiser and the datatype table. */
#include "lazy.h"

#include <stdarg.h>

#include "errors.h"
#include "module.h"

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
    [NX_LAZY_NUMPY] = {"numpy", NULL}, /* NULL: the module itself */
    [NX_LAZY_COLL_CONFIG] = {"nccl.core._config", "NCCLCollConfig"},
    [NX_LAZY_GET_EVENT_PTR] = {"nccl.core.cuda", "get_event_ptr"},
    [NX_LAZY_TEAM] = {"nccl.core._team", "NCCLTeam"},
    [NX_LAZY_COMM_PROPERTIES] = {"nccl.core._team", "NCCLCommProperties"},
    [NX_LAZY_CHECK_ONE_RANK] = {"nccl._launch", "check_one_rank"},
};

PyObject *nx_lazy(nx_state *st, nx_lazy_kind kind)
{
    PyObject **slot = &st->lazy.obj[kind];
    PyObject *obj = nx_cache_get(slot);
    if (NX_LIKELY(obj != NULL))
        return obj;
    /* Threads racing here each import (the import system serialises that) and the first to
     * publish wins (common.h). */
    PyObject *mod = PyImport_ImportModule(lazy_names[kind].module);
    if (mod == NULL || lazy_names[kind].name == NULL)
        return nx_cache_publish(slot, mod);
    obj = PyObject_GetAttrString(mod, lazy_names[kind].name);
    Py_DECREF(mod);
    return nx_cache_publish(slot, obj);
}

int nx_check_one_rank(nx_state *st, int nranks)
{
    if (nranks != 1)
        return 0;
    PyObject *fn = nx_lazy(st, NX_LAZY_CHECK_ONE_RANK);
    PyObject *r = fn != NULL ? PyObject_CallNoArgs(fn) : NULL;
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

int nx_lazy_cache_traverse(nx_lazy_cache *c, visitproc visit, void *arg)
{
    for (int i = 0; i < NX_NLAZY; i++)
        Py_VISIT(c->obj[i]);
    return 0;
}

void nx_lazy_cache_clear(nx_lazy_cache *c)
{
    for (int i = 0; i < NX_NLAZY; i++)
        Py_CLEAR(c->obj[i]);
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
