/* Module state of nccl._ext and the helpers every file shares.
 *
 * The state is one struct per file that keeps Python objects between calls (its cache, declared
 * in that file's header with its own traverse and clear), plus the types the module defines.
 * Adding a cached object touches only the owning file; adding a file with a cache adds one member
 * here and one line in each of module.c's traverse and clear. */
#ifndef NCCL4PY_MODULE_H
#define NCCL4PY_MODULE_H

#include "common.h"

#include "buffer.h"
#include "coll_config.h"
#include "errors.h"
#include "handles.h"
#include "lazy.h"
#include "stream.h"
#include "structs.h"

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

struct nx_state {
    PyTypeObject *core_types[NX_NCORE_TYPES]; /* nccl.core's C types */
    PyTypeObject *pointer_box_type;           /* pointerbox.c */
    nx_errors_cache errors;                   /* errors.c */
    nx_handles_cache handles;                 /* handles.c */
    nx_lazy_cache lazy;                       /* lazy.c */
    nx_structs_cache structs;                 /* structs.c */
    nx_buffer_cache buffer;                   /* buffer.c */
    nx_stream_cache stream;                   /* stream.c */
    nx_coll_config_cache coll_config;         /* coll_config.c */
};

static inline nx_state *nx_get_state(PyObject *module) { return (nx_state *)PyModule_GetState(module); }

extern struct PyModuleDef nx_module_def;

/* The state of the module that defined tp or one of its bases (for slots of heap types, which
 * get no defining class); NULL with TypeError if none did. */
static inline nx_state *nx_state_of_type(PyTypeObject *tp)
{
    PyObject *m = PyType_GetModuleByDef(tp, &nx_module_def);
    return m ? nx_get_state(m) : NULL;
}

/* PointerBox (pointerbox.c): one pointer slot at a stable address. */
typedef struct {
    PyObject_HEAD
    void *slot;
} nx_PointerBox;

/* Setup functions, called by the module's exec slot in this order. The binding files
 * (bindings*.c, rocm_extensions.c) declare theirs in bindings.h; nccl.core's in core.h. */
int nx_errors_setup(PyObject *module, nx_state *st);
int nx_library_setup(PyObject *module, nx_state *st);
int nx_structs_setup(PyObject *module, nx_state *st);
int nx_pointer_box_setup(PyObject *module, nx_state *st);
int nx_handles_setup(PyObject *module, nx_state *st);

#endif
