/* The config= path of nccl.core's collectives (coll_config.c): NCCLCollConfig -> ncclCollConfig_t
 * and the ncclXxxConfig call. */
#ifndef NCCL4PY_COLL_CONFIG_H
#define NCCL4PY_COLL_CONFIG_H

#include "common.h"

#include "trace.h"

/* This file's part of the module state (owned references). */
typedef struct {
    PyObject *cache_key; /* the key of the built struct in an NCCLCollConfig's __dict__ */
    PyObject *names;     /* a tuple: the interned names of coll_config.c's field table, in its order */
} nx_coll_config_cache;

int nx_coll_config_cache_traverse(nx_coll_config_cache *c, visitproc visit, void *arg);
void nx_coll_config_cache_clear(nx_coll_config_cache *c);
int nx_coll_config_setup(PyObject *module, nx_state *st);

typedef enum {
    NX_COLL_ALLREDUCE,
    NX_COLL_REDUCE,
    NX_COLL_BROADCAST,
    NX_COLL_ALLGATHER,
    NX_COLL_GATHER,
    NX_COLL_REDUCE_SCATTER,
    NX_COLL_ALLTOALL,
    NX_COLL_SCATTER,
} nx_coll_kind;

/* One checked collective call: what collectives.c resolved, as C values only. */
typedef struct {
    nx_coll_kind kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t op;   /* reductions */
    int root;         /* rooted calls */
    ncclComm_t comm;
    cudaStream_t stream;
    nx_trace_ring *trace; /* the flight recorder's ring of comm, or NULL (docs/api/trace.md) */
} nx_coll_call;

/* The type check of a config argument, done with the other arguments (before any library call):
 * NULL/None, an NCCLCollConfig or a bindings CollConfig. 0, or -1 with TypeError naming fname. */
int nx_coll_config_check(nx_state *st, PyObject *config, const char *fname);

/* Runs the call with config (not None): ncclXxxConfig when the library has it; the plain call for
 * a default config on a library without it; FunctionNotFoundError for any other config there.
 * None, or NULL with an exception. */
PyObject *nx_coll_with_config(nx_state *st, nx_coll_call *call, PyObject *config, const char *fname);

#endif
