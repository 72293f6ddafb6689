/* Shared pieces of the binding functions (bindings.c, rocm_extensions.c). */
#ifndef NCCL4PY_BINDINGS_H
#define NCCL4PY_BINDINGS_H

#include "convert.h"
#include "errors.h"
#include "library.h"

/* A Python signature: NX_SIG(all_reduce, "sendbuff", ...) defines S_all_reduce. */
#define NX_SIG(fn, ...) \
    static const nx_sig S_##fn = {#fn, (const char *const[]){__VA_ARGS__, NULL}}

/* Converters for argument i of signature S (a local `const nx_sig *S` and `PyObject *const *a`). */
#define NX_ARG_PTR(i, v) (nx_intptr(a[i], S->fname, S->names[i], &(v)) < 0)
#define NX_ARG_SIZE(i, v) (nx_size(a[i], S->fname, S->names[i], &(v)) < 0)
#define NX_ARG_INT(i, v) (nx_int(a[i], S->fname, S->names[i], &(v)) < 0)
#define NX_ARG_UINT(i, v) (nx_uint(a[i], S->fname, S->names[i], &(v)) < 0)
#define NX_ARG_DTYPE(i, v) (nx_dtype(a[i], S->fname, S->names[i], &(v)) < 0)
#define NX_ARG_REDOP(i, v) (nx_redop(a[i], S->fname, S->names[i], &(v)) < 0)

/* Runs one library call with the GIL released (only C values cross) and stores its status. */
#define NX_RUN(rc, call)          \
    do {                          \
        Py_BEGIN_ALLOW_THREADS    \
        (rc) = (call);            \
        Py_END_ALLOW_THREADS      \
    } while (0)

/* Runs the call and raises NCCLError (with comm's last error) unless it succeeded or is in
 * progress. */
#define NX_CALL(st, comm, call)                                        \
    do {                                                               \
        ncclResult_t rc_;                                              \
        NX_RUN(rc_, call);                                             \
        if (NX_FAILED(rc_))                                            \
            return nx_raise_status((st), rc_, (ncclComm_t)(comm));     \
    } while (0)

/* Parses the arguments of a fixed-arity function into `a`; returns NULL from the caller on error. */
#define NX_PARSE(fn, n)                                                          \
    const nx_sig *S = &S_##fn;                                                   \
    PyObject *buf_[(n) > 0 ? (n) : 1];                                           \
    PyObject *const *a = nx_args(S, (n), args, nargs, kwnames, buf_);            \
    if (a == NULL)                                                               \
        return NULL;                                                             \
    (void)a

#define NX_FASTCALL_DEF(fn) \
    {#fn, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, fn##__doc__}

/* Groups open on this thread (ncclGroupStart calls not yet ended). */
int nx_group_depth(void);
/* Keeps o alive until the outermost group end of this thread (group_refs.c); call only while a
 * group is open. -1 with an exception set on failure. */
int nx_group_keep(PyObject *o);
/* Drops what nx_group_keep kept (the outermost group end, after the library call). */
void nx_group_release(void);

/* True when o stands for an address (an int, PointerBox, ...) rather than for data. */
int nx_is_address(PyObject *o);

/* Copies `size` bytes given either as an int address or as a contiguous buffer of exactly that
 * length (read-only buffers welcome: the library only reads them). */
int nx_read_bytes_arg(PyObject *o, const char *fname, const char *argname, void *out, size_t size);

/* A host size_t[n] array given as an int address (used in place), a sequence of ints, or a 1-D
 * uint64 buffer (both copied into *copy, which the caller frees with PyMem_Free). */
int nx_size_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t n, const size_t **out,
                      size_t **copy);

#endif
