/* Python-level objects the C code uses, registered by the Python packages at their import
 * (nccl._ext._register, lazy.c). */
#ifndef NCCL4PY_LAZY_H
#define NCCL4PY_LAZY_H

#include "module/common.h"

/* They live in Python modules (enums, dataclasses, cuda.core) that import nccl._ext themselves, so
 * the packages defining them register them (nccl.core's __init__; check_one_rank also
 * nccl.bindings.nccl). */
typedef enum {
    NX_LAZY_DATATYPE,      /* nccl.core._types.NcclDataType */
    NX_LAZY_RESULT,        /* nccl._enums.Result */
    NX_LAZY_UNIQUE_ID,     /* nccl.core._unique_id.UniqueId */
    NX_LAZY_NCCL_CONFIG,   /* nccl.core._config.NCCLConfig */
    NX_LAZY_GET_DEVICE,    /* nccl.core.cuda.get_cuda_device(device_id) -> cuda.core Device */
    NX_LAZY_NUM_DEVICES,   /* nccl.core.cuda.get_num_devices() -> int */
    NX_LAZY_WAIT_SIGNAL,   /* nccl.core._config.WaitSignalDesc */
    NX_LAZY_GIN_TYPE,      /* nccl.core._types.NcclGinType */
    NX_LAZY_NUMPY,         /* the numpy module itself (CustomRedOp's host scalars) */
    NX_LAZY_COLL_CONFIG,   /* nccl.core._config.NCCLCollConfig */
    NX_LAZY_GET_EVENT_PTR, /* nccl.core.cuda.get_event_ptr(event) -> int */
    NX_LAZY_CHECK_ONE_RANK,  /* nccl._launch.check_one_rank() */
    NX_LAZY_ML_DTYPE,              /* nccl.core._methods.ml_dtype(name) -> an ml_dtypes type */
    NX_NLAZY
} nx_lazy_kind;

/* This file's part of the module state: the objects, NULL until registered (owned). */
typedef struct {
    PyObject *obj[NX_NLAZY];
} nx_lazy_cache;

int nx_lazy_cache_traverse(nx_lazy_cache *c, visitproc visit, void *arg);
void nx_lazy_cache_clear(nx_lazy_cache *c);

/* A borrowed reference to the registered object; NULL with RuntimeError when its package has not
 * been imported (so has not registered it). */
PyObject *nx_lazy(nx_state *st, nx_lazy_kind kind);

/* Adds nccl._ext._register. */
int nx_lazy_setup(PyObject *module, nx_state *st);

/* Every communicator creation with an nranks argument calls this before the library: for a 1-rank
 * communicator it runs nccl._launch.check_one_rank(), which refuses a 1-rank job inside a
 * multi-rank python -m nccl.run launch. 0, or -1 with the exception. */
int nx_check_one_rank(nx_state *st, int nranks);

#endif
