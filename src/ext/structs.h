/* Struct wrappers of nccl.bindings.nccl (API.md section 3.6): UniqueId, Config, SimInfo,
 * WaitSignalDesc, CommProperties. One implementation serves every class; a descriptor per class
 * lists its size, initializer and fields. */
#ifndef NCCL4PY_STRUCTS_H
#define NCCL4PY_STRUCTS_H

#include "module.h"

/* A new owned, initialised instance of the given class. */
PyObject *nx_struct_new(nx_state *st, nx_struct_kind kind);
/* The storage of a wrapper of the given class, or NULL when o is not one (no exception). */
void *nx_struct_storage(nx_state *st, PyObject *o, nx_struct_kind kind);

#endif
