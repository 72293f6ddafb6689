/* Argument intake for the METH_FASTCALL functions: arity and keywords, then one small converter
 * per C type. Every message names the function and the argument. */
#ifndef NCCL4PY_CONVERT_H
#define NCCL4PY_CONVERT_H

#include "module.h"

/* Describes one Python signature: its name and its parameter names, NULL-terminated. */
typedef struct {
    const char *fname;
    const char *const *names;
} nx_sig;

/* Checks that exactly nparams arguments were passed (positionally and/or by keyword) and returns
 * them in parameter order: `args` itself when there are no keywords (the hot path, no copy),
 * else `buf` (room for nparams; also what a call without any argument array gets, so that NULL
 * always means an error). NULL with TypeError on a bad count or an unknown/duplicate keyword. */
PyObject *const *nx_args(const nx_sig *sig, Py_ssize_t nparams, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, PyObject **buf);

/* Total number of arguments, positional plus keyword (dual-form functions pick a form by it). */
static inline Py_ssize_t nx_total_args(Py_ssize_t nargs, PyObject *kwnames)
{
    return nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
}

/* Raises TypeError for a dual-form function called with neither count. Returns NULL. */
NX_COLD PyObject *nx_bad_arity2(const char *fname, Py_ssize_t a, Py_ssize_t b, Py_ssize_t got);

/* Converters: 0 on success, -1 with TypeError/OverflowError/ValueError naming `argname`.
 * Anything with __index__ is accepted where an int is expected (PointerBox, struct wrappers). */
int nx_intptr(PyObject *o, const char *fname, const char *argname, intptr_t *out);
int nx_size(PyObject *o, const char *fname, const char *argname, size_t *out);
int nx_int(PyObject *o, const char *fname, const char *argname, int *out);
int nx_uint(PyObject *o, const char *fname, const char *argname, unsigned int *out);
/* An ncclDataType_t in [0, ncclNumTypes). */
int nx_dtype(PyObject *o, const char *fname, const char *argname, ncclDataType_t *out);
/* An ncclRedOp_t: a built-in op or a handle from red_op_create_pre_mul_sum (>= 0). */
int nx_redop(PyObject *o, const char *fname, const char *argname, ncclRedOp_t *out);
/* An int within [lo, hi] (enum values such as residence or memory-stat kinds). */
int nx_enum(PyObject *o, const char *fname, const char *argname, int lo, int hi, const char *what, int *out);

#define NX_PTR(p) ((void *)(p))

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
