/* What every file of nccl._ext includes first: Python.h (before any system header, as CPython
 * requires), the NCCL ABI, and the few macros and forward declarations all headers share. */
#ifndef NCCL4PY_COMMON_H
#define NCCL4PY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"
#include "module/compat.h"

#define NX_COLD __attribute__((cold, noinline))
#define NX_LIKELY(x) __builtin_expect(!!(x), 1)
#define NX_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Caches filled on first use and then read without a lock: nccl._ext runs without the GIL on a
 * free-threaded build (docs/architecture.md#threads), so a slot goes from NULL to its object
 * exactly once, published with a compare-and-swap; a thread that loses the race drops its own
 * copy and uses the winner's. Readers load with acquire order, so they see the object complete. */
static inline PyObject *nx_cache_get(PyObject *const *slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }

/* Publishes obj (a new reference, or NULL with an exception set, returned as is) in the empty
 * *slot, or releases it if another thread filled the slot first. Returns the slot's object,
 * borrowed: the slot keeps it until the module state is cleared. */
static inline PyObject *nx_cache_publish(PyObject **slot, PyObject *obj)
{
    PyObject *winner = NULL;
    if (obj == NULL || __atomic_compare_exchange_n(slot, &winner, obj, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return obj;
    Py_DECREF(obj);
    return winner;
}

/* The module state (module.h) and the Communicator instance (core.h), for headers that only pass
 * pointers to them. */
typedef struct nx_state nx_state;
typedef struct nx_Communicator nx_Communicator;

#endif
