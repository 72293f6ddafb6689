/* What both library loaders share: the log of a search (each candidate tried and what came of it)
 * and the reading of a dlopen failure. The NCCL/RCCL loader (src/ext/loader/loader.c) and the GPU
 * runtime loader (src/common/gpu_loader.c) search for different libraries in different orders
 * (docs/architecture.md#loading-the-library); what they record and how they tell "not there" from
 * "there but broken" is this one code (src/common/dl_attempts.c). Plain C, no Python objects;
 * a log is guarded by its loader's mutex. */
#ifndef NCCL4PY_DL_ATTEMPTS_H
#define NCCL4PY_DL_ATTEMPTS_H

#include <stddef.h>

/* One candidate a loader tried. outcome is NULL for the candidate that loaded. */
typedef struct {
    char *candidate;
    char *outcome;
} dl_attempt;

/* The attempts of one search, in order; all zero is an empty log. */
typedef struct {
    dl_attempt *items;
    size_t n, cap;
} dl_attempt_log;

/* Appends (candidate, outcome). Out of memory drops the record, never the search. */
void dl_log_record(dl_attempt_log *log, const char *candidate, const char *outcome);

/* Empties the log and frees what it holds. */
void dl_log_clear(dl_attempt_log *log);

/* A malloc'd copy of the log's attempts into *out and *nout (NULL and 0 when it is empty); release
 * it with dl_attempts_free. Returns -1, with nothing copied, when out of memory. */
int dl_log_copy(const dl_attempt_log *log, dl_attempt **out, size_t *nout);

void dl_attempts_free(dl_attempt *attempts, size_t n);

/* Whether dlopen(candidate) failed because candidate itself is not there, rather than because it
 * is there but cannot load (a missing dependency, a wrong ELF class). A path is not there when the
 * file does not exist; for a bare SONAME, glibc's text names the candidate first and says "No such
 * file" (a missing dependency names the dependency instead). err is dlerror()'s text, or NULL. */
int dl_not_found(const char *candidate, const char *err);

#endif
