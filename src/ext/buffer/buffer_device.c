/* Which device a raw device pointer lives on, asked of the GPU driver of the loaded flavour
 * (buffer.h). Only __cuda_array_interface__ needs it: every other producer names its device. The
 * driver is found by the loader shared with the cuda.core shim (src/common/gpu_loader.c), so
 * NCCL4PY_HIP_LIBRARY and the ROCm 7 name apply here too. Cold: runs once per CAI resolution. */
#include "buffer/buffer.h"

#include <stdint.h>

#include "gpu_loader.h"
#include "loader/library.h"
#include "module/errors.h"
#include "module/module.h"

/* The HIP runtime could not be loaded: NcclInvalid naming every candidate the loader tried. */
static NX_COLD int hip_not_loaded(nx_state *st, const char *name, const dl_attempt *attempts, size_t n)
{
    PyObject *tried = PyUnicode_FromString("");
    for (size_t i = 0; tried != NULL && i < n; i++) {
        PyObject *item = PyUnicode_FromFormat("%s%s: %s", i ? "; " : "", attempts[i].candidate,
                                              attempts[i].outcome ? attempts[i].outcome : "loaded");
        PyObject *joined = item ? PyUnicode_Concat(tried, item) : NULL;
        Py_XDECREF(item);
        Py_SETREF(tried, joined);
    }
    if (tried != NULL)
        nx_invalid(st, "%s: cannot find the device of a __cuda_array_interface__ pointer: the HIP runtime "
                       "(libamdhip64) did not load; tried %U", name, tried);
    Py_XDECREF(tried);
    return -1;
}

/* RCCL: hipPointerGetAttributes from the HIP runtime. */
static int hip_pointer_device(nx_state *st, const char *name, void *ptr, int *device)
{
    if (!gpu_hip_ready()) {
        dl_attempt *attempts = NULL;
        size_t n = 0;
        int loaded;
        Py_BEGIN_ALLOW_THREADS
        loaded = gpu_hip_load(&attempts, &n);
        Py_END_ALLOW_THREADS
        if (loaded != 0)
            hip_not_loaded(st, name, attempts, n);
        dl_attempts_free(attempts, n);
        if (loaded != 0)
            return -1;
    }
    if (gpu_hip.hipPointerGetAttributes == NULL) {
        nx_invalid(st, "%s: cannot find the device of a __cuda_array_interface__ pointer: %s does not export "
                       "hipPointerGetAttributes", name, gpu_hip_path());
        return -1;
    }
    gpu_hip_pointer_attributes attrs = {0};
    hipError_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip.hipPointerGetAttributes(&attrs, ptr);
    Py_END_ALLOW_THREADS
    if (rc != GPU_hipSuccess) {
        nx_invalid(st, "%s: cannot find the device of __cuda_array_interface__ pointer %p: "
                       "hipPointerGetAttributes failed (error %d)", name, ptr, rc);
        return -1;
    }
    *device = attrs.device;
    return 0;
}

/* NCCL: cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) from the CUDA driver. */
static int cuda_pointer_device(nx_state *st, const char *name, void *ptr, int *device)
{
    char why[512] = "";
    int loaded = 0;
    if (!gpu_cuda_ready()) {
        Py_BEGIN_ALLOW_THREADS
        loaded = gpu_cuda_load(why, sizeof why);
        Py_END_ALLOW_THREADS
    }
    if (loaded != 0) {
        nx_invalid(st, "%s: cannot find the device of a __cuda_array_interface__ pointer: "
                       "cuPointerGetAttribute is unavailable (%s)", name, why);
        return -1;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_cuda.cuPointerGetAttribute(device, GPU_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                        (unsigned long long)(uintptr_t)ptr);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        nx_invalid(st, "%s: cannot find the device of __cuda_array_interface__ pointer %p: "
                       "cuPointerGetAttribute failed (error %d)", name, ptr, rc);
        return -1;
    }
    return 0;
}

int nx_buffer_pointer_device(nx_state *st, const char *name, void *ptr, int *device)
{
    switch (nx_loader_info()->flavour) {
    case NX_FLAVOUR_RCCL:
        return hip_pointer_device(st, name, ptr, device);
    case NX_FLAVOUR_NCCL:
        return cuda_pointer_device(st, name, ptr, device);
    default:
        /* no driver: CAI memory is device memory, which the host backend never computes on */
        *device = 0;
        return 0;
    }
}
