/* nccl._ext: multi-phase init, module state, and the exec slot that calls each file's setup. */
#include "module/state.h"

#include "bindings/bindings.h"
#include "core/core.h"
#include "group/group.h"
#include "loader/library.h"
#include "structs/pointerbox.h"
#include "trace/trace.h"

static int nx_exec(PyObject *module)
{
    nx_state *st = nx_get_state(module);
    if (nx_errors_setup(module, st) < 0 || nx_lazy_setup(module, st) < 0 || nx_library_setup(module, st) < 0 || nx_structs_setup(module, st) < 0 ||
        nx_pointer_box_setup(module, st) < 0 || nx_handles_setup(module, st) < 0 ||
        nx_bindings_setup(module, st) < 0 || nx_group_setup(module) < 0 || nx_buffer_setup(module, st) < 0 ||
        nx_ncclbuffer_setup(module, st) < 0 || nx_stream_setup(module, st) < 0 ||
        nx_coll_config_setup(module, st) < 0 ||
        nx_resources_setup(module, st) < 0 || nx_redop_setup(module, st) < 0 ||
        nx_devcomm_setup(module, st) < 0 ||
        nx_communicator_setup(module, st) < 0 || nx_trace_setup(module, st) < 0)
        return -1;
    return 0;
}

static int nx_traverse(PyObject *module, visitproc visit, void *arg)
{
    nx_state *st = nx_get_state(module);
    for (int i = 0; i < NX_NCORE_TYPES; i++)
        Py_VISIT(nx_types_of(st)->core[i]);
    Py_VISIT(nx_types_of(st)->pointer_box);
    int rc;
    if ((rc = nx_errors_cache_traverse(&st->errors, visit, arg)) != 0 ||
        (rc = nx_handles_cache_traverse(&st->handles, visit, arg)) != 0 ||
        (rc = nx_lazy_cache_traverse(&st->lazy, visit, arg)) != 0 ||
        (rc = nx_structs_cache_traverse(&st->structs, visit, arg)) != 0 ||
        (rc = nx_buffer_cache_traverse(&st->buffer, visit, arg)) != 0 ||
        (rc = nx_stream_cache_traverse(&st->stream, visit, arg)) != 0 ||
        (rc = nx_coll_config_cache_traverse(&st->coll_config, visit, arg)) != 0)
        return rc;
    return 0;
}

static int nx_clear(PyObject *module)
{
    nx_state *st = nx_get_state(module);
    for (int i = 0; i < NX_NCORE_TYPES; i++)
        Py_CLEAR(nx_types_of(st)->core[i]);
    Py_CLEAR(nx_types_of(st)->pointer_box);
    nx_errors_cache_clear(&st->errors);
    nx_handles_cache_clear(&st->handles);
    nx_lazy_cache_clear(&st->lazy);
    nx_structs_cache_clear(&st->structs);
    nx_buffer_cache_clear(&st->buffer);
    nx_stream_cache_clear(&st->stream);
    nx_coll_config_cache_clear(&st->coll_config);
    return 0;
}

static void nx_free(void *module) { nx_clear((PyObject *)module); }

static PyModuleDef_Slot nx_slots[] = {
    {Py_mod_exec, nx_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    /* Safe without the GIL (docs/architecture.md#threads): process-wide state is built once
     * (pthread_once, the loaders' lock and ready flag), caches are published by compare-and-swap,
     * and a Communicator's own fields change under its critical section. */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

PyDoc_STRVAR(nx_doc, "C core of nccl4py: the loader, nccl.bindings.nccl, nccl.bindings.rocm_extensions and nccl.core's types.");

struct PyModuleDef nx_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "nccl._ext",
    .m_doc = nx_doc,
    .m_size = sizeof(nx_state),
    .m_slots = nx_slots,
    .m_traverse = nx_traverse,
    .m_clear = nx_clear,
    .m_free = nx_free,
};

PyMODINIT_FUNC PyInit__ext(void) { return PyModuleDef_Init(&nx_module_def); }
