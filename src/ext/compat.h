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

#endif
