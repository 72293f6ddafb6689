/* Finding and opening the HIP runtime (libamdhip64); plain C, no Python objects.
 *
 * The symbol table nh_hip is the one process-global of nccl._hip_compat._hip: a process has one
 * dlopen handle for the runtime, shared by every interpreter, so it cannot live in module state.
 * It holds only C values, is written once under the loader's mutex and is read-only after
 * nh_loader_ready() turns true. */
#ifndef NCCL4PY_HIP_LOADER_H
#define NCCL4PY_HIP_LOADER_H

#include <stddef.h>

#include "hip_api.h"

extern nh_hip_table nh_hip;

/* One candidate the loader tried. outcome is NULL for the candidate that loaded. */
typedef struct {
    char *candidate;
    char *outcome;
} nh_attempt;

/* Nonzero once a runtime is loaded; from then on nh_hip, the path and the version are immutable. */
int nh_loader_ready(void);

/* Runs discovery unless a runtime is already loaded. Blocks on the loader mutex, so call it with
 * the GIL released. Returns 0 on success, -1 on failure. A failure is not cached: the next call
 * searches again, so a corrected NCCL4PY_HIP_LIBRARY takes effect. On return, when attempts is not
 * NULL, *attempts and *nattempts hold a malloc'd copy of that discovery's attempts (release it with
 * nh_attempts_free); on an allocation failure the copy is empty. */
int nh_loader_load(nh_attempt **attempts, size_t *nattempts);

/* A malloc'd copy of the latest discovery's attempts (none before the first). Takes the mutex:
 * call with the GIL released. Returns -1 only when out of memory. */
int nh_loader_attempts(nh_attempt **attempts, size_t *nattempts);
void nh_attempts_free(nh_attempt *attempts, size_t nattempts);

/* Valid once nh_loader_ready(): the path the symbols come from, and hipRuntimeGetVersion's value
 * (HIP_VERSION encoding: major * 10000000 + minor * 100000 + patch), or -1 if unknown. */
const char *nh_loader_path(void);
int nh_loader_runtime_version(void);

/* The table's rows in order, generated from NH_HIP_API. */
typedef struct {
    const char *name;
    int required;
    size_t offset; /* of the function pointer in nh_hip_table */
} nh_symbol;
extern const nh_symbol nh_symbols[];
extern const size_t nh_nsymbols;

#endif
