/* The CommResource base, RegisteredBufferHandle and RegisteredWindowHandle, and the Communicator
 * methods that create them (register_buffer, register_window). CustomRedOp is in redop.c,
 * DevCommResource and create_dev_comm in devcomm.c. Lifetime rules: resources.h. */
#include "core/resources.h"
#include "structs/pointerbox.h"

#include <string.h>

typedef struct {
    nx_CommResource base;
    void *handle;     /* from ncclCommRegister */
    size_t size;      /* bytes */
    PyObject *buffer; /* kept alive while registered */
} nx_RegisteredBuffer;

typedef struct {
    nx_CommResource base;
    PyObject *box;    /* PointerBox whose slot holds the ncclWindow_t (filled at group end) */
    void *user_ptr;
    size_t size;
    int flags;
    PyObject *buffer;
} nx_RegisteredWindow;

/* ---- common pieces ---- */

static const char *short_name(PyObject *self)
{
    const char *n = Py_TYPE(self)->tp_name, *dot = strrchr(n, '.');
    return dot ? dot + 1 : n;
}

PyObject *nx_resource_closed_error(PyObject *self)
{
    PyErr_Format(PyExc_RuntimeError, "%s has been closed and is no longer valid", short_name(self));
    return NULL;
}

static NX_COLD PyObject *invalid_comm(void)
{
    return nx_raise_null_handle("Invalid communicator: cannot create resource with communicator ptr=0");
}

int nx_resource_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(((nx_CommResource *)op)->comm);
    return 0;
}

int nx_resource_clear(PyObject *op)
{
    Py_CLEAR(((nx_CommResource *)op)->comm);
    return 0;
}

void nx_resource_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    tp->tp_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

PyObject *nx_resource_alloc(nx_state *st, nx_core_type type, nx_Communicator *comm, nx_resource_release_fn release)
{
    if (nx_comm_handle(comm) == NULL)
        return invalid_comm();
    PyTypeObject *tp = nx_types_of(st)->core[type];
    nx_CommResource *r = (nx_CommResource *)tp->tp_alloc(tp, 0);
    if (r == NULL)
        return NULL;
    r->comm = Py_NewRef((PyObject *)comm);
    r->open = 0;
    r->release = release;
    return (PyObject *)r;
}

int nx_resource_track(nx_Communicator *comm, PyObject *obj)
{
    if (nx_comm_track(comm, obj) == 0)
        return 0;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    nx_resource_close_quietly(obj);
    PyErr_Restore(et, ev, tb);
    return -1;
}

PyDoc_STRVAR(CommResource__doc__, "CommResource(comm)\n--\n\n"
"Base of the resources a Communicator owns. Released by close() or by the communicator's\n"
"destroy(), abort() or close_all_resources(); never by garbage collection.");
static PyObject *CommResource_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"comm", NULL};
    PyObject *comm;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:CommResource", kwlist, &comm))
        return NULL;
    nx_state *st = nx_state_of_type(tp);
    if (st == NULL)
        return NULL;
    if (!nx_is_communicator(st, comm)) {
        PyErr_Format(PyExc_TypeError, "CommResource() argument 'comm' must be a Communicator, not %.200s",
                     Py_TYPE(comm)->tp_name);
        return NULL;
    }
    if (nx_comm_handle((nx_Communicator *)comm) == NULL)
        return invalid_comm();
    nx_CommResource *r = (nx_CommResource *)tp->tp_alloc(tp, 0);
    if (r == NULL)
        return NULL;
    r->comm = Py_NewRef(comm);
    r->open = 1;
    return (PyObject *)r;
}

/* Drops self from its communicator's tracked list (absent when the list was detached by
 * close_all_resources). list.remove runs under the list's own lock, so a thread tracking or
 * closing another resource at the same time cannot shift what is removed; it compares by
 * identity first, and the resource types define no equality of their own. */
static void untrack(nx_CommResource *r)
{
    PyObject *list = r->comm ? nx_comm_resources((nx_Communicator *)r->comm) : NULL;
    if (list == NULL)
        return;
    PyObject *res = PyObject_CallMethod(list, "remove", "O", (PyObject *)r);
    if (res == NULL)
        PyErr_Clear(); /* not tracked (any more) */
    Py_XDECREF(res);
    Py_DECREF(list);
}

PyDoc_STRVAR(close__doc__, "close($self, /)\n--\n\n"
"Release the resource (ncclCommDeregister, ncclCommWindowDeregister or ncclRedOpDestroy) and\n"
"stop tracking it. Idempotent. Skipped when the communicator is already gone.");
static PyObject *CommResource_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    nx_CommResource *r = (nx_CommResource *)self;
    if (!r->open)
        Py_RETURN_NONE;
    r->open = 0;
    untrack(r);
    ncclComm_t comm = r->comm ? nx_comm_handle((nx_Communicator *)r->comm) : NULL;
    if (comm == NULL || r->release == NULL)
        Py_RETURN_NONE;
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    if (st == NULL || r->release(st, self, comm) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *CommResource_get_is_valid(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((nx_CommResource *)self)->open);
}

static PyObject *CommResource_get_comm(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *c = ((nx_CommResource *)self)->comm;
    return Py_NewRef(c ? c : Py_None);
}

static PyObject *CommResource_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<%s: %s>", short_name(self), ((nx_CommResource *)self)->open ? "open" : "closed");
}

static PyObject *CommResource_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *CommResource_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    PyObject *r = CommResource_close(self, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static PyMethodDef CommResource_methods[] = {
    {"close", CommResource_close, METH_NOARGS, close__doc__},
    {"__enter__", CommResource_enter, METH_NOARGS, "Return self."},
    {"__exit__", (PyCFunction)(void (*)(void))CommResource_exit, METH_FASTCALL, "close(); never suppresses."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef CommResource_getset[] = {
    {"is_valid", CommResource_get_is_valid, NULL, "True while open.", NULL},
    {"comm", CommResource_get_comm, NULL, "The owning Communicator.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- RegisteredBufferHandle ---- */

static int RegisteredBuffer_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((nx_RegisteredBuffer *)op)->buffer);
    return nx_resource_traverse(op, visit, arg);
}

static int RegisteredBuffer_clear(PyObject *op)
{
    Py_CLEAR(((nx_RegisteredBuffer *)op)->buffer);
    return nx_resource_clear(op);
}

static int RegisteredBuffer_release(nx_state *st, PyObject *self, ncclComm_t comm)
{
    void *h = ((nx_RegisteredBuffer *)self)->handle;
    if (h == NULL)
        return 0;
    if (nx_require(st, &nx_api.ncclCommDeregister) < 0)
        return -1;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommDeregister(comm, h));
    return nx_check(st, rc, comm);
}

static PyObject *RegisteredBuffer_get_handle(PyObject *self, void *closure)
{
    (void)closure;
    nx_RegisteredBuffer *b = (nx_RegisteredBuffer *)self;
    if (!b->base.open)
        return nx_resource_closed_error(self);
    if (b->handle == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Buffer registration handle is invalid");
        return NULL;
    }
    return PyLong_FromVoidPtr(b->handle);
}

static PyObject *RegisteredBuffer_get_size(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(((nx_RegisteredBuffer *)self)->size);
}

static PyObject *RegisteredBuffer_repr(PyObject *self)
{
    nx_RegisteredBuffer *b = (nx_RegisteredBuffer *)self;
    if (!b->base.open)
        return PyUnicode_FromString("<RegisteredBufferHandle: closed>");
    char text[96];
    snprintf(text, sizeof text, "<RegisteredBufferHandle: size=%zu, handle=0x%zx>", b->size,
             (size_t)(uintptr_t)b->handle);
    return PyUnicode_FromString(text);
}

static PyGetSetDef RegisteredBuffer_getset[] = {
    {"handle", RegisteredBuffer_get_handle, NULL, "The registration handle (RuntimeError once closed).", NULL},
    {"size", RegisteredBuffer_get_size, NULL, "Registered bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- RegisteredWindowHandle ---- */

static int RegisteredWindow_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((nx_RegisteredWindow *)op)->box);
    Py_VISIT(((nx_RegisteredWindow *)op)->buffer);
    return nx_resource_traverse(op, visit, arg);
}

static int RegisteredWindow_clear(PyObject *op)
{
    Py_CLEAR(((nx_RegisteredWindow *)op)->box);
    Py_CLEAR(((nx_RegisteredWindow *)op)->buffer);
    return nx_resource_clear(op);
}

/* The handle, NULL until the library fills the box (at group end, or when a nonblocking
 * registration completes): an atomic load, as nx_comm_handle's. */
static ncclWindow_t window_of(nx_RegisteredWindow *w)
{
    return __atomic_load_n((ncclWindow_t *)&((nx_PointerBox *)w->box)->slot, __ATOMIC_ACQUIRE);
}

static int RegisteredWindow_release(nx_state *st, PyObject *self, ncclComm_t comm)
{
    ncclWindow_t w = window_of((nx_RegisteredWindow *)self);
    if (w == NULL)
        return 0;
    if (nx_require(st, &nx_api.ncclCommWindowDeregister) < 0)
        return -1;
    /* the communicator's ring, found by its handle (docs/api/trace.md) */
    nx_trace_mark tm = nx_trace_enter(nx_trace_find(comm), &(nx_trace_call){.op = NX_T_WIN_DEREGISTER});
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommWindowDeregister(comm, w));
    nx_trace_leave(tm, rc);
    return nx_check(st, rc, comm);
}

static PyObject *RegisteredWindow_get_is_valid(PyObject *self, void *closure)
{
    (void)closure;
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    return PyBool_FromLong(w->base.open && window_of(w) != NULL);
}

static PyObject *RegisteredWindow_get_handle(PyObject *self, void *closure)
{
    (void)closure;
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    return PyLong_FromVoidPtr(w->base.open ? (void *)window_of(w) : NULL);
}

static PyObject *RegisteredWindow_get_window(PyObject *self, void *closure)
{
    (void)closure;
    ncclWindow_t win = nx_window_open(self);
    return win ? PyLong_FromVoidPtr((void *)win) : NULL;
}

static PyObject *RegisteredWindow_get_size(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(((nx_RegisteredWindow *)self)->size);
}

static PyObject *RegisteredWindow_get_flags(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(((nx_RegisteredWindow *)self)->flags);
}

static PyObject *RegisteredWindow_get_user_ptr(PyObject *self, void *closure)
{
    (void)closure;
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    if (!w->base.open)
        return nx_resource_closed_error(self);
    return PyLong_FromVoidPtr(w->user_ptr);
}

static PyObject *RegisteredWindow_repr(PyObject *self)
{
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    if (!w->base.open)
        return PyUnicode_FromString("<RegisteredWindowHandle: closed>");
    char text[128];
    snprintf(text, sizeof text, "<RegisteredWindowHandle: size=%zu, handle=0x%zx, flags=%d>", w->size,
             (size_t)(uintptr_t)window_of(w), w->flags);
    return PyUnicode_FromString(text);
}

ncclWindow_t nx_window_handle(PyObject *self)
{
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    return w->base.open ? window_of(w) : NULL;
}

/* The window of an open handle, or NULL with RuntimeError (resources.h). */
ncclWindow_t nx_window_open(PyObject *self)
{
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    if (!w->base.open) {
        nx_resource_closed_error(self);
        return NULL;
    }
    ncclWindow_t win = window_of(w);
    if (win == NULL)
        PyErr_SetString(PyExc_RuntimeError, "RegisteredWindowHandle has no window yet (the group has not ended)");
    return win;
}

/* kind 0: multimem(offset); 1: lsa(lsa_rank, offset); 2: peer(peer, offset). */
static PyObject *window_pointer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                const nx_msig *sig, int kind)
{
    PyObject *a[2];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    if (st == NULL)
        return NULL;
    int who = 0;
    size_t offset = 0;
    PyObject *off = kind == 0 ? a[0] : a[1];
    if ((kind != 0 && nx_int(a[0], sig->fname, sig->names[0], &who) < 0) ||
        (off != NULL && nx_size(off, sig->fname, "offset", &offset) < 0))
        return NULL;
    ncclWindow_t win = nx_window_open(self);
    if (win == NULL)
        return NULL;
    void *out = NULL;
    ncclResult_t rc;
    if (kind == 0) {
        if (nx_require(st, &nx_api.ncclGetLsaMultimemDevicePointer) < 0)
            return NULL;
        NX_RUN(rc, nx_api.ncclGetLsaMultimemDevicePointer(win, offset, &out));
    } else if (kind == 1) {
        if (nx_require(st, &nx_api.ncclGetLsaDevicePointer) < 0)
            return NULL;
        NX_RUN(rc, nx_api.ncclGetLsaDevicePointer(win, offset, who, &out));
    } else {
        if (nx_require(st, &nx_api.ncclGetPeerDevicePointer) < 0)
            return NULL;
        NX_RUN(rc, nx_api.ncclGetPeerDevicePointer(win, offset, who, &out));
    }
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    if (out == NULL && kind != 1)
        Py_RETURN_NONE;
    return PyLong_FromVoidPtr(out);
}

NX_MSIG(get_lsa_multimem_device_pointer, 1, 0, "offset");
static PyObject *RegisteredWindow_multimem(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return window_pointer(self, args, nargs, kwnames, &M_get_lsa_multimem_device_pointer, 0);
}

NX_MSIG(get_lsa_device_pointer, 2, 1, "lsa_rank", "offset");
static PyObject *RegisteredWindow_lsa(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return window_pointer(self, args, nargs, kwnames, &M_get_lsa_device_pointer, 1);
}

NX_MSIG(get_peer_device_pointer, 2, 1, "peer", "offset");
static PyObject *RegisteredWindow_peer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return window_pointer(self, args, nargs, kwnames, &M_get_peer_device_pointer, 2);
}

#define WINDOW_METHOD(pyname, fn, doc) \
    {pyname, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, doc}

static PyMethodDef RegisteredWindow_methods[] = {
    WINDOW_METHOD("get_lsa_multimem_device_pointer", RegisteredWindow_multimem,
                  "get_lsa_multimem_device_pointer($self, offset=0)\n--\n\n"
                  "ncclGetLsaMultimemDevicePointer at a byte offset; None when NCCL returns NULL."),
    WINDOW_METHOD("get_lsa_device_pointer", RegisteredWindow_lsa,
                  "get_lsa_device_pointer($self, lsa_rank, offset=0)\n--\n\n"
                  "ncclGetLsaDevicePointer of lsa_rank's window at a byte offset."),
    WINDOW_METHOD("get_peer_device_pointer", RegisteredWindow_peer,
                  "get_peer_device_pointer($self, peer, offset=0)\n--\n\n"
                  "ncclGetPeerDevicePointer of peer's window at a byte offset; None when NCCL returns NULL."),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef RegisteredWindow_getset[] = {
    {"is_valid", RegisteredWindow_get_is_valid, NULL, "True while open and its handle is set.", NULL},
    {"handle", RegisteredWindow_get_handle, NULL, "The ncclWindow_t; 0 while pending (never raises).", NULL},
    {"_window", RegisteredWindow_get_window, NULL,
     "The ncclWindow_t, for the queries written in Python (nccl.core._methods); RuntimeError once closed or\n"
     "while pending.", NULL},
    {"size", RegisteredWindow_get_size, NULL, "Registered bytes.", NULL},
    {"flags", RegisteredWindow_get_flags, NULL, "The window flags it was registered with.", NULL},
    {"user_ptr", RegisteredWindow_get_user_ptr, NULL, "The registered pointer (RuntimeError once closed).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

void nx_resource_close_quietly(PyObject *resource)
{
    PyObject *r = PyObject_CallMethod(resource, "close", NULL);
    if (r == NULL)
        PyErr_Clear();
    Py_XDECREF(r);
}

/* ---- Communicator methods ---- */

NX_MSIG(register_buffer, 1, 1, "buffer");
PyDoc_STRVAR(register_buffer__doc__, "register_buffer($self, buffer)\n--\n\n"
"Register buffer (count * itemsize bytes) with the communicator for zero-copy transfers\n"
"(ncclCommRegister). Local, not collective. Returns a tracked RegisteredBufferHandle, which keeps\n"
"buffer alive until it is closed.");
/* What a registration keeps while it is open: what pins the buffer's memory (a buffer-protocol
 * export, a DLPack capsule: the resolver's keep), else the buffer object itself. */
static PyObject *registration_pin(nx_buffer *b, PyObject *o)
{
    PyObject *pin = b->keep != NULL ? b->keep : Py_NewRef(o);
    b->keep = NULL;
    return pin;
}

/* register_buffer and register_window resolve the buffer before the handle is read (nx_call,
 * core.h); the resolver's pin is the resource's to keep. */
static PyObject *register_buffer_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[1];
    if (nx_margs(&M_register_buffer, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    nx_buffer b;
    if (nx_call_begin(k, "register_buffer") < 0 || nx_resolve_buffer(st, a[0], "buffer", &b) < 0)
        return NULL;
    PyObject *pin = registration_pin(&b, a[0]);
    if (nx_comm_check_device(st, c, &b, "buffer") < 0 || nx_require(st, &nx_api.ncclCommRegister) < 0) {
        Py_DECREF(pin);
        return NULL;
    }
    /* allocated before the handle is read: an allocation may run the collector (and finalizers) */
    PyObject *obj = nx_resource_alloc(st, NX_TYPE_REGISTERED_BUFFER, c, RegisteredBuffer_release);
    if (obj == NULL) {
        Py_DECREF(pin);
        return NULL;
    }
    ((nx_RegisteredBuffer *)obj)->buffer = pin;
    ncclComm_t comm = nx_call_ready(k);
    if (comm == NULL) {
        Py_DECREF(obj);
        return NULL;
    }
    nx_RegisteredBuffer *rb = (nx_RegisteredBuffer *)obj;
    size_t size = b.count * nx_dtype_size(b.dtype);
    void *handle = NULL, *ptr = b.ptr;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommRegister(comm, ptr, size, &handle));
    if (nx_check(st, rc, comm) < 0) {
        Py_DECREF(obj); /* not open: nothing to release */
        return NULL;
    }
    rb->base.open = 1;
    rb->handle = handle;
    rb->size = size;
    if (nx_resource_track(c, obj) < 0)
        Py_CLEAR(obj);
    return obj;
}

static PyObject *Communicator_register_buffer(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(register_buffer_body, NX_COMM_METHOD_PASS);
}

NX_MSIG(register_window, 2, 1, "buffer", "flags");
PyDoc_STRVAR(register_window__doc__, "register_window($self, buffer, flags=None)\n--\n\n"
"Register buffer as a window for one-sided and symmetric operations (ncclCommWindowRegister).\n"
"Collective. Always returns the RegisteredWindowHandle (nccl4py 0.6.0); its handle may stay 0\n"
"until the group ends (inside group()) or until the state is Success (nonblocking).");
static PyObject *register_window_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    if (nx_margs(&M_register_window, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    int flags = 0;
    nx_buffer b;
    if (nx_call_begin(k, "register_window") < 0 ||
        (a[1] != NULL && a[1] != Py_None && nx_int(a[1], "register_window", "flags", &flags) < 0) ||
        nx_resolve_buffer(st, a[0], "buffer", &b) < 0)
        return NULL;
    PyObject *pin = registration_pin(&b, a[0]);
    if (nx_comm_check_device(st, c, &b, "buffer") < 0 || nx_require(st, &nx_api.ncclCommWindowRegister) < 0) {
        Py_DECREF(pin);
        return NULL;
    }
    PyObject *obj = nx_resource_alloc(st, NX_TYPE_REGISTERED_WINDOW, c, RegisteredWindow_release);
    if (obj == NULL) {
        Py_DECREF(pin);
        return NULL;
    }
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)obj;
    w->buffer = pin;
    ncclComm_t comm;
    /* the box is made (Python code: PointerBox()) before the handle is read */
    if ((w->box = PyObject_CallNoArgs((PyObject *)nx_types_of(st)->pointer_box)) == NULL || (comm = nx_call_ready(k)) == NULL) {
        Py_DECREF(obj);
        return NULL;
    }
    ncclWindow_t *slot = (ncclWindow_t *)&((nx_PointerBox *)w->box)->slot;
    size_t size = b.count * nx_dtype_size(b.dtype);
    void *ptr = b.ptr;
    nx_trace_mark tm = nx_trace_enter(nx_comm_trace(c, comm), &(nx_trace_call){.op = NX_T_WIN_REGISTER,
                                                                               .flags = NX_TF_COUNT | NX_TF_SEND,
                                                                               .count = size, .send = (uintptr_t)ptr});
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommWindowRegister(comm, ptr, size, slot, flags));
    nx_trace_leave(tm, rc);
    if (nx_check(st, rc, comm) < 0) {
        Py_DECREF(obj); /* not open: nothing to release */
        return NULL;
    }
    w->base.open = 1;
    w->user_ptr = ptr;
    w->size = size;
    w->flags = flags;
    if (nx_resource_track(c, obj) < 0)
        goto fail;
    /* nccl4py 0.5.0 and later: the handle object is always returned; its handle may read 0 until
     * the group ends or a nonblocking registration completes (docs/compatibility.md). */
    return obj;
fail: {
    /* Registered: close() deregisters and untracks (nothing left to do when nx_resource_track
     * already closed it); the first error is the one raised. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    nx_resource_close_quietly(obj);
    PyErr_Restore(et, ev, tb);
    Py_DECREF(obj);
    return NULL;
}
}

static PyObject *Communicator_register_window(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(register_window_body, NX_COMM_METHOD_PASS);
}

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)

PyMethodDef nx_resource_methods[] = {
    METHOD(register_buffer),
    METHOD(register_window),
    {NULL, NULL, 0, NULL},
};

/* ---- setup ---- */

int nx_resource_add_type(PyObject *module, nx_state *st, nx_core_type idx, PyType_Spec *spec, PyObject *base,
                         const char *name)
{
    PyObject *tp = PyType_FromModuleAndSpec(module, spec, base);
    if (tp == NULL)
        return -1;
    nx_types_of(st)->core[idx] = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, name, tp);
}

int nx_resources_setup(PyObject *module, nx_state *st)
{
    PyType_Slot base_slots[] = {
        {Py_tp_dealloc, nx_resource_dealloc},
        {Py_tp_traverse, nx_resource_traverse},
        {Py_tp_clear, nx_resource_clear},
        {Py_tp_doc, (void *)CommResource__doc__},
        {Py_tp_new, CommResource_new},
        {Py_tp_repr, CommResource_repr},
        {Py_tp_methods, CommResource_methods},
        {Py_tp_getset, CommResource_getset},
        {0, NULL},
    };
    PyType_Spec base_spec = {"nccl.core.resources.CommResource", sizeof(nx_CommResource), 0,
                             NX_RESOURCE_FLAGS | Py_TPFLAGS_BASETYPE, base_slots};
    if (nx_resource_add_type(module, st, NX_TYPE_COMM_RESOURCE, &base_spec, NULL, "CommResource") < 0)
        return -1;
    PyObject *base = (PyObject *)nx_types_of(st)->core[NX_TYPE_COMM_RESOURCE];

    PyType_Slot buffer_slots[] = {
        {Py_tp_dealloc, nx_resource_dealloc},
        {Py_tp_traverse, RegisteredBuffer_traverse},
        {Py_tp_clear, RegisteredBuffer_clear},
        {Py_tp_doc, (void *)"A buffer registered with ncclCommRegister (Communicator.register_buffer)."},
        {Py_tp_repr, RegisteredBuffer_repr},
        {Py_tp_getset, RegisteredBuffer_getset},
        {0, NULL},
    };
    PyType_Spec buffer_spec = {"nccl.core.resources.RegisteredBufferHandle", sizeof(nx_RegisteredBuffer), 0,
                               NX_RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, buffer_slots};
    PyType_Slot window_slots[] = {
        {Py_tp_dealloc, nx_resource_dealloc},
        {Py_tp_traverse, RegisteredWindow_traverse},
        {Py_tp_clear, RegisteredWindow_clear},
        {Py_tp_doc, (void *)"A window registered with ncclCommWindowRegister (Communicator.register_window)."},
        {Py_tp_repr, RegisteredWindow_repr},
        {Py_tp_methods, RegisteredWindow_methods},
        {Py_tp_getset, RegisteredWindow_getset},
        {0, NULL},
    };
    PyType_Spec window_spec = {"nccl.core.resources.RegisteredWindowHandle", sizeof(nx_RegisteredWindow), 0,
                               NX_RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, window_slots};
    if (nx_resource_add_type(module, st, NX_TYPE_REGISTERED_BUFFER, &buffer_spec, base, "RegisteredBufferHandle") < 0 ||
        nx_resource_add_type(module, st, NX_TYPE_REGISTERED_WINDOW, &window_spec, base, "RegisteredWindowHandle") < 0)
        return -1;
    return 0;
}
