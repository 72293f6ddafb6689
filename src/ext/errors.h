/* Library status -> Python exception; every builder here is cold and off the hot path. */
#ifndef NCCL4PY_ERRORS_H
#define NCCL4PY_ERRORS_H

#include "module.h"

/* The exception class of the given kind (a borrowed reference), importing nccl._errors once. */
PyObject *nx_exception_class(nx_state *st, nx_exc_kind kind);

/* Raises NCCLError(status) (its subclass for the code) with .last_error taken from
 * ncclGetLastError(comm) right after the failing call; comm may be NULL. Returns NULL. */
NX_COLD PyObject *nx_raise_status(nx_state *st, ncclResult_t status, ncclComm_t comm);

/* NCCL 2.30's ncclGetErrorString text, without touching any library. */
const char *nx_builtin_error_string(int status);

/* Raises FunctionNotFoundError for the named ABI symbol; `also` (or NULL) names a fallback
 * spelling that was tried too. Returns NULL. */
NX_COLD PyObject *nx_raise_function_not_found(nx_state *st, const char *symbol, const char *also);

/* A status the caller must turn into an exception: anything but success and in-progress. */
#define NX_FAILED(rc) NX_UNLIKELY((rc) != ncclSuccess && (rc) != ncclInProgress)

#endif
