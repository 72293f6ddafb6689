/* A stub CUDA driver (libcuda.so.1) for benchmarks/upstream_overhead.py: just enough for NVIDIA's
 * cuda-bindings and nccl4py to import and make the timed calls on a machine without a GPU. Every
 * pointer is reported as memory of device 0; nothing is ever launched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_FOUND = 500 };

static int trace(void)
{
    static int on = -1;
    if (on < 0)
        on = getenv("STUB_LIBCUDA_TRACE") != NULL;
    return on;
}

CUresult cuInit(unsigned flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version)
{
    *version = 12090;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(int *device, int ordinal)
{
    *device = ordinal;
    return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetName(char *name, int len, int device)
{
    (void)device;
    snprintf(name, (size_t)len, "stub device");
    return CUDA_SUCCESS;
}

/* CU_POINTER_ATTRIBUTE_CONTEXT 1, MEMORY_TYPE 2 (DEVICE = 2), DEVICE_POINTER 3, DEVICE_ORDINAL 9. */
CUresult cuPointerGetAttribute(void *data, int attribute, uintptr_t ptr)
{
    switch (attribute) {
    case 1: *(void **)data = (void *)0x1; return CUDA_SUCCESS;
    case 2: *(unsigned *)data = 2; return CUDA_SUCCESS;
    case 3: *(uintptr_t *)data = ptr; return CUDA_SUCCESS;
    case 9: *(int *)data = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

/* cuda-bindings resolves every driver entry point through here: hand back our own symbol of that
 * name, or report it missing. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    (void)version, (void)flags;
    *pfn = dlsym(RTLD_DEFAULT, symbol);
    if (trace())
        fprintf(stderr, "stub libcuda: %s %s\n", symbol, *pfn ? "found" : "missing");
    if (status != NULL)
        *status = *pfn ? 1 : 0; /* CU_GET_PROC_ADDRESS_SUCCESS / SYMBOL_NOT_FOUND */
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
