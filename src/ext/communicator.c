/* nccl.core.Communicator (API.md section 5.9): construction, lifecycle, cached queries,
 * properties, status, resource tracking and the context-manager protocol. The collective and
 * point-to-point methods are in collectives.c, the resource-creating ones in resources.c; all of
 * them share this type's method table.
 *
 * Lifetime is explicit: destroy(), abort() or the `with` block. The finalizer never calls the
 * library (destroy is collective, and a collector running on one rank would hang the others); a
 * communicator collected while still valid only emits a ResourceWarning and leaks. */
#include "core.h"

#include <stdlib.h>
#include <string.h>

#include <structmember.h>

#include "structs.h"

#define NX_REQUIRE_OR(st, fn, fail)                                                      \
    do {                                                                                 \
        if (NX_UNLIKELY(!nx_loader_ready()) && nx_load_library(st) < 0)                  \
            return fail;                                                                 \
        if (NX_UNLIKELY(nx_api.fn == NULL)) {                                            \
            nx_raise_function_not_found(st, #fn, NULL);                                  \
            return fail;                                                                 \
        }                                                                                \
    } while (0)

/* ---- allocation ---- */

static void reset_caches(nx_Communicator *c)
{
    c->nranks = -1;
    c->rank = -1;
    c->device_id = NX_DEVICE_UNKNOWN;
    Py_CLEAR(c->device);
    Py_CLEAR(c->props);
}

/* A new communicator of type tp whose slot is `box` (a PointerBox, used directly) or a fresh
 * box holding `handle`. */
static nx_Communicator *comm_alloc(nx_state *st, PyTypeObject *tp, PyObject *box, void *handle)
{
    nx_Communicator *c = (nx_Communicator *)tp->tp_alloc(tp, 0);
    if (c == NULL)
        return NULL;
    if (box != NULL)
        c->box = Py_NewRef(box);
    else if ((c->box = PyObject_CallNoArgs((PyObject *)st->pointer_box_type)) == NULL)
        goto error;
    c->slot = &((nx_PointerBox *)c->box)->slot;
    if (box == NULL)
        *c->slot = handle;
    if ((c->resources = PyList_New(0)) == NULL)
        goto error;
    reset_caches(c);
    return c;
error:
    Py_DECREF(c);
    return NULL;
}

/* A new, null communicator of the same Python class as `like` (subclasses keep their class). */
static nx_Communicator *comm_new_like(nx_state *st, PyTypeObject *tp) { return comm_alloc(st, tp, NULL, NULL); }

static PyObject *Communicator_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ptr", NULL};
    PyObject *ptr = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:Communicator", kwlist, &ptr))
        return NULL;
    nx_state *st = nx_state_of_type(tp);
    if (st == NULL)
        return NULL;
    if (ptr != NULL && Py_IS_TYPE(ptr, st->pointer_box_type))
        return (PyObject *)comm_alloc(st, tp, ptr, NULL);
    void *handle = NULL;
    if (ptr != NULL) {
        intptr_t v;
        if (nx_intptr(ptr, "Communicator", "ptr", &v) < 0)
            return NULL;
        handle = (void *)v;
    }
    return (PyObject *)comm_alloc(st, tp, NULL, handle);
}

static int Communicator_traverse(PyObject *op, visitproc visit, void *arg)
{
    nx_Communicator *c = (nx_Communicator *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(c->box);
    Py_VISIT(c->device);
    Py_VISIT(c->props);
    Py_VISIT(c->resources);
    Py_VISIT(c->children);
    return 0;
}

static int Communicator_clear(PyObject *op)
{
    nx_Communicator *c = (nx_Communicator *)op;
    Py_CLEAR(c->device);
    Py_CLEAR(c->props);
    Py_CLEAR(c->resources);
    Py_CLEAR(c->children);
    /* The box stays until dealloc: slot points into it and may still be read. */
    return 0;
}

static PyObject *Communicator_repr(PyObject *op);

/* Never collective: a still-valid communicator is reported and leaked. */
static void Communicator_finalize(PyObject *op)
{
    nx_Communicator *c = (nx_Communicator *)op;
    if (c->slot == NULL || nx_comm_handle(c) == NULL)
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyErr_WarnFormat(PyExc_ResourceWarning, 1,
                         "Communicator (ptr=%p) was not destroyed; it is leaked (call destroy() or abort(), "
                         "or use it as a context manager)",
                         (void *)nx_comm_handle(c)) < 0)
        PyErr_WriteUnraisable(op);
    PyErr_Restore(type, value, tb);
}

static void Communicator_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    if (PyObject_CallFinalizerFromDealloc(op) < 0)
        return; /* resurrected */
    PyObject_GC_UnTrack(op);
    nx_Communicator *c = (nx_Communicator *)op;
    if (c->weakrefs != NULL)
        PyObject_ClearWeakRefs(op);
    Communicator_clear(op);
    Py_CLEAR(c->box);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* ---- shared helpers (core.h) ---- */

int nx_is_communicator(nx_state *st, PyObject *o)
{
    return PyObject_TypeCheck(o, st->core_types[NX_TYPE_COMMUNICATOR]);
}

ncclComm_t nx_comm_require(nx_state *st, nx_Communicator *c, const char *op)
{
    ncclComm_t h = nx_comm_handle(c);
    if (NX_UNLIKELY(h == NULL))
        nx_invalid(st, "Cannot %s: Communicator not initialized", op);
    return h;
}

/* One of the int queries (ncclCommCount, ncclCommUserRank, ncclCommCuDevice), cached in *cache. */
static int cached_query(nx_state *st, nx_Communicator *c, const char *op, int *cache,
                        ncclResult_t (*const *fnslot)(const ncclComm_t, int *), const char *symbol, int unknown,
                        int *out)
{
    if (NX_LIKELY(*cache != unknown)) {
        *out = *cache;
        return 0;
    }
    ncclComm_t h = nx_comm_require(st, c, op);
    if (h == NULL)
        return -1;
    if (!nx_loader_ready() && nx_load_library(st) < 0)
        return -1;
    if (*fnslot == NULL) {
        nx_raise_function_not_found(st, symbol, NULL);
        return -1;
    }
    int v = 0;
    ncclResult_t rc;
    NX_RUN(rc, (*fnslot)(h, &v));
    if (NX_FAILED(rc)) {
        nx_raise_status(st, rc, h);
        return -1;
    }
    *cache = *out = v;
    return 0;
}

int nx_comm_nranks(nx_state *st, nx_Communicator *c, const char *op, int *out)
{
    return cached_query(st, c, op, &c->nranks, &nx_api.ncclCommCount, "ncclCommCount", -1, out);
}

int nx_comm_rank(nx_state *st, nx_Communicator *c, const char *op, int *out)
{
    return cached_query(st, c, op, &c->rank, &nx_api.ncclCommUserRank, "ncclCommUserRank", -1, out);
}

static int comm_device_id(nx_state *st, nx_Communicator *c, const char *op, int *out)
{
    return cached_query(st, c, op, &c->device_id, &nx_api.ncclCommCuDevice, "ncclCommCuDevice",
                        NX_DEVICE_UNKNOWN, out);
}

static int host_flavour(void) { return nx_loader_ready() && nx_loader_info()->flavour == NX_FLAVOUR_HOST; }

static NX_COLD int wrong_device(nx_state *st, const nx_buffer *b, const char *name, int comm_device)
{
    char bdev[16], cdev[16];
    if (b->device == NX_DEVICE_HOST)
        strcpy(bdev, "host");
    else
        snprintf(bdev, sizeof bdev, "%d", b->device);
    if (comm_device == NX_DEVICE_HOST)
        strcpy(cdev, "host");
    else
        snprintf(cdev, sizeof cdev, "%d", comm_device);
    nx_invalid(st,
               "%s is on device %s, but communicator is on device %s. Buffers must be on the same device as the "
               "communicator.",
               name, bdev, cdev);
    return -1;
}

int nx_comm_check_device(nx_state *st, nx_Communicator *c, const nx_buffer *b, const char *name)
{
    if (host_flavour())
        return b->device == NX_DEVICE_HOST ? 0 : wrong_device(st, b, name, NX_DEVICE_HOST);
    int dev;
    if (comm_device_id(st, c, "get device", &dev) < 0)
        return -1;
    return b->device == dev ? 0 : wrong_device(st, b, name, dev);
}

int nx_comm_track(nx_Communicator *c, PyObject *resource)
{
    return PyList_Append(c->resources, resource);
}

/* ---- argument pieces of the creation calls ---- */

/* A config argument: None (NULL: NCCL's defaults, or the parent's for split/shrink) or an
 * NCCLConfig, whose C struct is rebuilt from its current fields (`_lowpp`) for this call.
 * *keep receives the Config wrapper that owns the struct (and its strings) until the call ends. */
static int config_arg(nx_state *st, PyObject *o, const char *fname, ncclConfig_t **out, PyObject **keep)
{
    *out = NULL;
    *keep = NULL;
    if (o == NULL || o == Py_None)
        return 0;
    PyObject *cls = nx_lazy(st, NX_LAZY_NCCL_CONFIG);
    if (cls == NULL)
        return -1;
    int ok = PyObject_IsInstance(o, cls);
    if (ok < 0)
        return -1;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s() argument 'config' must be an NCCLConfig or None, not %.200s", fname,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if ((*keep = PyObject_GetAttrString(o, "_lowpp")) == NULL)
        return -1;
    if ((*out = nx_struct_storage(st, *keep, NX_STRUCT_CONFIG)) == NULL) {
        Py_CLEAR(*keep);
        PyErr_SetString(PyExc_TypeError, "NCCLConfig._lowpp did not return a nccl.bindings.nccl.Config");
        return -1;
    }
    return 0;
}

/* Copies the 128 bytes of one nccl.core UniqueId into *out; 0, 1 when o is not one, -1 on error. */
static int read_unique_id(nx_state *st, PyObject *o, ncclUniqueId *out)
{
    PyObject *cls = nx_lazy(st, NX_LAZY_UNIQUE_ID);
    if (cls == NULL)
        return -1;
    int ok = PyObject_IsInstance(o, cls);
    if (ok <= 0)
        return ok < 0 ? -1 : 1;
    PyObject *internal = PyObject_GetAttrString(o, "_internal");
    if (internal == NULL)
        return -1;
    const ncclUniqueId *p = nx_struct_storage(st, internal, NX_STRUCT_UNIQUE_ID);
    if (p != NULL)
        memcpy(out, p, sizeof *out);
    Py_DECREF(internal);
    if (p == NULL) {
        PyErr_SetString(PyExc_TypeError, "UniqueId._internal is not a nccl.bindings.nccl.UniqueId");
        return -1;
    }
    return 0;
}

/* unique_id: a UniqueId or a non-empty list/tuple of them, into a PyMem array (*ids, freed by the
 * caller) of *nid entries. */
static int unique_ids_arg(nx_state *st, PyObject *o, ncclUniqueId **ids, int *nid)
{
    *ids = NULL;
    Py_ssize_t n = 1;
    int seq = PyList_Check(o) || PyTuple_Check(o);
    if (seq && (n = PySequence_Fast_GET_SIZE(o)) == 0) {
        nx_invalid(st, "unique_id sequence must not be empty");
        return -1;
    }
    if (n > INT_MAX) {
        nx_invalid(st, "unique_id sequence is too long");
        return -1;
    }
    if ((*ids = PyMem_Calloc((size_t)n, sizeof(ncclUniqueId))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = read_unique_id(st, seq ? PySequence_Fast_GET_ITEM(o, i) : o, &(*ids)[i]);
        if (r != 0) {
            if (r > 0)
                nx_invalid(st, "unique_id must be a UniqueId or a sequence of UniqueIds");
            PyMem_Free(*ids);
            *ids = NULL;
            return -1;
        }
    }
    *nid = (int)n;
    return 0;
}

/* A core UniqueId holding the given bytes. */
static PyObject *new_unique_id(nx_state *st, const ncclUniqueId *id)
{
    PyObject *cls = nx_lazy(st, NX_LAZY_UNIQUE_ID);
    if (cls == NULL)
        return NULL;
    PyObject *bytes = PyBytes_FromStringAndSize(id->internal, sizeof id->internal);
    if (bytes == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethod(cls, "from_bytes", "O", bytes);
    Py_DECREF(bytes);
    return r;
}

/* The argument check of the methods without parameters (METH_METHOD cannot be METH_NOARGS). */
static int no_args(const char *fname, Py_ssize_t nargs, PyObject *kwnames)
{
    if (NX_LIKELY(nx_total_args(nargs, kwnames) == 0))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes no arguments", fname);
    return -1;
}

/* ---- construction ---- */

static PyObject *comm_initialize(nx_state *st, nx_Communicator *c, PyObject *const *a)
{
    /* a: nranks, rank, unique_id, config */
    PyObject *keep = NULL, *result = NULL;
    ncclUniqueId *ids = NULL;
    int nranks, rank, nid;
    ncclConfig_t *cfg;
    if (nx_comm_handle(c) != NULL)
        return nx_invalid(st, "Communicator is already initialized");
    if (nx_int(a[0], "initialize", "nranks", &nranks) < 0 || nx_int(a[1], "initialize", "rank", &rank) < 0 ||
        unique_ids_arg(st, a[2], &ids, &nid) < 0 || config_arg(st, a[3], "initialize", &cfg, &keep) < 0)
        goto done;
    if (!nx_loader_ready() && nx_load_library(st) < 0)
        goto done;
    ncclResult_t rc;
    ncclComm_t *slot = (ncclComm_t *)c->slot;
    /* The newest call the library has: several ids need ncclCommInitRankScalable (2.23.4); one id
     * also works with ncclCommInitRankConfig (2.14.3, RCCL 2.22 among the libraries without the
     * scalable call), and without a config with ncclCommInitRank (every release: RCCL 2.13). */
    if (nx_api.ncclCommInitRankScalable != NULL) {
        NX_RUN(rc, nx_api.ncclCommInitRankScalable(slot, nranks, rank, nid, ids, cfg));
    } else if (nid > 1) {
        nx_raise_function_not_found(st, "ncclCommInitRankScalable", NULL);
        goto done;
    } else if (nx_api.ncclCommInitRankConfig != NULL) {
        NX_RUN(rc, nx_api.ncclCommInitRankConfig(slot, nranks, ids[0], rank, cfg));
    } else if (cfg == NULL && nx_api.ncclCommInitRank != NULL) {
        NX_RUN(rc, nx_api.ncclCommInitRank(slot, nranks, ids[0], rank));
    } else {
        nx_raise_function_not_found(st, cfg != NULL ? "ncclCommInitRankConfig" : "ncclCommInitRank", NULL);
        goto done;
    }
    reset_caches(c);
    if (NX_FAILED(rc)) {
        *c->slot = NULL;
        nx_raise_status(st, rc, NULL);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(ids);
    Py_XDECREF(keep);
    return result;
}

NX_MSIG(initialize, 4, 3, "nranks", "rank", "unique_id", "config");
PyDoc_STRVAR(initialize__doc__, "initialize(nranks, rank, unique_id, config=None)\n--\n\n"
"Create the communicator in place: ncclCommInitRankScalable with every id given; for one id on\n"
"libraries without it, ncclCommInitRankConfig, or ncclCommInitRank when config is None. Collective.");
static PyObject *Communicator_initialize(NX_COMM_METHOD_ARGS)
{
    PyObject *a[4];
    if (nx_margs(&M_initialize, args, nargs, kwnames, a) < 0)
        return NULL;
    return comm_initialize(NX_COMM_STATE(cls), (nx_Communicator *)self, a);
}

NX_MSIG(init, 4, 3, "nranks", "rank", "unique_id", "config");
PyDoc_STRVAR(init__doc__, "init(nranks, rank, unique_id, config=None)\n--\n\n"
"Create a communicator: cls() then initialize(...). Collective over the nranks ranks.");
static PyObject *Communicator_init(PyObject *type, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    PyObject *a[4];
    if (nx_margs(&M_init, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    PyObject *c = PyObject_CallNoArgs(type);
    if (c == NULL)
        return NULL;
    if (!nx_is_communicator(st, c)) {
        Py_DECREF(c);
        PyErr_SetString(PyExc_TypeError, "init() needs a Communicator class");
        return NULL;
    }
    PyObject *r = comm_initialize(st, (nx_Communicator *)c, a);
    if (r == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    Py_DECREF(r);
    return c;
}

/* init_all's devices argument as a PyMem int array; *n = 0 for an empty list. */
static int devices_arg(nx_state *st, PyObject *o, int **devs, Py_ssize_t *n)
{
    PyObject *seq = NULL;
    *devs = NULL;
    if (o == NULL || o == Py_None) {
        PyObject *fn = nx_lazy(st, NX_LAZY_NUM_DEVICES);
        PyObject *num = fn ? PyObject_CallNoArgs(fn) : NULL;
        if (num == NULL)
            return -1;
        Py_ssize_t k = PyNumber_AsSsize_t(num, PyExc_OverflowError);
        Py_DECREF(num);
        if (k < 0)
            return k == -1 && PyErr_Occurred() ? -1 : 0;
        *n = k;
    } else if (PyLong_Check(o) && !PyBool_Check(o)) {
        Py_ssize_t k = PyLong_AsSsize_t(o);
        if (k == -1 && PyErr_Occurred())
            return -1;
        *n = k < 0 ? 0 : k;
    } else if (PyList_Check(o) || PyTuple_Check(o) || PyRange_Check(o)) {
        if ((seq = PySequence_Fast(o, "devices")) == NULL)
            return -1;
        *n = PySequence_Fast_GET_SIZE(seq);
    } else {
        PyErr_Format(PyExc_TypeError, "devices must be an integer, sequence of integers, or None, got %.200s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (*n > INT_MAX) {
        Py_XDECREF(seq);
        PyErr_SetString(PyExc_OverflowError, "init_all(): too many devices");
        return -1;
    }
    if ((*devs = PyMem_Calloc(*n > 0 ? (size_t)*n : 1, sizeof(int))) == NULL) {
        Py_XDECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (seq == NULL) {
            (*devs)[i] = (int)i;
            continue;
        }
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(item) || PyBool_Check(item)) {
            PyErr_Format(PyExc_TypeError, "devices must be an integer, sequence of integers, or None, got %.200s "
                         "in the sequence", Py_TYPE(item)->tp_name);
            goto error;
        }
        if (nx_int(item, "init_all", "devices", &(*devs)[i]) < 0)
            goto error;
    }
    Py_XDECREF(seq);
    return 0;
error:
    Py_XDECREF(seq);
    PyMem_Free(*devs);
    *devs = NULL;
    return -1;
}

NX_MSIG(init_all, 1, 0, "devices");
PyDoc_STRVAR(init_all__doc__, "init_all(devices=None)\n--\n\n"
"One communicator per device in this process (ncclCommInitAll); rank i uses devices[i]. None means\n"
"every visible device, an int n means range(n). Each must be destroyed separately.");
static PyObject *Communicator_init_all(PyObject *type, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    PyObject *a[1];
    if (nx_margs(&M_init_all, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    int *devs = NULL;
    ncclComm_t *comms = NULL;
    PyObject *list = NULL;
    Py_ssize_t n = 0;
    if (devices_arg(st, a[0], &devs, &n) < 0)
        return NULL;
    if ((list = PyList_New(0)) == NULL || n == 0)
        goto done;
    if (!nx_loader_ready() && nx_load_library(st) < 0)
        goto error;
    if (nx_api.ncclCommInitAll == NULL) {
        nx_raise_function_not_found(st, "ncclCommInitAll", NULL);
        goto error;
    }
    if ((comms = PyMem_Calloc((size_t)n, sizeof *comms)) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitAll(comms, (int)n, devs));
    if (NX_FAILED(rc)) {
        nx_raise_status(st, rc, NULL);
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = PyObject_CallNoArgs(type);
        if (c == NULL || !nx_is_communicator(st, c) || PyList_Append(list, c) < 0) {
            Py_XDECREF(c);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "init_all() needs a Communicator class");
            /* The library made every communicator: hand the ones not wrapped back to it. */
            for (Py_ssize_t j = i; j < n; j++)
                nx_api.ncclCommDestroy(comms[j]);
            goto error;
        }
        *((nx_Communicator *)c)->slot = comms[i];
        Py_DECREF(c);
    }
    goto done;
error:
    Py_CLEAR(list);
done:
    PyMem_Free(devs);
    PyMem_Free(comms);
    return list;
}

/* A child created by split/shrink/grow: kept referenced while its creation is in progress, so a
 * nonblocking library can still write its slot (API.md 5.9.1). */
static PyObject *child_result(nx_state *st, nx_Communicator *parent, nx_Communicator *child, ncclResult_t rc,
                              ncclComm_t comm)
{
    if (NX_FAILED(rc)) {
        Py_DECREF(child);
        return nx_raise_status(st, rc, comm);
    }
    if (rc == ncclInProgress) {
        if (parent->children == NULL && (parent->children = PyList_New(0)) == NULL)
            goto error;
        if (PyList_Append(parent->children, (PyObject *)child) < 0)
            goto error;
    }
    return (PyObject *)child;
error:
    Py_DECREF(child);
    return NULL;
}

NX_MSIG(split, 3, 0, "color", "key", "config");
PyDoc_STRVAR(split__doc__, "split(color=None, key=0, config=None)\n--\n\n"
"ncclCommSplit. Collective. color=None (NCCL_SPLIT_NOCOLOR) gives this rank a null communicator;\n"
"config=None inherits the parent's.");
static PyObject *Communicator_split(NX_COMM_METHOD_ARGS)
{
    PyObject *a[3];
    if (nx_margs(&M_split, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(st, c, "split");
    if (comm == NULL)
        return NULL;
    int color = NCCL_SPLIT_NOCOLOR, key = 0;
    ncclConfig_t *cfg;
    PyObject *keep;
    if ((a[0] != NULL && a[0] != Py_None && nx_int(a[0], "split", "color", &color) < 0) ||
        (a[1] != NULL && nx_int(a[1], "split", "key", &key) < 0))
        return NULL;
    NX_REQUIRE(st, ncclCommSplit);
    if (config_arg(st, a[2], "split", &cfg, &keep) < 0)
        return NULL;
    nx_Communicator *child = comm_new_like(st, Py_TYPE(self));
    if (child == NULL) {
        Py_XDECREF(keep);
        return NULL;
    }
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommSplit(comm, color, key, (ncclComm_t *)child->slot, cfg));
    Py_XDECREF(keep);
    return child_result(st, c, child, rc, comm);
}

/* exclude_ranks: None or a sequence of ints, into a PyMem array. */
static int ranks_arg(PyObject *o, int **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (o == NULL || o == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(o, "shrink() argument 'exclude_ranks' must be a sequence of ints or None");
    if (seq == NULL)
        return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k > INT_MAX || (*out = PyMem_Calloc(k > 0 ? (size_t)k : 1, sizeof(int))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++)
        if (nx_int(PySequence_Fast_GET_ITEM(seq, i), "shrink", "exclude_ranks", &(*out)[i]) < 0) {
            Py_DECREF(seq);
            PyMem_Free(*out);
            *out = NULL;
            return -1;
        }
    Py_DECREF(seq);
    *n = (int)k;
    return 0;
}

NX_MSIG(shrink, 3, 0, "exclude_ranks", "config", "flag");
PyDoc_STRVAR(shrink__doc__, "shrink(exclude_ranks=None, config=None, flag=CommShrinkFlag.DEFAULT)\n--\n\n"
"ncclCommShrink: a communicator without the excluded ranks, called by the surviving ranks only.\n"
"flag=ABORT aborts outstanding operations first.");
static PyObject *Communicator_shrink(NX_COMM_METHOD_ARGS)
{
    PyObject *a[3];
    if (nx_margs(&M_shrink, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(st, c, "shrink");
    if (comm == NULL)
        return NULL;
    int flag = NCCL_SHRINK_DEFAULT, nex;
    if (a[2] != NULL && nx_int(a[2], "shrink", "flag", &flag) < 0)
        return NULL;
    NX_REQUIRE(st, ncclCommShrink);
    int *ex;
    ncclConfig_t *cfg;
    PyObject *keep;
    if (ranks_arg(a[0], &ex, &nex) < 0)
        return NULL;
    if (config_arg(st, a[1], "shrink", &cfg, &keep) < 0) {
        PyMem_Free(ex);
        return NULL;
    }
    nx_Communicator *child = comm_new_like(st, Py_TYPE(self));
    PyObject *r = NULL;
    if (child != NULL) {
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommShrink(comm, ex, nex, (ncclComm_t *)child->slot, cfg, flag));
        r = child_result(st, c, child, rc, comm);
    }
    PyMem_Free(ex);
    Py_XDECREF(keep);
    return r;
}

NX_MSIG(grow, 4, 1, "nranks", "unique_id", "rank", "config");
PyDoc_STRVAR(grow__doc__, "grow(nranks, unique_id=None, rank=None, config=None)\n--\n\n"
"ncclCommGrow. Existing root: comm.grow(n, uid); existing non-root: comm.grow(n); a new rank:\n"
"Communicator().grow(n, uid, rank=r).");
static PyObject *Communicator_grow(NX_COMM_METHOD_ARGS)
{
    PyObject *a[4];
    if (nx_margs(&M_grow, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    int nranks, rank = -1, is_new = a[2] != NULL && a[2] != Py_None;
    ncclComm_t comm = nx_comm_handle(c);
    if (is_new && comm != NULL)
        return nx_invalid(st, "New ranks must use a null communicator (Communicator())");
    if (!is_new && comm == NULL)
        return nx_invalid(st, "Existing ranks must use an initialized communicator");
    if (nx_int(a[0], "grow", "nranks", &nranks) < 0 || (is_new && nx_int(a[2], "grow", "rank", &rank) < 0))
        return NULL;
    ncclUniqueId id, *idp = NULL;
    if (a[1] != NULL && a[1] != Py_None) {
        int r = read_unique_id(st, a[1], &id);
        if (r != 0)
            return r > 0 ? nx_invalid(st, "unique_id must be a UniqueId or None") : NULL;
        idp = &id;
    }
    NX_REQUIRE(st, ncclCommGrow);
    ncclConfig_t *cfg;
    PyObject *keep;
    if (config_arg(st, a[3], "grow", &cfg, &keep) < 0)
        return NULL;
    nx_Communicator *child = comm_new_like(st, Py_TYPE(self));
    PyObject *r = NULL;
    if (child != NULL) {
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommGrow(comm, nranks, idp, rank, (ncclComm_t *)child->slot, cfg));
        r = child_result(st, c, child, rc, comm);
    }
    Py_XDECREF(keep);
    return r;
}

PyDoc_STRVAR(get_unique_id__doc__, "get_unique_id()\n--\n\n"
"ncclCommGetUniqueId: a single-use id for grow(), called by the grow root only.");
static PyObject *Communicator_get_unique_id(NX_COMM_METHOD_ARGS)
{
    (void)args;
    nx_state *st = NX_COMM_STATE(cls);
    if (no_args("get_unique_id", nargs, kwnames) < 0)
        return NULL;
    ncclComm_t comm = nx_comm_require(st, (nx_Communicator *)self, "get_unique_id");
    if (comm == NULL)
        return NULL;
    NX_REQUIRE(st, ncclCommGetUniqueId);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    NX_CALL(st, comm, nx_api.ncclCommGetUniqueId(comm, &id));
    return new_unique_id(st, &id);
}

PyDoc_STRVAR(from_env__doc__, "from_env(**kwargs)\n--\n\n"
"A communicator from the launcher's environment: python -m nccl.run, torchrun or mpirun\n"
"(see nccl.core._env).");
static PyObject *Communicator_from_env(PyObject *type, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    if (nargs != 0) {
        PyErr_SetString(PyExc_TypeError, "from_env() takes keyword arguments only");
        return NULL;
    }
    PyObject *fn = nx_lazy(NX_COMM_STATE(cls), NX_LAZY_FROM_ENV);
    if (fn == NULL)
        return NULL;
    /* from_env(cls, **kwargs): the vectorcall array needs cls in front of the keyword values. */
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[8], **argv = nkw + 1 <= 8 ? small : PyMem_Malloc((size_t)(nkw + 1) * sizeof(PyObject *));
    if (argv == NULL)
        return PyErr_NoMemory();
    argv[0] = type;
    for (Py_ssize_t i = 0; i < nkw; i++)
        argv[1 + i] = args[i];
    PyObject *r = PyObject_Vectorcall(fn, argv, 1, kwnames);
    if (argv != small)
        PyMem_Free(argv);
    return r;
}

/* ---- teardown ---- */

PyDoc_STRVAR(close_all_resources__doc__, "close_all_resources()\n--\n\n"
"Close every tracked resource (registered buffers and windows, custom operators), swallowing\n"
"errors. Idempotent.");
static PyObject *Communicator_close_all_resources(PyObject *self, PyObject *unused)
{
    (void)unused;
    nx_Communicator *c = (nx_Communicator *)self;
    if (c->resources == NULL || PyList_GET_SIZE(c->resources) == 0)
        Py_RETURN_NONE;
    /* Detach the list first: closing runs Python code that may track or close more. */
    PyObject *list = c->resources;
    if ((c->resources = PyList_New(0)) == NULL) {
        c->resources = list;
        return NULL;
    }
    for (Py_ssize_t i = PyList_GET_SIZE(list); i-- > 0;)
        nx_resource_close_quietly(PyList_GET_ITEM(list, i));
    Py_DECREF(list);
    Py_RETURN_NONE;
}

/* destroy() and abort(): resources first, then the library call; the handle is dropped either way
 * (the library releases the communicator even when it reports an error). */
static PyObject *teardown(nx_state *st, nx_Communicator *c, int abort)
{
    ncclComm_t comm = nx_comm_handle(c);
    if (comm == NULL)
        Py_RETURN_NONE;
    if (abort)
        NX_REQUIRE(st, ncclCommAbort);
    else
        NX_REQUIRE(st, ncclCommDestroy);
    PyObject *r = Communicator_close_all_resources((PyObject *)c, NULL);
    if (r == NULL)
        PyErr_Clear();
    Py_XDECREF(r);
    ncclResult_t rc;
    NX_RUN(rc, abort ? nx_api.ncclCommAbort(comm) : nx_api.ncclCommDestroy(comm));
    *c->slot = NULL;
    reset_caches(c);
    Py_CLEAR(c->children);
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, NULL);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(destroy__doc__, "destroy()\n--\n\n"
"Close the tracked resources, then ncclCommDestroy (an intra-node collective). No-op when null.");
static PyObject *Communicator_destroy(NX_COMM_METHOD_ARGS)
{
    if (no_args("destroy", nargs, kwnames) < 0)
        return NULL;
    (void)args;
    return teardown(NX_COMM_STATE(cls), (nx_Communicator *)self, 0);
}

PyDoc_STRVAR(abort__doc__, "abort()\n--\n\n"
"Close the tracked resources, then ncclCommAbort: stops in-flight operations (also from another\n"
"thread). No-op when null.");
static PyObject *Communicator_abort(NX_COMM_METHOD_ARGS)
{
    if (no_args("abort", nargs, kwnames) < 0)
        return NULL;
    (void)args;
    return teardown(NX_COMM_STATE(cls), (nx_Communicator *)self, 1);
}

PyDoc_STRVAR(finalize__doc__, "finalize()\n--\n\n"
"ncclCommFinalize: flush outstanding work (collective). No-op when null; a nonblocking\n"
"communicator then reports InProgress from get_async_error() until done.");
static PyObject *Communicator_finalize_method(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (no_args("finalize", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_handle((nx_Communicator *)self);
    if (comm == NULL)
        Py_RETURN_NONE;
    NX_REQUIRE(st, ncclCommFinalize);
    NX_CALL(st, comm, nx_api.ncclCommFinalize(comm));
    Py_RETURN_NONE;
}

/* (comm, int flags) calls with a default flag value: revoke and suspend. */
static PyObject *flag_call(NX_COMM_METHOD_ARGS, const nx_msig *sig, int dflt,
                           ncclResult_t (*const *fnslot)(ncclComm_t, int), const char *symbol)
{
    PyObject *a[1];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require(st, (nx_Communicator *)self, sig->fname);
    int flags = dflt;
    if (comm == NULL || (a[0] != NULL && nx_int(a[0], sig->fname, sig->names[0], &flags) < 0))
        return NULL;
    if (!nx_loader_ready() && nx_load_library(st) < 0)
        return NULL;
    if (*fnslot == NULL)
        return nx_raise_function_not_found(st, symbol, NULL);
    NX_CALL(st, comm, (*fnslot)(comm, flags));
    Py_RETURN_NONE;
}

NX_MSIG(revoke, 1, 0, "flags");
PyDoc_STRVAR(revoke__doc__, "revoke(flags=0)\n--\n\n"
"ncclCommRevoke: stop in-flight operations; get_async_error() reports InProgress until quiescent.");
static PyObject *Communicator_revoke(NX_COMM_METHOD_ARGS)
{
    return flag_call(self, cls, args, nargs, kwnames, &M_revoke, NCCL_REVOKE_DEFAULT, &nx_api.ncclCommRevoke,
                     "ncclCommRevoke");
}

NX_MSIG(suspend, 1, 0, "flags");
PyDoc_STRVAR(suspend__doc__, "suspend(flags=CommSuspendFlag.MEM)\n--\n\n"
"ncclCommSuspend: release dynamic GPU memory; unusable until resume().");
static PyObject *Communicator_suspend(NX_COMM_METHOD_ARGS)
{
    return flag_call(self, cls, args, nargs, kwnames, &M_suspend, NCCL_SUSPEND_MEM, &nx_api.ncclCommSuspend,
                     "ncclCommSuspend");
}

PyDoc_STRVAR(resume__doc__, "resume()\n--\n\nncclCommResume: undo suspend().");
static PyObject *Communicator_resume(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (no_args("resume", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require(st, (nx_Communicator *)self, "resume");
    if (comm == NULL)
        return NULL;
    NX_REQUIRE(st, ncclCommResume);
    NX_CALL(st, comm, nx_api.ncclCommResume(comm));
    Py_RETURN_NONE;
}

/* ---- status ---- */

PyDoc_STRVAR(get_last_error__doc__, "get_last_error()\n--\n\nncclGetLastError: the library's last error text.");
static PyObject *Communicator_get_last_error(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (no_args("get_last_error", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require(st, (nx_Communicator *)self, "get last error");
    if (comm == NULL)
        return NULL;
    NX_REQUIRE(st, ncclGetLastError);
    const char *s = nx_api.ncclGetLastError(comm); /* a string lookup: does not block */
    return PyUnicode_DecodeUTF8(s ? s : "", s ? (Py_ssize_t)strlen(s) : 0, "replace");
}

PyDoc_STRVAR(get_async_error__doc__, "get_async_error()\n--\n\n"
"ncclCommGetAsyncError: the state code as a Result member (Success, InProgress or an error), not\n"
"raised. Once it is not InProgress, split/shrink children kept alive are released.");
static PyObject *Communicator_get_async_error(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (no_args("get_async_error", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(st, c, "get async error");
    if (comm == NULL)
        return NULL;
    NX_REQUIRE(st, ncclCommGetAsyncError);
    ncclResult_t state = ncclSuccess;
    NX_CALL(st, comm, nx_api.ncclCommGetAsyncError(comm, &state));
    if (state != ncclInProgress)
        Py_CLEAR(c->children);
    PyObject *code = PyLong_FromLong((long)state);
    if (code == NULL || (unsigned)state >= ncclNumResults)
        return code;
    PyObject *result_enum = nx_lazy(st, NX_LAZY_RESULT);
    PyObject *member = result_enum ? PyObject_CallOneArg(result_enum, code) : NULL;
    Py_DECREF(code);
    return member;
}

NX_MSIG(get_mem_stat, 1, 1, "stat");
PyDoc_STRVAR(get_mem_stat__doc__, "get_mem_stat(stat)\n--\n\n"
"ncclCommMemStats: bytes for the NcclCommMemStat kind (0/1 for GPU_MEM_SUSPENDED).");
static PyObject *Communicator_get_mem_stat(NX_COMM_METHOD_ARGS)
{
    PyObject *a[1];
    if (nx_margs(&M_get_mem_stat, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require(st, (nx_Communicator *)self, "get mem stat");
    int stat;
    if (comm == NULL || nx_enum(a[0], "get_mem_stat", "stat", 0, 3, "an NcclCommMemStat", &stat) < 0)
        return NULL;
    NX_REQUIRE(st, ncclCommMemStats);
    uint64_t value = 0;
    NX_CALL(st, comm, nx_api.ncclCommMemStats(comm, (ncclCommMemStat_t)stat, &value));
    return PyLong_FromUnsignedLongLong(value);
}

/* ---- context manager ---- */

static PyObject *Communicator_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

PyDoc_STRVAR(exit__doc__, "__exit__(exc_type, exc, tb)\n--\n\n"
"destroy(), or abort() when an exception is propagating. Never suppresses the exception.");
static PyObject *Communicator_exit(NX_COMM_METHOD_ARGS)
{
    (void)kwnames;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "__exit__() takes exactly 3 arguments");
        return NULL;
    }
    PyObject *r = teardown(NX_COMM_STATE(cls), (nx_Communicator *)self, args[0] != Py_None);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* ---- properties ---- */

static nx_state *getter_state(PyObject *self) { return nx_state_of_type(Py_TYPE(self)); }

static PyObject *get_ptr(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(nx_comm_handle((nx_Communicator *)self));
}

static PyObject *get_is_valid(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(nx_comm_handle((nx_Communicator *)self) != NULL);
}

static PyObject *get_nranks(PyObject *self, void *closure)
{
    (void)closure;
    nx_state *st = getter_state(self);
    int v;
    if (st == NULL || nx_comm_nranks(st, (nx_Communicator *)self, "get nranks", &v) < 0)
        return NULL;
    return PyLong_FromLong(v);
}

static PyObject *get_rank(PyObject *self, void *closure)
{
    (void)closure;
    nx_state *st = getter_state(self);
    int v;
    if (st == NULL || nx_comm_rank(st, (nx_Communicator *)self, "get rank", &v) < 0)
        return NULL;
    return PyLong_FromLong(v);
}

static PyObject *get_device(PyObject *self, void *closure)
{
    (void)closure;
    nx_Communicator *c = (nx_Communicator *)self;
    nx_state *st = getter_state(self);
    int dev;
    if (st == NULL || comm_device_id(st, c, "get device", &dev) < 0)
        return NULL;
    if (c->device == NULL) {
        PyObject *fn = nx_lazy(st, NX_LAZY_GET_DEVICE);
        if (fn == NULL)
            return NULL;
        PyObject *id = PyLong_FromLong(dev);
        if (id == NULL)
            return NULL;
        c->device = PyObject_CallOneArg(fn, id);
        Py_DECREF(id);
        if (c->device == NULL)
            return NULL;
    }
    return Py_NewRef(c->device);
}

/* The cached ncclCommQueryProperties struct; NULL with an exception. */
static const ncclCommProperties_t *properties(PyObject *self, const char *op)
{
    nx_Communicator *c = (nx_Communicator *)self;
    nx_state *st = getter_state(self);
    if (st == NULL)
        return NULL;
    if (c->props == NULL) {
        ncclComm_t comm = nx_comm_require(st, c, op);
        if (comm == NULL)
            return NULL;
        NX_REQUIRE_OR(st, ncclCommQueryProperties, NULL);
        PyObject *obj = nx_struct_new(st, NX_STRUCT_COMM_PROPERTIES);
        if (obj == NULL)
            return NULL;
        ncclCommProperties_t *props = nx_struct_storage(st, obj, NX_STRUCT_COMM_PROPERTIES);
        nx_struct_fit_library(NX_STRUCT_COMM_PROPERTIES, props);
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommQueryProperties(comm, props));
        if (NX_FAILED(rc)) {
            Py_DECREF(obj);
            nx_raise_status(st, rc, comm);
            return NULL;
        }
        c->props = obj;
    }
    return nx_struct_storage(st, c->props, NX_STRUCT_COMM_PROPERTIES);
}

/* A GIN transport code as an NcclGinType member when it is one the flavour defines (RCCL's
 * numbering of its own transports has moved between releases: only 0, 2, 3 are stable there),
 * else the plain int. */
static PyObject *gin_type_value(nx_state *st, int v)
{
    int member = v == 0 || v == 2 || v == 3 || (v == 4 && nx_loader_info()->flavour != NX_FLAVOUR_RCCL);
    PyObject *num = PyLong_FromLong(v);
    if (num == NULL || !member)
        return num;
    PyObject *cls = nx_lazy(st, NX_LAZY_GIN_TYPE);
    PyObject *r = cls ? PyObject_CallOneArg(cls, num) : NULL;
    Py_DECREF(num);
    return r;
}

#define PROPERTY_GETTER(name, expr)                                    \
    static PyObject *get_##name(PyObject *self, void *closure)        \
    {                                                                 \
        (void)closure;                                                \
        const ncclCommProperties_t *p = properties(self, "get " #name); \
        if (p == NULL)                                                \
            return NULL;                                              \
        return expr;                                                  \
    }

PROPERTY_GETTER(cuda_dev, PyLong_FromLong(p->cudaDev))
PROPERTY_GETTER(nvml_dev, PyLong_FromLong(p->nvmlDev))
PROPERTY_GETTER(device_api_support, PyBool_FromLong(p->deviceApiSupport))
PROPERTY_GETTER(multimem_support, PyBool_FromLong(p->multimemSupport))
PROPERTY_GETTER(host_rma_support, PyBool_FromLong(p->hostRmaSupport))
PROPERTY_GETTER(n_lsa_teams, PyLong_FromLong(p->nLsaTeams))
PROPERTY_GETTER(gin_type, gin_type_value(getter_state(self), p->ginType))
PROPERTY_GETTER(railed_gin_type, gin_type_value(getter_state(self), p->railedGinType))

static PyObject *Communicator_repr(PyObject *op)
{
    nx_Communicator *c = (nx_Communicator *)op;
    ncclComm_t comm = nx_comm_handle(c);
    if (comm == NULL)
        return PyUnicode_FromString("<Communicator: null (ptr=0)>");
    nx_state *st = getter_state(op);
    int rank, nranks, dev;
    if (st == NULL || nx_comm_rank(st, c, "get rank", &rank) < 0 || nx_comm_nranks(st, c, "get nranks", &nranks) < 0 ||
        comm_device_id(st, c, "get device", &dev) < 0) {
        PyErr_Clear();
        return PyUnicode_FromFormat("<Communicator: ptr=%p>", (void *)comm);
    }
    if (host_flavour())
        return PyUnicode_FromFormat("<Communicator: rank=%d/%d, device=host, ptr=%p>", rank, nranks, (void *)comm);
    return PyUnicode_FromFormat("<Communicator: rank=%d/%d, device=%d, ptr=%p>", rank, nranks, dev, (void *)comm);
}

/* ---- the type ---- */

#define QUERY_DOC(text) text " Raises NcclInvalid on a null communicator."

static PyGetSetDef Communicator_getset[] = {
    {"ptr", get_ptr, NULL, "The raw ncclComm_t (0 when null or destroyed).", NULL},
    {"is_valid", get_is_valid, NULL, "True while the communicator is initialised and not destroyed.", NULL},
    {"nranks", get_nranks, NULL, QUERY_DOC("Number of ranks (ncclCommCount, cached)."), NULL},
    {"rank", get_rank, NULL, QUERY_DOC("This rank (ncclCommUserRank, cached)."), NULL},
    {"device", get_device, NULL, QUERY_DOC("The cuda.core Device (real or the shim) of ncclCommCuDevice."), NULL},
    {"cuda_dev", get_cuda_dev, NULL, QUERY_DOC("CUDA/HIP device ordinal (ncclCommQueryProperties)."), NULL},
    {"nvml_dev", get_nvml_dev, NULL, QUERY_DOC("NVML device index (ncclCommQueryProperties)."), NULL},
    {"device_api_support", get_device_api_support, NULL, QUERY_DOC("Device API usable."), NULL},
    {"multimem_support", get_multimem_support, NULL, QUERY_DOC("Multimem (NVLS) usable."), NULL},
    {"host_rma_support", get_host_rma_support, NULL, QUERY_DOC("Host-initiated RMA usable."), NULL},
    {"n_lsa_teams", get_n_lsa_teams, NULL, QUERY_DOC("Number of LSA teams."), NULL},
    {"gin_type", get_gin_type, NULL, QUERY_DOC("GIN transport: an NcclGinType member or a plain int."), NULL},
    {"railed_gin_type", get_railed_gin_type, NULL, QUERY_DOC("Railed GIN transport, as gin_type."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)
#define CLASS_METHOD(name) \
    {#name, (PyCFunction)(void (*)(void))Communicator_##name, METH_METHOD | METH_FASTCALL | METH_KEYWORDS | METH_CLASS, name##__doc__}

static PyMethodDef Communicator_own_methods[] = {
    CLASS_METHOD(init),
    CLASS_METHOD(init_all),
    CLASS_METHOD(from_env),
    METHOD(initialize),
    METHOD(split),
    METHOD(shrink),
    METHOD(grow),
    METHOD(get_unique_id),
    NX_COMM_METHOD_DEF("finalize", Communicator_finalize_method, finalize__doc__),
    METHOD(destroy),
    METHOD(abort),
    METHOD(revoke),
    METHOD(suspend),
    METHOD(resume),
    METHOD(get_last_error),
    METHOD(get_async_error),
    METHOD(get_mem_stat),
    {"close_all_resources", Communicator_close_all_resources, METH_NOARGS, close_all_resources__doc__},
    {"__enter__", Communicator_enter, METH_NOARGS, "Return self."},
    NX_COMM_METHOD_DEF("__exit__", Communicator_exit, exit__doc__),
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Communicator_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(nx_Communicator, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(Communicator__doc__, "Communicator(ptr=0)\n--\n\n"
"One NCCL communicator. Create it with Communicator.init(nranks, rank, unique_id) (or init_all,\n"
"split, shrink, grow); wrap an existing ncclComm_t with Communicator(ptr). Release it explicitly\n"
"with destroy() or abort(), or use it as a context manager. Not thread-safe, as in NCCL.");

/* The method table is this file's methods followed by collectives.c's and resources.c's, joined
 * once at setup (slots need one array that outlives the type). */
static PyMethodDef *joined_methods;

static PyMethodDef *join_methods(void)
{
    const PyMethodDef *parts[] = {Communicator_own_methods, nx_collective_methods, nx_resource_methods};
    size_t n = 0;
    for (size_t p = 0; p < 3; p++)
        for (const PyMethodDef *m = parts[p]; m->ml_name != NULL; m++)
            n++;
    /* Process-lifetime (shared by every interpreter that imports the module), never freed. */
    PyMethodDef *all = calloc(n + 1, sizeof *all);
    if (all == NULL)
        return NULL;
    n = 0;
    for (size_t p = 0; p < 3; p++)
        for (const PyMethodDef *m = parts[p]; m->ml_name != NULL; m++)
            all[n++] = *m;
    return all;
}

int nx_communicator_setup(PyObject *module, nx_state *st)
{
    if (joined_methods == NULL && (joined_methods = join_methods()) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyType_Slot slots[] = {
        {Py_tp_doc, (void *)Communicator__doc__},
        {Py_tp_new, Communicator_new},
        {Py_tp_dealloc, Communicator_dealloc},
        {Py_tp_finalize, Communicator_finalize},
        {Py_tp_traverse, Communicator_traverse},
        {Py_tp_clear, Communicator_clear},
        {Py_tp_repr, Communicator_repr},
        {Py_tp_methods, joined_methods},
        {Py_tp_getset, Communicator_getset},
        {Py_tp_members, Communicator_members},
        {0, NULL},
    };
    PyType_Spec spec = {
        .name = "nccl.core.Communicator",
        .basicsize = sizeof(nx_Communicator),
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
        .slots = slots,
    };
    PyObject *tp = PyType_FromModuleAndSpec(module, &spec, NULL);
    if (tp == NULL)
        return -1;
    st->core_types[NX_TYPE_COMMUNICATOR] = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, "Communicator", tp);
}
