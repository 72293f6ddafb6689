/* The library-selection environment and the GPU device nodes (src/include/lib_select.h). */
#include "lib_select.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

size_t sel_env_trimmed(const char *var, char *out, size_t outlen)
{
    const char *v = getenv(var);
    out[0] = '\0';
    if (v == NULL)
        return 0;
    while (is_blank(*v))
        v++;
    size_t len = strlen(v);
    while (len > 0 && is_blank(v[len - 1]))
        len--;
    if (len >= outlen)
        len = outlen - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return len;
}

int sel_gpu_devices(const char *dev_dir, int (*each)(const char *path, void *ctx), void *ctx)
{
    int kinds = 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/kfd", dev_dir);
    if (access(path, F_OK) == 0) {
        kinds |= NX_DEVICE_AMD;
        if (each != NULL && each(path, ctx) != 0)
            return -1;
    }
    DIR *d = opendir(dev_dir);
    if (d == NULL)
        return kinds;
    struct dirent *e;
    while ((each != NULL || !(kinds & NX_DEVICE_NVIDIA)) && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "nvidia", 6) != 0 || e->d_name[6] < '0' || e->d_name[6] > '9')
            continue;
        kinds |= NX_DEVICE_NVIDIA;
        snprintf(path, sizeof path, "%s/%s", dev_dir, e->d_name);
        if (each != NULL && each(path, ctx) != 0) {
            kinds = -1;
            break;
        }
    }
    closedir(d);
    return kinds;
}

void sel_read(sel_library_selection *out)
{
    size_t n = sel_env_trimmed("NCCL_LIBRARY", out->library, sizeof out->library);
    out->names_host = n > 0 && strcasecmp(out->library, "host") == 0;
    const char *dev_dir = getenv("NCCL4PY_DEV_DIR");
    out->dev_dir = dev_dir != NULL && *dev_dir != '\0' ? dev_dir : "/dev";
    out->devices = sel_gpu_devices(out->dev_dir, NULL, NULL);
}
