/* Module state of nccl._ext and the helpers every file shares. */
#ifndef NCCL4PY_MODULE_H
#define NCCL4PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"

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
    NX_NEXC
} nx_exc_kind;

typedef struct {
    PyTypeObject *struct_types[NX_NSTRUCTS];
    PyTypeObject *pointer_box_type;
    PyObject *exc[NX_NEXC];     /* NULL until first needed */
    PyObject *ndarray_type;     /* numpy.ndarray, registered by nccl.bindings.nccl */
    PyObject *struct_dtypes[NX_NSTRUCTS]; /* numpy dtypes, registered likewise */
} nx_state;

static inline nx_state *nx_get_state(PyObject *module) { return (nx_state *)PyModule_GetState(module); }

/* Setup functions, called by the module's exec slot in this order. */
int nx_errors_setup(PyObject *module, nx_state *st);
int nx_library_setup(PyObject *module, nx_state *st);
int nx_structs_setup(PyObject *module, nx_state *st);
int nx_pointer_box_setup(PyObject *module, nx_state *st);
int nx_bindings_setup(PyObject *module, nx_state *st);
int nx_rocm_extensions_setup(PyObject *module, nx_state *st);

#endif
