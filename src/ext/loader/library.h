/* The Python side of loading: builds the discovery request, raises NotSupportedError, emits the
 * one-time notices, and provides the reporting functions of docs/architecture.md#what-the-loader-reports. Also
 * the guard
 * every call into the library goes through first. */
#ifndef NCCL4PY_LIBRARY_H
#define NCCL4PY_LIBRARY_H

#include "module/common.h"

#include <string.h>

#include "loader/loader.h"

#include "loader/loader.h"

/* Loads the library on first use. 0 on success, -1 with an exception set. */
NX_COLD int nx_load_library(nx_state *st);

/* The library is loaded, loading it on first use: 0, or -1 with NotSupportedError. */
static inline int nx_loaded(nx_state *st)
{
    if (NX_LIKELY(nx_loader_ready()))
        return 0;
    return nx_load_library(st);
}

/* Raises FunctionNotFoundError for the entry point whose table slot is `slot`. Returns -1. */
NX_COLD int nx_missing_function(nx_state *st, const void *slot);

/* The guard before a library call: the library is loaded (on first use) and the entry point whose
 * table slot is `slot` (written &nx_api.ncclXxx) is present. 0, or -1 with NotSupportedError or
 * FunctionNotFoundError; the caller returns its error value:
 *
 *     if (nx_require(st, &nx_api.ncclAllReduce) < 0)
 *         return NULL;
 *
 * The slot is read only after the load, which fills it; inlined, this is a flag test and a load. */
static inline int nx_require(nx_state *st, const void *slot)
{
    if (NX_UNLIKELY(nx_loaded(st) < 0))
        return -1;
    void (*fn)(void);
    memcpy(&fn, slot, sizeof fn);
    if (NX_UNLIKELY(fn == NULL))
        return nx_missing_function(st, slot);
    return 0;
}

const char *nx_flavour_name(nx_flavour f);

/* Runs one library call with the GIL released (only C values cross) and stores its status. The
 * block holds nothing but the call. */
#define NX_RUN(rc, call)          \
    do {                          \
        Py_BEGIN_ALLOW_THREADS    \
        (rc) = (call);            \
        Py_END_ALLOW_THREADS      \
    } while (0)

/* Adds the loader's functions (get_library_path, ...) to the module. */
int nx_library_setup(PyObject *module, nx_state *st);

#endif
