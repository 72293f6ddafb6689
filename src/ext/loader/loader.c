/* Library discovery (docs/architecture.md#loading-the-library, docs/architecture.md#discovery-order). Pure C: the
 * Python side (library.c) builds the candidate lists, which need sys.path and ctypes, and calls
 * nx_loader_load() with the GIL released. */
#include "loader/loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

nx_api_table nx_api;

#define NX_SYMBOL_ROW(name, ret, params, args, since) {#name, since, offsetof(nx_api_table, name)},
const nx_symbol nx_symbols[] = {NCCL_ABI(NX_SYMBOL_ROW)};
#undef NX_SYMBOL_ROW
const size_t nx_nsymbols = sizeof(nx_symbols) / sizeof(nx_symbols[0]);
#define NX_COUNT_ROW(name, ret, params, args, since) +1
const size_t nx_nnccl_symbols = 0 NCCL_ABI_NCCL(NX_COUNT_ROW);
#undef NX_COUNT_ROW

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int loader_ready;   /* release-stored after every field below is written */
static nx_library_info info;      /* guarded by loader_lock until loader_ready */
static dl_attempt_log attempts;   /* guarded by loader_lock; frozen once loader_ready */
static int notices_pending;       /* guarded by loader_lock */
static char loaded_path[PATH_MAX];
static char host_info_copy[512];

int nx_loader_ready(void) { return atomic_load_explicit(&loader_ready, memory_order_acquire); }

const nx_library_info *nx_loader_info(void) { return &info; }

void nx_format_version(int code, char *out, size_t outlen)
{
    int x, y, z;
    if (code >= 10000) {
        x = code / 10000, y = (code % 10000) / 100, z = code % 100;
    } else {
        x = code / 1000, y = (code % 1000) / 100, z = code % 100;
    }
    snprintf(out, outlen, "%d.%d.%d", x, y, z);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* libnccl.so* or librccl.so*, but not our libnccl-host.so. */
static int is_device_library_name(const char *name)
{
    const char *b = base_name(name);
    return strncmp(b, "libnccl.so", 10) == 0 || strncmp(b, "librccl.so", 10) == 0;
}

typedef struct {
    char first[PATH_MAX];
    char second[PATH_MAX];
} mapped_copies;

static int collect_mapped(struct dl_phdr_info *pi, size_t size, void *data)
{
    (void)size;
    mapped_copies *m = data;
    if (pi->dlpi_name == NULL || pi->dlpi_name[0] == '\0' || !is_device_library_name(pi->dlpi_name))
        return 0;
    char real[PATH_MAX];
    const char *name = realpath(pi->dlpi_name, real) ? real : pi->dlpi_name;
    if (m->first[0] == '\0')
        snprintf(m->first, sizeof m->first, "%s", name);
    else if (strcmp(m->first, name) != 0 && m->second[0] == '\0')
        snprintf(m->second, sizeof m->second, "%s", name);
    return 0;
}

/* Opens one candidate and checks it is an NCCL-ABI library. Returns the handle or NULL, having
 * recorded the outcome either way; *broken is set when the library exists but dlopen failed. */
static void *try_open(const char *candidate, int *broken)
{
    *broken = 0;
    dlerror();
    void *h = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *err = dlerror();
        char msg[2048];
        /* A candidate that is not there is "not found"; anything else (a missing dependency, a
         * wrong ELF class) keeps its full dlerror text. */
        if (dl_not_found(candidate, err)) {
            snprintf(msg, sizeof msg, "not found");
        } else {
            snprintf(msg, sizeof msg, "found, failed to load: %s", err ? err : "no diagnostic");
            *broken = 1;
        }
        dl_log_record(&attempts, candidate, msg);
        return NULL;
    }
    if (dlsym(h, "ncclGetVersion") == NULL) {
        dlclose(h);
        dl_log_record(&attempts, candidate, "found, but not an NCCL/RCCL library (no ncclGetVersion)");
        return NULL;
    }
    return h;
}

/* After resolve_aliases: an RCCL-only row (either all-to-all-v spelling) marks RCCL. */
static nx_flavour detect_flavour(void *h, const char *path, const nx_api_table *t)
{
    if (dlsym(h, NCCL_HOST_INFO_SYMBOL) != NULL)
        return NX_FLAVOUR_HOST;
    if (strncmp(base_name(path), "librccl", 7) == 0 || t->ncclAllReduceWithBias != NULL || t->ncclAlltoAllv != NULL)
        return NX_FLAVOUR_RCCL;
    return NX_FLAVOUR_NCCL;
}

/* The alias rows of abi.h as slot offsets: (the name the wrappers call, its older spelling). */
#define NX_ALIAS_ROW(name, older) {#name, #older, offsetof(nx_api_table, name), offsetof(nx_api_table, older)},
static const struct {
    const char *name_text, *older_text;
    size_t name, older;
} aliases[] = {NCCL_ABI_ALIASES(NX_ALIAS_ROW)};
#undef NX_ALIAS_ROW

/* Fills each alias slot the library leaves empty from its older spelling, once, so that the
 * wrappers call one slot and know nothing of spellings. Sets bit i of *filled for alias row i. */
static void resolve_aliases(nx_api_table *t, unsigned *filled)
{
    *filled = 0;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        void *fn, *older;
        memcpy(&fn, (char *)t + aliases[i].name, sizeof fn);
        memcpy(&older, (char *)t + aliases[i].older, sizeof older);
        if (fn == NULL && older != NULL) {
            memcpy((char *)t + aliases[i].name, &older, sizeof older);
            *filled |= 1u << i;
        }
    }
}

const char *nx_alias_of(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].name_text) == 0)
            return aliases[i].older_text;
    return NULL;
}

void *nx_loader_exported(size_t row)
{
    void *fn;
    memcpy(&fn, (const char *)&nx_api + nx_symbols[row].offset, sizeof fn);
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if ((info.aliased & (1u << i)) && aliases[i].name == nx_symbols[row].offset)
            return NULL;
    return fn;
}

/* Resolves every row of the table from h (absent ones stay NULL) and records what was loaded. */
static int adopt(void *h, const char *candidate)
{
    nx_api_table table;
    memset(&table, 0, sizeof table);
    for (size_t i = 0; i < nx_nsymbols; i++) {
        void *sym = dlsym(h, nx_symbols[i].name);
        /* Storing a data pointer into a function-pointer slot: the conversion POSIX documents. */
        memcpy((char *)&table + nx_symbols[i].offset, &sym, sizeof sym);
    }
    unsigned aliased;
    resolve_aliases(&table, &aliased);
    int version = 0;
    ncclResult_t rc = table.ncclGetVersion(&version);
    if (rc != ncclSuccess) {
        char msg[128];
        snprintf(msg, sizeof msg, "found, but ncclGetVersion failed with status %d", (int)rc);
        dl_log_record(&attempts, candidate, msg);
        return -1;
    }
    Dl_info dli;
    void *probe;
    memcpy(&probe, &table.ncclGetVersion, sizeof probe);
    const char *path = candidate;
    if (dladdr(probe, &dli) != 0 && dli.dli_fname != NULL)
        path = dli.dli_fname;
    if (realpath(path, loaded_path) == NULL)
        snprintf(loaded_path, sizeof loaded_path, "%s", path);

    info.flavour = detect_flavour(h, loaded_path, &table);
    info.aliased = aliased;
    info.version = version;
    info.path = loaded_path;
    info.host_info = NULL;
    if (info.flavour == NX_FLAVOUR_HOST) {
        const char *(*get_info)(void);
        void *sym = dlsym(h, NCCL_HOST_INFO_SYMBOL);
        memcpy(&get_info, &sym, sizeof sym);
        snprintf(host_info_copy, sizeof host_info_copy, "%s", get_info());
        info.host_info = host_info_copy;
    }
    nx_api = table;
    dl_log_record(&attempts, candidate, NULL);
    return 0;
}

/* 0 when the candidate loaded; -1 when it did not; -2 when it exists but failed to load. */
static int open_and_adopt(const char *candidate)
{
    int broken;
    void *h = try_open(candidate, &broken);
    if (h == NULL)
        return broken ? -2 : -1;
    /* Handles are never closed: function pointers from it live for the whole process. */
    return adopt(h, candidate);
}

/* Tries the candidates in order: 0 when one loaded, -1 when none was there, -2 when one exists but
 * failed to load (a missing dependency, a wrong architecture). That ends the search: loading another
 * copy instead would hide what is wrong with the one the machine is set up to use. */
static int try_chain(const char *const *candidates, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = open_and_adopt(candidates[i]);
        if (rc == 0 || rc == -2)
            return rc;
    }
    return -1;
}

static int note_other_copy(const mapped_copies *m)
{
    const char *other = NULL;
    if (m->first[0] != '\0' && strcmp(m->first, loaded_path) != 0)
        other = m->first;
    else if (m->second[0] != '\0' && strcmp(m->second, loaded_path) != 0)
        other = m->second;
    if (other == NULL)
        return 0;
    snprintf(info.other_copy, sizeof info.other_copy, "%s", other);
    return NX_NOTICE_TWO_COPIES;
}

static int discover(const nx_load_request *req, int *notices)
{
    mapped_copies mapped;
    memset(&mapped, 0, sizeof mapped);
    dl_iterate_phdr(collect_mapped, &mapped);

    if (req->override != NULL) {
        /* An explicit request never falls back to anything else. */
        const char *cand = req->override_is_host ? req->host_path : req->override;
        if (open_and_adopt(cand) != 0)
            return -1;
        *notices |= note_other_copy(&mapped);
        return 0;
    }
    if (req->devices == 0) {
        if (open_and_adopt(req->host_path) != 0)
            return -1;
        *notices |= NX_NOTICE_HOST_AUTO | note_other_copy(&mapped);
        return 0;
    }
    if (mapped.first[0] != '\0') {
        /* Reuse the copy torch or CuPy already mapped rather than mapping a second one. */
        dlerror();
        void *h = dlopen(mapped.first, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
        if (h != NULL && dlsym(h, "ncclGetVersion") != NULL && adopt(h, mapped.first) == 0) {
            *notices |= note_other_copy(&mapped);
            return 0;
        }
        if (h == NULL)
            dl_log_record(&attempts, mapped.first, "already mapped, but dlopen(RTLD_NOLOAD) failed");
    }
    /* The chain follows the devices: RCCL for an AMD GPU, NCCL for an NVIDIA one; never NVIDIA's
     * library on a machine that has only AMD devices, or the reverse. With both kinds, RCCL first. */
    int rc = -1;
    if (req->devices & NX_DEVICE_AMD)
        rc = try_chain(req->rccl, req->nrccl);
    if (rc == -1 && (req->devices & NX_DEVICE_NVIDIA))
        rc = try_chain(req->nccl, req->nnccl);
    return rc == 0 ? 0 : -1;
}

int nx_loader_load(const nx_load_request *req, const dl_attempt **out, size_t *nout, int *notices)
{
    int rc = 0;
    *notices = 0;
    pthread_mutex_lock(&loader_lock);
    if (!atomic_load_explicit(&loader_ready, memory_order_relaxed)) {
        /* A failed discovery is not cached: a corrected environment is tried afresh. */
        dl_log_clear(&attempts);
        memset(&info, 0, sizeof info);
        int found = 0;
        rc = discover(req, &found);
        if (rc == 0) {
            info.loaded = 1;
            notices_pending = found;
            atomic_store_explicit(&loader_ready, 1, memory_order_release);
        }
    }
    if (rc == 0) {
        *notices = notices_pending;
        notices_pending = 0;
    }
    *out = attempts.items;
    *nout = attempts.n;
    pthread_mutex_unlock(&loader_lock);
    return rc;
}

void nx_loader_attempts(const dl_attempt **out, size_t *nout)
{
    pthread_mutex_lock(&loader_lock);
    *out = attempts.items;
    *nout = attempts.n;
    pthread_mutex_unlock(&loader_lock);
}
