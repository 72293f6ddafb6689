/* Exceptions of nccl._hip_compat._hip, built in one place, and the argument converters. */
#include "hip_module.h"

#include <string.h>

#include "gpu_loader.h"

/* The bindings' class when nccl._errors is importable (so `except NotSupportedError` written for
 * the NCCL loader also catches a missing HIP runtime), else our fallback. Looked up on each raise:
 * raising is the cold path, and caching would need a lock on free-threaded builds. Returns a new
 * reference. */
static PyObject *binding_exception(const char *name, PyObject *fallback)
{
    PyObject *exc = NULL;
    PyObject *mod = PyImport_ImportModule("nccl._errors");
    if (mod != NULL) {
        exc = PyObject_GetAttrString(mod, name);
        Py_DECREF(mod);
    }
    if (exc == NULL || !PyExceptionClass_Check(exc)) {
        PyErr_Clear();
        Py_XSETREF(exc, Py_NewRef(fallback));
    }
    return exc;
}

/* Raises cls(message) and sets attr=value on the instance. */
static PyObject *raise_with_attr(PyObject *cls, PyObject *message, const char *attr, PyObject *value)
{
    PyObject *exc = PyObject_CallOneArg(cls, message);
    if (exc == NULL)
        return NULL;
    if (attr != NULL && PyObject_SetAttrString(exc, attr, value) < 0) {
        Py_DECREF(exc);
        return NULL;
    }
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

NH_COLD static int raise_not_loaded(nh_state *st, const dl_attempt *attempts, size_t n)
{
    PyObject *cls = NULL, *pairs = NULL, *lines = NULL, *sep = NULL, *body = NULL, *message = NULL;
    if ((pairs = PyTuple_New((Py_ssize_t)n)) == NULL || (lines = PyList_New(0)) == NULL)
        goto exit;
    for (size_t i = 0; i < n; i++) {
        const char *outcome = attempts[i].outcome ? attempts[i].outcome : "loaded";
        PyObject *pair = Py_BuildValue("(ss)", attempts[i].candidate, outcome);
        if (pair == NULL)
            goto exit;
        PyTuple_SET_ITEM(pairs, (Py_ssize_t)i, pair);
        PyObject *line = PyUnicode_FromFormat("  %s: %s\n", attempts[i].candidate, outcome);
        if (line == NULL)
            goto exit;
        int rc = PyList_Append(lines, line);
        Py_DECREF(line);
        if (rc < 0)
            goto exit;
    }
    if ((sep = PyUnicode_FromString("")) == NULL || (body = PyUnicode_Join(sep, lines)) == NULL)
        goto exit;
    message = PyUnicode_FromFormat("Could not load the HIP runtime (libamdhip64) for the cuda.core shim. "
                                   "Tried:\n%s%USet NCCL4PY_HIP_LIBRARY to the path of libamdhip64.so.",
                                   n == 0 ? "  (nothing recorded: out of memory)\n" : "", body);
    if (message == NULL)
        goto exit;
    cls = binding_exception("NotSupportedError", st->fallback_not_supported);
    raise_with_attr(cls, message, "attempts", pairs);
exit:
    Py_XDECREF(cls);
    Py_XDECREF(pairs);
    Py_XDECREF(lines);
    Py_XDECREF(sep);
    Py_XDECREF(body);
    Py_XDECREF(message);
    return -1;
}

int nh_ensure_loaded(nh_state *st)
{
    if (gpu_hip_ready())
        return 0;
    dl_attempt *attempts = NULL;
    size_t n = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip_load(&attempts, &n);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        raise_not_loaded(st, attempts, n);
    dl_attempts_free(attempts, n);
    return rc == 0 ? 0 : -1;
}

PyObject *nh_raise_hip(nh_state *st, const char *function, hipError_t code)
{
    /* String lookups are the one HIP use made with the GIL held: they do not block. */
    const char *text = gpu_hip.hipGetErrorString ? gpu_hip.hipGetErrorString(code) : NULL;
    const char *name = gpu_hip.hipGetErrorName ? gpu_hip.hipGetErrorName(code) : NULL;
    PyObject *exc = NULL, *value = NULL;
    PyObject *message = PyUnicode_FromFormat("%s failed: %s (%d)", function, text ? text : "unknown error", (int)code);
    if (message == NULL)
        goto exit;
    if ((exc = PyObject_CallOneArg(st->hip_error, message)) == NULL)
        goto exit;
    if ((value = PyLong_FromLong(code)) == NULL || PyObject_SetAttrString(exc, "code", value) < 0)
        goto exit;
    Py_SETREF(value, name ? PyUnicode_FromString(name) : Py_NewRef(Py_None));
    if (value == NULL || PyObject_SetAttrString(exc, "name", value) < 0)
        goto exit;
    Py_SETREF(value, PyUnicode_FromString(function));
    if (value == NULL || PyObject_SetAttrString(exc, "function", value) < 0)
        goto exit;
    PyErr_SetObject(st->hip_error, exc);
exit:
    Py_XDECREF(message);
    Py_XDECREF(exc);
    Py_XDECREF(value);
    return NULL;
}

PyObject *nh_none_or_raise(nh_state *st, const char *function, hipError_t code)
{
    if (code != GPU_hipSuccess)
        return nh_raise_hip(st, function, code);
    Py_RETURN_NONE;
}

int nh_need(nh_state *st, const void *slot)
{
    if (nh_ensure_loaded(st) < 0)
        return -1;
    void (*fn)(void);
    memcpy(&fn, slot, sizeof fn);
    if (fn != NULL)
        return 0;
    const gpu_symbol *row = gpu_hip_symbol_at(slot);
    nh_raise_missing(st, row != NULL ? row->name : "<not an entry point of the HIP table>");
    return -1;
}

PyObject *nh_raise_missing(nh_state *st, const char *function)
{
    PyObject *cls = binding_exception("FunctionNotFoundError", st->fallback_not_found);
    PyObject *message = PyUnicode_FromFormat("function %s is not found in the HIP runtime %s", function,
                                             gpu_hip_path());
    if (message != NULL) {
        PyObject *name = PyUnicode_FromString(function);
        if (name != NULL)
            raise_with_attr(cls, message, "function", name);
        Py_XDECREF(name);
    }
    Py_DECREF(cls);
    Py_XDECREF(message);
    return NULL;
}

int nh_check_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t min, Py_ssize_t max)
{
    if (nargs >= min && nargs <= max)
        return 1;
    if (min == max)
        PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd positional argument%s (%zd given)", name, min,
                     min == 1 ? "" : "s", nargs);
    else
        PyErr_Format(PyExc_TypeError, "%s() takes from %zd to %zd positional arguments (%zd given)", name, min,
                     max, nargs);
    return 0;
}

/* An exact int (or __index__), never bool, as an unsigned value no larger than max. */
static int unsigned_converter(PyObject *obj, unsigned long long max, unsigned long long *out, const char *what)
{
    if (PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not bool", what);
        return 0;
    }
    PyObject *index = PyNumber_Index(obj);
    if (index == NULL)
        return 0;
    int ok = 0, overflow = 0;
    long long sign = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (sign == -1 && PyErr_Occurred())
        goto exit;
    if (overflow < 0 || (overflow == 0 && sign < 0)) {
        PyErr_Format(PyExc_ValueError, "%s must be non-negative, got %S", what, index);
        goto exit;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(index);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            goto exit;
        PyErr_Clear();
        v = ULLONG_MAX;
        max = v - 1; /* reported below */
    }
    if (v > max) {
        PyErr_Format(PyExc_OverflowError, "%s %S is too large", what, index);
        goto exit;
    }
    *out = v;
    ok = 1;
exit:
    Py_DECREF(index);
    return ok;
}

int nh_handle_converter(PyObject *obj, void *out)
{
    unsigned long long v;
    if (!unsigned_converter(obj, UINTPTR_MAX, &v, "a pointer or handle"))
        return 0;
    *(uintptr_t *)out = (uintptr_t)v;
    return 1;
}

int nh_size_converter(PyObject *obj, void *out)
{
    unsigned long long v;
    if (!unsigned_converter(obj, SIZE_MAX, &v, "a size"))
        return 0;
    *(size_t *)out = (size_t)v;
    return 1;
}

int nh_int_converter(PyObject *obj, void *out)
{
    if (PyBool_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected an int, not bool");
        return 0;
    }
    PyObject *index = PyNumber_Index(obj);
    if (index == NULL)
        return 0;
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred())
        return 0;
    if (overflow != 0 || v < INT_MIN || v > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "value does not fit in a C int");
        return 0;
    }
    *(int *)out = (int)v;
    return 1;
}
