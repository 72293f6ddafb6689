/* nccl.core.Communicator (docs/compatibility.md#communicator): the type, lifecycle, cached queries, properties,
 * status, resource tracking and the context-manager protocol. Its other methods live by concern:
 * construction in communicator_create.c, collectives and point-to-point in collectives.c,
 * resources in resources.c and redop.c; all share this type's method table.
 *
 * Lifetime is explicit: destroy(), abort() or the `with` block. The finalizer never calls the
 * library (destroy is collective, and a collector running on one rank would hang the others); a
 * communicator collected while still valid only emits a ResourceWarning and leaks. */
#include "core/core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <structmember.h>

#include "structs/pointerbox.h"
#include "structs/structs.h"

/* ---- allocation ---- */

/* Concurrent use of one Communicator (docs/architecture.md#threads): the int caches are read
 * and written atomically; the object fields (device, props, resources, children) change only
 * under the object's critical section (free-threaded builds; the GIL elsewhere), never with a
 * reference released or Python code run inside it; the handle is claimed once by teardown. */

/* The object in a cache field (device, props), as a new reference; NULL when not cached. */
static PyObject *cached_object(nx_Communicator *c, PyObject **field)
{
    PyObject *o;
    (void)c; /* a GIL build (3.13+) ignores the section's object */
    Py_BEGIN_CRITICAL_SECTION(c);
    o = Py_XNewRef(*field);
    Py_END_CRITICAL_SECTION();
    return o;
}

/* Stores obj (a new reference) in the empty field, or releases it when another thread cached one
 * first. Returns the cached object, as a new reference. */
static PyObject *cache_object(nx_Communicator *c, PyObject **field, PyObject *obj)
{
    PyObject *drop = NULL, *r;
    (void)c; /* a GIL build (3.13+) ignores the section's object */
    Py_BEGIN_CRITICAL_SECTION(c);
    if (*field == NULL)
        *field = obj;
    else
        drop = obj;
    r = Py_NewRef(*field);
    Py_END_CRITICAL_SECTION();
    Py_XDECREF(drop);
    return r;
}

/* Takes the object out of a field (device, props, children, resources): a reference for the
 * caller to release, or NULL. */
static PyObject *take_object(nx_Communicator *c, PyObject **field)
{
    PyObject *o;
    (void)c; /* a GIL build (3.13+) ignores the section's object */
    Py_BEGIN_CRITICAL_SECTION(c);
    o = *field;
    *field = NULL;
    Py_END_CRITICAL_SECTION();
    return o;
}

void nx_comm_reset_caches(nx_Communicator *c)
{
    __atomic_store_n(&c->nranks, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->rank, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->device_id, NX_DEVICE_UNKNOWN, __ATOMIC_RELAXED);
    Py_XDECREF(take_object(c, &c->device));
    Py_XDECREF(take_object(c, &c->props));
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
    else if ((c->box = PyObject_CallNoArgs((PyObject *)nx_types_of(st)->pointer_box)) == NULL)
        goto error;
    c->slot = &((nx_PointerBox *)c->box)->slot;
    if (box == NULL)
        *c->slot = handle;
    if ((c->resources = PyList_New(0)) == NULL)
        goto error;
    nx_comm_reset_caches(c);
    return c;
error:
    Py_DECREF(c);
    return NULL;
}

nx_Communicator *nx_comm_new(nx_state *st, PyTypeObject *tp) { return comm_alloc(st, tp, NULL, NULL); }

static PyObject *Communicator_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ptr", NULL};
    PyObject *ptr = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:Communicator", kwlist, &ptr))
        return NULL;
    nx_state *st = nx_state_of_type(tp);
    if (st == NULL)
        return NULL;
    if (ptr != NULL && Py_IS_TYPE(ptr, nx_types_of(st)->pointer_box))
        return (PyObject *)comm_alloc(st, tp, ptr, NULL);
    ncclComm_t handle = NULL;
    /* None (nccl4py 0.5.0's default), an int or a bindings Comm (the value it holds now); 0 is an
     * uninitialised communicator */
    if (ptr != NULL && ptr != Py_None && nx_comm_arg(ptr, "Communicator", "ptr", NX_NULL_ACCEPTED, &handle) < 0)
        return NULL;
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
    nx_trace_ring_decref(c->trace);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* ---- shared helpers (core.h) ---- */

int nx_is_communicator(nx_state *st, PyObject *o)
{
    return PyObject_TypeCheck(o, nx_types_of(st)->core[NX_TYPE_COMMUNICATOR]);
}

/* upstream's text first (code may match it), then what happened and what to do instead */
static NX_COLD void null_handle_error(const nx_Communicator *c, const char *op)
{
    switch (__atomic_load_n(&c->why_null, __ATOMIC_RELAXED)) {
    case NX_NULL_DESTROYED:
        nx_raise_null_handle("Cannot %s: Communicator not initialized: it was destroyed (destroy(), or the end of its "
                             "with block); create a new communicator to go on", op);
        break;
    case NX_NULL_ABORTED:
        nx_raise_null_handle("Cannot %s: Communicator not initialized: it was aborted (abort(), or an exception in its "
                             "with block); create a new communicator to go on", op);
        break;
    case NX_NULL_NOCOLOR:
        nx_raise_null_handle("Cannot %s: Communicator not initialized: this rank passed color=None "
                             "(NCCL_SPLIT_NOCOLOR) to split(), so it is not a member of that communicator; only the "
                             "ranks that passed a color use it", op);
        break;
    default:
        nx_raise_null_handle("Cannot %s: Communicator not initialized", op);
    }
}

ncclComm_t nx_comm_require(nx_Communicator *c, const char *op)
{
    ncclComm_t h = nx_comm_handle(c);
    if (NX_UNLIKELY(h == NULL))
        null_handle_error(c, op);
    return h;
}

/* One of the int queries (ncclCommCount, ncclCommUserRank, ncclCommCuDevice), cached in *cache. */
static int cached_query(nx_state *st, nx_Communicator *c, const char *op, int *cache,
                        ncclResult_t (*const *fnslot)(const ncclComm_t, int *), int unknown, int *out)
{
    int cached = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (NX_LIKELY(cached != unknown)) {
        *out = cached;
        return 0;
    }
    ncclComm_t h = nx_comm_require(c, op);
    if (h == NULL || nx_require(st, fnslot) < 0)
        return -1;
    int v = 0;
    ncclResult_t rc;
    NX_RUN(rc, (*fnslot)(h, &v));
    if (nx_check(st, rc, h) < 0)
        return -1;
    __atomic_store_n(cache, v, __ATOMIC_RELAXED);
    *out = v;
    return 0;
}

int nx_comm_nranks(nx_state *st, nx_Communicator *c, const char *op, int *out)
{
    return cached_query(st, c, op, &c->nranks, &nx_api.ncclCommCount, -1, out);
}

int nx_comm_rank(nx_state *st, nx_Communicator *c, const char *op, int *out)
{
    return cached_query(st, c, op, &c->rank, &nx_api.ncclCommUserRank, -1, out);
}

static int comm_device_id(nx_state *st, nx_Communicator *c, const char *op, int *out)
{
    return cached_query(st, c, op, &c->device_id, &nx_api.ncclCommCuDevice, NX_DEVICE_UNKNOWN, out);
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

void nx_comm_set_trace(nx_Communicator *c, nx_trace_ring *r)
{
    nx_trace_ring *old = __atomic_exchange_n(&c->trace, r, __ATOMIC_ACQ_REL);
    /* no ring: settled (not recorded); a ring: bound on the first call that sees the handle */
    __atomic_store_n(&c->trace_bound, r == NULL, __ATOMIC_RELEASE);
    nx_trace_ring_decref(old);
}

nx_trace_ring *nx_comm_trace_settle(nx_Communicator *c, ncclComm_t h)
{
    nx_trace_ring *r = c->trace;
    if (r == NULL) {
        /* Communicator(ptr): the handle's ring, if the bindings created it (kept while c lives) */
        r = nx_trace_find(h);
        nx_trace_ring_incref(r);
        nx_trace_ring *none = NULL;
        if (!__atomic_compare_exchange_n(&c->trace, &none, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            nx_trace_ring_decref(r); /* another thread settled it first */
            r = none;
        }
    } else if (h != NULL) {
        nx_state *st = nx_state_of_type(Py_TYPE(c));
        int rank = -1, nranks = -1;
        /* Its rank and size for the file: cached queries, made once (no error is pending here). */
        if (st == NULL || nx_comm_rank(st, c, "trace", &rank) < 0 || nx_comm_nranks(st, c, "trace", &nranks) < 0)
            PyErr_Clear();
        nx_trace_ring_bind(r, h, rank, nranks);
    }
    if (h != NULL)
        __atomic_store_n(&c->trace_bound, 1, __ATOMIC_RELEASE);
    return r;
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

PyObject *nx_comm_resources(nx_Communicator *c) { return cached_object(c, &c->resources); }

int nx_comm_track(nx_Communicator *c, PyObject *resource)
{
    PyObject *list = nx_comm_resources(c);
    if (list == NULL) /* cleared by the collector: nothing tracks any more */
        return 0;
    int rc = PyList_Append(list, resource);
    Py_DECREF(list);
    return rc;
}

int nx_comm_keep_child(nx_Communicator *c, PyObject *child)
{
    PyObject *fresh = PyList_New(0), *list;
    if (fresh == NULL)
        return -1;
    list = cache_object(c, &c->children, fresh);
    int rc = PyList_Append(list, child);
    Py_DECREF(list);
    return rc;
}

/* ---- teardown ---- */

PyDoc_STRVAR(close_all_resources__doc__, "close_all_resources($self)\n--\n\n"
"Close every tracked resource (registered buffers and windows, custom operators), swallowing\n"
"errors. Idempotent.");
static PyObject *Communicator_close_all_resources(PyObject *self, PyObject *unused)
{
    (void)unused;
    nx_Communicator *c = (nx_Communicator *)self;
    /* Detach the list first: closing runs Python code that may track or close more. */
    PyObject *fresh = PyList_New(0), *list;
    if (fresh == NULL)
        return NULL;
    Py_BEGIN_CRITICAL_SECTION(c);
    list = c->resources;
    c->resources = list != NULL ? fresh : NULL;
    Py_END_CRITICAL_SECTION();
    if (list == NULL) {
        Py_DECREF(fresh);
        Py_RETURN_NONE;
    }
    for (Py_ssize_t i = PyList_GET_SIZE(list); i-- > 0;)
        nx_resource_close_quietly(PyList_GET_ITEM(list, i));
    Py_DECREF(list);
    Py_RETURN_NONE;
}

/* destroy() and abort(): resources first, then the library call; the handle is dropped either way
 * (the library releases the communicator even when it reports an error). The handle is taken out
 * of the slot before the call, atomically: of threads tearing down one communicator at once,
 * exactly one calls the library, and later calls see a null communicator, not a freed one. */
static PyObject *teardown(nx_state *st, nx_Communicator *c, int abort)
{
    if (nx_comm_handle(c) == NULL)
        Py_RETURN_NONE;
    if (nx_call_refuse_while_converting(st, c, abort ? "abort" : "destroy") < 0)
        return NULL;
    if (nx_require(st, abort ? (const void *)&nx_api.ncclCommAbort : (const void *)&nx_api.ncclCommDestroy) < 0)
        return NULL;
    PyObject *r = Communicator_close_all_resources((PyObject *)c, NULL);
    if (r == NULL)
        PyErr_Clear();
    Py_XDECREF(r);
    ncclComm_t comm = __atomic_exchange_n((ncclComm_t *)c->slot, NULL, __ATOMIC_ACQ_REL);
    if (comm == NULL)
        Py_RETURN_NONE; /* another thread tore it down meanwhile */
    __atomic_store_n(&c->why_null, abort ? NX_NULL_ABORTED : NX_NULL_DESTROYED, __ATOMIC_RELAXED);
    nx_trace_ring *tr = nx_comm_trace(c, comm);
    nx_trace_mark tm = nx_trace_enter(tr, &(nx_trace_call){.op = abort ? NX_T_ABORT : NX_T_DESTROY});
    ncclResult_t rc;
    NX_RUN(rc, abort ? nx_api.ncclCommAbort(comm) : nx_api.ncclCommDestroy(comm));
    nx_trace_leave(tm, rc);
    nx_trace_ring_closed(tr);
    nx_comm_reset_caches(c);
    Py_XDECREF(take_object(c, &c->children));
    return nx_none_or_error(st, rc, NULL);
}

PyDoc_STRVAR(destroy__doc__, "destroy($self)\n--\n\n"
"Close the tracked resources, then ncclCommDestroy (an intra-node collective). No-op when null.");
static PyObject *Communicator_destroy(NX_COMM_METHOD_ARGS)
{
    if (nx_no_args("destroy", nargs, kwnames) < 0)
        return NULL;
    (void)args;
    return teardown(NX_COMM_STATE(cls), (nx_Communicator *)self, 0);
}

PyDoc_STRVAR(abort__doc__, "abort($self)\n--\n\n"
"Close the tracked resources, then ncclCommAbort: stops in-flight operations (also from another\n"
"thread). No-op when null.");
static PyObject *Communicator_abort(NX_COMM_METHOD_ARGS)
{
    if (nx_no_args("abort", nargs, kwnames) < 0)
        return NULL;
    (void)args;
    return teardown(NX_COMM_STATE(cls), (nx_Communicator *)self, 1);
}

PyDoc_STRVAR(finalize__doc__, "finalize($self)\n--\n\n"
"ncclCommFinalize: flush outstanding work (collective). No-op when null; a nonblocking\n"
"communicator then reports InProgress from get_async_error() until done.");
static PyObject *Communicator_finalize_method(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (nx_no_args("finalize", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_handle((nx_Communicator *)self);
    if (comm == NULL)
        Py_RETURN_NONE;
    if (nx_require(st, &nx_api.ncclCommFinalize) < 0)
        return NULL;
    nx_trace_mark tm = nx_trace_enter(nx_comm_trace((nx_Communicator *)self, comm), &(nx_trace_call){.op = NX_T_FINALIZE});
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommFinalize(comm));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

/* (comm, int flags) calls with a default flag value: revoke and suspend. The flags are converted
 * (Python code) before the handle is read (nx_call, core.h). */
static PyObject *flag_call(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_msig *sig,
                           int dflt, ncclResult_t (*const *fnslot)(ncclComm_t, int))
{
    PyObject *a[1];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    int flags = dflt;
    ncclComm_t comm;
    if (nx_call_begin(k, sig->fname) < 0 || (a[0] != NULL && nx_int(a[0], sig->fname, sig->names[0], &flags) < 0) ||
        (comm = nx_call_ready(k)) == NULL)
        return NULL;
    if (nx_require(k->st, fnslot) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, (*fnslot)(comm, flags));
    return nx_none_or_error(k->st, rc, comm);
}

NX_MSIG(revoke, 1, 0, "flags");
PyDoc_STRVAR(revoke__doc__, "revoke($self, flags=0)\n--\n\n"
"ncclCommRevoke: stop in-flight operations; get_async_error() reports InProgress until quiescent.");
static PyObject *revoke_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return flag_call(k, args, nargs, kwnames, &M_revoke, NCCL_REVOKE_DEFAULT, &nx_api.ncclCommRevoke);
}

static PyObject *Communicator_revoke(NX_COMM_METHOD_ARGS) { return nx_comm_call(revoke_body, NX_COMM_METHOD_PASS); }

NX_MSIG(suspend, 1, 0, "flags");
PyDoc_STRVAR(suspend__doc__, "suspend($self, flags=nccl.core.CommSuspendFlag.MEM)\n--\n\n"
"ncclCommSuspend: release dynamic GPU memory; unusable until resume().");
static PyObject *suspend_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return flag_call(k, args, nargs, kwnames, &M_suspend, NCCL_SUSPEND_MEM, &nx_api.ncclCommSuspend);
}

static PyObject *Communicator_suspend(NX_COMM_METHOD_ARGS) { return nx_comm_call(suspend_body, NX_COMM_METHOD_PASS); }

PyDoc_STRVAR(resume__doc__, "resume($self)\n--\n\nncclCommResume: undo suspend().");
static PyObject *Communicator_resume(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (nx_no_args("resume", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require((nx_Communicator *)self, "resume");
    if (comm == NULL)
        return NULL;
    if (nx_require(st, &nx_api.ncclCommResume) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommResume(comm));
    return nx_none_or_error(st, rc, comm);
}

/* ---- status ---- */

PyDoc_STRVAR(get_last_error__doc__, "get_last_error($self)\n--\n\nncclGetLastError: the library's last error text.");
static PyObject *Communicator_get_last_error(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (nx_no_args("get_last_error", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require((nx_Communicator *)self, "get last error");
    if (comm == NULL || nx_require(st, &nx_api.ncclGetLastError) < 0)
        return NULL;
    const char *s = nx_api.ncclGetLastError(comm); /* a string lookup: does not block */
    return PyUnicode_DecodeUTF8(s ? s : "", s ? (Py_ssize_t)strlen(s) : 0, "replace");
}

PyDoc_STRVAR(get_async_error__doc__, "get_async_error($self)\n--\n\n"
"ncclCommGetAsyncError: the state code as a Result member (Success, InProgress or an error), not\n"
"raised. Once it is not InProgress, split/shrink children kept alive are released.");
static PyObject *Communicator_get_async_error(NX_COMM_METHOD_ARGS)
{
    (void)args;
    if (nx_no_args("get_async_error", nargs, kwnames) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(c, "get async error");
    if (comm == NULL)
        return NULL;
    if (nx_require(st, &nx_api.ncclCommGetAsyncError) < 0)
        return NULL;
    ncclResult_t state = ncclSuccess, rc;
    NX_RUN(rc, nx_api.ncclCommGetAsyncError(comm, &state));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    if (state != ncclInProgress)
        Py_XDECREF(take_object(c, &c->children));
    PyObject *code = PyLong_FromLong((long)state);
    if (code == NULL || (unsigned)state >= ncclNumResults)
        return code;
    PyObject *result_enum = nx_lazy(st, NX_LAZY_RESULT);
    PyObject *member = result_enum ? PyObject_CallOneArg(result_enum, code) : NULL;
    Py_DECREF(code);
    return member;
}

NX_MSIG(get_mem_stat, 1, 1, "stat");
PyDoc_STRVAR(get_mem_stat__doc__, "get_mem_stat($self, stat)\n--\n\n"
"ncclCommMemStats: bytes for the NcclCommMemStat kind (0/1 for GPU_MEM_SUSPENDED).");
static PyObject *get_mem_stat_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[1];
    if (nx_margs(&M_get_mem_stat, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    ncclComm_t comm;
    int stat;
    if (nx_call_begin(k, "get mem stat") < 0 ||
        nx_enum(a[0], "get_mem_stat", "stat", 0, 3, "an NcclCommMemStat", &stat) < 0 ||
        (comm = nx_call_ready(k)) == NULL)
        return NULL;
    if (nx_require(st, &nx_api.ncclCommMemStats) < 0)
        return NULL;
    uint64_t value = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommMemStats(comm, (ncclCommMemStat_t)stat, &value));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(value);
}

static PyObject *Communicator_get_mem_stat(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(get_mem_stat_body, NX_COMM_METHOD_PASS);
}

/* ---- context manager ---- */

static PyObject *Communicator_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

PyDoc_STRVAR(exit__doc__, "__exit__($self, exc_type, exc, tb)\n--\n\n"
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
    PyObject *device = cached_object(c, &c->device);
    if (device != NULL)
        return device;
    PyObject *fn = nx_lazy(st, NX_LAZY_GET_DEVICE);
    if (fn == NULL)
        return NULL;
    PyObject *id = PyLong_FromLong(dev);
    if (id == NULL)
        return NULL;
    device = PyObject_CallOneArg(fn, id);
    Py_DECREF(id);
    return device != NULL ? cache_object(c, &c->device, device) : NULL;
}

/* The cached ncclCommQueryProperties struct object (a new reference: a teardown on another
 * thread may drop the cache meanwhile); NULL with an exception. Communicator.properties
 * (nccl.core._methods) builds NCCLCommProperties from it through the _properties getter. */
static PyObject *properties(nx_state *st, nx_Communicator *c, const char *op)
{
    PyObject *obj = cached_object(c, &c->props);
    if (obj != NULL)
        return obj;
    ncclComm_t comm = nx_comm_require(c, op);
    if (comm == NULL || nx_require(st, &nx_api.ncclCommQueryProperties) < 0)
        return NULL;
    if ((obj = nx_struct_new(st, NX_STRUCT_COMM_PROPERTIES)) == NULL)
        return NULL;
    ncclCommProperties_t *storage = nx_struct_storage(st, obj, NX_STRUCT_COMM_PROPERTIES);
    nx_struct_fit_library(NX_STRUCT_COMM_PROPERTIES, storage);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommQueryProperties(comm, storage));
    if (nx_check(st, rc, comm) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    return cache_object(c, &c->props, obj);
}

/* A GIN transport code as an NcclGinType member when it is one the flavour defines (RCCL's
 * numbering of its own transports has moved between releases: only 0, 2, 3 are stable there),
 * else the plain int. */
static PyObject *gin_type_value(nx_state *st, int v)
{
    int member = v == 0 || v == 2 || v == 3 || ((v == 4 || v == 5) && nx_loader_info()->flavour != NX_FLAVOUR_RCCL);
    PyObject *num = PyLong_FromLong(v);
    if (num == NULL || !member)
        return num;
    PyObject *cls = nx_lazy(st, NX_LAZY_GIN_TYPE);
    PyObject *r = cls ? PyObject_CallOneArg(cls, num) : NULL;
    Py_DECREF(num);
    return r;
}

/* The ncclCommQueryProperties fields read by property_getter; a row is a getset closure. */
typedef enum { PROP_INT, PROP_BOOL, PROP_GIN_TYPE } property_kind;
typedef struct {
    const char *op;   /* "get cuda_dev": the message's verb for a null communicator */
    property_kind kind;
} property_field;

enum { P_CUDA_DEV, P_NVML_DEV, P_DEVICE_API, P_MULTIMEM, P_HOST_RMA, P_N_LSA_TEAMS, P_GIN_TYPE, P_RAILED_GIN_TYPE,
       P_NPROPS };
static const property_field property_fields[P_NPROPS] = {
    [P_CUDA_DEV] = {"get cuda_dev", PROP_INT},
    [P_NVML_DEV] = {"get nvml_dev", PROP_INT},
    [P_DEVICE_API] = {"get device_api_support", PROP_BOOL},
    [P_MULTIMEM] = {"get multimem_support", PROP_BOOL},
    [P_HOST_RMA] = {"get host_rma_support", PROP_BOOL},
    [P_N_LSA_TEAMS] = {"get n_lsa_teams", PROP_INT},
    [P_GIN_TYPE] = {"get gin_type", PROP_GIN_TYPE},
    [P_RAILED_GIN_TYPE] = {"get railed_gin_type", PROP_GIN_TYPE},
};

static int property_value(const ncclCommProperties_t *p, int which)
{
    switch (which) {
    case P_CUDA_DEV: return p->cudaDev;
    case P_NVML_DEV: return p->nvmlDev;
    case P_DEVICE_API: return p->deviceApiSupport;
    case P_MULTIMEM: return p->multimemSupport;
    case P_HOST_RMA: return p->hostRmaSupport;
    case P_N_LSA_TEAMS: return p->nLsaTeams;
    case P_GIN_TYPE: return p->ginType;
    default: return p->railedGinType;
    }
}

/* The getter of every ncclCommQueryProperties property; closure is the property_fields row. */
static PyObject *property_getter(PyObject *self, void *closure)
{
    const property_field *f = closure;
    nx_state *st = getter_state(self);
    PyObject *props = st != NULL ? properties(st, (nx_Communicator *)self, f->op) : NULL;
    if (props == NULL)
        return NULL;
    int v = property_value(nx_struct_storage(st, props, NX_STRUCT_COMM_PROPERTIES), (int)(f - property_fields));
    Py_DECREF(props);
    switch (f->kind) {
    case PROP_BOOL: return PyBool_FromLong(v);
    case PROP_GIN_TYPE: return gin_type_value(getter_state(self), v);
    default: return PyLong_FromLong(v);
    }
}

#define PROPERTY(i) (void *)&property_fields[i]

static PyObject *get_properties_struct(PyObject *self, void *closure)
{
    (void)closure;
    nx_state *st = getter_state(self);
    return st != NULL ? properties(st, (nx_Communicator *)self, "get properties") : NULL;
}

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

PyDoc_STRVAR(require__doc__, "_require($self, op, /)\n--\n\n"
"The ncclComm_t as an int, for the methods written in Python (nccl.core._methods); on a null\n"
"communicator NCCLNullHandleError 'Cannot <op>: Communicator not initialized'.");

static PyObject *Communicator_require(PyObject *self, PyObject *op)
{
    const char *text = PyUnicode_AsUTF8(op);
    ncclComm_t comm = text ? nx_comm_require((nx_Communicator *)self, text) : NULL;
    return comm ? PyLong_FromVoidPtr((void *)comm) : NULL;
}

/* ---- the type ---- */

#define QUERY_DOC(text) text " Raises NcclInvalid on a null communicator."

static PyGetSetDef Communicator_getset[] = {
    {"ptr", get_ptr, NULL, "The raw ncclComm_t (0 when null or destroyed).", NULL},
    {"is_valid", get_is_valid, NULL, "True while the communicator is initialised and not destroyed.", NULL},
    {"nranks", get_nranks, NULL, QUERY_DOC("Number of ranks (ncclCommCount, cached)."), NULL},
    {"rank", get_rank, NULL, QUERY_DOC("This rank (ncclCommUserRank, cached)."), NULL},
    {"device", get_device, NULL, QUERY_DOC("The cuda.core Device (real or the shim) of ncclCommCuDevice."), NULL},
    {"cuda_dev", property_getter, NULL, QUERY_DOC("CUDA/HIP device ordinal (ncclCommQueryProperties)."),
     PROPERTY(P_CUDA_DEV)},
    {"nvml_dev", property_getter, NULL, QUERY_DOC("NVML device index (ncclCommQueryProperties)."), PROPERTY(P_NVML_DEV)},
    {"device_api_support", property_getter, NULL, QUERY_DOC("Device API usable."), PROPERTY(P_DEVICE_API)},
    {"multimem_support", property_getter, NULL, QUERY_DOC("Multimem (NVLS) usable."), PROPERTY(P_MULTIMEM)},
    {"host_rma_support", property_getter, NULL, QUERY_DOC("Host-initiated RMA usable."), PROPERTY(P_HOST_RMA)},
    {"n_lsa_teams", property_getter, NULL, QUERY_DOC("Number of LSA teams."), PROPERTY(P_N_LSA_TEAMS)},
    {"gin_type", property_getter, NULL, QUERY_DOC("GIN transport: an NcclGinType member or a plain int."),
     PROPERTY(P_GIN_TYPE)},
    {"railed_gin_type", property_getter, NULL, QUERY_DOC("Railed GIN transport, as gin_type."),
     PROPERTY(P_RAILED_GIN_TYPE)},
    {"_properties", get_properties_struct, NULL,
     "The cached nccl.bindings.nccl.CommProperties of ncclCommQueryProperties, for the properties\n"
     "property written in Python (nccl.core._methods).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)

static PyMethodDef Communicator_own_methods[] = {
    NX_COMM_METHOD_DEF("finalize", Communicator_finalize_method, finalize__doc__),
    METHOD(destroy),
    METHOD(abort),
    METHOD(revoke),
    METHOD(suspend),
    METHOD(resume),
    METHOD(get_last_error),
    METHOD(get_async_error),
    METHOD(get_mem_stat),
    {"_require", Communicator_require, METH_O, require__doc__},
    {"close_all_resources", Communicator_close_all_resources, METH_NOARGS, close_all_resources__doc__},
    {"__enter__", Communicator_enter, METH_NOARGS, "Return self."},
    NX_COMM_METHOD_DEF("__exit__", Communicator_exit, exit__doc__),
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Communicator_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(nx_Communicator, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(Communicator__doc__, "Communicator(ptr=None)\n--\n\n"
"One NCCL communicator. Create it with Communicator.init(nranks, rank, unique_id) (or init_all,\n"
"split, shrink, grow); wrap an existing ncclComm_t with Communicator(ptr) (None or 0: a null\n"
"communicator). Release it explicitly\n"
"with destroy() or abort(), or use it as a context manager. Not thread-safe, as in NCCL.");

/* The method table is communicator_create.c's methods, this file's, then collectives.c's,
 * resources.c's, redop.c's and devcomm.c's, joined once per process (slots need
 * one array that outlives the type; interpreters importing the module at the same time share it).
 * NULL if out of memory. */
static PyMethodDef *joined_methods;
static pthread_once_t joined_once = PTHREAD_ONCE_INIT;

static void join_methods(void)
{
    const PyMethodDef *parts[] = {nx_comm_create_methods, Communicator_own_methods, nx_collective_methods,
                                  nx_resource_methods, nx_redop_methods, nx_devcomm_methods};
    const size_t nparts = sizeof parts / sizeof parts[0];
    size_t n = 0;
    for (size_t p = 0; p < nparts; p++)
        for (const PyMethodDef *m = parts[p]; m->ml_name != NULL; m++)
            n++;
    /* Process-lifetime (shared by every interpreter that imports the module), never freed. */
    PyMethodDef *all = calloc(n + 1, sizeof *all);
    if (all == NULL)
        return;
    n = 0;
    for (size_t p = 0; p < nparts; p++)
        for (const PyMethodDef *m = parts[p]; m->ml_name != NULL; m++)
            all[n++] = *m;
    joined_methods = all;
}

int nx_communicator_setup(PyObject *module, nx_state *st)
{
    pthread_once(&joined_once, join_methods);
    if (joined_methods == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (nx_call_setup(module) < 0)
        return -1;
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
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE,
        .slots = slots,
    };
    PyObject *tp = PyType_FromModuleAndSpec(module, &spec, NULL);
    if (tp == NULL)
        return -1;
    nx_types_of(st)->core[NX_TYPE_COMMUNICATOR] = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, "Communicator", tp);
}

