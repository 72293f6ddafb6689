/* NCCL's text for each result code, as its ncclGetErrorString returns it (NCCL 2.30): the one
 * copy, read by the extension (nx_builtin_error_string, when no library answers) and by the host
 * backend (host_error_string, its ncclGetErrorString). Any other code is "unknown result code". */
#ifndef NCCL4PY_NCCL_ERROR_TEXT_H
#define NCCL4PY_NCCL_ERROR_TEXT_H

#include "nccl_abi.h"

#define NCCL_ERROR_TEXT_UNKNOWN "unknown result code"

static inline const char *nccl_error_text(int status)
{
    switch (status) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "timeout";
    default: return NCCL_ERROR_TEXT_UNKNOWN;
    }
}

#endif
