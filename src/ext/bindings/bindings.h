/* nccl.bindings.nccl and nccl.bindings.rocm_extensions: one C function per NCCL/RCCL host entry
 * point (docs/compatibility.md#low-level-bindings), upstream 0.3.1's names and argument
 * conventions, plus the 0.2.0 forms chosen by argument count.
 *
 * Every binding is described once, in tools/nccl_surface.py (its Python name, the abi.h row it
 * calls, a converter kind per parameter, its result, the flight recorder's op, its docstring), and
 * tools/gen_surface.py writes from that:
 *
 *   <section>.gen.c             one per section of the description (memory, communicators,
 *                               queries, collectives, windows, config_collectives, device, params,
 *                               rccl): its bindings' nx_sig and docstring (the text signature
 *                               first), the wrappers of its regular bindings, its method table
 *   bindings.gen.h              the sections' method tables and module, the hand-written
 *                               wrappers' prototypes and signatures
 *
 * The irregular ones are written by hand, by concern (the description's IRREGULAR says why each):
 *
 *   bindings_creation.c         communicator and window creation (two forms, rings, handles)
 *   bindings_struct_results.c   a struct result, or 0.2.0's address to fill
 *   bindings_groups.c           group start/end/simulate-end (group depth, GroupEnd entries)
 *   bindings_arrays.c           wait_signal's descriptors, all_to_all_v's arrays
 *   bindings_params.c           library parameters by key
 *   bindings.c                  the helpers they share, and the setup
 *
 * A wrapper checks, in this order: arity and keywords, the library load and the symbol
 * (nx_intake, bindings_intake.h), each argument in parameter order with the converters below,
 * then makes the one library call with the GIL released (NX_RUN), then turns its status into None
 * or NCCLError (nx_none_or_error, nx_check). Every comm parameter goes through nx_arg_comm and
 * every window through nx_arg_window, which refuse a null handle before any library call (only
 * where NCCL gives NULL a meaning does a binding take nx_arg_nullable_comm). nccl.bindings.nccl and
 * nccl.bindings.rocm_extensions export the names of the two method tables, which nx_bindings_setup
 * publishes as _ext._NCCL_BINDINGS and _ext._RCCL_BINDINGS. */
#ifndef NCCL4PY_BINDINGS_H
#define NCCL4PY_BINDINGS_H

#include "group/group.h"
#include "loader/library.h"
#include "module/convert.h"
#include "module/errors.h"
#include "module/module.h"
#include "structs/handles.h"
#include "structs/structs.h"

/* An nx_sig initializer: NX_SIGNATURE("all_reduce", "sendbuff", ...); the count is computed. */
#define NX_SIGNATURE(fname, ...) \
    {(fname), (const char *const[]){__VA_ARGS__, NULL}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)}

/* A method table entry of binding `name`: nx_binding_<name> and its docstring
 * nx_binding_<name>__doc__ (its section's <section>.gen.c), with or without parameters. */
#define NX_BINDING_FASTCALL_DEF(name) \
    {#name, (PyCFunction)(void (*)(void))nx_binding_##name, METH_FASTCALL | METH_KEYWORDS, nx_binding_##name##__doc__}
#define NX_BINDING_NOARGS_DEF(name) {#name, nx_binding_##name, METH_NOARGS, nx_binding_##name##__doc__}

/* ---- argument i of the binding described by sig ----
 * Each converts a[i] and names sig's function and parameter in its error: 0, or -1 with
 * TypeError, OverflowError or ValueError. */

static inline int nx_arg_addr(const nx_sig *sig, PyObject *const *a, int i, void **out)
{
    return nx_addr(a[i], sig->fname, sig->names[i], out);
}

/* The address of the handle slot a 0.3.1 creation call fills (an int such as PointerBox().address
 * or Comm().handle_ptr, or a PointerBox): the library writes the new communicator or window
 * there, so 0 is refused (ValueError) before the call, and so is a Comm or Window itself
 * (TypeError: the library would write through the handle's value). */
static inline int nx_arg_slot(const nx_sig *sig, PyObject *const *a, int i, void **out)
{
    if (NX_UNLIKELY(nx_is_handle(a[i]))) {
        const char *type = nx_handle_type_name(a[i]);
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a handle slot address (an int, such as %s's "
                     "handle_ptr), not %s", sig->fname, sig->names[i], type, type);
        return -1;
    }
    if (nx_addr(a[i], sig->fname, sig->names[i], out) < 0)
        return -1;
    if (*out == NULL) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' must not be a null handle slot address", sig->fname,
                     sig->names[i]);
        return -1;
    }
    return 0;
}

static inline int nx_arg_stream(const nx_sig *sig, PyObject *const *a, int i, cudaStream_t *out)
{
    intptr_t v;
    if (nx_intptr(a[i], sig->fname, sig->names[i], &v) < 0)
        return -1;
    *out = (cudaStream_t)v;
    return 0;
}

static inline int nx_arg_size(const nx_sig *sig, PyObject *const *a, int i, size_t *out)
{
    return nx_size(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_int(const nx_sig *sig, PyObject *const *a, int i, int *out)
{
    return nx_int(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_uint(const nx_sig *sig, PyObject *const *a, int i, unsigned int *out)
{
    return nx_uint(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_dtype(const nx_sig *sig, PyObject *const *a, int i, ncclDataType_t *out)
{
    return nx_dtype(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_redop(const nx_sig *sig, PyObject *const *a, int i, ncclRedOp_t *out)
{
    return nx_redop(a[i], sig->fname, sig->names[i], out);
}

/* A communicator that must not be null (NCCLNullHandleError before any library call). */
static inline int nx_arg_comm(const nx_sig *sig, PyObject *const *a, int i, ncclComm_t *out)
{
    return nx_comm_arg(a[i], sig->fname, sig->names[i], NX_NULL_REFUSED, out);
}

/* A communicator where NCCL gives NULL a meaning; each use says which. */
static inline int nx_arg_nullable_comm(const nx_sig *sig, PyObject *const *a, int i, ncclComm_t *out)
{
    return nx_comm_arg(a[i], sig->fname, sig->names[i], NX_NULL_ACCEPTED, out);
}

/* A window that must not be null (NCCLNullHandleError before any library call). */
static inline int nx_arg_window(const nx_sig *sig, PyObject *const *a, int i, ncclWindow_t *out)
{
    return nx_window_arg(a[i], sig->fname, sig->names[i], out);
}

/* ---- shared by the binding files (bindings.c) ---- */

/* A function with two forms told apart by the total argument count: the 0.3.1 form (s03) or the
 * 0.2.0 form (s02, which may be s03 itself when the names are shared). Returns the arguments in
 * parameter order and sets *legacy (the 0.2.0 form was called) and *sig; NULL with TypeError
 * otherwise. buf has room for NX_MAX_PARAMS. */
PyObject *const *nx_dual_args(const nx_sig *s03, const nx_sig *s02, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames, PyObject **buf, int *legacy, const nx_sig **sig);

/* A new wrapper of struct `kind` holding a copy of the size bytes at value: the result of an
 * entry point that returns a struct by value (the teams), or NULL with the exception. */
PyObject *nx_struct_value_result(nx_state *st, nx_struct_kind kind, const void *value, size_t size);

/* The tuple (a, b) of two new references (either NULL: NULL, the other released). */
PyObject *nx_pair_result(PyObject *a, PyObject *b);

/* A struct wrapper freshly filled by the library, or, when rc failed, NULL with the exception
 * (obj dropped). */
PyObject *nx_struct_result(nx_state *st, PyObject *obj, ncclResult_t rc, ncclComm_t comm);

/* The new handle of a creation call's short form (the 0.2.0 and 0.5+ argument counts), made before
 * the library call so that nothing can fail once the library created a communicator or window:
 * the call writes it at *slot, the object's own slot. Inside a group the object is also kept
 * alive until the outermost group end (nx_group_keep), since the library may fill the slot only
 * then. 0, or -1 with the exception. */
int nx_creation_handle(nx_state *st, nx_handle_kind kind, PyObject **handle, void **slot);

/* The result of a creation call: the status (0.3.1 form, handle NULL) or the handle (short form;
 * the reference is passed on); NULL with the exception (and the handle dropped) when rc failed. */
PyObject *nx_creation_result(nx_state *st, ncclResult_t rc, PyObject *handle, ncclComm_t comm);

/* True when o stands for an address (an int, PointerBox, ...) rather than for data. */
int nx_is_address(PyObject *o);

/* Copies `size` bytes given either as an int address or as a contiguous buffer of exactly that
 * length (read-only buffers welcome: the library only reads them). */
int nx_read_bytes_arg(PyObject *o, const char *fname, const char *argname, void *out, size_t size);

/* nx_read_bytes_arg into new PyMem storage (*out, which the caller frees), allocated only once a
 * buffer argument is known to hold exactly size bytes. */
int nx_read_bytes_alloc(PyObject *o, const char *fname, const char *argname, size_t size, void **out);

/* A host size_t[n] array given as an int address (used in place), a sequence of ints, or a 1-D
 * uint64 buffer (both copied into *copy, which the caller frees with PyMem_Free). */
int nx_size_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t n, const size_t **out,
                      size_t **copy);

/* An int[] given as an int address or a sequence of ints (copied into *copy, freed by the caller;
 * at least `count` entries); None gives NULL when allow_none. */
int nx_int_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t count, int allow_none,
                     int **out, int **copy);

/* ---- setup: adds the sections' method tables (bindings.gen.h lists them) ---- */
int nx_bindings_setup(PyObject *module, nx_state *st);

#endif
