/* The module nccl._ext: its definition, the state's accessors, and the C types every file may
 * check instances against.
 *
 * The state (module/state.h) is one struct: these types first, then one cache per file that keeps
 * Python objects between calls (declared in that file's header with its own traverse and clear).
 * Only module.c and a cache's owner include state.h; everything else sees the state as an opaque
 * nx_state and reads the types through nx_types_of. Adding a file with a cache adds one member in
 * state.h and one line in each of module.c's traverse and clear. */
#ifndef NCCL4PY_MODULE_H
#define NCCL4PY_MODULE_H

#include "module/common.h"

/* The heap types of nccl.core defined in C; each file that defines one stores it here, since
 * other files check instances against it. */
typedef enum {
    NX_TYPE_COMMUNICATOR,
    NX_TYPE_NCCL_BUFFER,
    NX_TYPE_COMM_RESOURCE,
    NX_TYPE_REGISTERED_BUFFER,
    NX_TYPE_REGISTERED_WINDOW,
    NX_TYPE_CUSTOM_RED_OP,
    NX_TYPE_DEV_COMM,
    NX_NCORE_TYPES
} nx_core_type;

/* The first member of the module state (owned references, set by each type's setup). */
typedef struct {
    PyTypeObject *core[NX_NCORE_TYPES]; /* nccl.core's C types */
    PyTypeObject *pointer_box;          /* structs/pointerbox.c */
} nx_types;

static inline nx_state *nx_get_state(PyObject *module) { return (nx_state *)PyModule_GetState(module); }

/* The types of the state: its first member (module/state.h checks that it is), reached through a
 * pointer to the whole, as C allows for a struct's first member. */
static inline nx_types *nx_types_of(nx_state *st) { return (nx_types *)(void *)st; }

extern struct PyModuleDef nx_module_def;

/* The state of the module that defined tp or one of its bases (for slots of heap types, which
 * get no defining class); NULL with TypeError if none did. */
static inline nx_state *nx_state_of_type(PyTypeObject *tp)
{
    PyObject *m = PyType_GetModuleByDef(tp, &nx_module_def);
    return m ? nx_get_state(m) : NULL;
}

#endif
