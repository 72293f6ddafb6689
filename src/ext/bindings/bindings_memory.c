/* nccl.bindings.nccl: memory, version, unique ids and error strings (bindings.h says how a binding
 * is written). */
#include "bindings/bindings_intake.h"

#include "structs/structs.h"

NX_BINDING(mem_alloc, ("size"), "ncclMemAlloc: allocate size bytes; returns the pointer.");
static PyObject *mem_alloc(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &mem_alloc_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclMemAlloc, buf, &st);
    if (a == NULL)
        return NULL;
    size_t size;
    if (nx_arg_size(sig, a, 0, &size) < 0)
        return NULL;
    void *ptr = NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclMemAlloc(&ptr, size));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return PyLong_FromVoidPtr(ptr);
}

NX_BINDING(mem_free, ("ptr"), "ncclMemFree: free memory from mem_alloc.");
static PyObject *mem_free(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &mem_free_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclMemFree, buf, &st);
    if (a == NULL)
        return NULL;
    void *ptr;
    if (nx_arg_addr(sig, a, 0, &ptr) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclMemFree(ptr));
    return nx_none_or_error(st, rc, NULL);
}

PyDoc_STRVAR(get_version__doc__, "get_version()\n--\n\nncclGetVersion: the library's version code.");
static PyObject *get_version(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    if (nx_require(st, &nx_api.ncclGetVersion) < 0)
        return NULL;
    int v = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetVersion(&v));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return PyLong_FromLong(v);
}

NX_FORM(get_unique_id, 02, "unique_id");
NX_BINDING0(get_unique_id,
"ncclGetUniqueId: a new UniqueId. The 0.2.0 form get_unique_id(unique_id) writes to that address.");
static PyObject *get_unique_id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &get_unique_id_sig, &get_unique_id_sig_02, args, nargs, kwnames,
                                        &nx_api.ncclGetUniqueId, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        void *out;
        if (nx_arg_addr(sig, a, 0, &out) < 0)
            return NULL;
        NX_RUN(rc, nx_api.ncclGetUniqueId((ncclUniqueId *)out));
        return nx_none_or_error(st, rc, NULL);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_UNIQUE_ID);
    if (obj == NULL)
        return NULL;
    ncclUniqueId *id = nx_struct_storage(st, obj, NX_STRUCT_UNIQUE_ID);
    NX_RUN(rc, nx_api.ncclGetUniqueId(id));
    return nx_struct_result(st, obj, rc, NULL);
}

NX_BINDING(get_error_string, ("result"), "ncclGetErrorString: the text of a result code.");
static PyObject *get_error_string(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &get_error_string_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetErrorString, buf, &st);
    if (a == NULL)
        return NULL;
    int result;
    if (nx_arg_int(sig, a, 0, &result) < 0)
        return NULL;
    const char *s;
    NX_RUN(s, nx_api.ncclGetErrorString((ncclResult_t)result));
    return PyUnicode_FromString(s ? s : "");
}

NX_BINDING(get_last_error, ("comm"),
"ncclGetLastError: the last error text ('' if none). comm may be 0: the error of a call made\n"
"without a communicator.");
static PyObject *get_last_error(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &get_last_error_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetLastError, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    /* NULL asks for the last error of a call made without a communicator (NCCL's API). */
    if (nx_arg_nullable_comm(sig, a, 0, &comm) < 0)
        return NULL;
    const char *s;
    NX_RUN(s, nx_api.ncclGetLastError(comm));
    return PyUnicode_FromString(s ? s : "");
}

PyMethodDef nx_bindings_memory_methods[] = {
    NX_FASTCALL_DEF(mem_alloc),
    NX_FASTCALL_DEF(mem_free),
    {"get_version", get_version, METH_NOARGS, get_version__doc__},
    NX_FASTCALL_DEF(get_unique_id),
    NX_FASTCALL_DEF(get_error_string),
    NX_FASTCALL_DEF(get_last_error),
    {NULL, NULL, 0, NULL},
};
