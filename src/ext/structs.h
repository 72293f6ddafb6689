/* Struct wrappers of nccl.bindings.nccl (API.md section 3.6): UniqueId, Config, SimInfo,
 * WaitSignalDesc, CommProperties and the NCCL 2.32 / device-API structs (module.h lists them).
 * One implementation serves every class; a descriptor per class (struct_layouts.c) lists its
 * size, initializer and fields. */
#ifndef NCCL4PY_STRUCTS_H
#define NCCL4PY_STRUCTS_H

#include "module.h"

/* A new owned, initialised instance of the given class. */
PyObject *nx_struct_new(nx_state *st, nx_struct_kind kind);
/* The storage of a wrapper of the given class, or NULL when o is not one (no exception). */
void *nx_struct_storage(nx_state *st, PyObject *o, nx_struct_kind kind);
/* Before a struct goes to the loaded library: for the structs whose `version` the library checks
 * against its own (ncclCommProperties_t, ncclDevCommRequirements_t), lower a newer stamp to the
 * library's version, so that an older library accepts it and fills (or reads) its own fields;
 * the others are read by size and need nothing. No-op before a library is loaded. */
void nx_struct_fit_library(nx_struct_kind kind, void *ptr);

#endif
