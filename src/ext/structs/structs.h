/* Struct wrappers of nccl.bindings.nccl (docs/compatibility.md#struct-wrappers-and-pointerbox): UniqueId, Config,
 * SimInfo,
 * WaitSignalDesc, CommProperties and the NCCL 2.32 / device-API structs (listed below).
 * One implementation serves every class; a descriptor per class (struct_layouts.c) lists its
 * size, initializer and fields. */
#ifndef NCCL4PY_STRUCTS_H
#define NCCL4PY_STRUCTS_H

#include "module/common.h"

/* The struct wrapper classes of nccl.bindings.nccl (layouts in struct_layouts.c). */
typedef enum {
    NX_STRUCT_UNIQUE_ID,
    NX_STRUCT_CONFIG,
    NX_STRUCT_SIM_INFO,
    NX_STRUCT_WAIT_SIGNAL_DESC,
    NX_STRUCT_COMM_PROPERTIES,
    NX_STRUCT_COLL_CONFIG,
    NX_STRUCT_CONFIG_EXT,
    NX_STRUCT_ENCRYPTION_CONFIG,
    NX_STRUCT_TEAM,
    NX_STRUCT_MULTIMEM_HANDLE,
    NX_STRUCT_LSA_BARRIER_HANDLE,
    NX_STRUCT_GIN_BARRIER_HANDLE,
    NX_STRUCT_CFT_BARRIER_HANDLE,
    NX_STRUCT_LL_A2A_HANDLE,
    NX_STRUCT_RESOURCE_WINDOW_VIDMEM,
    NX_STRUCT_DEV_RESOURCE_REQUIREMENTS,
    NX_STRUCT_TEAM_REQUIREMENTS,
    NX_STRUCT_DEV_COMM_REQUIREMENTS,
    NX_STRUCT_DEV_COMM,
    NX_NSTRUCTS
} nx_struct_kind;

/* This file's part of the module state (owned references). */
typedef struct {
    PyTypeObject *types[NX_NSTRUCTS];  /* the classes, made at exec time */
    PyObject *ndarray_type;            /* numpy.ndarray, registered by nccl.bindings.nccl */
    PyObject *dtypes[NX_NSTRUCTS];     /* their numpy dtypes, registered likewise */
} nx_structs_cache;

int nx_structs_cache_traverse(nx_structs_cache *c, visitproc visit, void *arg);
void nx_structs_cache_clear(nx_structs_cache *c);

/* The class name of a struct kind ("Team"), for messages. */
const char *nx_struct_name(nx_struct_kind kind);
/* A new owned, initialised instance of the given class. */
PyObject *nx_struct_new(nx_state *st, nx_struct_kind kind);
/* The storage of a wrapper of the given class, or NULL when o is not one (no exception). */
void *nx_struct_storage(nx_state *st, PyObject *o, nx_struct_kind kind);
/* Before a struct goes to the loaded library: for the structs whose `version` the library checks
 * against its own (ncclCommProperties_t, ncclDevCommRequirements_t), lower a newer stamp to the
 * library's version, so that an older library accepts it and fills (or reads) its own fields;
 * the others are read by size and need nothing. No-op before a library is loaded. */
void nx_struct_fit_library(nx_struct_kind kind, void *ptr);

/* Adds the struct wrapper classes to the module. */
int nx_structs_setup(PyObject *module, nx_state *st);

#endif
