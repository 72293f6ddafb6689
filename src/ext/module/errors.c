/* Exceptions: the classes live in nccl/_errors.py (NCCLError needs Python-level __new__ and
 * pickling), which hands them to nccl._ext._register at its import (the nccl package imports it
 * first thing); this file keeps them and is the only code that formats a library failure. */
#include "module/errors.h"

#include <stdarg.h>

#include "loader/library.h"
#include "loader/loader.h"
#include "module/module.h"
#include "module/state.h"
#include "nccl_error_text.h"
#include "trace/trace.h"

static const char *const exc_names[NX_NEXC] = {
    [NX_EXC_NCCL_ERROR] = "NCCLError",
    [NX_EXC_FUNCTION_NOT_FOUND] = "FunctionNotFoundError",
    [NX_EXC_NOT_SUPPORTED] = "NotSupportedError",
    [NX_EXC_HOST_BACKEND_WARNING] = "HostBackendWarning",
    [NX_EXC_NCCL_INVALID] = "NcclInvalid",
};

/* NCCLNullHandleError is raised where no module state is at hand (the binding converters), so it
 * is kept in the interpreter's dict for extensions (PyInterpreterState_GetDict) under this key. */
#define NULL_HANDLE_NAME "NCCLNullHandleError"
#define NULL_HANDLE_KEY "nccl._ext." NULL_HANDLE_NAME

static int register_null_handle(PyObject *cls)
{
    PyObject *dict = PyInterpreterState_GetDict(PyInterpreterState_Get()); /* borrowed */
    PyObject *key = dict ? PyUnicode_FromString(NULL_HANDLE_KEY) : NULL;
    PyObject *kept = key ? PyDict_SetDefault(dict, key, cls) : NULL; /* the first registration stays */
    Py_XDECREF(key);
    if (dict == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "nccl._ext: the interpreter has no dict for extensions");
    return kept ? 1 : -1;
}

int nx_errors_register(nx_state *st, PyObject *key, PyObject *value)
{
    for (int i = 0; i < NX_NEXC; i++) {
        if (PyUnicode_CompareWithASCIIString(key, exc_names[i]) == 0) {
            nx_cache_publish(&st->errors.exc[i], Py_NewRef(value)); /* the first registration stays */
            return 1;
        }
    }
    return PyUnicode_CompareWithASCIIString(key, NULL_HANDLE_NAME) == 0 ? register_null_handle(value) : 0;
}

static NX_COLD PyObject *not_registered(const char *name)
{
    PyErr_Format(PyExc_RuntimeError, "nccl._ext: %s is not registered yet; importing nccl._errors registers it", name);
    return NULL;
}

PyObject *nx_exception_class(nx_state *st, nx_exc_kind kind)
{
    PyObject *cls = nx_cache_get(&st->errors.exc[kind]);
    return cls != NULL ? cls : not_registered(exc_names[kind]);
}

int nx_errors_cache_traverse(nx_errors_cache *c, visitproc visit, void *arg)
{
    for (int i = 0; i < NX_NEXC; i++)
        Py_VISIT(c->exc[i]);
    return 0;
}

void nx_errors_cache_clear(nx_errors_cache *c)
{
    for (int i = 0; i < NX_NEXC; i++)
        Py_CLEAR(c->exc[i]);
}

const char *nx_builtin_error_string(int status)
{
    return nccl_error_text(status);
}

PyObject *nx_raise_status(nx_state *st, ncclResult_t status, ncclComm_t comm)
{
    PyObject *cls = nx_exception_class(st, NX_EXC_NCCL_ERROR); /* borrowed */
    if (cls == NULL)
        return NULL;
    /* String lookups are the one library use allowed with the GIL held: they do not block. */
    const char *last = NULL;
    if (nx_loader_ready() && nx_api.ncclGetLastError != NULL)
        last = nx_api.ncclGetLastError(comm);
    nx_trace_error((int)status, last); /* the flight recorder's dump (docs/api/trace.md) */
    PyObject *exc = PyObject_CallFunction(cls, "is", (int)status, last ? last : "");
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *nx_raise_null_handle(const char *fmt, ...)
{
    PyObject *dict = PyInterpreterState_GetDict(PyInterpreterState_Get()); /* borrowed */
    PyObject *cls = NULL;
    if (dict != NULL && PyDict_GetItemStringRef(dict, NULL_HANDLE_KEY, &cls) == 0)
        not_registered(NULL_HANDLE_NAME);
    if (cls == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg != NULL)
        PyErr_SetObject(cls, msg);
    Py_XDECREF(msg);
    Py_DECREF(cls);
    return NULL;
}

PyObject *nx_raise_function_not_found(nx_state *st, const char *symbol, const char *also)
{
    PyObject *cls = nx_exception_class(st, NX_EXC_FUNCTION_NOT_FOUND); /* borrowed */
    if (cls == NULL)
        return NULL;
    const nx_library_info *li = nx_loader_info();
    char version[32];
    nx_format_version(li->version, version, sizeof version);
    int since = 0;
    for (size_t i = 0; i < nx_nsymbols; i++)
        if (strcmp(nx_symbols[i].name, symbol) == 0)
            since = nx_symbols[i].since;
    if (since == 0) {
        /* RCCL-only entry points: the peer's wording first, then where we looked. */
        PyErr_Format(cls, "function %s is not found in the loaded RCCL library%s%s%s (%s: %s %s)", symbol,
                     also ? " (also tried the deprecated " : "", also ? also : "", also ? ")" : "",
                     li->path, nx_flavour_name(li->flavour), version);
    } else {
        char need[32];
        nx_format_version(since, need, sizeof need);
        PyErr_Format(cls, "function %s is not found in %s (%s %s); it requires NCCL >= %s", symbol, li->path,
                     nx_flavour_name(li->flavour), version, need);
    }
    return NULL;
}

PyDoc_STRVAR(check_status__doc__, "check_status(status)\n--\n\n"
"Raise NCCLError(status) unless status is Success (0) or InProgress (7).");

static PyObject *check_status(PyObject *module, PyObject *arg)
{
    int overflow;
    long v = PyLong_AsLongAndOverflow(arg, &overflow);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || v < INT_MIN || v > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "check_status() argument 'status' does not fit in a C int");
        return NULL;
    }
    if (NX_FAILED((int)v)) {
        PyObject *cls = nx_exception_class(nx_get_state(module), NX_EXC_NCCL_ERROR);
        if (cls != NULL)
            PyErr_SetObject(cls, arg);
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(error_text__doc__, "_error_text(status)\n--\n\n"
"The library's ncclGetErrorString(status) if a library is already loaded, else NCCL 2.30's text;\n"
"on RCCL worded for HIP ('unhandled HIP error', where RCCL's own text says cuda).\n"
"Never loads a library (NCCLError uses it while being constructed or unpickled).");

static PyObject *error_text(PyObject *module, PyObject *arg)
{
    (void)module;
    int overflow;
    long v = PyLong_AsLongAndOverflow(arg, &overflow);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || v < INT_MIN || v > INT_MAX)
        return PyUnicode_FromString(nx_builtin_error_string(-1));
    const char *s = NULL;
    int rccl = 0;
    if (nx_loader_ready()) {
        rccl = nx_loader_info()->flavour == NX_FLAVOUR_RCCL;
        if (nx_api.ncclGetErrorString != NULL)
            s = nx_api.ncclGetErrorString((ncclResult_t)v);
    }
    PyObject *text = PyUnicode_FromString(s ? s : nx_builtin_error_string((int)v));
    if (text == NULL || !rccl)
        return text;
    /* RCCL keeps NCCL's wording ("unhandled cuda error") for what are HIP runtime failures. */
    PyObject *cuda = PyUnicode_FromString("cuda"), *hip = PyUnicode_FromString("HIP");
    PyObject *worded = cuda && hip ? PyUnicode_Replace(text, cuda, hip, -1) : NULL;
    Py_XDECREF(cuda);
    Py_XDECREF(hip);
    Py_DECREF(text);
    return worded;
}

static PyMethodDef errors_methods[] = {
    {"check_status", check_status, METH_O, check_status__doc__},
    {"_error_text", error_text, METH_O, error_text__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_errors_setup(PyObject *module, nx_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, errors_methods);
}

PyObject *nx_invalid(nx_state *st, const char *fmt, ...)
{
    PyObject *cls = nx_exception_class(st, NX_EXC_NCCL_INVALID); /* borrowed */
    if (cls == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg != NULL) {
        PyErr_SetObject(cls, msg);
        Py_DECREF(msg);
    }
    return NULL;
}
