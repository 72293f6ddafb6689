/* nccl.bindings.nccl: the entry points that fill a struct, written by hand (tools/nccl_surface.py's
 * IRREGULAR says why): a new wrapper the library fills (the short form), or, in 0.2.0's form, the
 * struct at an address the caller gives. Their signatures and docstrings are generated
 * (<section>.gen.c); bindings.h says how a binding is written. */
#include "bindings/bindings.gen.h"
#include "bindings/bindings_intake.h"
#include "structs/structs.h"

PyObject *nx_binding_get_unique_id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_get_unique_id_sig, &nx_binding_get_unique_id_sig_02, args, nargs, kwnames,
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

PyObject *nx_binding_comm_get_unique_id(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_get_unique_id_sig, &nx_binding_comm_get_unique_id_sig_02, args, nargs, kwnames,
                                        &nx_api.ncclCommGetUniqueId, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *out = NULL;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || (legacy && nx_arg_addr(sig, a, 1, &out) < 0))
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        NX_RUN(rc, nx_api.ncclCommGetUniqueId(comm, (ncclUniqueId *)out));
        return nx_none_or_error(st, rc, comm);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_UNIQUE_ID);
    if (obj == NULL)
        return NULL;
    ncclUniqueId *id = nx_struct_storage(st, obj, NX_STRUCT_UNIQUE_ID);
    NX_RUN(rc, nx_api.ncclCommGetUniqueId(comm, id));
    return nx_struct_result(st, obj, rc, comm);
}

PyObject *nx_binding_comm_query_properties(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_query_properties_sig, &nx_binding_comm_query_properties_sig_02, args, nargs,
                                        kwnames, &nx_api.ncclCommQueryProperties, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *out = NULL;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || (legacy && nx_arg_addr(sig, a, 1, &out) < 0))
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        NX_RUN(rc, nx_api.ncclCommQueryProperties(comm, (ncclCommProperties_t *)out));
        return nx_none_or_error(st, rc, comm);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_COMM_PROPERTIES);
    if (obj == NULL)
        return NULL;
    ncclCommProperties_t *props = nx_struct_storage(st, obj, NX_STRUCT_COMM_PROPERTIES);
    nx_struct_fit_library(NX_STRUCT_COMM_PROPERTIES, props);
    NX_RUN(rc, nx_api.ncclCommQueryProperties(comm, props));
    return nx_struct_result(st, obj, rc, comm);
}

PyObject *nx_binding_dev_comm_create(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_dev_comm_create_sig, &nx_binding_dev_comm_create_sig_02, args, nargs, kwnames,
                                        &nx_api.ncclDevCommCreate, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *reqs, *out = NULL;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_addr(sig, a, 1, &reqs) < 0 ||
        (legacy && nx_arg_addr(sig, a, 2, &out) < 0))
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        NX_RUN(rc, nx_api.ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)reqs, (ncclDevComm_t *)out));
        return nx_none_or_error(st, rc, comm);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_DEV_COMM);
    if (obj == NULL)
        return NULL;
    ncclDevComm_t *dev = nx_struct_storage(st, obj, NX_STRUCT_DEV_COMM);
    NX_RUN(rc, nx_api.ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)reqs, dev));
    return nx_struct_result(st, obj, rc, comm);
}
