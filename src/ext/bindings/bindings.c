/* The pieces every binding shares (bindings.h): argument helpers beyond the plain converters, the
 * 0.2.0/0.3.1 form dispatch, result builders, and the setup that adds the method tables of
 * the sections (<section>.gen.c) to the module. */
#include "bindings/bindings.h"

#include <stdint.h>
#include <string.h>

#include "bindings/bindings.gen.h"

int nx_is_address(PyObject *o)
{
    /* numpy arrays have __index__ too (for size-1 integer arrays): anything that is also a buffer
     * or a sequence is data, not an address. */
    return PyLong_Check(o) || (PyIndex_Check(o) && !PyObject_CheckBuffer(o) && !PySequence_Check(o));
}

static NX_COLD int bad_bytes_arg(const char *fname, const char *argname, size_t size)
{
    PyErr_Format(PyExc_ValueError,
                 "%s() argument '%s': buf must be either a Python int representing the pointer address to a "
                 "valid buffer, or a 1D contiguous buffer, of size bytes (%zu bytes expected)",
                 fname, argname, size);
    return -1;
}

int nx_read_bytes_arg(PyObject *o, const char *fname, const char *argname, void *out, size_t size)
{
    if (nx_is_address(o)) {
        intptr_t p;
        if (nx_intptr(o, fname, argname, &p) < 0)
            return -1;
        if (p == 0) {
            PyErr_Format(PyExc_ValueError, "%s() argument '%s' must not be a null pointer", fname, argname);
            return -1;
        }
        memcpy(out, (const void *)p, size);
        return 0;
    }
    Py_buffer view;
    if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, &view, PyBUF_ND) < 0) {
        PyErr_Clear();
        return bad_bytes_arg(fname, argname, size);
    }
    int ok = view.ndim <= 1 && PyBuffer_IsContiguous(&view, 'C') && view.len == (Py_ssize_t)size;
    if (ok)
        memcpy(out, view.buf, size);
    PyBuffer_Release(&view);
    return ok ? 0 : bad_bytes_arg(fname, argname, size);
}

/* A wrong-length buffer is a ValueError naming the argument, whatever size it claims (never a
 * MemoryError first): the length is checked before allocating. */
int nx_read_bytes_alloc(PyObject *o, const char *fname, const char *argname, size_t size, void **out)
{
    *out = NULL;
    if (!nx_is_address(o)) {
        Py_buffer view;
        if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, &view, PyBUF_ND) < 0) {
            PyErr_Clear();
            return bad_bytes_arg(fname, argname, size);
        }
        int ok = view.ndim <= 1 && PyBuffer_IsContiguous(&view, 'C') && (size_t)view.len == size;
        PyBuffer_Release(&view);
        if (!ok)
            return bad_bytes_arg(fname, argname, size);
    }
    if ((*out = PyMem_Malloc(size > 0 ? size : 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (nx_read_bytes_arg(o, fname, argname, *out, size) < 0) {
        PyMem_Free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int nx_size_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t n, const size_t **out,
                      size_t **copy)
{
    *copy = NULL;
    if (nx_is_address(o)) {
        intptr_t p;
        if (nx_intptr(o, fname, argname, &p) < 0)
            return -1;
        *out = (const size_t *)p;
        return 0;
    }
    if ((*copy = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(size_t))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_buffer view;
    if (PyObject_CheckBuffer(o) && PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        int ok = view.ndim == 1 && view.itemsize == 8 && view.format != NULL && strchr("QLK", view.format[0]);
        Py_ssize_t m = view.itemsize ? view.len / view.itemsize : 0;
        if (ok && m == n)
            memcpy(*copy, view.buf, (size_t)n * sizeof(size_t));
        PyBuffer_Release(&view);
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "%s must be a 1-D C-contiguous uint64 buffer or a sequence of ints", argname);
            goto error;
        }
        if (m != n) {
            PyErr_Format(PyExc_ValueError, "%s must have nranks=%zd entries, got %zd", argname, n, m);
            goto error;
        }
        *out = *copy;
        return 0;
    }
    PyErr_Clear();
    /* a snapshot: an entry's __index__ may change the caller's list (docs/architecture.md) */
    PyObject *seq = nx_seq_snapshot(o);
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be an int address, a sequence of ints or a uint64 buffer, "
                     "not %.200s", fname, argname, Py_TYPE(o)->tp_name);
        goto error;
    }
    Py_ssize_t m = PyTuple_GET_SIZE(seq);
    if (m != n) {
        PyErr_Format(PyExc_ValueError, "%s must have nranks=%zd entries, got %zd", argname, n, m);
        Py_DECREF(seq);
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (nx_size(PyTuple_GET_ITEM(seq, i), fname, argname, &(*copy)[i]) < 0) {
            Py_DECREF(seq);
            goto error;
        }
    Py_DECREF(seq);
    *out = *copy;
    return 0;
error:
    PyMem_Free(*copy);
    *copy = NULL;
    return -1;
}

int nx_int_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t count, int allow_none,
                         int **out, int **copy)
{
    *copy = NULL;
    if (o == Py_None && allow_none) {
        *out = NULL;
        return 0;
    }
    if (nx_is_address(o)) {
        intptr_t p;
        if (nx_intptr(o, fname, argname, &p) < 0)
            return -1;
        *out = (int *)p;
        return 0;
    }
    PyObject *seq = nx_seq_snapshot(o); /* owned: an entry's __index__ may change the caller's list */
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a sequence of ints or an int address, not %.200s",
                     fname, argname, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t m = PyTuple_GET_SIZE(seq);
    int rc = -1;
    if (m < count) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' has %zd entries, fewer than the count %zd", fname,
                     argname, m, count);
        goto done;
    }
    if ((*copy = PyMem_Calloc(m > 0 ? (size_t)m : 1, sizeof(int))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        if (nx_int(PyTuple_GET_ITEM(seq, i), fname, argname, &(*copy)[i]) < 0) {
            PyMem_Free(*copy);
            *copy = NULL;
            goto done;
        }
    *out = *copy;
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

PyObject *const *nx_dual_args(const nx_sig *s03, const nx_sig *s02, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames, PyObject **buf, int *legacy, const nx_sig **sig)
{
    Py_ssize_t total = nx_total_args(nargs, kwnames);
    if (total != s03->nparams && total != s02->nparams) {
        nx_bad_arity2(s03->fname, s03->nparams, s02->nparams, total);
        return NULL;
    }
    *legacy = total == s02->nparams;
    *sig = *legacy ? s02 : s03;
    return nx_args(*sig, args, nargs, kwnames, buf);
}

PyObject *nx_struct_value_result(nx_state *st, nx_struct_kind kind, const void *value, size_t size)
{
    PyObject *obj = nx_struct_new(st, kind);
    if (obj != NULL)
        memcpy(nx_struct_storage(st, obj, kind), value, size);
    return obj;
}

PyObject *nx_pair_result(PyObject *a, PyObject *b)
{
    PyObject *pair = a != NULL && b != NULL ? PyTuple_Pack(2, a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return pair;
}

PyObject *nx_struct_result(nx_state *st, PyObject *obj, ncclResult_t rc, ncclComm_t comm)
{
    if (nx_check(st, rc, comm) < 0)
        Py_CLEAR(obj);
    return obj;
}

int nx_creation_handle(nx_state *st, nx_handle_kind kind, PyObject **handle, void **slot)
{
    if ((*handle = nx_handle_new(st, kind, NULL)) == NULL)
        return -1;
    if (nx_group_depth() > 0 && nx_group_keep(*handle) < 0) {
        Py_CLEAR(*handle);
        return -1;
    }
    *slot = nx_handle_slot(*handle);
    return 0;
}

PyObject *nx_creation_result(nx_state *st, ncclResult_t rc, PyObject *handle, ncclComm_t comm)
{
    if (nx_check(st, rc, comm) < 0) {
        Py_XDECREF(handle);
        return NULL;
    }
    return handle != NULL ? handle : PyLong_FromLong((long)rc);
}

/* The public names (no leading underscore) of the functions of tables[0..n), in table order, as a
 * tuple: what nccl.bindings.nccl and nccl.bindings.rocm_extensions read at import, so a binding's
 * name is written only in its method table. */
static PyObject *public_names(PyMethodDef *const *tables, size_t n)
{
    PyObject *names = PyList_New(0), *name = NULL, *out = NULL;
    if (names == NULL)
        goto done;
    for (size_t i = 0; i < n; i++)
        for (const PyMethodDef *d = tables[i]; d->ml_name != NULL; d++) {
            if (d->ml_name[0] == '_')
                continue;
            if ((name = PyUnicode_FromString(d->ml_name)) == NULL || PyList_Append(names, name) < 0)
                goto done;
            Py_CLEAR(name);
        }
    out = PyList_AsTuple(names);
done:
    Py_XDECREF(name);
    Py_XDECREF(names);
    return out;
}

/* abi.h's NCCL_ABI_NOT_WRAPPED rows, the entry points with no binding on purpose, as a tuple in row
 * order: _ext._NOT_WRAPPED, which nccl.bindings.nccl exports and `python -m nccl doctor` lists. */
#define NX_ROW_NAME(name, ...) #name,
static const char *const not_wrapped_rows[] = {NCCL_ABI_NOT_WRAPPED(NX_ROW_NAME)};
#undef NX_ROW_NAME

static PyObject *not_wrapped_names(void)
{
    const Py_ssize_t n = (Py_ssize_t)(sizeof not_wrapped_rows / sizeof not_wrapped_rows[0]);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *name = PyUnicode_FromString(not_wrapped_rows[i]);
        if (name == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, name);
    }
    return out;
}

/* Adds the functions of tables[0..n) to module, in order. */
static int add_tables(PyObject *module, PyMethodDef *const *tables, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (PyModule_AddFunctions(module, tables[i]) < 0)
            return -1;
    return 0;
}

int nx_bindings_setup(PyObject *module, nx_state *st)
{
    (void)st;
    PyMethodDef *const nccl_tables[] = NX_NCCL_BINDING_TABLES, *const rccl_tables[] = NX_RCCL_BINDING_TABLES;
    const size_t n_nccl = sizeof nccl_tables / sizeof nccl_tables[0], n_rccl = sizeof rccl_tables / sizeof rccl_tables[0];
    PyObject *nccl = NULL, *rccl = NULL, *not_wrapped = NULL;
    int rc = -1;
    if (add_tables(module, nccl_tables, n_nccl) < 0 || add_tables(module, rccl_tables, n_rccl) < 0)
        goto done;
    if ((nccl = public_names(nccl_tables, n_nccl)) == NULL || (rccl = public_names(rccl_tables, n_rccl)) == NULL ||
        PyModule_AddObjectRef(module, "_NCCL_BINDINGS", nccl) < 0 ||
        PyModule_AddObjectRef(module, "_RCCL_BINDINGS", rccl) < 0 || (not_wrapped = not_wrapped_names()) == NULL ||
        PyModule_AddObjectRef(module, "_NOT_WRAPPED", not_wrapped) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(nccl);
    Py_XDECREF(rccl);
    Py_XDECREF(not_wrapped);
    return rc;
}
