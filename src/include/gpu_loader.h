/* The one loader of the GPU runtime and driver: the HIP runtime (libamdhip64) and the CUDA driver
 * (libcuda). Plain C, no Python objects. src/common/gpu_loader.c is compiled into both extension
 * modules: nccl._hip_compat._hip (the cuda.core shim) and nccl._ext (pointer queries of buffers
 * given by __cuda_array_interface__), so both find the same library the same way.
 *
 * HIP runtime discovery order:
 *   1. NCCL4PY_HIP_LIBRARY, when set and non-empty (surrounding blanks stripped): the only
 *      candidate, passed to dlopen verbatim (a path, or a SONAME). An explicit request never
 *      falls back.
 *   2. A libamdhip64 already mapped in the process (librccl's own runtime, or the one torch or
 *      hip-python loaded), so the process never holds two HIP runtimes.
 *   3. libamdhip64.so.7 (ROCm 7), .so.6, .so.5, then the unversioned libamdhip64.so (development
 *      packages only), through the dynamic loader's search.
 *   4. The same names in $ROCM_PATH/lib (or /opt/rocm/lib when ROCM_PATH is unset), then in
 *      $HIP_PATH/lib.
 * CUDA driver discovery: libcuda.so.1 through the dynamic loader (the driver's only SONAME).
 *
 * Every library is opened RTLD_NOW | RTLD_LOCAL and never closed once chosen.
 *
 * The tables gpu_hip and gpu_cuda are process-globals of each module that links this file: a
 * process has one dlopen handle per library, shared by every interpreter, so they cannot live in
 * module state. They hold only C values, are written once under the loader's mutex and are
 * read-only once gpu_hip_ready()/gpu_cuda_ready() turn true. The load functions take that mutex:
 * call them with the GIL released. */
#ifndef NCCL4PY_GPU_LOADER_H
#define NCCL4PY_GPU_LOADER_H

#include <stddef.h>

#include "dl_attempts.h"
#include "hip_api.h"

/* The attempts are dl_attempt records (dl_attempts.h: the search log both loaders share). */

/* ---- the HIP runtime ---- */

extern gpu_hip_table gpu_hip;

/* Nonzero once a runtime is loaded; from then on gpu_hip, the path and the version are immutable. */
int gpu_hip_ready(void);

/* Runs discovery unless a runtime is already loaded (GIL released: takes the loader's mutex).
 * Returns 0 on success, -1 on failure. A failure is not cached: the next call searches again, so
 * a corrected NCCL4PY_HIP_LIBRARY takes effect. On return, when attempts is not NULL, *attempts
 * and *nattempts hold a malloc'd copy of that discovery's attempts (release it with
 * dl_attempts_free); on an allocation failure the copy is empty. */
int gpu_hip_load(dl_attempt **attempts, size_t *nattempts);

/* A malloc'd copy of the latest discovery's attempts (none before the first). Takes the mutex:
 * call with the GIL released. Returns -1 only when out of memory. */
int gpu_hip_attempts(dl_attempt **attempts, size_t *nattempts);

/* Valid once gpu_hip_ready(): the path the symbols come from, and hipRuntimeGetVersion's value
 * (HIP_VERSION encoding: major * 10000000 + minor * 100000 + patch), or -1 if unknown. */
const char *gpu_hip_path(void);
int gpu_hip_runtime_version(void);

/* The table's rows in order, generated from GPU_HIP_API. */
typedef struct {
    const char *name;
    int required;
    size_t offset; /* of the function pointer in gpu_hip_table */
} gpu_symbol;
extern const gpu_symbol gpu_hip_symbols[];
extern const size_t gpu_hip_nsymbols;

/* The row whose function pointer lives at `slot` (an address inside gpu_hip), or NULL. */
const gpu_symbol *gpu_hip_symbol_at(const void *slot);

/* ---- the CUDA driver ---- */

/* X(name, return type, parameter list, need); CUresult is a C enum, so an int. */
#define GPU_CUDA_API(X) \
    X(cuPointerGetAttribute, int, (void *data, int attribute, unsigned long long ptr), GPU_REQUIRED)

#define GPU_CUDA_FIELD(name, ret, params, need) ret(*name) params;
typedef struct {
    GPU_CUDA_API(GPU_CUDA_FIELD)
} gpu_cuda_table;
#undef GPU_CUDA_FIELD

/* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: the attribute cuPointerGetAttribute reads into an int. */
#define GPU_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9

extern gpu_cuda_table gpu_cuda;

/* Nonzero once the driver is loaded; gpu_cuda is then immutable. */
int gpu_cuda_ready(void);

/* Opens the driver unless it is open (GIL released: takes the loader's mutex). 0 on success; -1
 * with the reason (dlerror's text, or the missing symbol) in why[0..whylen). Not cached on
 * failure. */
int gpu_cuda_load(char *why, size_t whylen);

#endif
