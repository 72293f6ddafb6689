/* Argument intake shared by every binding. The hot path is positional ints: nx_args returns the
 * caller's array untouched, and each converter takes the exact-int branch first. */
#include "module/convert.h"

#include "module/errors.h"
#include "structs/handles.h"

#include <stdint.h>

PyObject *const *nx_args(const nx_sig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         PyObject **buf)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, nparams = sig->nparams;
    if (NX_LIKELY(nkw == 0 && nargs == nparams))
        return args != NULL ? args : buf; /* a call without arguments may come with no array (NULL) */
    if (nparams > NX_MAX_PARAMS) {
        PyErr_Format(PyExc_SystemError, "%s(): %zd parameters, more than NX_MAX_PARAMS (%d)", sig->fname, nparams,
                     NX_MAX_PARAMS);
        return NULL;
    }
    if (nargs + nkw != nparams || nargs > nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd argument%s (%zd given)", sig->fname, nparams,
                     nparams == 1 ? "" : "s", nargs + nkw);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nparams; i++)
        buf[i] = i < nargs ? args[i] : NULL;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t i = 0;
        while (i < nparams && PyUnicode_CompareWithASCIIString(key, sig->names[i]) != 0)
            i++;
        if (i == nparams) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", sig->fname, key);
            return NULL;
        }
        if (buf[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", sig->fname,
                         sig->names[i]);
            return NULL;
        }
        buf[i] = args[nargs + k];
    }
    return buf;
}

int nx_no_args(const char *fname, Py_ssize_t nargs, PyObject *kwnames)
{
    if (NX_LIKELY(nx_total_args(nargs, kwnames) == 0))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes no arguments", fname);
    return -1;
}

PyObject *nx_bad_arity2(const char *fname, Py_ssize_t a, Py_ssize_t b, Py_ssize_t got)
{
    PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (0.3 form) or %zd arguments (0.2 form), %zd given",
                 fname, a, b, got);
    return NULL;
}

/* Reads any int-like object as a long long, or as an unsigned long long when it does not fit;
 * *is_unsigned tells which (the other is 0). -1 with TypeError when o has no __index__. */
static int read_integer(PyObject *o, const char *fname, const char *argname, long long *sv,
                        unsigned long long *uv, int *is_unsigned)
{
    PyObject *num;
    if (NX_LIKELY(PyLong_CheckExact(o)))
        num = Py_NewRef(o);
    else if (NX_UNLIKELY(nx_is_handle(o))) {
        /* A Comm or Window has __index__, but where a buffer, a size or a slot address is expected
         * it is a mistake (a library writing through a communicator's address): refused. */
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be an int, not %s", fname, argname,
                     nx_handle_type_name(o));
        return -1;
    } else if ((num = PyNumber_Index(o)) == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be an int, not %.200s", fname, argname,
                         Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    int overflow;
    *sv = PyLong_AsLongLongAndOverflow(num, &overflow);
    *uv = 0;
    *is_unsigned = 0;
    if (overflow > 0) {
        *uv = PyLong_AsUnsignedLongLong(num);
        if (*uv == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            overflow = 2;
        } else {
            *is_unsigned = 1;
            overflow = 0;
        }
    }
    Py_DECREF(num);
    if (*sv == -1 && !*is_unsigned && PyErr_Occurred())
        return -1;
    if (overflow != 0) {
        PyErr_Format(PyExc_OverflowError, "%s() argument '%s' is out of range for a 64-bit value", fname, argname);
        return -1;
    }
    return 0;
}

int nx_intptr(PyObject *o, const char *fname, const char *argname, intptr_t *out)
{
    long long s;
    unsigned long long u;
    int is_unsigned;
    if (read_integer(o, fname, argname, &s, &u, &is_unsigned) < 0)
        return -1;
    /* Addresses above 2**63 arrive as large positive ints; keep their bits. */
    *out = is_unsigned ? (intptr_t)(uintptr_t)u : (intptr_t)s;
    return 0;
}

int nx_addr(PyObject *o, const char *fname, const char *argname, void **out)
{
    intptr_t v;
    if (nx_intptr(o, fname, argname, &v) < 0)
        return -1;
    *out = (void *)v;
    return 0;
}

int nx_size(PyObject *o, const char *fname, const char *argname, size_t *out)
{
    long long s;
    unsigned long long u;
    int is_unsigned;
    if (read_integer(o, fname, argname, &s, &u, &is_unsigned) < 0)
        return -1;
    if (!is_unsigned && s < 0) {
        PyErr_Format(PyExc_OverflowError, "%s() argument '%s' must be non-negative, got %lld", fname, argname, s);
        return -1;
    }
    *out = is_unsigned ? (size_t)u : (size_t)s;
    return 0;
}

int nx_int(PyObject *o, const char *fname, const char *argname, int *out)
{
    long long s;
    unsigned long long u;
    int is_unsigned;
    if (read_integer(o, fname, argname, &s, &u, &is_unsigned) < 0)
        return -1;
    if (is_unsigned || s < INT_MIN || s > INT_MAX) {
        PyErr_Format(PyExc_OverflowError, "%s() argument '%s' does not fit in a C int", fname, argname);
        return -1;
    }
    *out = (int)s;
    return 0;
}

int nx_uint(PyObject *o, const char *fname, const char *argname, unsigned int *out)
{
    long long s;
    unsigned long long u;
    int is_unsigned;
    if (read_integer(o, fname, argname, &s, &u, &is_unsigned) < 0)
        return -1;
    if (is_unsigned || s < 0 || s > (long long)UINT_MAX) {
        PyErr_Format(PyExc_OverflowError, "%s() argument '%s' does not fit in a C unsigned int", fname, argname);
        return -1;
    }
    *out = (unsigned int)s;
    return 0;
}

int nx_enum(PyObject *o, const char *fname, const char *argname, int lo, int hi, const char *what, int *out)
{
    int v;
    if (nx_int(o, fname, argname, &v) < 0)
        return -1;
    if (NX_UNLIKELY(v < lo || v > hi)) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' must be a %s value in [%d, %d], got %d", fname, argname,
                     what, lo, hi, v);
        return -1;
    }
    *out = v;
    return 0;
}

int nx_dtype(PyObject *o, const char *fname, const char *argname, ncclDataType_t *out)
{
    int v;
    if (nx_enum(o, fname, argname, 0, ncclNumTypes - 1, "DataType", &v) < 0)
        return -1;
    *out = (ncclDataType_t)v;
    return 0;
}

int nx_redop(PyObject *o, const char *fname, const char *argname, ncclRedOp_t *out)
{
    int v;
    /* bool is an int subclass, but True is no spelling of PROD (1): refuse it */
    if (NX_UNLIKELY(PyBool_Check(o))) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a RedOp, not bool", fname, argname);
        return -1;
    }
    if (nx_enum(o, fname, argname, 0, INT_MAX, "RedOp", &v) < 0)
        return -1;
    *out = (ncclRedOp_t)v;
    return 0;
}

/* The slow path of a handle parameter: an int (anything with __index__), or the wrong handle type
 * (TypeError naming the expected one). */
static NX_COLD int handle_int_arg(PyObject *o, const char *fname, const char *argname, nx_handle_kind kind,
                                  void **out)
{
    if (nx_is_handle(o)) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a %s or an int, not %s", fname, argname,
                     nx_handle_kind_name(kind), nx_handle_type_name(o));
        return -1;
    }
    intptr_t v;
    if (nx_intptr(o, fname, argname, &v) < 0)
        return -1;
    *out = (void *)v;
    return 0;
}

static NX_COLD int null_handle(const char *fname, const char *argname, const char *what)
{
    nx_raise_null_handle("%s() argument '%s' must not be a null %s", fname, argname, what);
    return -1;
}

/* Two exact-type tests come first, the handle object's and the int's, so that a Comm costs what
 * an int costs: one type compare and one load (handles.h). */
int nx_comm_arg(PyObject *o, const char *fname, const char *argname, nx_null_rule rule, ncclComm_t *out)
{
    void *h;
    if (NX_LIKELY(nx_is_comm(o)))
        h = nx_handle_value(o);
    else if (NX_LIKELY(PyLong_CheckExact(o))) {
        intptr_t v;
        if (nx_intptr(o, fname, argname, &v) < 0)
            return -1;
        h = (void *)v;
    } else if (handle_int_arg(o, fname, argname, NX_HANDLE_COMM, &h) < 0)
        return -1;
    if (NX_UNLIKELY(h == NULL) && rule == NX_NULL_REFUSED)
        return null_handle(fname, argname, "communicator");
    *out = (ncclComm_t)h;
    return 0;
}

int nx_window_arg(PyObject *o, const char *fname, const char *argname, ncclWindow_t *out)
{
    void *h;
    if (NX_LIKELY(nx_is_window(o)))
        h = nx_handle_value(o);
    else if (NX_LIKELY(PyLong_CheckExact(o))) {
        intptr_t v;
        if (nx_intptr(o, fname, argname, &v) < 0)
            return -1;
        h = (void *)v;
    } else if (handle_int_arg(o, fname, argname, NX_HANDLE_WINDOW, &h) < 0)
        return -1;
    if (NX_UNLIKELY(h == NULL))
        return null_handle(fname, argname, "window");
    *out = (ncclWindow_t)h;
    return 0;
}

/* A list's items as a new tuple. The length is read again after the allocation: on interpreters
 * whose allocator may run the collector (3.10, 3.11), a finalizer can resize the list meanwhile. */
static PyObject *list_snapshot(PyObject *list)
{
    PyObject *t = NULL;
    Py_BEGIN_CRITICAL_SECTION(list);
    for (;;) {
        Py_ssize_t n = PyList_GET_SIZE(list);
        if ((t = PyTuple_New(n)) == NULL || PyList_GET_SIZE(list) == n) {
            for (Py_ssize_t i = 0; t != NULL && i < n; i++)
                PyTuple_SET_ITEM(t, i, Py_NewRef(PyList_GET_ITEM(list, i)));
            break;
        }
        Py_DECREF(t);
    }
    Py_END_CRITICAL_SECTION();
    return t;
}

PyObject *nx_seq_snapshot(PyObject *o)
{
    if (PyTuple_Check(o))
        return Py_NewRef(o);
    if (PyList_Check(o))
        return list_snapshot(o);
    return PySequence_Tuple(o);
}

int nx_margs(const nx_msig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    Py_ssize_t nnames = 0;
    while (sig->names[nnames] != NULL)
        nnames++;
    if (nargs > sig->npos) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional argument%s (%zd given)", sig->fname,
                     sig->npos, sig->npos == 1 ? "" : "s", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nnames; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t i = 0;
        while (i < nnames && PyUnicode_CompareWithASCIIString(key, sig->names[i]) != 0)
            i++;
        if (i == nnames) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", sig->fname, key);
            return -1;
        }
        if (out[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", sig->fname, sig->names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < sig->nrequired; i++)
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", sig->fname, sig->names[i],
                         i + 1);
            return -1;
        }
    return 0;
}
