/* Intake shared by the wrappers, generated and hand-written (bindings.h says how a binding is
 * written): the first checks of every binding, and structs passed by value or as out-parameters.
 * Each helper returns a status (0 or -1, or the arguments or NULL) with the exception set on
 * failure; the caller checks it and returns its error value, so every wrapper still shows its one
 * library call and its result in its own body. */
#ifndef NCCL4PY_BINDINGS_INTAKE_H
#define NCCL4PY_BINDINGS_INTAKE_H

#include "bindings/bindings.h"

#include <string.h>

#include "structs/structs.h"

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

/* ---- structs ---- */

/* A struct the library reads or fills (a team, a barrier handle, a resource requirement): a
 * wrapper of class `kind`, or an int address (not 0). *out points into the wrapper's own storage,
 * which the argument keeps alive for the call. */
static inline int nx_arg_struct_ptr(nx_state *st, const nx_sig *sig, PyObject *const *a, int i,
                                    nx_struct_kind kind, void **out)
{
    if ((*out = nx_struct_storage(st, a[i], kind)) != NULL)
        return 0;
    if (!PyLong_Check(a[i])) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a %s or an int address, not %.200s", sig->fname,
                     sig->names[i], nx_struct_name(kind), Py_TYPE(a[i])->tp_name);
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
                                      nx_struct_kind kind, void *out, size_t size)
{
    void *p;
    if (nx_arg_struct_ptr(st, sig, a, i, kind, &p) < 0)
        return -1;
    memcpy(out, p, size);
    return 0;
}

#endif
