/* The library-selection environment, read in one place: NCCL_LIBRARY (which NCCL/RCCL library,
 * or "host"), NCCL4PY_DEV_DIR (where GPU device nodes are looked for; tests simulate a GPU machine
 * with it) and the kinds of GPU device node there (/dev/kfd: AMD; /dev/nvidia<N>: NVIDIA).
 * src/common/lib_select.c is compiled into both extension modules; nccl._ext's loader reads it,
 * the HIP runtime loader trims its own variable with it, and the Python side reads the same view
 * through nccl._ext._library_selection() (docs/architecture.md#discovery-order). Plain C, no
 * Python objects. Read environment variables with the GIL held: os.environ writes happen under it. */
#ifndef NCCL4PY_LIB_SELECT_H
#define NCCL4PY_LIB_SELECT_H

#include <limits.h>
#include <stddef.h>

/* Copies getenv(var), with surrounding blanks (space, tab, newline) stripped, into out (truncated
 * to outlen - 1 bytes). Returns its length: 0 when var is unset or blank. */
size_t sel_env_trimmed(const char *var, char *out, size_t outlen);

/* The kinds of GPU device node: kfd (AMD), nvidia<N> (NVIDIA; not nvidiactl or nvidia-uvm, which
 * containers have without a GPU). */
enum { NX_DEVICE_AMD = 1, NX_DEVICE_NVIDIA = 2 };

/* Scans dev_dir for GPU device nodes and returns their NX_DEVICE_* bits. With `each`, calls it for
 * every node (kfd first, then each nvidia<N> in directory order) with its path; without, stops at
 * the first node of each kind. A nonzero return from `each` ends the scan, which then returns -1. */
int sel_gpu_devices(const char *dev_dir, int (*each)(const char *path, void *ctx), void *ctx);

typedef struct {
    char library[PATH_MAX]; /* NCCL_LIBRARY, stripped; "" when unset or blank */
    int names_host;         /* NCCL_LIBRARY names the bundled host backend ("host", any case) */
    const char *dev_dir;    /* NCCL4PY_DEV_DIR, or "/dev" when unset or empty (getenv's storage) */
    int devices;            /* NX_DEVICE_* bits of the nodes in dev_dir */
} sel_library_selection;

/* Reads the selection environment and scans the device nodes. */
void sel_read(sel_library_selection *out);

#endif
