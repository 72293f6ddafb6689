/* DevCommResource (nccl4py 0.4.1 to 0.6.0): a device communicator (ncclDevComm_t) made by
 * ncclDevCommCreate, released by ncclDevCommDestroy on close() or with the communicator. The
 * ncclDevComm_t lives in a bindings DevComm wrapper (the `dev_comm` property; `ptr` is its address,
 * what a kernel launch passes). Communicator.create_dev_comm is written in Python over the bindings
 * (nccl.core._methods): it builds the requirements, their team and resource lists and the handle
 * views, and calls Communicator._create_dev_comm here, which runs ncclDevCommCreate and returns the
 * tracked resource. The host backend refuses ncclDevCommCreate by name, which is raised as the
 * library's error. */
#include "core/resources.h"

#include "structs/structs.h"

typedef struct {
    nx_CommResource base;
    PyObject *devobj;   /* bindings DevComm holding the ncclDevComm_t */
    PyObject *multimem; /* tuple of (NCCLTeam, MultimemHandle view) pairs, one per team requirement */
    PyObject *handles;  /* tuple of handle views, one per resource requirement */
} nx_DevComm;

static ncclDevComm_t *dev_of(nx_state *st, nx_DevComm *d) { return nx_struct_storage(st, d->devobj, NX_STRUCT_DEV_COMM); }

static int DevComm_release(nx_state *st, PyObject *self, ncclComm_t comm)
{
    nx_DevComm *d = (nx_DevComm *)self;
    if (nx_require(st, &nx_api.ncclDevCommDestroy) < 0)
        return -1;
    const ncclDevComm_t *dev = dev_of(st, d);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclDevCommDestroy(comm, dev));
    return nx_check(st, rc, comm);
}

static int DevComm_traverse(PyObject *op, visitproc visit, void *arg)
{
    nx_DevComm *d = (nx_DevComm *)op;
    Py_VISIT(d->devobj);
    Py_VISIT(d->multimem);
    Py_VISIT(d->handles);
    return nx_resource_traverse(op, visit, arg);
}

static int DevComm_clear(PyObject *op)
{
    nx_DevComm *d = (nx_DevComm *)op;
    Py_CLEAR(d->devobj);
    Py_CLEAR(d->multimem);
    Py_CLEAR(d->handles);
    return nx_resource_clear(op);
}

static nx_state *state_of(PyObject *self) { return nx_state_of_type(Py_TYPE(self)); }

static PyObject *DevComm_get_dev_comm(PyObject *self, void *closure)
{
    (void)closure;
    nx_DevComm *d = (nx_DevComm *)self;
    if (!d->base.open)
        return nx_resource_closed_error(self);
    return Py_NewRef(d->devobj);
}

static PyObject *DevComm_get_ptr(PyObject *self, void *closure)
{
    (void)closure;
    nx_DevComm *d = (nx_DevComm *)self;
    nx_state *st = state_of(self);
    if (st == NULL)
        return NULL;
    if (!d->base.open)
        return nx_resource_closed_error(self);
    return PyLong_FromVoidPtr(dev_of(st, d));
}

static PyObject *DevComm_get_resource_handles(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(((nx_DevComm *)self)->handles);
}

PyDoc_STRVAR(multimem_handle__doc__, "multimem_handle($self, team)\n--\n\n"
"The MultimemHandle of a team that the requirements asked for with multimem=True.");
static PyObject *DevComm_multimem_handle(PyObject *self, PyObject *team)
{
    nx_DevComm *d = (nx_DevComm *)self;
    if (!d->base.open)
        return nx_resource_closed_error(self);
    nx_state *st = state_of(self);
    if (st == NULL)
        return NULL;
    /* the tuple owned for the walk: team's __eq__ runs Python code while it goes on */
    PyObject *pairs = Py_NewRef(d->multimem), *found = NULL;
    for (Py_ssize_t i = 0; found == NULL && i < PyTuple_GET_SIZE(pairs); i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(pair, 0), team, Py_EQ);
        if (eq < 0)
            break;
        if (eq)
            found = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
    }
    Py_DECREF(pairs);
    if (found == NULL && !PyErr_Occurred())
        nx_invalid(st, "multimem_handle: %R was not among the requirements' teams", team);
    return found;
}

static PyMethodDef DevComm_methods[] = {
    {"multimem_handle", DevComm_multimem_handle, METH_O, multimem_handle__doc__},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef DevComm_getset[] = {
    {"dev_comm", DevComm_get_dev_comm, NULL, "The nccl.bindings.nccl.DevComm (ncclDevComm_t) the library filled.", NULL},
    {"ptr", DevComm_get_ptr, NULL, "Address of the ncclDevComm_t (for a kernel launch).", NULL},
    {"resource_handles", DevComm_get_resource_handles, NULL,
     "The handle views of the resource requirements, in their order.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Nonzero when o is a tuple of 2-tuples (what multimem_handle reads without further checks). */
static int is_pair_tuple(PyObject *o)
{
    if (!PyTuple_Check(o))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
        PyObject *pair = PyTuple_GET_ITEM(o, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
            return 0;
    }
    return 1;
}

NX_MSIG(_create_dev_comm, 3, 3, "reqs", "multimem", "handles");
PyDoc_STRVAR(create_dev_comm__doc__, "_create_dev_comm($self, reqs, multimem, handles)\n--\n\n"
"For create_dev_comm (nccl.core._methods): ncclDevCommCreate from reqs, a bindings\n"
"DevCommRequirements whose team and resource lists the caller keeps alive during the call (its\n"
"version fitted to the loaded library); the tracked DevCommResource holding multimem (a tuple of\n"
"(NCCLTeam, MultimemHandle) pairs whose storage the call fills) and handles (the resource handle\n"
"views).");
static PyObject *create_dev_comm_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[3];
    if (nx_margs(&M__create_dev_comm, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    if (nx_call_begin(k, "create_dev_comm") < 0)
        return NULL;
    const ncclDevCommRequirements_t *given = nx_struct_storage(st, a[0], NX_STRUCT_DEV_COMM_REQUIREMENTS);
    if (given == NULL || !is_pair_tuple(a[1]) || !PyTuple_Check(a[2])) {
        PyErr_SetString(PyExc_TypeError, "_create_dev_comm() takes a DevCommRequirements, a tuple of pairs and a tuple");
        return NULL;
    }
    ncclDevCommRequirements_t req = *given;
    nx_struct_fit_library(NX_STRUCT_DEV_COMM_REQUIREMENTS, &req);
    PyObject *obj = nx_resource_alloc(st, NX_TYPE_DEV_COMM, c, DevComm_release);
    if (obj == NULL)
        return NULL;
    nx_DevComm *d = (nx_DevComm *)obj;
    /* the handle is read once every object is made (nx_call, core.h) */
    ncclComm_t comm;
    if ((d->devobj = nx_struct_new(st, NX_STRUCT_DEV_COMM)) == NULL || nx_require(st, &nx_api.ncclDevCommCreate) < 0 ||
        (comm = nx_call_ready(k)) == NULL)
        goto fail;
    ncclDevComm_t *dev = dev_of(st, d);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclDevCommCreate(comm, &req, dev));
    if (nx_check(st, rc, comm) < 0)
        goto fail;
    d->base.open = 1;
    d->multimem = Py_NewRef(a[1]);
    d->handles = Py_NewRef(a[2]);
    if (nx_resource_track(c, obj) < 0)
        goto fail;
    return obj;
fail:
    Py_DECREF(obj);
    return NULL;
}

static PyObject *Communicator_create_dev_comm(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(create_dev_comm_body, NX_COMM_METHOD_PASS);
}

PyMethodDef nx_devcomm_methods[] = {
    NX_COMM_METHOD_DEF("_create_dev_comm", Communicator_create_dev_comm, create_dev_comm__doc__),
    {NULL, NULL, 0, NULL},
};

int nx_devcomm_setup(PyObject *module, nx_state *st)
{
    PyType_Slot slots[] = {
        {Py_tp_dealloc, nx_resource_dealloc},
        {Py_tp_traverse, DevComm_traverse},
        {Py_tp_clear, DevComm_clear},
        {Py_tp_doc, (void *)"A device communicator (ncclDevCommCreate) owned by a Communicator "
                            "(Communicator.create_dev_comm)."},
        {Py_tp_methods, DevComm_methods},
        {Py_tp_getset, DevComm_getset},
        {0, NULL},
    };
    PyType_Spec spec = {"nccl.core.resources.DevCommResource", sizeof(nx_DevComm), 0,
                        NX_RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots};
    return nx_resource_add_type(module, st, NX_TYPE_DEV_COMM, &spec,
                                (PyObject *)nx_types_of(st)->core[NX_TYPE_COMM_RESOURCE], "DevCommResource");
}
