/* Module state of nccl._hip_compat._hip and the helpers its files share. */
#ifndef NCCL4PY_HIP_MODULE_H
#define NCCL4PY_HIP_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "hip_api.h"

#define NH_COLD __attribute__((cold, noinline))
#define NH_UNLIKELY(x) __builtin_expect(!!(x), 0)

typedef struct {
    /* HipError(RuntimeError): a failing HIP call; .code, .name and .function are set. */
    PyObject *hip_error;
    /* Used only when nccl._errors (the bindings' NotSupportedError / FunctionNotFoundError) cannot
     * be imported, e.g. while the shim is used on its own. */
    PyObject *fallback_not_supported;
    PyObject *fallback_not_found;
} nh_state;

static inline nh_state *nh_get_state(PyObject *module) { return (nh_state *)PyModule_GetState(module); }

/* Loads the runtime on first use (the GIL is released while waiting for the loader's mutex).
 * Returns 0, or -1 with NotSupportedError set, listing every candidate tried. */
int nh_ensure_loaded(nh_state *st);

/* Error builders; each returns NULL with an exception set. */
NH_COLD PyObject *nh_raise_hip(nh_state *st, const char *function, hipError_t code);
NH_COLD PyObject *nh_raise_missing(nh_state *st, const char *function);

/* The result of a HIP call that returns nothing else: None for hipSuccess, else NULL with the
 * HipError for `function` raised. */
PyObject *nh_none_or_raise(nh_state *st, const char *function, hipError_t code);

/* Loads the runtime if no call has yet (nh_ensure_loaded), then checks that the entry point whose
 * gpu_hip slot is `slot` (written &gpu_hip.hipXxx) is present: 0, or -1 with NotSupportedError or
 * FunctionNotFoundError naming it. */
int nh_need(nh_state *st, const void *slot);

/* Positional-argument count check for METH_FASTCALL functions. */
int nh_check_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t min, Py_ssize_t max);

/* O&-style converters: return 1 on success, 0 with an exception set. */
int nh_handle_converter(PyObject *obj, void *out); /* uintptr_t: an int >= 0, not bool */
int nh_size_converter(PyObject *obj, void *out);   /* size_t: an int >= 0, not bool */
int nh_int_converter(PyObject *obj, void *out);    /* int, not bool */

/* Each file's functions, added by the exec slot. */
extern PyMethodDef nh_library_methods[];
extern PyMethodDef nh_runtime_methods[];
extern PyMethodDef nh_dlpack_methods[];

#endif
