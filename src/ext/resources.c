/* Communicator-owned resources of nccl.core (API.md section 5.10). Skeleton: being written. */
#include "core.h"

PyMethodDef nx_resource_methods[] = {
    {NULL, NULL, 0, NULL},
};

int nx_comm_redop(nx_state *st, nx_Communicator *comm, PyObject *op, ncclDataType_t dt, ncclRedOp_t *out)
{
    (void)st;
    (void)comm;
    (void)dt;
    return nx_redop(op, "collective", "op", out);
}

void nx_resource_close_quietly(PyObject *resource)
{
    PyObject *r = PyObject_CallMethod(resource, "close", NULL);
    if (r == NULL)
        PyErr_Clear();
    Py_XDECREF(r);
}

int nx_resources_setup(PyObject *module, nx_state *st)
{
    (void)module;
    (void)st;
    return 0;
}
