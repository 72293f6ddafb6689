/* Intake shared by the written-out bindings (bindings.h says how a binding is written): the first
 * checks of every binding, the argument set of a collective, and structs passed by value or as
 * out-parameters. Each helper returns a status (0 or -1, or the arguments or NULL) with the
 * exception set on failure; the caller checks it and returns its error value, so every wrapper
 * still shows its one library call and its result in its own body. */
#ifndef NCCL4PY_BINDINGS_INTAKE_H
#define NCCL4PY_BINDINGS_INTAKE_H

#include "bindings/bindings.h"

#include <string.h>

#include "structs/structs.h"
#include "trace/trace.h"

/* ---- the flight recorder (docs/api/trace.md) ---- */

/* The entry of a binding's call on comm, in the ring nccl4py made for that handle (none: the
 * communicator came from elsewhere, and is not recorded). */
static inline nx_trace_mark nx_trace_binding(ncclComm_t comm, nx_trace_call tc)
{
    return nx_trace_enter(nx_trace_find(comm), &tc);
}

/* ---- every binding ---- */

/* The first checks of a binding: arity and keywords (into buf, room for NX_MAX_PARAMS), then the
 * library and the entry point at `slot`. The arguments in parameter order, or NULL with the
 * exception; *st is the module state either way. */
static inline PyObject *const *nx_intake(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                         const nx_sig *sig, const void *slot, PyObject **buf, nx_state **st)
{
    PyObject *const *a = nx_args(sig, args, nargs, kwnames, buf);
    *st = nx_get_state(m);
    if (a == NULL || nx_require(*st, slot) < 0)
        return NULL;
    return a;
}

/* nx_intake for the entry points with two signatures (nx_dual_args, in bindings.h): *which is 1
 * for the second one and *sig the one matched. */
static inline PyObject *const *nx_dual_intake(PyObject *m, const nx_sig *first, const nx_sig *second,
                                              PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                              const void *slot, PyObject **buf, int *which, const nx_sig **sig,
                                              nx_state **st)
{
    PyObject *const *a = nx_dual_args(first, second, args, nargs, kwnames, buf, which, sig);
    *st = nx_get_state(m);
    if (a == NULL || nx_require(*st, slot) < 0)
        return NULL;
    return a;
}

/* ---- collectives: (sendbuff, recvbuff, count, datatype, [op], [root], comm, stream, [config]) ---- */

/* Which optional parameters a collective has, in this order after datatype (op, root) and after
 * stream (config). */
enum { NX_COLL_OP = 1, NX_COLL_ROOT = 2, NX_COLL_CONFIG = 4 };

typedef struct {
    void *send, *recv;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int root;
    ncclComm_t comm;
    cudaStream_t stream;
    const ncclCollConfig_t *config; /* NULL: the plain collective (the library's defaults) */
} nx_coll_args;

/* Arity and keywords, the library and the entry point at `slot`, then every argument in parameter
 * order into *c. `shape` is a constant at each call site, so the inlined copy keeps only the
 * converters that collective has. config is a CollConfig (its address), an int address, or 0. */
static inline int nx_coll_intake(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                 const nx_sig *sig, const void *slot, int shape, nx_state **st, nx_coll_args *c)
{
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, slot, buf, st);
    if (a == NULL)
        return -1;
    int i = 4;
    if (nx_arg_addr(sig, a, 0, &c->send) < 0 || nx_arg_addr(sig, a, 1, &c->recv) < 0 ||
        nx_arg_size(sig, a, 2, &c->count) < 0 || nx_arg_dtype(sig, a, 3, &c->dt) < 0)
        return -1;
    if ((shape & NX_COLL_OP) && nx_arg_redop(sig, a, i++, &c->op) < 0)
        return -1;
    if ((shape & NX_COLL_ROOT) && nx_arg_int(sig, a, i++, &c->root) < 0)
        return -1;
    if (nx_arg_comm(sig, a, i, &c->comm) < 0 || nx_arg_stream(sig, a, i + 1, &c->stream) < 0)
        return -1;
    c->config = NULL;
    void *config;
    if ((shape & NX_COLL_CONFIG) && nx_arg_addr(sig, a, i + 2, &config) < 0)
        return -1;
    if (shape & NX_COLL_CONFIG)
        c->config = config;
    return 0;
}

/* ---- structs ---- */

/* A struct the library reads or fills (a team, a barrier handle, a resource requirement): a
 * wrapper of class `kind` (`cls` names it in errors), or an int address (not 0). *out points into
 * the wrapper's own storage, which the argument keeps alive for the call. */
static inline int nx_arg_struct_ptr(nx_state *st, const nx_sig *sig, PyObject *const *a, int i,
                                    nx_struct_kind kind, const char *cls, void **out)
{
    if ((*out = nx_struct_storage(st, a[i], kind)) != NULL)
        return 0;
    if (!PyLong_Check(a[i])) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a %s or an int address, not %.200s", sig->fname,
                     sig->names[i], cls, Py_TYPE(a[i])->tp_name);
        return -1;
    }
    if (nx_arg_addr(sig, a, i, out) < 0)
        return -1;
    if (*out == NULL) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' must not be a null address", sig->fname, sig->names[i]);
        return -1;
    }
    return 0;
}

/* A struct the library takes by value (ncclTeam_t, ncclMultimemHandle_t), as nx_arg_struct_ptr
 * finds it, copied into *out (size bytes). */
static inline int nx_arg_struct_value(nx_state *st, const nx_sig *sig, PyObject *const *a, int i,
                                      nx_struct_kind kind, const char *cls, void *out, size_t size)
{
    void *p;
    if (nx_arg_struct_ptr(st, sig, a, i, kind, cls, &p) < 0)
        return -1;
    memcpy(out, p, size);
    return 0;
}

#endif
