/* DevCommResource and Communicator.create_dev_comm (nccl4py 0.4.1 to 0.6.0): a device communicator
 * (ncclDevComm_t) made by ncclDevCommCreate from an NCCLDevCommRequirements, released by
 * ncclDevCommDestroy on close() or with the communicator. The ncclDevComm_t lives in a bindings
 * DevComm wrapper (the `dev_comm` property; `ptr` is its address, what a kernel launch passes).
 * Teams asked for with multimem get their ncclMultimemHandle_t here (multimem_handle(team)); the
 * barrier and LL all-to-all requirements are made by the library's *CreateRequirement calls and
 * their handles kept (resource_handles). The host backend refuses ncclDevCommCreate by name, which
 * is raised as the library's error. */
#include "resources.h"

#include <stdarg.h>
#include <string.h>

#include "struct_layouts.h"
#include "structs.h"

typedef struct {
    nx_CommResource base;
    PyObject *devobj;           /* bindings DevComm holding the ncclDevComm_t */
    PyObject *teams;            /* tuple of the NCCLTeam of each team requirement */
    ncclMultimemHandle_t *mm;   /* one per team requirement (PyMem) */
    PyObject *handles;          /* tuple of handle views, one per resource requirement */
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
    Py_VISIT(d->teams);
    Py_VISIT(d->handles);
    return nx_resource_traverse(op, visit, arg);
}

static int DevComm_clear(PyObject *op)
{
    nx_DevComm *d = (nx_DevComm *)op;
    Py_CLEAR(d->devobj);
    Py_CLEAR(d->teams);
    Py_CLEAR(d->handles);
    return nx_resource_clear(op);
}

static void DevComm_dealloc(PyObject *op)
{
    PyMem_Free(((nx_DevComm *)op)->mm);
    nx_resource_dealloc(op);
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

/* A handle view of nccl.core._team (registered): cls(**{field: value}). */
static PyObject *view(nx_state *st, nx_lazy_kind kind, const char *fmt, ...)
{
    PyObject *cls = nx_lazy(st, kind); /* borrowed */
    if (cls == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    PyObject *kw = Py_VaBuildValue(fmt, ap);
    va_end(ap);
    PyObject *args = kw ? PyTuple_New(0) : NULL;
    PyObject *r = args ? PyObject_Call(cls, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
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
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(d->teams); i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(d->teams, i), team, Py_EQ);
        if (eq < 0)
            return NULL;
        if (eq)
            return view(st, NX_LAZY_MULTIMEM_HANDLE, "{s:K}", "mc_base_pointer", (unsigned long long)(uintptr_t)d->mm[i].mcBasePtr);
    }
    return nx_invalid(st, "multimem_handle: %R was not among the requirements' teams", team);
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

/* The ncclTeam_t of a requirement's `team` (an NCCLTeam). */
static int req_team(PyObject *req, const char *what, ncclTeam_t *out)
{
    PyObject *t = PyObject_GetAttrString(req, "team");
    if (t == NULL)
        return -1;
    static const char *const names[3] = {"n_ranks", "rank", "stride"};
    int *dst[3] = {&out->nRanks, &out->rank, &out->stride};
    int r = 0;
    for (int i = 0; r == 0 && i < 3; i++) {
        PyObject *v = PyObject_GetAttrString(t, names[i]);
        r = v ? nx_int(v, "create_dev_comm", what, dst[i]) : -1;
        Py_XDECREF(v);
    }
    Py_DECREF(t);
    return r;
}

static int req_int(PyObject *req, const char *name, int *out)
{
    PyObject *v = PyObject_GetAttrString(req, name);
    int r = v ? nx_int(v, "create_dev_comm", name, out) : -1;
    Py_XDECREF(v);
    return r;
}

typedef struct {
    ncclDevResourceRequirements_t req;
    int kind; /* 0 LSA barrier, 1 GIN barrier, 2 LL all-to-all */
    union {
        ncclLsaBarrierHandle_t lsa;
        ncclGinBarrierHandle_t gin;
        ncclLLA2AHandle_t lla2a;
    } h;
} resource_req;

/* One resource requirement through its *CreateRequirement entry point. */
static int make_resource(nx_state *st, ncclComm_t comm, PyObject *o, resource_req *out)
{
    const char *name = Py_TYPE(o)->tp_name;
    ncclTeam_t team;
    int n, rc_ok;
    ncclResult_t rc;
    if (strcmp(name, "LLA2ARequirement") == 0) {
        int blocks, elts, eltsize;
        if (req_int(o, "n_blocks", &blocks) < 0 || req_int(o, "max_elements", &elts) < 0 ||
            req_int(o, "max_element_size", &eltsize) < 0 || nx_require(st, &nx_api.ncclLLA2ACalcSlots) < 0 ||
            nx_require(st, &nx_api.ncclLLA2ACreateRequirement) < 0)
            return -1;
        NX_RUN(n, nx_api.ncclLLA2ACalcSlots(elts, eltsize));
        out->kind = 2;
        NX_RUN(rc, nx_api.ncclLLA2ACreateRequirement(blocks, n, &out->h.lla2a, &out->req));
        return nx_check(st, rc, comm);
    }
    rc_ok = req_team(o, "team", &team) == 0 && req_int(o, "n_barriers", &n) == 0;
    if (!rc_ok)
        return -1;
    if (strcmp(name, "LsaBarrierRequirement") == 0) {
        if (nx_require(st, &nx_api.ncclLsaBarrierCreateRequirement) < 0)
            return -1;
        out->kind = 0;
        NX_RUN(rc, nx_api.ncclLsaBarrierCreateRequirement(team, n, &out->h.lsa, &out->req));
    } else {
        if (nx_require(st, &nx_api.ncclGinBarrierCreateRequirement) < 0)
            return -1;
        out->kind = 1;
        NX_RUN(rc, nx_api.ncclGinBarrierCreateRequirement(comm, team, n, &out->h.gin, &out->req));
    }
    return nx_check(st, rc, comm);
}

static PyObject *resource_view(nx_state *st, const resource_req *r)
{
    switch (r->kind) {
    case 0: return view(st, NX_LAZY_LSA_BARRIER_HANDLE, "{s:I,s:i}", "buf_handle", r->h.lsa.bufHandle, "n_barriers", r->h.lsa.nBarriers);
    case 1: return view(st, NX_LAZY_GIN_BARRIER_HANDLE, "{s:I}", "signal0", r->h.gin.signal0);
    default: return view(st, NX_LAZY_LLA2A_HANDLE, "{s:I,s:I}", "buf_handle", r->h.lla2a.bufHandle, "n_slots", r->h.lla2a.nSlots);
    }
}

/* The scalar fields: NCCLDevCommRequirements._set_fields(warn=True) set on a bindings
 * DevCommRequirements, whose storage is then copied into *out. */
static int scalar_fields(nx_state *st, PyObject *reqs, ncclDevCommRequirements_t *out)
{
    PyObject *lowpp = nx_struct_new(st, NX_STRUCT_DEV_COMM_REQUIREMENTS);
    PyObject *set = lowpp ? PyObject_CallMethod(reqs, "_set_fields", "O", Py_True) : NULL;
    int r = set != NULL && PyDict_Check(set) ? 0 : -1;
    if (set != NULL && !PyDict_Check(set))
        PyErr_SetString(PyExc_TypeError, "create_dev_comm: _set_fields() must return a dict");
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (r == 0 && PyDict_Next(set, &pos, &k, &v))
        r = PyObject_SetAttr(lowpp, k, v);
    if (r == 0)
        *out = *(ncclDevCommRequirements_t *)nx_struct_storage(st, lowpp, NX_STRUCT_DEV_COMM_REQUIREMENTS);
    Py_XDECREF(set);
    Py_XDECREF(lowpp);
    return r;
}

NX_MSIG(create_dev_comm, 1, 0, "requirements");
PyDoc_STRVAR(create_dev_comm__doc__, "create_dev_comm($self, requirements=None)\n--\n\n"
"A DevCommResource: a device communicator made by ncclDevCommCreate from requirements (an\n"
"NCCLDevCommRequirements; None is the initializer's). Collective. The library's error when it\n"
"refuses (the host backend does, by name); NcclInvalid on a null communicator.");
static PyObject *Communicator_create_dev_comm(NX_COMM_METHOD_ARGS)
{
    PyObject *a[1];
    if (nx_margs(&M_create_dev_comm, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    PyObject *result = NULL, *obj = NULL, *teams = NULL, *handles = NULL, *tseq = NULL, *rseq = NULL;
    ncclTeamRequirements_t *treqs = NULL;
    resource_req *rreqs = NULL;
    ncclMultimemHandle_t *mm = NULL;
    ncclComm_t comm = nx_comm_require(c, "create_dev_comm");
    if (comm == NULL)
        return NULL;
    ncclDevCommRequirements_t req;
    nx_struct_descs[NX_STRUCT_DEV_COMM_REQUIREMENTS].init(&req);
    PyObject *reqs = a[0] != NULL ? a[0] : Py_None;
    if (reqs != Py_None) {
        PyObject *rcls = nx_lazy(st, NX_LAZY_DEV_COMM_REQUIREMENTS); /* borrowed */
        int ok = rcls ? PyObject_IsInstance(reqs, rcls) : -1;
        if (ok == 0)
            PyErr_Format(PyExc_TypeError, "create_dev_comm: requirements must be an NCCLDevCommRequirements or None, "
                         "got %s", Py_TYPE(reqs)->tp_name);
        if (ok <= 0 || scalar_fields(st, reqs, &req) < 0)
            goto done;
        PyObject *t = PyObject_GetAttrString(reqs, "teams");
        tseq = t ? PySequence_Tuple(t) : NULL;
        Py_XDECREF(t);
        PyObject *r = tseq ? PyObject_GetAttrString(reqs, "resources") : NULL;
        rseq = r ? PySequence_Tuple(r) : NULL;
        Py_XDECREF(r);
        if (rseq == NULL)
            goto done;
    } else if ((tseq = PyTuple_New(0)) == NULL || (rseq = PyTuple_New(0)) == NULL) {
        goto done;
    }
    Py_ssize_t nt = PyTuple_GET_SIZE(tseq), nr = PyTuple_GET_SIZE(rseq);
    treqs = PyMem_Calloc((size_t)nt + 1, sizeof *treqs);
    mm = PyMem_Calloc((size_t)nt + 1, sizeof *mm);
    rreqs = PyMem_Calloc((size_t)nr + 1, sizeof *rreqs);
    if (treqs == NULL || mm == NULL || rreqs == NULL || (teams = PyTuple_New(nt)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nt; i++) {
        PyObject *tr = PyTuple_GET_ITEM(tseq, i), *team = PyObject_GetAttrString(tr, "team");
        if (team == NULL)
            goto done;
        PyTuple_SET_ITEM(teams, i, team);
        int multimem;
        PyObject *m = PyObject_GetAttrString(tr, "multimem");
        multimem = m ? PyObject_IsTrue(m) : -1;
        Py_XDECREF(m);
        if (multimem < 0 || req_team(tr, "teams[].team", &treqs[i].team) < 0)
            goto done;
        treqs[i].multimem = (uint8_t)multimem;
        treqs[i].outMultimemHandle = &mm[i];
        treqs[i].next = i + 1 < nt ? &treqs[i + 1] : NULL;
    }
    for (Py_ssize_t i = 0; i < nr; i++) {
        if (make_resource(st, comm, PyTuple_GET_ITEM(rseq, i), &rreqs[i]) < 0)
            goto done;
        rreqs[i].req.next = NULL;
        if (i > 0)
            rreqs[i - 1].req.next = &rreqs[i].req;
    }
    if (nt > 0)
        req.teamRequirementsList = treqs;
    if (nr > 0)
        req.resourceRequirementsList = &rreqs[0].req;
    nx_struct_fit_library(NX_STRUCT_DEV_COMM_REQUIREMENTS, &req);
    if ((obj = nx_resource_alloc(st, NX_TYPE_DEV_COMM, c, DevComm_release)) == NULL)
        goto done;
    nx_DevComm *d = (nx_DevComm *)obj;
    if ((d->devobj = nx_struct_new(st, NX_STRUCT_DEV_COMM)) == NULL || nx_require(st, &nx_api.ncclDevCommCreate) < 0)
        goto done;
    ncclDevComm_t *dev = dev_of(st, d);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclDevCommCreate(comm, &req, dev));
    if (nx_check(st, rc, comm) < 0)
        goto done;
    d->base.open = 1;
    d->teams = Py_NewRef(teams);
    d->mm = mm;
    mm = NULL;
    if ((handles = PyTuple_New(nr)) == NULL)
        goto fail_open;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *v = resource_view(st, &rreqs[i]);
        if (v == NULL)
            goto fail_open;
        PyTuple_SET_ITEM(handles, i, v);
    }
    d->handles = Py_NewRef(handles);
    if (nx_resource_track(c, obj) < 0)
        goto done;
    result = Py_NewRef(obj);
    goto done;
fail_open: {
    /* Created: close() destroys it again; the first error is the one raised. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    nx_resource_close_quietly(obj);
    PyErr_Restore(et, ev, tb);
}
done:
    Py_XDECREF(obj);
    Py_XDECREF(teams);
    Py_XDECREF(handles);
    Py_XDECREF(tseq);
    Py_XDECREF(rseq);
    PyMem_Free(treqs);
    PyMem_Free(rreqs);
    PyMem_Free(mm);
    return result;
}

PyMethodDef nx_devcomm_methods[] = {
    NX_COMM_METHOD_DEF("create_dev_comm", Communicator_create_dev_comm, create_dev_comm__doc__),
    {NULL, NULL, 0, NULL},
};

int nx_devcomm_setup(PyObject *module, nx_state *st)
{
    PyType_Slot slots[] = {
        {Py_tp_dealloc, DevComm_dealloc},
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
                                (PyObject *)st->core_types[NX_TYPE_COMM_RESOURCE], "DevCommResource");
}
