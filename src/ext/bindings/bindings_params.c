/* nccl.bindings.nccl: the library's parameters by key (NCCL 2.30, nccl4py 0.4.1's names), written
 * by hand (tools/nccl_surface.py's IRREGULAR says why; param_dump_all is generated). Their
 * signatures and docstrings are generated (<section>.gen.c); bindings.h says how a binding is
 * written.
 *
 * These are the package's one reader of the parameter registry: nccl.core.params and dump_params
 * (src/nccl/core/params.py) call param_get_parameter, param_get_all_keys and param_dump_all.
 *
 * The handle-based parameter reads of the same release (ncclParamBind, ncclParamGet and the typed
 * ncclParamGetI8 ... ncclParamGetStr) have no nccl4py name and are not wrapped: the key-based
 * param_get_parameter reads every parameter as text. They are abi.h's NCCL_ABI_NOT_WRAPPED rows,
 * which nccl.bindings.nccl exports as _NOT_WRAPPED and `python -m nccl doctor` lists
 * (docs/compatibility.md says why). */
#include "bindings/bindings.gen.h"
#include "bindings/bindings_intake.h"

#include <string.h>

/* The library's text (len bytes, or up to its NUL when len < 0) as a str; NULL text is "". Bytes
 * that are not UTF-8 become U+FFFD, as Communicator.get_last_error does, so a
 * parameter read never fails on what the library stored. */
static PyObject *library_text(const char *text, Py_ssize_t len)
{
    if (text == NULL)
        return PyUnicode_FromStringAndSize("", 0);
    return PyUnicode_DecodeUTF8(text, len < 0 ? (Py_ssize_t)strlen(text) : len, "replace");
}

PyObject *nx_binding_param_get_parameter(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &nx_binding_param_get_parameter_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclParamGetParameter, buf, &st);
    if (a == NULL)
        return NULL;
    if (!PyUnicode_Check(a[0])) {
        PyErr_Format(PyExc_TypeError, "param_get_parameter() argument 'key' must be str, not %.200s",
                     Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *key = PyUnicode_AsUTF8AndSize(a[0], &n);
    if (key == NULL)
        return NULL;
    if ((size_t)n != strlen(key)) {
        PyErr_SetString(PyExc_ValueError, "param_get_parameter() argument 'key' must not contain a NUL character");
        return NULL;
    }
    const char *value = NULL;
    int len = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclParamGetParameter(key, &value, &len));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return library_text(value, len);
}

PyObject *nx_binding_param_get_all_keys(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    if (nx_require(st, &nx_api.ncclParamGetAllParameterKeys) < 0)
        return NULL;
    const char **table = NULL;
    int len = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclParamGetAllParameterKeys(&table, &len));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    PyObject *keys = PyList_New(0);
    for (int i = 0; keys != NULL && table != NULL && i < len; i++) {
        if (table[i] == NULL) /* a hole in the library's table is no key */
            continue;
        PyObject *key = library_text(table[i], -1);
        if (key == NULL || PyList_Append(keys, key) < 0)
            Py_CLEAR(keys);
        Py_XDECREF(key);
    }
    return keys;
}
