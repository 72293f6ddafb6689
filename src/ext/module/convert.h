/* Argument intake for the METH_FASTCALL functions: arity and keywords, then one small converter
 * per C type. Every message names the function and the argument. */
#ifndef NCCL4PY_CONVERT_H
#define NCCL4PY_CONVERT_H

#include "module/module.h"

/* The most parameters a binding takes: the keyword path of nx_args reorders arguments into a
 * caller's buffer this long. */
#define NX_MAX_PARAMS 16

/* Describes one Python signature: its name, its parameter names (NULL-terminated) and their count
 * (bindings.h's NX_SIGNATURE fills all three). */
typedef struct {
    const char *fname;
    const char *const *names;
    Py_ssize_t nparams;
} nx_sig;

/* Checks that exactly sig->nparams arguments were passed (positionally and/or by keyword) and
 * returns them in parameter order: `args` itself when there are no keywords (the hot path, no
 * copy), else `buf` (room for sig->nparams, at most NX_MAX_PARAMS of bindings.h; also what a call
 * without any argument array gets, so that NULL always means an error). NULL with TypeError on a
 * bad count or an unknown/duplicate keyword. */
PyObject *const *nx_args(const nx_sig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         PyObject **buf);

/* Total number of arguments, positional plus keyword (dual-form functions pick a form by it). */
static inline Py_ssize_t nx_total_args(Py_ssize_t nargs, PyObject *kwnames)
{
    return nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
}

/* The argument check of methods without parameters (METH_METHOD cannot be METH_NOARGS): 0, or -1
 * with "<fname>() takes no arguments". */
int nx_no_args(const char *fname, Py_ssize_t nargs, PyObject *kwnames);

/* Raises TypeError for a dual-form function called with neither count. Returns NULL. */
NX_COLD PyObject *nx_bad_arity2(const char *fname, Py_ssize_t a, Py_ssize_t b, Py_ssize_t got);

/* Converters: 0 on success, -1 with TypeError/OverflowError/ValueError naming `argname`.
 * Anything with __index__ is accepted where an int is expected (PointerBox, struct wrappers), but
 * a Comm or Window (TypeError): those go only where a communicator or window is expected. */
int nx_intptr(PyObject *o, const char *fname, const char *argname, intptr_t *out);
/* An address (nx_intptr) as a pointer. */
int nx_addr(PyObject *o, const char *fname, const char *argname, void **out);
int nx_size(PyObject *o, const char *fname, const char *argname, size_t *out);
int nx_int(PyObject *o, const char *fname, const char *argname, int *out);
int nx_uint(PyObject *o, const char *fname, const char *argname, unsigned int *out);
/* An ncclDataType_t in [0, ncclNumTypes). */
int nx_dtype(PyObject *o, const char *fname, const char *argname, ncclDataType_t *out);
/* An ncclRedOp_t: a built-in op or a handle from red_op_create_pre_mul_sum (>= 0). */
int nx_redop(PyObject *o, const char *fname, const char *argname, ncclRedOp_t *out);
/* An int within [lo, hi] (enum values such as residence or memory-stat kinds). */
int nx_enum(PyObject *o, const char *fname, const char *argname, int lo, int hi, const char *what, int *out);

/* Whether a handle parameter may be null. */
typedef enum {
    NX_NULL_REFUSED,  /* the library would fail or crash on NULL: NCCLNullHandleError first */
    NX_NULL_ACCEPTED, /* NCCL gives NULL a meaning (a no-op destroy, "no communicator" ...) */
} nx_null_rule;

/* The one converter of communicator parameters (nccl.bindings): a Comm (handles.h) or an int
 * address (anything with __index__ but a Window: TypeError); with NX_NULL_REFUSED, a null one is
 * an NCCLNullHandleError (a ValueError and an NCCLError(InvalidArgument)) "<fname>() argument
 * '<argname>' must not be a null communicator", raised before any library call (RCCL crashes on
 * some). */
int nx_comm_arg(PyObject *o, const char *fname, const char *argname, nx_null_rule rule, ncclComm_t *out);

/* The one converter of window parameters: a Window or an int, as nx_comm_arg; a null window is
 * always refused. */
int nx_window_arg(PyObject *o, const char *fname, const char *argname, ncclWindow_t *out);


/* The items of a caller's sequence, owned (docs/architecture.md#callbacks-into-python): a tuple
 * is taken by reference (immutable), a list is copied under its critical section (free-threaded
 * builds: another thread may be mutating it), anything else goes through PySequence_Tuple. A walk
 * then reads the snapshot, which holds every item, so a callback of an item (__index__, a
 * property) that mutates or empties the caller's container changes nothing the walk reads. New
 * reference, or NULL with the exception (TypeError for a non-iterable, which callers reword). */
PyObject *nx_seq_snapshot(PyObject *o);

/* Methods (nccl.core) take optional and keyword-only parameters, unlike the bindings. */
/* A method signature: `npos` parameters may be passed positionally; the rest are keyword-only.
 * The first `nrequired` are required. */
typedef struct {
    const char *fname;            /* "allreduce" */
    const char *const *names;     /* NULL-terminated */
    int npos;
    int nrequired;
} nx_msig;

/* Fills out[i] (one slot per name) with a borrowed reference, or NULL for an omitted optional
 * parameter. 0, or -1 with the TypeError CPython would raise. */
int nx_margs(const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out);

#define NX_MSIG(fn, npos, nreq, ...) \
    static const nx_msig M_##fn = {#fn, (const char *const[]){__VA_ARGS__, NULL}, (npos), (nreq)}

#endif
