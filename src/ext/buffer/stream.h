/* Stream spec -> library stream handle (docs/architecture.md#stream-resolution): stream.c. */
#ifndef NCCL4PY_STREAM_H
#define NCCL4PY_STREAM_H

#include "module/common.h"

/* Interned names (nx_stream_cache.str). */
enum { NX_SSTR_HANDLE, NX_SSTR_CUDA_STREAM_ATTR, NX_SSTR_TORCH_HANDLE, NX_SSTR_CUPY_HANDLE, NX_NSSTR };

/* Stream classes looked up in sys.modules, never imported by us (nx_stream_cache.types). */
enum { NX_STYPE_CC_STREAM, NX_STYPE_CC_STREAM_EXP, NX_STYPE_SHIM_STREAM, NX_STYPE_TORCH_STREAM,
       NX_STYPE_CUPY_STREAM, NX_NSTYPES };

/* This file's part of the module state (owned references; types NULL until seen). */
typedef struct {
    PyObject *str[NX_NSSTR];
    PyObject *types[NX_NSTYPES];
} nx_stream_cache;

int nx_stream_cache_traverse(nx_stream_cache *c, visitproc visit, void *arg);
void nx_stream_cache_clear(nx_stream_cache *c);

/* A stream spec (docs/architecture.md#stream-resolution) to the handle passed to the library. 0, or -1 with
 * NcclInvalid. */
int nx_resolve_stream(nx_state *st, PyObject *obj, cudaStream_t *out);

#endif
