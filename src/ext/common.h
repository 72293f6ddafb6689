/* What every file of nccl._ext includes first: Python.h (before any system header, as CPython
 * requires), the NCCL ABI, and the few macros and forward declarations all headers share. */
#ifndef NCCL4PY_COMMON_H
#define NCCL4PY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"
#include "compat.h"

#define NX_COLD __attribute__((cold, noinline))
#define NX_LIKELY(x) __builtin_expect(!!(x), 1)
#define NX_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The module state (module.h) and the Communicator instance (core.h), for headers that only pass
 * pointers to them. */
typedef struct nx_state nx_state;
typedef struct nx_Communicator nx_Communicator;

#endif
