/* nccl.bindings.nccl.Comm and Window (handles.c): the communicator and window handle objects of
 * nccl4py 0.5+, which every comm/window parameter accepts beside a plain int (convert.c). */
#ifndef NCCL4PY_HANDLES_H
#define NCCL4PY_HANDLES_H

#include "module/common.h"

/* One handle: the library's pointer, stored where the library itself may write it. `slot`'s
 * address is the object's handle_ptr, so a creation call (ours, or a 0.3.1-form call given
 * handle_ptr) fills the object in place, at the call or at the end of its group. */
typedef struct {
    PyObject_HEAD
    void *slot;
} nx_Handle;

typedef enum { NX_HANDLE_COMM, NX_HANDLE_WINDOW, NX_NHANDLE_KINDS } nx_handle_kind;

/* This file's part of the module state: the two types (owned). */
typedef struct {
    PyTypeObject *types[NX_NHANDLE_KINDS];
} nx_handles_cache;

int nx_handles_cache_traverse(nx_handles_cache *c, visitproc visit, void *arg);
void nx_handles_cache_clear(nx_handles_cache *c);

/* The deallocators double as the types' identities: the converters recognise a handle by
 * Py_TYPE(o)->tp_dealloc, one load and one compare, with no module state to find and no
 * attribute lookup. The types are final (no subclasses), so the test is an exact-type check,
 * valid in every interpreter that loaded the module. */
void nx_comm_dealloc(PyObject *op);
void nx_window_dealloc(PyObject *op);

static inline int nx_is_comm(PyObject *o) { return Py_TYPE(o)->tp_dealloc == nx_comm_dealloc; }
static inline int nx_is_window(PyObject *o) { return Py_TYPE(o)->tp_dealloc == nx_window_dealloc; }
static inline int nx_is_handle(PyObject *o) { return nx_is_comm(o) || nx_is_window(o); }

/* The pointer a handle holds. An atomic load: the library may have filled the slot from another
 * thread (a nonblocking creation) or at a group end since the object was made. */
static inline void *nx_handle_value(PyObject *o) { return __atomic_load_n(&((nx_Handle *)o)->slot, __ATOMIC_ACQUIRE); }

/* The Python name of a handle's type ("Comm" or "Window"), for messages. */
static inline const char *nx_handle_kind_name(nx_handle_kind kind) { return kind == NX_HANDLE_COMM ? "Comm" : "Window"; }

/* The short name of a handle's type, for messages ("Comm"; tp_name is the dotted one). */
static inline const char *nx_handle_type_name(PyObject *o) { return nx_is_comm(o) ? "Comm" : "Window"; }

/* A new handle of `kind` holding `value`. NULL with MemoryError. */
PyObject *nx_handle_new(nx_state *st, nx_handle_kind kind, void *value);

/* Where a library call writes the handle h (h made by nx_handle_new). */
static inline void **nx_handle_slot(PyObject *h) { return &((nx_Handle *)h)->slot; }

/* Adds Comm and Window to the module. */
int nx_handles_setup(PyObject *module, nx_state *st);

#endif
