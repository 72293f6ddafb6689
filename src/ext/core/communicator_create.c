/* Communicator construction (docs/compatibility.md#communicator): init, initialize, init_all, split, shrink,
 * grow and get_unique_id, with the argument pieces they share (config, unique ids). The type itself
 * is in communicator.c; from_env is Python (nccl.core.communicator), registered as its attribute. */
#include "core/core.h"

#include <string.h>
#include <unistd.h>

#include "structs/structs.h"

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
    /* owned items: isinstance() and the _internal attribute run Python code (docs/architecture.md) */
    PyObject *items = PyList_Check(o) || PyTuple_Check(o) ? nx_seq_snapshot(o) : PyTuple_Pack(1, o);
    if (items == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int rc = -1;
    if (n == 0) {
        nx_invalid(st, "unique_id sequence must not be empty");
        goto done;
    }
    if (n > INT_MAX) {
        nx_invalid(st, "unique_id sequence is too long");
        goto done;
    }
    if ((*ids = PyMem_Calloc((size_t)n, sizeof(ncclUniqueId))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = read_unique_id(st, PyTuple_GET_ITEM(items, i), &(*ids)[i]);
        if (r != 0) {
            if (r > 0)
                nx_invalid(st, "unique_id must be a UniqueId or a sequence of UniqueIds");
            PyMem_Free(*ids);
            *ids = NULL;
            goto done;
        }
    }
    *nid = (int)n;
    rc = 0;
done:
    Py_DECREF(items);
    return rc;
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

/* ---- the flight recorder (docs/api/trace.md) ---- */

/* Gives the communicator being created its ring and records its Init entry; the mark is
 * completed by trace_created after the library call. */
static nx_trace_mark trace_creating(nx_Communicator *c, long size, uint64_t id, nx_trace_origin origin,
                                    const nx_trace_ring *parent, int color, int key)
{
    nx_comm_set_trace(c, nx_trace_ring_new(size, id, origin, parent, color, key));
    return nx_trace_enter(c->trace, &(nx_trace_call){.op = NX_T_INIT});
}

/* After the creation call: a failed communicator's ring is closed (it stays for the dump); a
 * created one is bound to its handle when the library has filled it (else on its first call). */
static void trace_created(nx_Communicator *c, nx_trace_mark init, ncclResult_t rc)
{
    nx_trace_leave(init, rc);
    if (NX_FAILED(rc))
        nx_trace_ring_closed(c->trace);
    else if (c->trace != NULL && nx_comm_handle(c) != NULL)
        nx_comm_trace_settle(c, nx_comm_handle(c));
}

/* The parent's Split/Shrink/Grow entry, its ring (*pr, or NULL) and its child's identity. */
static nx_trace_mark trace_parent(nx_Communicator *parent, ncclComm_t comm, int op, nx_trace_origin origin, int color,
                                  nx_trace_ring **pr, uint64_t *child_id)
{
    *pr = comm != NULL ? nx_comm_trace(parent, comm) : NULL;
    *child_id = *pr != NULL ? nx_trace_child_id(*pr, origin, color) : nx_trace_fnv(NX_FNV_BASIS, &color, sizeof color);
    return nx_trace_enter(*pr, &(nx_trace_call){.op = (uint8_t)op});
}

/* ---- construction ---- */

static PyObject *comm_initialize(nx_state *st, nx_Communicator *c, PyObject *const *a)
{
    /* a: nranks, rank, unique_id, config, trace_buffer */
    PyObject *keep = NULL, *result = NULL;
    ncclUniqueId *ids = NULL;
    int nranks, rank, nid;
    long tsize;
    ncclConfig_t *cfg;
    if (nx_comm_handle(c) != NULL)
        return nx_invalid(st, "Communicator is already initialized");
    if (nx_int(a[0], "initialize", "nranks", &nranks) < 0 || nx_int(a[1], "initialize", "rank", &rank) < 0 ||
        unique_ids_arg(st, a[2], &ids, &nid) < 0 || config_arg(st, a[3], "initialize", &cfg, &keep) < 0 ||
        (tsize = nx_trace_size_arg(a[4], "initialize")) < 0 || nx_check_one_rank(st, nranks) < 0)
        goto done;
    /* again: converting the arguments ran Python code, which may have initialized c meanwhile */
    if (nx_comm_handle(c) != NULL) {
        nx_invalid(st, "Communicator is already initialized");
        goto done;
    }
    if (nx_loaded(st) < 0)
        goto done;
    /* Its identity: the unique ids every rank passed (docs/api/trace.md#the-file-format). */
    nx_trace_mark tm = trace_creating(c, tsize, nx_trace_fnv(NX_FNV_BASIS, ids, (size_t)nid * sizeof *ids),
                                      NX_ORIGIN_INIT, NULL, 0, 0);
    ncclResult_t rc;
    ncclComm_t *slot = (ncclComm_t *)c->slot;
    /* The newest call the library has: several ids need ncclCommInitRankScalable (2.23.4); one id
     * also works with ncclCommInitRankConfig (2.14.3, RCCL 2.22 among the libraries without the
     * scalable call), and without a config with ncclCommInitRank (every release: RCCL 2.13). */
    if (nx_api.ncclCommInitRankScalable != NULL) {
        NX_RUN(rc, nx_api.ncclCommInitRankScalable(slot, nranks, rank, nid, ids, cfg));
    } else if (nid > 1) {
        nx_raise_function_not_found(st, "ncclCommInitRankScalable", NULL);
        trace_created(c, tm, ncclInvalidUsage);
        goto done;
    } else if (nx_api.ncclCommInitRankConfig != NULL) {
        NX_RUN(rc, nx_api.ncclCommInitRankConfig(slot, nranks, ids[0], rank, cfg));
    } else if (cfg == NULL && nx_api.ncclCommInitRank != NULL) {
        NX_RUN(rc, nx_api.ncclCommInitRank(slot, nranks, ids[0], rank));
    } else {
        nx_raise_function_not_found(st, cfg != NULL ? "ncclCommInitRankConfig" : "ncclCommInitRank", NULL);
        trace_created(c, tm, ncclInvalidUsage);
        goto done;
    }
    nx_comm_reset_caches(c);
    trace_created(c, tm, rc);
    if (nx_check(st, rc, NULL) < 0) {
        *c->slot = NULL;
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(ids);
    Py_XDECREF(keep);
    return result;
}

NX_MSIG(initialize, 4, 3, "nranks", "rank", "unique_id", "config", "trace_buffer");
PyDoc_STRVAR(initialize__doc__, "initialize($self, nranks, rank, unique_id, config=None, *, trace_buffer=None)\n--\n\n"
"Create the communicator in place: ncclCommInitRankScalable with every id given; for one id on\n"
"libraries without it, ncclCommInitRankConfig, or, on one without that too and with config None,\n"
"ncclCommInitRank. Collective.\n"
"trace_buffer: the flight recorder's ring size for it (None: NCCL4PY_TRACE_BUFFER; 0: not recorded).");
static PyObject *Communicator_initialize(NX_COMM_METHOD_ARGS)
{
    PyObject *a[5];
    if (nx_margs(&M_initialize, args, nargs, kwnames, a) < 0)
        return NULL;
    return comm_initialize(NX_COMM_STATE(cls), (nx_Communicator *)self, a);
}

NX_MSIG(init, 4, 3, "nranks", "rank", "unique_id", "config", "trace_buffer");
PyDoc_STRVAR(init__doc__, "init(nranks, rank, unique_id, config=None, *, trace_buffer=None)\n--\n\n"
"Create a communicator: cls() then initialize(...). Collective over the nranks ranks.\n"
"trace_buffer: the flight recorder's ring size for it (None: NCCL4PY_TRACE_BUFFER; 0: not recorded).");
static PyObject *Communicator_init(PyObject *type, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_init, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = nx_state_of_type((PyTypeObject *)type);
    if (st == NULL)
        return NULL;
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
        if ((seq = nx_seq_snapshot(o)) == NULL) /* owned: another thread may change the list */
            return -1;
        *n = PyTuple_GET_SIZE(seq);
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
        PyObject *item = PyTuple_GET_ITEM(seq, i);
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
static PyObject *Communicator_init_all(PyObject *type, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    PyObject *a[1];
    if (nx_margs(&M_init_all, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = nx_state_of_type((PyTypeObject *)type);
    if (st == NULL)
        return NULL;
    int *devs = NULL;
    ncclComm_t *comms = NULL;
    PyObject *list = NULL;
    Py_ssize_t n = 0;
    if (devices_arg(st, a[0], &devs, &n) < 0)
        return NULL;
    if ((list = PyList_New(n)) == NULL || n == 0)
        goto done;
    if (nx_require(st, &nx_api.ncclCommInitAll) < 0)
        goto error;
    /* Every wrapper exists before the library call: a class that fails to make one (it runs Python
     * code) then leaves no communicator behind to destroy. Null ones are dropped silently. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = PyObject_CallNoArgs(type);
        if (c == NULL)
            goto error;
        PyList_SET_ITEM(list, i, c);
        if (!nx_is_communicator(st, c)) {
            PyErr_SetString(PyExc_TypeError, "init_all() needs a Communicator class");
            goto error;
        }
    }
    if ((comms = PyMem_Calloc((size_t)n, sizeof *comms)) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitAll(comms, (int)n, devs));
    if (nx_check(st, rc, NULL) < 0)
        goto error;
    /* One communicator, every rank in this process: its identity is the process and the devices. */
    pid_t pid = getpid();
    uint64_t id = nx_trace_fnv(nx_trace_fnv(NX_FNV_BASIS, &pid, sizeof pid), devs, (size_t)n * sizeof *devs);
    for (Py_ssize_t i = 0; i < n; i++) {
        nx_Communicator *c = (nx_Communicator *)PyList_GET_ITEM(list, i);
        *c->slot = comms[i];
        nx_comm_set_trace(c, nx_trace_ring_new(nx_trace_default_size(), id, NX_ORIGIN_INIT, NULL, 0, 0));
        nx_trace_event(c->trace, &(nx_trace_call){.op = NX_T_INIT}, rc);
        nx_trace_ring_bind(c->trace, comms[i], (int)i, (int)n);
        __atomic_store_n(&c->trace_bound, 1, __ATOMIC_RELEASE);
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
 * nonblocking library can still write its slot (docs/compatibility.md#communicator). */
static PyObject *child_result(nx_state *st, nx_Communicator *parent, nx_Communicator *child, ncclResult_t rc,
                              ncclComm_t comm)
{
    if (nx_check(st, rc, comm) < 0) {
        Py_DECREF(child);
        return NULL;
    }
    if (rc == ncclInProgress && nx_comm_keep_child(parent, (PyObject *)child) < 0)
        goto error;
    return (PyObject *)child;
error:
    Py_DECREF(child);
    return NULL;
}

NX_MSIG(split, 3, 0, "color", "key", "config", "trace_buffer");
PyDoc_STRVAR(split__doc__, "split($self, color=None, key=0, config=None, *, trace_buffer=None)\n--\n\n"
"ncclCommSplit. Collective. color=None (NCCL_SPLIT_NOCOLOR) gives this rank a null communicator;\n"
"config=None inherits the parent's. trace_buffer: the child's flight-recorder ring size (None:\n"
"NCCL4PY_TRACE_BUFFER; 0: not recorded).");
/* split, shrink and grow convert their arguments before the parent's handle is read (nx_call,
 * core.h); the config's struct wrapper goes to the call's kept objects. */
static PyObject *split_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[4];
    if (nx_margs(&M_split, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    int color = NCCL_SPLIT_NOCOLOR, key = 0;
    long tsize;
    ncclConfig_t *cfg;
    PyObject *keep;
    if (nx_call_begin(k, "split") < 0 ||
        (a[0] != NULL && a[0] != Py_None && nx_int(a[0], "split", "color", &color) < 0) ||
        (a[1] != NULL && nx_int(a[1], "split", "key", &key) < 0) || (tsize = nx_trace_size_arg(a[3], "split")) < 0)
        return NULL;
    if (nx_require(st, &nx_api.ncclCommSplit) < 0)
        return NULL;
    if (config_arg(st, a[2], "split", &cfg, &keep) < 0 || nx_call_keep(k, keep) < 0)
        return NULL;
    nx_Communicator *child = nx_comm_new(st, Py_TYPE(c));
    ncclComm_t comm;
    if (child == NULL || (comm = nx_call_ready(k)) == NULL) {
        Py_XDECREF(child);
        return NULL;
    }
    uint64_t id;
    nx_trace_ring *pr;
    nx_trace_mark tm = trace_parent(c, comm, NX_T_SPLIT, NX_ORIGIN_SPLIT, color, &pr, &id);
    /* NCCL_SPLIT_NOCOLOR: this rank gets no communicator, so nothing to record on */
    nx_trace_mark init =
        trace_creating(child, color == NCCL_SPLIT_NOCOLOR ? 0 : tsize, id, NX_ORIGIN_SPLIT, pr, color, key);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommSplit(comm, color, key, (ncclComm_t *)child->slot, cfg));
    if (color == NCCL_SPLIT_NOCOLOR)
        child->why_null = NX_NULL_NOCOLOR;
    nx_trace_leave(tm, rc);
    trace_created(child, init, rc);
    return child_result(st, c, child, rc, comm);
}

static PyObject *Communicator_split(NX_COMM_METHOD_ARGS) { return nx_comm_call(split_body, NX_COMM_METHOD_PASS); }

/* exclude_ranks: None or a sequence of ints, into a PyMem array. */
static int ranks_arg(PyObject *o, int **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (o == NULL || o == Py_None)
        return 0;
    PyObject *seq = nx_seq_snapshot(o); /* owned: an entry's __index__ may change the caller's list */
    if (seq == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "shrink() argument 'exclude_ranks' must be a sequence of ints or None");
        }
        return -1;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(seq);
    if (k > INT_MAX || (*out = PyMem_Calloc(k > 0 ? (size_t)k : 1, sizeof(int))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++)
        if (nx_int(PyTuple_GET_ITEM(seq, i), "shrink", "exclude_ranks", &(*out)[i]) < 0) {
            Py_DECREF(seq);
            PyMem_Free(*out);
            *out = NULL;
            return -1;
        }
    Py_DECREF(seq);
    *n = (int)k;
    return 0;
}

NX_MSIG(shrink, 3, 0, "exclude_ranks", "config", "flag", "trace_buffer");
PyDoc_STRVAR(shrink__doc__, "shrink($self, exclude_ranks=None, config=None, flag=nccl.core.CommShrinkFlag.DEFAULT, *, "
"trace_buffer=None)\n--\n\n"
"ncclCommShrink: a communicator without the excluded ranks, called by the surviving ranks only.\n"
"flag=ABORT aborts outstanding operations first. trace_buffer: as for split().");
static PyObject *shrink_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[4];
    if (nx_margs(&M_shrink, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    int flag = NCCL_SHRINK_DEFAULT, nex;
    long tsize;
    if (nx_call_begin(k, "shrink") < 0 || (a[2] != NULL && nx_int(a[2], "shrink", "flag", &flag) < 0) ||
        (tsize = nx_trace_size_arg(a[3], "shrink")) < 0)
        return NULL;
    if (nx_require(st, &nx_api.ncclCommShrink) < 0)
        return NULL;
    int *ex;
    ncclConfig_t *cfg;
    PyObject *keep;
    if (ranks_arg(a[0], &ex, &nex) < 0)
        return NULL;
    if (config_arg(st, a[1], "shrink", &cfg, &keep) < 0 || nx_call_keep(k, keep) < 0) {
        PyMem_Free(ex);
        return NULL;
    }
    nx_Communicator *child = nx_comm_new(st, Py_TYPE(c));
    ncclComm_t comm = child != NULL ? nx_call_ready(k) : NULL;
    PyObject *r = NULL;
    if (comm == NULL)
        Py_XDECREF(child);
    else {
        uint64_t id;
        nx_trace_ring *pr;
        nx_trace_mark tm = trace_parent(c, comm, NX_T_SHRINK, NX_ORIGIN_SHRINK, -1, &pr, &id);
        nx_trace_mark init = trace_creating(child, tsize, id, NX_ORIGIN_SHRINK, pr, -1, 0);
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommShrink(comm, ex, nex, (ncclComm_t *)child->slot, cfg, flag));
        nx_trace_leave(tm, rc);
        trace_created(child, init, rc);
        r = child_result(st, c, child, rc, comm);
    }
    PyMem_Free(ex);
    return r;
}

static PyObject *Communicator_shrink(NX_COMM_METHOD_ARGS) { return nx_comm_call(shrink_body, NX_COMM_METHOD_PASS); }

NX_MSIG(grow, 4, 1, "nranks", "unique_id", "rank", "config", "trace_buffer");
PyDoc_STRVAR(grow__doc__, "grow($self, nranks, unique_id=None, rank=None, config=None, *, trace_buffer=None)\n--\n\n"
"ncclCommGrow. Existing root: comm.grow(n, uid); existing non-root: comm.grow(n); a new rank:\n"
"Communicator().grow(n, uid, rank=r). trace_buffer: as for split().");
static PyObject *grow_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[5];
    if (nx_margs(&M_grow, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    int nranks, rank = -1, is_new = a[2] != NULL && a[2] != Py_None;
    ncclComm_t comm = nx_comm_handle(c);
    if (is_new && comm != NULL)
        return nx_invalid(st, "New ranks must use a null communicator (Communicator())");
    if (!is_new && comm == NULL)
        return nx_invalid(st, "Existing ranks must use an initialized communicator");
    /* an existing rank's communicator is taking part: its conversion starts (nx_call, core.h) */
    if (!is_new && nx_call_begin(k, "grow") < 0)
        return NULL;
    long tsize;
    if (nx_int(a[0], "grow", "nranks", &nranks) < 0 || (is_new && nx_int(a[2], "grow", "rank", &rank) < 0) ||
        (tsize = nx_trace_size_arg(a[4], "grow")) < 0)
        return NULL;
    ncclUniqueId id, *idp = NULL;
    if (a[1] != NULL && a[1] != Py_None) {
        int r = read_unique_id(st, a[1], &id);
        if (r != 0)
            return r > 0 ? nx_invalid(st, "unique_id must be a UniqueId or None") : NULL;
        idp = &id;
    }
    if (nx_require(st, &nx_api.ncclCommGrow) < 0)
        return NULL;
    ncclConfig_t *cfg;
    PyObject *keep;
    if (config_arg(st, a[3], "grow", &cfg, &keep) < 0 || nx_call_keep(k, keep) < 0)
        return NULL;
    /* the child is made first (an allocation may run finalizers), then the handle is read again */
    nx_Communicator *child = nx_comm_new(st, Py_TYPE(c));
    if (child != NULL && is_new && nx_comm_handle(c) != NULL) {
        Py_CLEAR(child);
        nx_invalid(st, "New ranks must use a null communicator (Communicator())");
    }
    if (child != NULL && !is_new && (comm = nx_call_ready(k)) == NULL)
        Py_CLEAR(child);
    PyObject *r = NULL;
    if (child != NULL) {
        uint64_t tid;
        nx_trace_ring *pr;
        nx_trace_mark tm = trace_parent(c, comm, NX_T_GROW, NX_ORIGIN_GROW, 0, &pr, &tid);
        if (idp != NULL) /* the root and the new ranks share the grow's id (docs/api/trace.md) */
            tid = nx_trace_fnv(NX_FNV_BASIS, idp, sizeof *idp);
        nx_trace_mark init = trace_creating(child, tsize, tid, NX_ORIGIN_GROW, pr, 0, 0);
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommGrow(comm, nranks, idp, rank, (ncclComm_t *)child->slot, cfg));
        nx_trace_leave(tm, rc);
        trace_created(child, init, rc);
        r = child_result(st, c, child, rc, comm);
    }
    return r;
}

static PyObject *Communicator_grow(NX_COMM_METHOD_ARGS) { return nx_comm_call(grow_body, NX_COMM_METHOD_PASS); }

PyDoc_STRVAR(get_unique_id__doc__, "get_unique_id($self)\n--\n\n"
"ncclCommGetUniqueId: a single-use id for grow(), called by the grow root only.");
static PyObject *Communicator_get_unique_id(NX_COMM_METHOD_ARGS)
{
    (void)args;
    nx_state *st = NX_COMM_STATE(cls);
    if (nx_no_args("get_unique_id", nargs, kwnames) < 0)
        return NULL;
    ncclComm_t comm = nx_comm_require((nx_Communicator *)self, "get_unique_id");
    if (comm == NULL)
        return NULL;
    if (nx_require(st, &nx_api.ncclCommGetUniqueId) < 0)
        return NULL;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommGetUniqueId(comm, &id));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return new_unique_id(st, &id);
}

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)
/* Plain METH_CLASS, not METH_METHOD: CPython 3.10-3.13 drop a METH_METHOD method's __doc__ once it
 * is bound (help(Communicator.init) showed nothing); the module state comes from the class. */
#define CLASS_METHOD(name) \
    {#name, (PyCFunction)(void (*)(void))Communicator_##name, METH_FASTCALL | METH_KEYWORDS | METH_CLASS, name##__doc__}

PyMethodDef nx_comm_create_methods[] = {
    CLASS_METHOD(init),
    CLASS_METHOD(init_all),
    METHOD(initialize),
    METHOD(split),
    METHOD(shrink),
    METHOD(grow),
    METHOD(get_unique_id),
    {NULL, NULL, 0, NULL},
};
