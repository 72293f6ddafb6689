/* The GPU runtime/driver loader shared by nccl._ext and nccl._hip_compat._hip; the discovery order
 * is documented in gpu_loader.h. Each module that links this file has its own copy of the state
 * below; both open the same libraries (dlopen hands back one mapping per process). */
#include "gpu_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_select.h"

gpu_hip_table gpu_hip;

#define GPU_SYMBOL_ROW(name, ret, params, need) {#name, need, offsetof(gpu_hip_table, name)},
const gpu_symbol gpu_hip_symbols[] = {GPU_HIP_API(GPU_SYMBOL_ROW)};
#undef GPU_SYMBOL_ROW
const size_t gpu_hip_nsymbols = sizeof(gpu_hip_symbols) / sizeof(gpu_hip_symbols[0]);

/* Versioned SONAMEs first: they are what runtime packages install (ROCm 7, 6, 5); the bare name
 * comes with development packages only. */
static const char *const sonames[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
#define NSONAMES (sizeof(sonames) / sizeof(sonames[0]))

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int loader_ready;  /* release-stored after gpu_hip, loaded_path and runtime_version */
static char loaded_path[4096];   /* guarded by loader_lock until loader_ready */
static int runtime_version = -1; /* likewise */
static dl_attempt_log attempts;   /* guarded by loader_lock; the latest discovery */

int gpu_hip_ready(void) { return atomic_load_explicit(&loader_ready, memory_order_acquire); }

const gpu_symbol *gpu_hip_symbol_at(const void *slot)
{
    size_t offset = (size_t)((const char *)slot - (const char *)&gpu_hip);
    for (size_t i = 0; i < gpu_hip_nsymbols; i++)
        if (gpu_hip_symbols[i].offset == offset)
            return &gpu_hip_symbols[i];
    return NULL;
}

const char *gpu_hip_path(void) { return loaded_path; }

int gpu_hip_runtime_version(void) { return runtime_version; }

/* Resolves the whole table from one handle. Returns the number of missing required symbols and
 * writes their names (comma separated) into missing. */
static int resolve(void *handle, gpu_hip_table *table, char *missing, size_t missing_len)
{
    int nmissing = 0;
    missing[0] = '\0';
    for (size_t i = 0; i < gpu_hip_nsymbols; i++) {
        void *sym = dlsym(handle, gpu_hip_symbols[i].name);
        /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
        memcpy((char *)table + gpu_hip_symbols[i].offset, &sym, sizeof sym);
        if (sym == NULL && gpu_hip_symbols[i].required) {
            size_t used = strlen(missing);
            snprintf(missing + used, missing_len - used, "%s%s", nmissing ? ", " : "", gpu_hip_symbols[i].name);
            nmissing++;
        }
    }
    return nmissing;
}

/* Tries one candidate; on success fills gpu_hip and loaded_path and returns 0. */
static int try_candidate(const char *label, const char *file, int flags)
{
    char outcome[4096 + 256];
    dlerror();
    void *handle = dlopen(file, flags);
    if (handle == NULL) {
        const char *err = dlerror();
        if (err == NULL)
            err = "unknown dlopen error";
        snprintf(outcome, sizeof outcome, "%s: %s", dl_not_found(file, err) ? "not found" : "found, failed to load",
                 err);
        dl_log_record(&attempts, label, outcome);
        return -1;
    }
    gpu_hip_table table;
    char missing[256];
    if (resolve(handle, &table, missing, sizeof missing) != 0) {
        snprintf(outcome, sizeof outcome, "loaded, but not a HIP runtime: it does not export %s", missing);
        dl_log_record(&attempts, label, outcome);
        dlclose(handle);
        return -1;
    }
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL && lm->l_name != NULL && lm->l_name[0] != '\0')
        snprintf(loaded_path, sizeof loaded_path, "%s", lm->l_name);
    else
        snprintf(loaded_path, sizeof loaded_path, "%s", file);
    int version = -1;
    if (table.hipRuntimeGetVersion != NULL && table.hipRuntimeGetVersion(&version) != GPU_hipSuccess)
        version = -1;
    runtime_version = version;
    gpu_hip = table;
    dl_log_record(&attempts, label, NULL);
    return 0;
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == '\0')
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libamdhip64.so", strlen("libamdhip64.so")) != 0)
        return 0;
    snprintf((char *)data, 4096, "%s", name);
    return 1;
}

static int discover(void)
{
    const int flags = RTLD_NOW | RTLD_LOCAL;
    char label[4096 + 64];
    char value[4096];
    if (sel_env_trimmed("NCCL4PY_HIP_LIBRARY", value, sizeof value) > 0) {
        snprintf(label, sizeof label, "NCCL4PY_HIP_LIBRARY=%s", value);
        return try_candidate(label, value, flags);
    }

    char mapped[4096] = "";
    if (dl_iterate_phdr(find_loaded, mapped) != 0 && mapped[0] != '\0') {
        snprintf(label, sizeof label, "%s (already loaded in the process)", mapped);
        if (try_candidate(label, mapped, flags | RTLD_NOLOAD) == 0)
            return 0;
    }

    for (size_t i = 0; i < NSONAMES; i++)
        if (try_candidate(sonames[i], sonames[i], flags) == 0)
            return 0;

    const char *rocm = getenv("ROCM_PATH");
    const char *dirs[2] = {rocm != NULL && rocm[0] != '\0' ? rocm : "/opt/rocm", getenv("HIP_PATH")};
    for (size_t d = 0; d < 2; d++) {
        if (dirs[d] == NULL || dirs[d][0] == '\0')
            continue;
        for (size_t i = 0; i < NSONAMES; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/lib/%s", dirs[d], sonames[i]);
            if (try_candidate(path, path, flags) == 0)
                return 0;
        }
    }
    return -1;
}

int gpu_hip_load(dl_attempt **out, size_t *nout)
{
    if (out != NULL) {
        *out = NULL;
        *nout = 0;
    }
    pthread_mutex_lock(&loader_lock);
    int rc = 0;
    if (!atomic_load_explicit(&loader_ready, memory_order_relaxed)) {
        dl_log_clear(&attempts);
        rc = discover();
        if (rc == 0)
            atomic_store_explicit(&loader_ready, 1, memory_order_release);
    }
    if (out != NULL && dl_log_copy(&attempts, out, nout) != 0) {
        *out = NULL;
        *nout = 0;
    }
    pthread_mutex_unlock(&loader_lock);
    return rc;
}

int gpu_hip_attempts(dl_attempt **out, size_t *nout)
{
    pthread_mutex_lock(&loader_lock);
    int rc = dl_log_copy(&attempts, out, nout);
    pthread_mutex_unlock(&loader_lock);
    return rc;
}

/* ---- the CUDA driver ---- */

gpu_cuda_table gpu_cuda;

#define GPU_CUDA_ROW(name, ret, params, need) {#name, need, offsetof(gpu_cuda_table, name)},
static const gpu_symbol cuda_symbols[] = {GPU_CUDA_API(GPU_CUDA_ROW)};
#undef GPU_CUDA_ROW

static atomic_int cuda_ready; /* release-stored after gpu_cuda */

int gpu_cuda_ready(void) { return atomic_load_explicit(&cuda_ready, memory_order_acquire); }

int gpu_cuda_load(char *why, size_t whylen)
{
    static const char soname[] = "libcuda.so.1";
    int rc = 0;
    pthread_mutex_lock(&loader_lock);
    if (!atomic_load_explicit(&cuda_ready, memory_order_relaxed)) {
        dlerror();
        void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        gpu_cuda_table table;
        rc = -1;
        if (handle == NULL) {
            const char *err = dlerror();
            snprintf(why, whylen, "%s", err != NULL ? err : "libcuda.so.1: unknown dlopen error");
        } else {
            rc = 0;
            for (size_t i = 0; i < sizeof cuda_symbols / sizeof cuda_symbols[0]; i++) {
                void *sym = dlsym(handle, cuda_symbols[i].name);
                memcpy((char *)&table + cuda_symbols[i].offset, &sym, sizeof sym);
                if (sym == NULL && cuda_symbols[i].required && rc == 0) {
                    snprintf(why, whylen, "%s does not export %s", soname, cuda_symbols[i].name);
                    rc = -1;
                }
            }
            if (rc == 0) {
                gpu_cuda = table;
                atomic_store_explicit(&cuda_ready, 1, memory_order_release);
            } else {
                dlclose(handle);
            }
        }
    }
    pthread_mutex_unlock(&loader_lock);
    return rc;
}
