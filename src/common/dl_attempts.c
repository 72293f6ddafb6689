/* The search log and dlopen-failure reading that both library loaders share (dl_attempts.h). */
#include "dl_attempts.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void dl_attempts_free(dl_attempt *attempts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(attempts[i].candidate);
        free(attempts[i].outcome);
    }
    free(attempts);
}

void dl_log_clear(dl_attempt_log *log)
{
    dl_attempts_free(log->items, log->n);
    log->items = NULL;
    log->n = log->cap = 0;
}

void dl_log_record(dl_attempt_log *log, const char *candidate, const char *outcome)
{
    if (log->n == log->cap) {
        size_t cap = log->cap ? 2 * log->cap : 16;
        dl_attempt *grown = realloc(log->items, cap * sizeof *grown);
        if (grown == NULL)
            return;
        log->items = grown;
        log->cap = cap;
    }
    char *c = strdup(candidate);
    char *o = outcome ? strdup(outcome) : NULL;
    if (c == NULL || (outcome != NULL && o == NULL)) {
        free(c);
        free(o);
        return;
    }
    log->items[log->n].candidate = c;
    log->items[log->n].outcome = o;
    log->n++;
}

int dl_log_copy(const dl_attempt_log *log, dl_attempt **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (log->n == 0)
        return 0;
    dl_attempt *copy = calloc(log->n, sizeof *copy);
    if (copy == NULL)
        return -1;
    for (size_t i = 0; i < log->n; i++) {
        const dl_attempt *a = &log->items[i];
        copy[i].candidate = strdup(a->candidate);
        copy[i].outcome = a->outcome ? strdup(a->outcome) : NULL;
        if (copy[i].candidate == NULL || (a->outcome != NULL && copy[i].outcome == NULL)) {
            dl_attempts_free(copy, i + 1);
            return -1;
        }
    }
    *out = copy;
    *nout = log->n;
    return 0;
}

int dl_not_found(const char *candidate, const char *err)
{
    if (strchr(candidate, '/') != NULL)
        return access(candidate, F_OK) != 0;
    if (err == NULL)
        return 0;
    size_t n = strlen(candidate);
    return strncmp(err, candidate, n) == 0 && err[n] == ':' && strstr(err + n, "No such file") != NULL;
}
