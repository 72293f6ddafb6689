/* NCCL's parameter registry (2.30.4) for nccl.core.params and nccl.core.dump_params (nccl4py
 * 0.4.1): the value of one key, the list of keys, and the library's own dump. The strings the
 * library returns are its own storage (valid until the next query), copied here at once. */
#include "bindings.h"

#include <string.h>

PyDoc_STRVAR(param_get__doc__, "_param_get(key)\n--\n\n"
"The text value of NCCL parameter key (ncclParamGetParameter), or None when the library does not\n"
"know the key.");
static PyObject *param_get(PyObject *module, PyObject *key)
{
    nx_state *st = nx_get_state(module);
    if (!PyUnicode_Check(key))
        return PyErr_Format(PyExc_TypeError, "params key must be str, got %s", Py_TYPE(key)->tp_name);
    const char *k = PyUnicode_AsUTF8(key);
    if (k == NULL || nx_require(st, &nx_api.ncclParamGetParameter) < 0)
        return NULL;
    const char *value = NULL;
    int len = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclParamGetParameter(k, &value, &len));
    if (rc == ncclInvalidArgument) /* an unknown key */
        Py_RETURN_NONE;
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    if (value == NULL)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(value, len > 0 ? len : 0, "replace");
}

PyDoc_STRVAR(param_keys__doc__, "_param_keys()\n--\n\n"
"Every parameter key the library knows (ncclParamGetAllParameterKeys), as a list of str.");
static PyObject *param_keys(PyObject *module, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(module);
    if (nx_require(st, &nx_api.ncclParamGetAllParameterKeys) < 0)
        return NULL;
    const char **table = NULL;
    int n = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclParamGetAllParameterKeys(&table, &n));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    for (int i = 0; out != NULL && table != NULL && i < n; i++) {
        if (table[i] == NULL)
            continue;
        PyObject *s = PyUnicode_DecodeUTF8(table[i], (Py_ssize_t)strlen(table[i]), "replace");
        if (s == NULL || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    return out;
}

PyDoc_STRVAR(param_dump_all__doc__, "_param_dump_all()\n--\n\n"
"The library prints every parameter to its stdout (ncclParamDumpAll).");
static PyObject *param_dump_all(PyObject *module, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(module);
    if (nx_require(st, &nx_api.ncclParamDumpAll) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    nx_api.ncclParamDumpAll();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef param_methods[] = {
    {"_param_get", param_get, METH_O, param_get__doc__},
    {"_param_keys", param_keys, METH_NOARGS, param_keys__doc__},
    {"_param_dump_all", param_dump_all, METH_NOARGS, param_dump_all__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_params_setup(PyObject *module, nx_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, param_methods);
}
