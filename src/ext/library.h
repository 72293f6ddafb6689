/* The Python side of loading: builds the discovery request, raises NotSupportedError, emits the
 * one-time notices, and provides the reporting functions of API.md section 2.4. */
#ifndef NCCL4PY_LIBRARY_H
#define NCCL4PY_LIBRARY_H

#include "module.h"

#include "loader.h"

/* Loads the library on first use. 0 on success, -1 with an exception set. */
NX_COLD int nx_load_library(nx_state *st);

/* Hot-path guard: the library is loaded (once) and `fn` (a table slot) is present. */
#define NX_REQUIRE(st, fn)                                                              \
    do {                                                                                \
        if (NX_UNLIKELY(!nx_loader_ready()) && nx_load_library(st) < 0)                 \
            return NULL;                                                                \
        if (NX_UNLIKELY(nx_api.fn == NULL))                                             \
            return nx_raise_function_not_found(st, #fn, NULL);                          \
    } while (0)

const char *nx_flavour_name(nx_flavour f);

#endif
