/* Library status -> Python exception; every builder here is cold and off the hot path. */
#ifndef NCCL4PY_ERRORS_H
#define NCCL4PY_ERRORS_H

#include "module/common.h"

/* Exception classes defined in Python (nccl/_errors.py), which registers them at its import
 * (nccl._ext._register, lazy.c hands the keywords to nx_errors_register). */
typedef enum {
    NX_EXC_NCCL_ERROR,
    NX_EXC_FUNCTION_NOT_FOUND,
    NX_EXC_NOT_SUPPORTED,
    NX_EXC_HOST_BACKEND_WARNING,
    NX_EXC_NCCL_INVALID,
    NX_NEXC
} nx_exc_kind;

/* This file's part of the module state: the classes, NULL until registered (owned). */
typedef struct {
    PyObject *exc[NX_NEXC];
} nx_errors_cache;

int nx_errors_cache_traverse(nx_errors_cache *c, visitproc visit, void *arg);
void nx_errors_cache_clear(nx_errors_cache *c);

/* The exception class of the given kind (a borrowed reference); NULL with RuntimeError if
 * nccl._errors has not registered it. */
PyObject *nx_exception_class(nx_state *st, nx_exc_kind kind);

/* _register's keyword `key` if it names an exception class (the kinds above, or
 * NCCLNullHandleError): keeps `value` (the first registration stays) and returns 1; 0 for another
 * name; -1 with an exception. */
int nx_errors_register(nx_state *st, PyObject *key, PyObject *value);

/* Raises NCCLError(status) (its subclass for the code) with .last_error taken from
 * ncclGetLastError(comm) right after the failing call; comm may be NULL. Returns NULL. */
NX_COLD PyObject *nx_raise_status(nx_state *st, ncclResult_t status, ncclComm_t comm);

/* NCCL 2.30's ncclGetErrorString text, without touching any library. */
const char *nx_builtin_error_string(int status);

/* Raises FunctionNotFoundError for the named ABI symbol; `also` (or NULL) names a fallback
 * spelling that was tried too. Returns NULL. */
NX_COLD PyObject *nx_raise_function_not_found(nx_state *st, const char *symbol, const char *also);

/* Raises NCCLNullHandleError (nccl/_errors.py: a ValueError, an NcclInvalid and an
 * NCCLError(InvalidArgument) at once) with the formatted message, for a null or destroyed
 * communicator or window refused before the library call, at both layers. Needs no module state
 * (the binding converters have none): the class is kept in the interpreter's dict. Returns NULL. */
NX_COLD PyObject *nx_raise_null_handle(const char *fmt, ...);

/* A status the caller must turn into an exception: anything but success and in-progress. */
#define NX_FAILED(rc) NX_UNLIKELY((rc) != ncclSuccess && (rc) != ncclInProgress)

/* The check after a library call: 0 when rc is a success or in progress, else -1 with NCCLError
 * raised (comm's last error attached; comm may be NULL). The caller returns its error value:
 *
 *     if (nx_check(st, rc, comm) < 0)
 *         return NULL;
 */
static inline int nx_check(nx_state *st, ncclResult_t rc, ncclComm_t comm)
{
    if (NX_FAILED(rc)) {
        nx_raise_status(st, rc, comm);
        return -1;
    }
    return 0;
}

/* The result of a binding or method whose library call returns nothing else: None, or NULL with
 * NCCLError raised as nx_check raises it. The caller returns it: return nx_none_or_error(st, rc, comm); */
static inline PyObject *nx_none_or_error(nx_state *st, ncclResult_t rc, ncclComm_t comm)
{
    return NX_LIKELY(nx_check(st, rc, comm) == 0) ? Py_NewRef(Py_None) : NULL;
}

/* Raises nccl.core.NcclInvalid with a printf-style message (PyUnicode_FromFormat). Returns NULL. */
NX_COLD PyObject *nx_invalid(nx_state *st, const char *fmt, ...);

/* Adds the exception machinery's functions to the module (module.c's exec). */
int nx_errors_setup(PyObject *module, nx_state *st);

#endif
