/* The config= path of nccl.core's collectives (coll_config.c): NCCLCollConfig -> ncclCollConfig_t
 * and the ncclXxxConfig call. */
#ifndef NCCL4PY_COLL_CONFIG_H
#define NCCL4PY_COLL_CONFIG_H

#include "module/common.h"

#include "core/coll_kinds.gen.h"
#include "trace/trace.h"

/* This file's part of the module state (owned references). */
typedef struct {
    PyObject *cache_key; /* the key of the built struct in an NCCLCollConfig's __dict__ */
    PyObject *names;     /* a tuple: the interned names of coll_config.c's field table, in its order */
} nx_coll_config_cache;

int nx_coll_config_cache_traverse(nx_coll_config_cache *c, visitproc visit, void *arg);
void nx_coll_config_cache_clear(nx_coll_config_cache *c);
int nx_coll_config_setup(PyObject *module, nx_state *st);

/* Vendor options held in the struct itself; longer lists go to memory its keep owns. */
#define NX_SMALL_EXT 4

/* A config argument converted to the C struct the call passes. It points into itself (small) and
 * into what keep holds, so it stays where it was filled until the call is made. */
typedef struct {
    ncclCollConfig_t cfg;
    int is_default;                     /* nothing differs from the initializer */
    ncclConfigExt_t small[NX_SMALL_EXT];
    ncclConfigExt_t *ext;               /* small, or memory a capsule in keep owns */
    Py_ssize_t n_ext;                   /* vendor options in ext */
    PyObject *keep;                     /* a list holding what the pointers in cfg point into, or the
                                           capsule of a cached struct (owned) */
    const ncclCollConfig_t *use;        /* what the call gets: &cfg, or the cached struct */
} nx_coll_config;

/* Converts config (not None: an NCCLCollConfig or a bindings CollConfig) with the call's other
 * arguments, before the handle is read (docs/architecture.md#callbacks-into-python): its fields
 * run Python code. 0 with out->keep a reference the caller releases after the call, or -1 with
 * TypeError/NcclInvalid naming fname. */
int nx_coll_config_take(nx_state *st, PyObject *config, const char *fname, nx_coll_config *out);

/* Runs the call with the converted config: ncclXxxConfig when the library has it; the plain call
 * for a default config on a library without it; FunctionNotFoundError for any other config there.
 * Recorded on `ring` (NULL: not recorded; docs/api/trace.md). Runs no Python code before the
 * library call. None, or NULL with an exception. */
PyObject *nx_coll_config_run(nx_state *st, const nx_coll_call *call, const nx_coll_config *config,
                             nx_trace_ring *ring);

#endif
