/* Communicator-owned resources of nccl.core (docs/compatibility.md#resources): the CommResource
 * base (resources.c), RegisteredBufferHandle and RegisteredWindowHandle (resources.c), and
 * CustomRedOp (redop.c).
 *
 * A resource holds its communicator and is tracked by it (nx_comm_track); it is released only by
 * close() or by the communicator's destroy/abort/close_all_resources. There is no finalizer: a
 * resource collected while open just drops its Python object (the library releases what it holds
 * with the communicator). close() untracks the resource, so a loop that creates and closes
 * resources does not grow the communicator's list. */
#ifndef NCCL4PY_RESOURCES_H
#define NCCL4PY_RESOURCES_H

#include "core/core.h"

typedef struct nx_CommResource nx_CommResource;

/* Gives back what the resource holds in the library, called once by close() while the
 * communicator is still valid, with the GIL held (it releases the GIL around the library call).
 * 0, or -1 with an exception. */
typedef int (*nx_resource_release_fn)(nx_state *st, PyObject *self, ncclComm_t comm);

struct nx_CommResource {
    PyObject_HEAD
    PyObject *comm;                  /* the Communicator (owned) */
    int open;
    nx_resource_release_fn release;  /* NULL for the base class: nothing to release */
};

/* A new resource of the C type `type` for comm, before any library call: open is 0 until the
 * caller's library call succeeds. NcclInvalid when comm is null. */
PyObject *nx_resource_alloc(nx_state *st, nx_core_type type, nx_Communicator *comm, nx_resource_release_fn release);

/* Tracks obj on its communicator; on failure closes it (errors swallowed, the tracking error
 * kept) and returns -1. The caller still owns its reference either way. */
int nx_resource_track(nx_Communicator *comm, PyObject *obj);

/* The base's slots, for subclasses whose own traverse/clear add their fields. */
int nx_resource_traverse(PyObject *op, visitproc visit, void *arg);
int nx_resource_clear(PyObject *op);
void nx_resource_dealloc(PyObject *op);

/* RuntimeError("<Type> has been closed and is no longer valid"). Returns NULL. */
NX_COLD PyObject *nx_resource_closed_error(PyObject *self);

/* The flags every resource type is created with. */
#define NX_RESOURCE_FLAGS (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE)

/* Adds a type made from spec (with base, which may be NULL) to the module and to core_types. */
int nx_resource_add_type(PyObject *module, nx_state *st, nx_core_type idx, PyType_Spec *spec, PyObject *base,
                         const char *name);

/* The window of an open RegisteredWindowHandle, or NULL with RuntimeError (closed, or pending). */
ncclWindow_t nx_window_open(PyObject *self);
/* The same read without an exception: NULL when closed or pending. No Python code runs. */
ncclWindow_t nx_window_handle(PyObject *self);

#endif
