/* Stream spec -> library stream handle (docs/architecture.md#stream-resolution), and get_stream_ptr(). */
#include "buffer/stream.h"

#include <stdint.h>

#include "module/convert.h"
#include "module/errors.h"
#include "module/module.h"
#include "module/state.h"

static const char *const str_values[NX_NSSTR] = {
    [NX_SSTR_HANDLE] = "handle", [NX_SSTR_CUDA_STREAM_ATTR] = "__cuda_stream__",
    [NX_SSTR_TORCH_HANDLE] = "cuda_stream", [NX_SSTR_CUPY_HANDLE] = "ptr",
};

/* The stream classes, with the attribute that holds their handle. */
static const struct {
    const char *module, *attr;
    int handle_str;
} type_names[NX_NSTYPES] = {
    [NX_STYPE_CC_STREAM] = {"cuda.core", "Stream", NX_SSTR_HANDLE},
    [NX_STYPE_CC_STREAM_EXP] = {"cuda.core.experimental", "Stream", NX_SSTR_HANDLE},
    [NX_STYPE_SHIM_STREAM] = {"nccl._hip_compat.cuda_core_shim._stream", "Stream", NX_SSTR_HANDLE},
    [NX_STYPE_TORCH_STREAM] = {"torch.cuda", "Stream", NX_SSTR_TORCH_HANDLE},
    [NX_STYPE_CUPY_STREAM] = {"cupy.cuda", "Stream", NX_SSTR_CUPY_HANDLE},
};

static PyTypeObject *seen_type(nx_state *st, int which)
{
    nx_stream_cache *c = &st->stream;
    PyObject *cached = nx_cache_get(&c->types[which]);
    if (NX_LIKELY(cached != NULL))
        return (PyTypeObject *)cached;
    PyObject *mod;
    if (PyDict_GetItemStringRef(PyImport_GetModuleDict(), type_names[which].module, &mod) <= 0 || mod == Py_None) {
        PyErr_Clear();
        Py_XDECREF(mod);
        return NULL;
    }
    PyObject *tp = PyObject_GetAttrString(mod, type_names[which].attr);
    Py_DECREF(mod);
    if (tp == NULL || !PyType_Check(tp)) {
        PyErr_Clear();
        Py_XDECREF(tp);
        return NULL;
    }
    return (PyTypeObject *)nx_cache_publish(&c->types[which], tp);
}

static NX_COLD int bad_stream(nx_state *st, PyObject *obj)
{
    nx_invalid(st,
               "stream must be None, an int handle, a cuda.core.Stream or an object implementing __cuda_stream__, "
               "got %s",
               Py_TYPE(obj)->tp_name);
    return -1;
}

/* An int-like handle: non-negative and at most 64 bits. Steals `num` (an int or NULL). */
static int handle_value(nx_state *st, PyObject *num, const char *what, cudaStream_t *out)
{
    if (num == NULL)
        return -1;
    int rc = -1;
    if (!PyLong_Check(num)) {
        nx_invalid(st, "%s must be an int, got %s", what, Py_TYPE(num)->tp_name);
        goto done;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(num, &overflow);
    if (v == -1 && PyErr_Occurred())
        goto done;
    if (overflow < 0 || (overflow == 0 && v < 0)) {
        nx_invalid(st, "%s must be non-negative, got %R", what, num);
        goto done;
    }
    unsigned long long u = overflow ? PyLong_AsUnsignedLongLong(num) : (unsigned long long)v;
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        nx_invalid(st, "%s does not fit in 64 bits: %R", what, num);
        goto done;
    }
    *out = (cudaStream_t)(uintptr_t)u;
    rc = 0;
done:
    Py_DECREF(num);
    return rc;
}

static NX_COLD int from_protocol(nx_state *st, PyObject *obj, PyObject *attr, cudaStream_t *out)
{
    int rc = -1;
    PyObject *info = NULL, *fast = NULL;
    /* a method (cuda.core's protocol) or, as some producers do, a plain tuple attribute */
    if (PyCallable_Check(attr))
        info = PyObject_CallNoArgs(attr);
    else
        info = Py_NewRef(attr);
    if (info == NULL)
        goto done;
    /* owned items: the handle's __index__ may change a list the producer also holds */
    fast = PySequence_Check(info) ? nx_seq_snapshot(info) : NULL;
    if (fast == NULL || PyTuple_GET_SIZE(fast) != 2) {
        PyErr_Clear();
        nx_invalid(st, "%s.__cuda_stream__ must give a (version, handle) pair, got %R", Py_TYPE(obj)->tp_name, info);
        goto done;
    }
    PyObject *ver = PyTuple_GET_ITEM(fast, 0);
    if (!PyLong_Check(ver) || PyLong_AsLong(ver) != 0) {
        PyErr_Clear();
        nx_invalid(st, "%s.__cuda_stream__ protocol version must be 0, got %R", Py_TYPE(obj)->tp_name, ver);
        goto done;
    }
    PyObject *h = PyTuple_GET_ITEM(fast, 1);
    rc = handle_value(st, PyIndex_Check(h) ? PyNumber_Index(h) : Py_NewRef(h), "the __cuda_stream__ handle", out);
done:
    Py_XDECREF(info);
    Py_XDECREF(fast);
    return rc;
}

int nx_resolve_stream(nx_state *st, PyObject *obj, cudaStream_t *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = NULL;
        return 0;
    }
    if (NX_UNLIKELY(PyBool_Check(obj))) {
        /* nccl4py 0.6.0's exact exception: a bool is a mistake, not a handle of 0 or 1. */
        PyErr_SetString(PyExc_TypeError, "stream must not be a bool");
        return -1;
    }
    if (NX_LIKELY(PyLong_CheckExact(obj)))
        return handle_value(st, Py_NewRef(obj), "stream", out);
    for (int k = 0; k < NX_NSTYPES; k++) {
        PyTypeObject *tp = seen_type(st, k);
        if (tp != NULL && PyObject_TypeCheck(obj, tp)) {
            PyObject *h = PyObject_GetAttr(obj, st->stream.str[type_names[k].handle_str]);
            /* int(stream.handle): real cuda.core gives a CUstream object with __int__ */
            if (h != NULL && !PyLong_Check(h))
                Py_SETREF(h, PyNumber_Long(h));
            return handle_value(st, h, "stream handle", out);
        }
    }
    if (PyIndex_Check(obj))
        return handle_value(st, PyNumber_Index(obj), "stream", out);
    PyObject *attr = PyObject_GetAttr(obj, st->stream.str[NX_SSTR_CUDA_STREAM_ATTR]);
    if (attr == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return bad_stream(st, obj);
    }
    int rc = from_protocol(st, obj, attr, out);
    Py_DECREF(attr);
    return rc;
}

PyDoc_STRVAR(get_stream_ptr__doc__, "get_stream_ptr(stream=None)\n--\n\n"
"The stream handle (an int) that a stream= argument passes to the library: None is 0, an int is\n"
"used as is, a cuda.core/torch/cupy Stream or any __cuda_stream__ object gives its handle.\n"
"Raises TypeError(\"stream must not be a bool\") for bool, NcclInvalid for anything else and\n"
"for negative handles.");

NX_MSIG(get_stream_ptr, 1, 0, "stream");

static PyObject *get_stream_ptr(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[1];
    if (nx_margs(&M_get_stream_ptr, args, nargs, kwnames, a) < 0)
        return NULL;
    cudaStream_t s;
    if (nx_resolve_stream(nx_get_state(module), a[0], &s) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong((uintptr_t)s);
}

static PyMethodDef stream_methods[] = {
    {"get_stream_ptr", (PyCFunction)(void (*)(void))get_stream_ptr, METH_FASTCALL | METH_KEYWORDS,
     get_stream_ptr__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_stream_cache_traverse(nx_stream_cache *c, visitproc visit, void *arg)
{
    for (int i = 0; i < NX_NSSTR; i++)
        Py_VISIT(c->str[i]);
    for (int i = 0; i < NX_NSTYPES; i++)
        Py_VISIT(c->types[i]);
    return 0;
}

void nx_stream_cache_clear(nx_stream_cache *c)
{
    for (int i = 0; i < NX_NSSTR; i++)
        Py_CLEAR(c->str[i]);
    for (int i = 0; i < NX_NSTYPES; i++)
        Py_CLEAR(c->types[i]);
}

int nx_stream_setup(PyObject *module, nx_state *st)
{
    for (int i = 0; i < NX_NSSTR; i++)
        if ((st->stream.str[i] = PyUnicode_InternFromString(str_values[i])) == NULL)
            return -1;
    return PyModule_AddFunctions(module, stream_methods);
}
