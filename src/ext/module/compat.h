/* The CPython C API this extension uses that the oldest interpreter it supports (3.10) lacks.
 * Each missing function is defined here under its public name, with the newer version's
 * contract, so the sources use one spelling; a block goes when the floor passes its version. */
#ifndef NCCL4PY_COMPAT_H
#define NCCL4PY_COMPAT_H

#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000
/* Public in 3.11; 3.10 exports the same lookup (borrowed module, TypeError when no type in the
 * MRO was defined by `def`) under a private name. */
static inline PyObject *PyType_GetModuleByDef(PyTypeObject *type, PyModuleDef *def)
{
    return _PyType_GetModuleByDef(type, def);
}
#endif

#if PY_VERSION_HEX < 0x030D0000
/* 3.13's strong-reference dict lookups (a borrowed item can vanish under another thread without
 * a GIL); 1 found, 0 absent, -1 with an exception. */
static inline int PyDict_GetItemRef(PyObject *p, PyObject *key, PyObject **result)
{
    *result = Py_XNewRef(PyDict_GetItemWithError(p, key));
    if (*result != NULL)
        return 1;
    return PyErr_Occurred() ? -1 : 0;
}

static inline int PyDict_GetItemStringRef(PyObject *p, const char *key, PyObject **result)
{
    PyObject *k = PyUnicode_FromString(key);
    *result = NULL;
    if (k == NULL)
        return -1;
    int rc = PyDict_GetItemRef(p, k, result);
    Py_DECREF(k);
    return rc;
}

/* Per-object locks of the free-threaded build (3.13+); with a GIL (every older interpreter)
 * holding the GIL already excludes other threads, so the section is just a block. */
#define Py_BEGIN_CRITICAL_SECTION(op) { (void)(op);
#define Py_END_CRITICAL_SECTION() }
#endif

#endif
