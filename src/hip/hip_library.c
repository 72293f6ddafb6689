/* The Python side of loading the HIP runtime: load(), introspection and load attempts. */
#include "hip_module.h"

#include "gpu_loader.h"

PyDoc_STRVAR(load__doc__, "load()\n--\n\n"
"Open the HIP runtime now, if no call has yet, and return the path it was loaded from.\n"
"Raises NotSupportedError (listing every candidate and its dlerror) when none loads; a failure\n"
"is not cached, so a corrected NCCL4PY_HIP_LIBRARY takes effect on the next call.");

static PyObject *load(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    if (nh_ensure_loaded(nh_get_state(module)) < 0)
        return NULL;
    return PyUnicode_DecodeFSDefault(gpu_hip_path());
}

PyDoc_STRVAR(is_loaded__doc__, "is_loaded()\n--\n\n"
"True once the HIP runtime has been opened. Never loads it.");

static PyObject *is_loaded(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(gpu_hip_ready());
}

PyDoc_STRVAR(library_path__doc__, "library_path()\n--\n\n"
"The path of the loaded HIP runtime, or None if it has not been loaded. Never loads it.");

static PyObject *library_path(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    if (!gpu_hip_ready())
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(gpu_hip_path());
}

PyDoc_STRVAR(runtime_version__doc__, "runtime_version()\n--\n\n"
"hipRuntimeGetVersion() of the loaded runtime (major * 10000000 + minor * 100000 + patch), or -1\n"
"if the runtime does not report one. Loads the runtime.");

static PyObject *runtime_version(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    if (nh_ensure_loaded(nh_get_state(module)) < 0)
        return NULL;
    return PyLong_FromLong(gpu_hip_runtime_version());
}

PyDoc_STRVAR(load_attempts__doc__, "load_attempts()\n--\n\n"
"The latest discovery as a tuple of (candidate, outcome) pairs; outcome is 'loaded' for the\n"
"library in use. Empty before the first load. Never loads anything.");

static PyObject *load_attempts(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    dl_attempt *attempts = NULL;
    size_t n = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gpu_hip_attempts(&attempts, &n);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return PyErr_NoMemory();
    PyObject *result = PyTuple_New((Py_ssize_t)n);
    if (result == NULL)
        goto exit;
    for (size_t i = 0; i < n; i++) {
        PyObject *pair = Py_BuildValue("(ss)", attempts[i].candidate, attempts[i].outcome ? attempts[i].outcome : "loaded");
        if (pair == NULL) {
            Py_CLEAR(result);
            goto exit;
        }
        PyTuple_SET_ITEM(result, (Py_ssize_t)i, pair);
    }
exit:
    dl_attempts_free(attempts, n);
    return result;
}

PyDoc_STRVAR(function_pointers__doc__, "function_pointers()\n--\n\n"
"{name: address} for every HIP entry point of the table, 0 where the runtime lacks it.\n"
"Loads the runtime.");

static PyObject *function_pointers(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    if (nh_ensure_loaded(nh_get_state(module)) < 0)
        return NULL;
    PyObject *result = PyDict_New();
    if (result == NULL)
        return NULL;
    for (size_t i = 0; i < gpu_hip_nsymbols; i++) {
        void *fn;
        memcpy(&fn, (const char *)&gpu_hip + gpu_hip_symbols[i].offset, sizeof fn);
        PyObject *address = PyLong_FromVoidPtr(fn);
        if (address == NULL || PyDict_SetItemString(result, gpu_hip_symbols[i].name, address) < 0) {
            Py_XDECREF(address);
            Py_DECREF(result);
            return NULL;
        }
        Py_DECREF(address);
    }
    return result;
}

PyDoc_STRVAR(symbols__doc__, "symbols()\n--\n\n"
"The table as a tuple of (name, required) pairs, in order. Never loads anything.");

static PyObject *symbols(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *result = PyTuple_New((Py_ssize_t)gpu_hip_nsymbols);
    if (result == NULL)
        return NULL;
    for (size_t i = 0; i < gpu_hip_nsymbols; i++) {
        PyObject *row = Py_BuildValue("(sO)", gpu_hip_symbols[i].name, gpu_hip_symbols[i].required ? Py_True : Py_False);
        if (row == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, (Py_ssize_t)i, row);
    }
    return result;
}

PyMethodDef nh_library_methods[] = {
    {"load", load, METH_NOARGS, load__doc__},
    {"is_loaded", is_loaded, METH_NOARGS, is_loaded__doc__},
    {"library_path", library_path, METH_NOARGS, library_path__doc__},
    {"runtime_version", runtime_version, METH_NOARGS, runtime_version__doc__},
    {"load_attempts", load_attempts, METH_NOARGS, load_attempts__doc__},
    {"function_pointers", function_pointers, METH_NOARGS, function_pointers__doc__},
    {"symbols", symbols, METH_NOARGS, symbols__doc__},
    {NULL, NULL, 0, NULL},
};
