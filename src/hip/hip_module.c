/* nccl._hip_compat._hip: thin functions over the HIP runtime (ints for pointers and handles) and
 * the DLPack capsule helpers of the cuda.core shim. The Python classes live in
 * nccl/_hip_compat/cuda_core_shim/. Importing this module loads nothing; the runtime is opened by
 * the first function that needs it. */
#include "hip_module.h"

PyDoc_STRVAR(hip_error__doc__, "HipError(message)\n--\n\n"
"A HIP runtime call failed. Attributes: code (the hipError_t value), name (its symbolic name,\n"
"e.g. 'hipErrorOutOfMemory') and function (the HIP entry point, e.g. 'hipMalloc').");
PyDoc_STRVAR(not_supported__doc__,
"The HIP runtime could not be loaded. Used only when nccl.bindings' NotSupportedError is not\n"
"importable; .attempts lists (candidate, outcome) pairs.");
PyDoc_STRVAR(not_found__doc__,
"The loaded HIP runtime does not export a function the shim needs. Used only when\n"
"nccl.bindings' FunctionNotFoundError is not importable.");

static int nh_exec(PyObject *module)
{
    nh_state *st = nh_get_state(module);
    /* A heap type from a spec (not PyErr_NewException) so that its docstring's text signature
     * reaches inspect.signature() and help(); hip_errors.c builds it from one message. */
    PyType_Slot hip_error_slots[] = {{Py_tp_doc, (void *)hip_error__doc__}, {0, NULL}};
    PyType_Spec hip_error_spec = {"nccl._hip_compat._hip.HipError", 0, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                                  hip_error_slots};
    st->hip_error = PyType_FromSpecWithBases(&hip_error_spec, PyExc_RuntimeError);
    if (st->hip_error == NULL || PyModule_AddObjectRef(module, "HipError", st->hip_error) < 0)
        return -1;
    st->fallback_not_supported = PyErr_NewExceptionWithDoc("nccl._hip_compat._hip.NotSupportedError",
                                                           not_supported__doc__, PyExc_RuntimeError, NULL);
    if (st->fallback_not_supported == NULL ||
        PyModule_AddObjectRef(module, "NotSupportedError", st->fallback_not_supported) < 0)
        return -1;
    st->fallback_not_found = PyErr_NewExceptionWithDoc("nccl._hip_compat._hip.FunctionNotFoundError",
                                                       not_found__doc__, PyExc_NotImplementedError, NULL);
    if (st->fallback_not_found == NULL ||
        PyModule_AddObjectRef(module, "FunctionNotFoundError", st->fallback_not_found) < 0)
        return -1;
    if (PyModule_AddFunctions(module, nh_library_methods) < 0 || PyModule_AddFunctions(module, nh_runtime_methods) < 0 ||
        PyModule_AddFunctions(module, nh_dlpack_methods) < 0)
        return -1;
    /* hipMemcpyKind values (HIP ABI). */
    if (PyModule_AddIntConstant(module, "hipMemcpyHostToHost", 0) < 0 ||
        PyModule_AddIntConstant(module, "hipMemcpyHostToDevice", 1) < 0 ||
        PyModule_AddIntConstant(module, "hipMemcpyDeviceToHost", 2) < 0 ||
        PyModule_AddIntConstant(module, "hipMemcpyDeviceToDevice", 3) < 0 ||
        PyModule_AddIntConstant(module, "hipMemcpyDefault", 4) < 0 ||
        /* Stream and event creation flags. */
        PyModule_AddIntConstant(module, "hipStreamDefault", 0) < 0 ||
        PyModule_AddIntConstant(module, "hipStreamNonBlocking", 1) < 0 ||
        PyModule_AddIntConstant(module, "hipEventDefault", 0) < 0 ||
        PyModule_AddIntConstant(module, "hipEventBlockingSync", 1) < 0 ||
        PyModule_AddIntConstant(module, "hipEventDisableTiming", 2) < 0 ||
        PyModule_AddIntConstant(module, "hipEventInterprocess", 4) < 0)
        return -1;
    return 0;
}

static int nh_traverse(PyObject *module, visitproc visit, void *arg)
{
    nh_state *st = nh_get_state(module);
    Py_VISIT(st->hip_error);
    Py_VISIT(st->fallback_not_supported);
    Py_VISIT(st->fallback_not_found);
    return 0;
}

static int nh_clear(PyObject *module)
{
    nh_state *st = nh_get_state(module);
    Py_CLEAR(st->hip_error);
    Py_CLEAR(st->fallback_not_supported);
    Py_CLEAR(st->fallback_not_found);
    return 0;
}

static void nh_free(void *module) { nh_clear((PyObject *)module); }

static PyModuleDef_Slot nh_slots[] = {
    {Py_mod_exec, nh_exec},
#if PY_VERSION_HEX >= 0x030C0000
    /* The DLPack deleter may run on any thread and takes the GIL with PyGILState_Ensure, which
     * only knows the main interpreter; numpy, which the shim's views use, has the same limit. */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#ifdef Py_GIL_DISABLED
    /* Module state is written only by exec; the loader has its own mutex. */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

PyDoc_STRVAR(nh_module__doc__,
"HIP runtime access for the cuda.core shim (nccl._hip_compat.cuda_core_shim).\n\n"
"Pointers, streams and events are plain ints. The runtime (libamdhip64) is opened on the first\n"
"call that needs it; NCCL4PY_HIP_LIBRARY names it explicitly. Every HIP call runs with the GIL\n"
"released; a failing call raises HipError.");

static PyModuleDef nh_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "nccl._hip_compat._hip",
    .m_doc = nh_module__doc__,
    .m_size = sizeof(nh_state),
    .m_slots = nh_slots,
    .m_traverse = nh_traverse,
    .m_clear = nh_clear,
    .m_free = nh_free,
};

PyMODINIT_FUNC PyInit__hip(void) { return PyModuleDef_Init(&nh_module); }
