/* Communicator-owned resources of nccl.core (API.md sections 5.9.5 and 5.10): the CommResource
 * base, RegisteredBufferHandle, RegisteredWindowHandle and CustomRedOp, the Communicator methods
 * that create them, and the op check every collective uses for a CustomRedOp.
 *
 * A resource holds its communicator and is tracked by it (nx_comm_track); it is released only by
 * close() or by the communicator's destroy/abort/close_all_resources. There is no finalizer: a
 * resource collected while open just drops its Python object (the library releases what it holds
 * with the communicator). close() untracks the resource, so a loop that creates and closes ops does
 * not grow the communicator's list. */
#include "core.h"

#include <string.h>

typedef enum { KIND_BASE, KIND_BUFFER, KIND_WINDOW, KIND_RED_OP } resource_kind;

typedef struct {
    PyObject_HEAD
    PyObject *comm; /* the Communicator (owned) */
    int open;
    resource_kind kind;
} nx_CommResource;

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

typedef struct {
    nx_CommResource base;
    ncclRedOp_t op;
    ncclDataType_t dtype;
    ncclScalarResidence_t residence;
    PyObject *scalar; /* the host array or device buffer object the library reads */
} nx_CustomRedOp;

/* ---- common pieces ---- */

static const char *short_name(PyObject *self)
{
    const char *n = Py_TYPE(self)->tp_name, *dot = strrchr(n, '.');
    return dot ? dot + 1 : n;
}

static NX_COLD PyObject *closed_error(PyObject *self)
{
    PyErr_Format(PyExc_RuntimeError, "%s has been closed and is no longer valid", short_name(self));
    return NULL;
}

static NX_COLD PyObject *invalid_comm(nx_state *st)
{
    return nx_invalid(st, "Invalid communicator: cannot create resource with communicator ptr=0");
}

static int CommResource_traverse(PyObject *op, visitproc visit, void *arg)
{
    nx_CommResource *r = (nx_CommResource *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(r->comm);
    switch (r->kind) {
    case KIND_BUFFER:
        Py_VISIT(((nx_RegisteredBuffer *)op)->buffer);
        break;
    case KIND_WINDOW:
        Py_VISIT(((nx_RegisteredWindow *)op)->box);
        Py_VISIT(((nx_RegisteredWindow *)op)->buffer);
        break;
    case KIND_RED_OP:
        Py_VISIT(((nx_CustomRedOp *)op)->scalar);
        break;
    default:
        break;
    }
    return 0;
}

static int CommResource_clear(PyObject *op)
{
    nx_CommResource *r = (nx_CommResource *)op;
    Py_CLEAR(r->comm);
    switch (r->kind) {
    case KIND_BUFFER:
        Py_CLEAR(((nx_RegisteredBuffer *)op)->buffer);
        break;
    case KIND_WINDOW:
        Py_CLEAR(((nx_RegisteredWindow *)op)->box);
        Py_CLEAR(((nx_RegisteredWindow *)op)->buffer);
        break;
    case KIND_RED_OP:
        Py_CLEAR(((nx_CustomRedOp *)op)->scalar);
        break;
    default:
        break;
    }
    return 0;
}

static void CommResource_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    CommResource_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* A new open resource of the given C type for comm, before any library call. */
static PyObject *resource_alloc(nx_state *st, nx_core_type type, resource_kind kind, nx_Communicator *comm)
{
    if (nx_comm_handle(comm) == NULL)
        return invalid_comm(st);
    PyTypeObject *tp = st->core_types[type];
    nx_CommResource *r = (nx_CommResource *)tp->tp_alloc(tp, 0);
    if (r == NULL)
        return NULL;
    r->comm = Py_NewRef((PyObject *)comm);
    r->kind = kind;
    r->open = 1;
    return (PyObject *)r;
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
        return invalid_comm(st);
    nx_CommResource *r = (nx_CommResource *)tp->tp_alloc(tp, 0);
    if (r == NULL)
        return NULL;
    r->comm = Py_NewRef(comm);
    r->kind = KIND_BASE;
    r->open = 1;
    return (PyObject *)r;
}

/* Drops self from its communicator's tracked list (identity match; absent when the list was
 * detached by close_all_resources). */
static void untrack(nx_CommResource *r)
{
    PyObject *list = r->comm ? ((nx_Communicator *)r->comm)->resources : NULL;
    if (list == NULL)
        return;
    for (Py_ssize_t i = PyList_GET_SIZE(list); i-- > 0;)
        if (PyList_GET_ITEM(list, i) == (PyObject *)r) {
            if (PyList_SetSlice(list, i, i + 1, NULL) < 0)
                PyErr_Clear();
            return;
        }
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
    if (comm == NULL || r->kind == KIND_BASE)
        Py_RETURN_NONE;
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    if (st == NULL)
        return NULL;
    ncclResult_t rc = ncclSuccess;
    if (r->kind == KIND_BUFFER) {
        void *h = ((nx_RegisteredBuffer *)self)->handle;
        if (h != NULL) {
            NX_REQUIRE(st, ncclCommDeregister);
            NX_RUN(rc, nx_api.ncclCommDeregister(comm, h));
        }
    } else if (r->kind == KIND_WINDOW) {
        ncclWindow_t w = *(ncclWindow_t volatile *)&((nx_PointerBox *)((nx_RegisteredWindow *)self)->box)->slot;
        if (w != NULL) {
            NX_REQUIRE(st, ncclCommWindowDeregister);
            NX_RUN(rc, nx_api.ncclCommWindowDeregister(comm, w));
        }
    } else {
        ncclRedOp_t op = ((nx_CustomRedOp *)self)->op;
        NX_REQUIRE(st, ncclRedOpDestroy);
        NX_RUN(rc, nx_api.ncclRedOpDestroy(op, comm));
    }
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, comm);
    Py_RETURN_NONE;
}

static PyObject *CommResource_get_is_valid(PyObject *self, void *closure)
{
    (void)closure;
    nx_CommResource *r = (nx_CommResource *)self;
    int valid = r->open;
    if (valid && r->kind == KIND_WINDOW)
        valid = ((nx_PointerBox *)((nx_RegisteredWindow *)self)->box)->slot != NULL;
    return PyBool_FromLong(valid);
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
    {"is_valid", CommResource_get_is_valid, NULL, "True while open (for a window: and its handle is set).", NULL},
    {"comm", CommResource_get_comm, NULL, "The owning Communicator.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- RegisteredBufferHandle ---- */

static PyObject *RegisteredBuffer_get_handle(PyObject *self, void *closure)
{
    (void)closure;
    nx_RegisteredBuffer *b = (nx_RegisteredBuffer *)self;
    if (!b->base.open)
        return closed_error(self);
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

static ncclWindow_t window_of(nx_RegisteredWindow *w)
{
    return *(ncclWindow_t volatile *)&((nx_PointerBox *)w->box)->slot;
}

static PyObject *RegisteredWindow_get_handle(PyObject *self, void *closure)
{
    (void)closure;
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    return PyLong_FromVoidPtr(w->base.open ? (void *)window_of(w) : NULL);
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
        return closed_error(self);
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

/* The window of an open handle, or NULL with RuntimeError. */
static ncclWindow_t open_window(PyObject *self)
{
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)self;
    if (!w->base.open) {
        closed_error(self);
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
    ncclWindow_t win = open_window(self);
    if (win == NULL)
        return NULL;
    void *out = NULL;
    ncclResult_t rc;
    if (kind == 0) {
        NX_REQUIRE(st, ncclGetLsaMultimemDevicePointer);
        NX_RUN(rc, nx_api.ncclGetLsaMultimemDevicePointer(win, offset, &out));
    } else if (kind == 1) {
        NX_REQUIRE(st, ncclGetLsaDevicePointer);
        NX_RUN(rc, nx_api.ncclGetLsaDevicePointer(win, offset, who, &out));
    } else {
        NX_REQUIRE(st, ncclGetPeerDevicePointer);
        NX_RUN(rc, nx_api.ncclGetPeerDevicePointer(win, offset, who, &out));
    }
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, NULL);
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
    {"handle", RegisteredWindow_get_handle, NULL, "The ncclWindow_t; 0 while pending (never raises).", NULL},
    {"size", RegisteredWindow_get_size, NULL, "Registered bytes.", NULL},
    {"flags", RegisteredWindow_get_flags, NULL, "The window flags it was registered with.", NULL},
    {"user_ptr", RegisteredWindow_get_user_ptr, NULL, "The registered pointer (RuntimeError once closed).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- CustomRedOp ---- */

static PyObject *CustomRedOp_int(PyObject *self)
{
    nx_CustomRedOp *o = (nx_CustomRedOp *)self;
    if (!o->base.open)
        return closed_error(self);
    return PyLong_FromLong((long)o->op);
}

static PyObject *CustomRedOp_get_op(PyObject *self, void *closure)
{
    (void)closure;
    return CustomRedOp_int(self);
}

static PyObject *CustomRedOp_repr(PyObject *self)
{
    nx_CustomRedOp *o = (nx_CustomRedOp *)self;
    if (!o->base.open)
        return PyUnicode_FromString("<CustomRedOp: closed>");
    return PyUnicode_FromFormat("<CustomRedOp: type=PreMulSum, dtype=%s, residence=%s, op=%d>",
                                nx_dtype_name(o->dtype),
                                o->residence == ncclScalarHostImmediate ? "HostImmediate" : "Device", (int)o->op);
}

static PyObject *CustomRedOp_get_dtype(PyObject *self, void *closure)
{
    (void)closure;
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    PyObject *cls = st ? nx_lazy(st, NX_LAZY_DATATYPE) : NULL;
    return cls ? PyObject_CallFunction(cls, "i", (int)((nx_CustomRedOp *)self)->dtype) : NULL;
}

static PyGetSetDef CustomRedOp_getset[] = {
    {"op", CustomRedOp_get_op, NULL, "The dynamic ncclRedOp_t (RuntimeError once closed).", NULL},
    {"dtype", CustomRedOp_get_dtype, NULL, "The NcclDataType the operator was created for.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- shared with collectives.c (core.h) ---- */

int nx_comm_redop(nx_state *st, nx_Communicator *comm, PyObject *op, ncclDataType_t dt, ncclRedOp_t *out)
{
    if (!PyObject_TypeCheck(op, st->core_types[NX_TYPE_CUSTOM_RED_OP]))
        return nx_redop(op, "collective", "op", out);
    nx_CustomRedOp *o = (nx_CustomRedOp *)op;
    if (!o->base.open) {
        nx_invalid(st, "op: CustomRedOp has been closed and is no longer valid");
        return -1;
    }
    PyObject *owner = o->base.comm;
    if (owner != (PyObject *)comm && (owner == NULL || nx_comm_handle((nx_Communicator *)owner) != nx_comm_handle(comm))) {
        nx_invalid(st, "op: CustomRedOp belongs to another communicator");
        return -1;
    }
    if (o->dtype != dt) {
        nx_invalid(st, "op: CustomRedOp has dtype %s, but the buffers have dtype %s", nx_dtype_name(o->dtype),
                   nx_dtype_name(dt));
        return -1;
    }
    *out = o->op;
    return 0;
}

void nx_resource_close_quietly(PyObject *resource)
{
    PyObject *r = PyObject_CallMethod(resource, "close", NULL);
    if (r == NULL)
        PyErr_Clear();
    Py_XDECREF(r);
}

/* ---- numpy helpers of create_pre_mul_sum (cold) ---- */

static PyObject *numpy_module(nx_state *st)
{
    if (st->numpy == NULL)
        st->numpy = PyImport_ImportModule("numpy");
    return st->numpy;
}

static const char *const numpy_names[ncclNumTypes] = {
    [ncclInt8] = "int8",       [ncclUint8] = "uint8",     [ncclInt32] = "int32",       [ncclUint32] = "uint32",
    [ncclInt64] = "int64",     [ncclUint64] = "uint64",   [ncclFloat16] = "float16",   [ncclFloat32] = "float32",
    [ncclFloat64] = "float64", [ncclBfloat16] = "bfloat16", [ncclFloat8e4m3] = "float8_e4m3fn",
    [ncclFloat8e5m2] = "float8_e5m2",
};

/* numpy.dtype of an NCCL datatype (bf16 and fp8 through ml_dtypes). New reference. */
static PyObject *numpy_dtype(nx_state *st, ncclDataType_t dt)
{
    PyObject *np = numpy_module(st);
    if (np == NULL)
        return NULL;
    const char *name = numpy_names[dt];
    if (dt != ncclBfloat16 && dt != ncclFloat8e4m3 && dt != ncclFloat8e5m2)
        return PyObject_CallMethod(np, "dtype", "s", name);
    PyObject *ml = PyImport_ImportModule("ml_dtypes");
    if (ml == NULL) {
        PyErr_Clear();
        return nx_invalid(st, "Cannot create numpy dtype '%s': ml-dtypes package is not installed.", name);
    }
    PyObject *t = PyObject_GetAttrString(ml, name);
    Py_DECREF(ml);
    PyObject *r = t ? PyObject_CallMethod(np, "dtype", "O", t) : NULL;
    Py_XDECREF(t);
    return r;
}

/* The NCCL datatype of a numpy dtype (nx_numpy_kind_dtype), or NcclInvalid. */
static int from_numpy_dtype(nx_state *st, PyObject *d, ncclDataType_t *out)
{
    int r = -1;
    PyObject *name = PyObject_GetAttrString(d, "name"), *kind = PyObject_GetAttrString(d, "kind"),
             *isz = PyObject_GetAttrString(d, "itemsize");
    if (name == NULL || kind == NULL || isz == NULL)
        goto done;
    const char *n = PyUnicode_AsUTF8(name), *k = PyUnicode_AsUTF8(kind);
    long size = PyLong_AsLong(isz);
    if (n == NULL || k == NULL || (size == -1 && PyErr_Occurred()))
        goto done;
    int dt = k[0] != '\0' && k[1] == '\0' ? nx_numpy_kind_dtype(n, k[0], size) : -1;
    if (dt >= 0) {
        *out = (ncclDataType_t)dt;
        r = 0;
        goto done;
    }
    nx_invalid(st, "Unsupported data type: numpy dtype %S (kind=%s, itemsize=%ld, name=%s) has no NCCL equivalent", d,
               k, size, n);
done:
    Py_XDECREF(name);
    Py_XDECREF(kind);
    Py_XDECREF(isz);
    return r;
}

/* The data address of a numpy array (__array_interface__['data'][0]). */
static int array_address(PyObject *arr, void **out)
{
    PyObject *ai = PyObject_GetAttrString(arr, "__array_interface__");
    PyObject *data = ai ? PyMapping_GetItemString(ai, "data") : NULL;
    Py_XDECREF(ai);
    if (data == NULL)
        return -1;
    PyObject *p = PyTuple_Check(data) && PyTuple_GET_SIZE(data) >= 1 ? PyTuple_GET_ITEM(data, 0) : NULL;
    *out = p ? PyLong_AsVoidPtr(p) : NULL;
    Py_DECREF(data);
    if (p == NULL) {
        PyErr_SetString(PyExc_TypeError, "__array_interface__['data'] is not a tuple");
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* A C-contiguous 1-element host array of scalar (a Python number or a 1-element ndarray), with
 * dtype *dt when have_dt, else int64/float64 (numbers) or the array's own (arrays). */
static PyObject *host_scalar(nx_state *st, PyObject *scalar, int is_array, int have_dt, ncclDataType_t *dt)
{
    PyObject *np = numpy_module(st);
    if (np == NULL)
        return NULL;
    PyObject *npdt = NULL, *r = NULL;
    if (have_dt || !is_array) {
        if (!have_dt)
            *dt = PyFloat_Check(scalar) ? ncclFloat64 : ncclInt64;
        if ((npdt = numpy_dtype(st, *dt)) == NULL)
            return NULL;
    }
    if (is_array) {
        r = PyObject_CallMethod(np, "ascontiguousarray", "OO", scalar, npdt ? npdt : Py_None);
    } else {
        PyObject *list = Py_BuildValue("[O]", scalar);
        r = list ? PyObject_CallMethod(np, "array", "OO", list, npdt) : NULL;
        Py_XDECREF(list);
    }
    Py_XDECREF(npdt);
    if (r != NULL && is_array && !have_dt) {
        PyObject *d = PyObject_GetAttrString(r, "dtype");
        if (d == NULL || from_numpy_dtype(st, d, dt) < 0)
            Py_CLEAR(r);
        Py_XDECREF(d);
    }
    return r;
}

/* ---- Communicator methods ---- */

NX_MSIG(register_buffer, 1, 1, "buffer");
PyDoc_STRVAR(register_buffer__doc__, "register_buffer($self, buffer)\n--\n\n"
"Register buffer (count * itemsize bytes) with the communicator for zero-copy transfers\n"
"(ncclCommRegister). Local, not collective. Returns a tracked RegisteredBufferHandle, which keeps\n"
"buffer alive until it is closed.");
static PyObject *Communicator_register_buffer(NX_COMM_METHOD_ARGS)
{
    PyObject *a[1];
    if (nx_margs(&M_register_buffer, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(st, c, "register_buffer");
    nx_buffer b;
    if (comm == NULL || nx_resolve_buffer(st, a[0], "buffer", &b) < 0 || nx_comm_check_device(st, c, &b, "buffer") < 0)
        return NULL;
    NX_REQUIRE(st, ncclCommRegister);
    PyObject *obj = resource_alloc(st, NX_TYPE_REGISTERED_BUFFER, KIND_BUFFER, c);
    if (obj == NULL)
        return NULL;
    nx_RegisteredBuffer *rb = (nx_RegisteredBuffer *)obj;
    size_t size = b.count * nx_dtype_size(b.dtype);
    void *handle = NULL, *ptr = b.ptr;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommRegister(comm, ptr, size, &handle));
    if (NX_FAILED(rc)) {
        rb->base.open = 0;
        Py_DECREF(obj);
        return nx_raise_status(st, rc, comm);
    }
    rb->handle = handle;
    rb->size = size;
    rb->buffer = Py_NewRef(a[0]);
    if (nx_comm_track(c, obj) < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        nx_resource_close_quietly(obj);
        PyErr_Restore(et, ev, tb);
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

NX_MSIG(register_window, 2, 1, "buffer", "flags");
PyDoc_STRVAR(register_window__doc__, "register_window($self, buffer, flags=None)\n--\n\n"
"Register buffer as a window for one-sided and symmetric operations (ncclCommWindowRegister).\n"
"Collective. The handle may stay 0 until the group ends (inside group()) or until the state is\n"
"Success (nonblocking). Returns None only when no group is open on this thread, get_async_error()\n"
"is Success and the handle is still 0 (windows unsupported); the resource is then closed.");
static PyObject *Communicator_register_window(NX_COMM_METHOD_ARGS)
{
    PyObject *a[2];
    if (nx_margs(&M_register_window, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(st, c, "register_window");
    int flags = 0;
    nx_buffer b;
    if (comm == NULL || (a[1] != NULL && a[1] != Py_None && nx_int(a[1], "register_window", "flags", &flags) < 0) ||
        nx_resolve_buffer(st, a[0], "buffer", &b) < 0 || nx_comm_check_device(st, c, &b, "buffer") < 0)
        return NULL;
    NX_REQUIRE(st, ncclCommWindowRegister);
    PyObject *obj = resource_alloc(st, NX_TYPE_REGISTERED_WINDOW, KIND_WINDOW, c);
    if (obj == NULL)
        return NULL;
    nx_RegisteredWindow *w = (nx_RegisteredWindow *)obj;
    w->base.open = 0; /* until the library call succeeds */
    if ((w->box = PyObject_CallNoArgs((PyObject *)st->pointer_box_type)) == NULL) {
        Py_DECREF(obj);
        return NULL;
    }
    ncclWindow_t *slot = (ncclWindow_t *)&((nx_PointerBox *)w->box)->slot;
    size_t size = b.count * nx_dtype_size(b.dtype);
    void *ptr = b.ptr;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommWindowRegister(comm, ptr, size, slot, flags));
    if (NX_FAILED(rc)) {
        Py_DECREF(obj);
        return nx_raise_status(st, rc, comm);
    }
    w->base.open = 1;
    w->user_ptr = ptr;
    w->size = size;
    w->flags = flags;
    w->buffer = Py_NewRef(a[0]);
    if (nx_comm_track(c, obj) < 0)
        goto fail;
    if (nx_group_depth() == 0 && window_of(w) == NULL) {
        ncclResult_t state = ncclSuccess;
        NX_REQUIRE(st, ncclCommGetAsyncError);
        NX_RUN(rc, nx_api.ncclCommGetAsyncError(comm, &state));
        if (NX_FAILED(rc)) {
            nx_raise_status(st, rc, comm);
            goto fail;
        }
        if (state == ncclSuccess) {
            nx_resource_close_quietly(obj);
            Py_DECREF(obj);
            Py_RETURN_NONE;
        }
    }
    return obj;
fail: {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    nx_resource_close_quietly(obj);
    PyErr_Restore(et, ev, tb);
    Py_DECREF(obj);
    return NULL;
}
}

NX_MSIG(create_pre_mul_sum, 2, 1, "scalar", "datatype");
PyDoc_STRVAR(create_pre_mul_sum__doc__, "create_pre_mul_sum($self, scalar, datatype=None)\n--\n\n"
"A custom reduction computing scalar * sum(inputs) (ncclRedOpCreatePreMulSum). scalar: a Python\n"
"int/float (a 1-element host array of datatype, or int64/float64, used as HostImmediate), a\n"
"1-element numpy.ndarray (HostImmediate), or a 1-element device buffer (Device; its dtype must\n"
"match datatype when given). The host array is kept alive on the returned, tracked CustomRedOp,\n"
"which collectives accept as op for buffers of its dtype.");
static PyObject *Communicator_create_pre_mul_sum(NX_COMM_METHOD_ARGS)
{
    PyObject *a[2];
    if (nx_margs(&M_create_pre_mul_sum, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    nx_Communicator *c = (nx_Communicator *)self;
    ncclComm_t comm = nx_comm_require(st, c, "create_pre_mul_sum");
    if (comm == NULL)
        return NULL;
    int have_dt = a[1] != NULL && a[1] != Py_None;
    ncclDataType_t dt = ncclFloat32, want = ncclFloat32;
    if (have_dt && nx_dtype(a[1], "create_pre_mul_sum", "datatype", &want) < 0)
        return NULL;
    dt = want;
    PyObject *np = numpy_module(st), *keep = NULL, *obj = NULL;
    if (np == NULL)
        return NULL;
    PyObject *ndarray = PyObject_GetAttrString(np, "ndarray");
    int is_array = ndarray ? PyObject_IsInstance(a[0], ndarray) : -1;
    Py_XDECREF(ndarray);
    if (is_array < 0)
        return NULL;
    void *ptr = NULL;
    ncclScalarResidence_t residence = ncclScalarHostImmediate;
    if (is_array || PyLong_Check(a[0]) || PyFloat_Check(a[0])) {
        if (is_array) {
            PyObject *sz = PyObject_GetAttrString(a[0], "size");
            Py_ssize_t n = sz ? PyLong_AsSsize_t(sz) : -1;
            Py_XDECREF(sz);
            if (n == -1 && PyErr_Occurred())
                return NULL;
            if (n != 1)
                return nx_invalid(st, "NumPy array must contain exactly 1 element for scalar, got %zd elements", n);
        }
        if ((keep = host_scalar(st, a[0], is_array, have_dt, &dt)) == NULL || array_address(keep, &ptr) < 0)
            goto done;
    } else {
        nx_buffer b;
        if (nx_resolve_buffer(st, a[0], "scalar", &b) < 0) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyErr_NormalizeException(&et, &ev, &tb);
            PyObject *text = ev ? PyObject_Str(ev) : NULL;
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            if (text == NULL)
                return NULL;
            nx_invalid(st, "scalar must be int, float, numpy.ndarray, or NcclSupportedBuffer, got %s: %U",
                       Py_TYPE(a[0])->tp_name, text);
            Py_DECREF(text);
            return NULL;
        }
        if (nx_comm_check_device(st, c, &b, "scalar") < 0)
            return NULL;
        if (b.count != 1)
            return nx_invalid(st, "Device buffer must contain exactly 1 element for scalar, got %zu elements", b.count);
        if (have_dt && b.dtype != want)
            return nx_invalid(st, "Device buffer datatype %s doesn't match requested datatype %s", nx_dtype_name(b.dtype),
                              nx_dtype_name(want));
        dt = b.dtype;
        ptr = b.ptr;
        residence = ncclScalarDevice;
        keep = Py_NewRef(a[0]);
    }
    if (!nx_loader_ready() && nx_load_library(st) < 0)
        goto done;
    if (nx_api.ncclRedOpCreatePreMulSum == NULL) {
        nx_raise_function_not_found(st, "ncclRedOpCreatePreMulSum", NULL);
        goto done;
    }
    if ((obj = resource_alloc(st, NX_TYPE_CUSTOM_RED_OP, KIND_RED_OP, c)) == NULL)
        goto done;
    nx_CustomRedOp *o = (nx_CustomRedOp *)obj;
    o->base.open = 0; /* until the library call succeeds */
    ncclRedOp_t op = ncclSum;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclRedOpCreatePreMulSum(&op, ptr, dt, residence, comm));
    if (NX_FAILED(rc)) {
        Py_CLEAR(obj);
        nx_raise_status(st, rc, comm);
        goto done;
    }
    o->base.open = 1;
    o->op = op;
    o->dtype = dt;
    o->residence = residence;
    o->scalar = keep;
    keep = NULL;
    if (nx_comm_track(c, obj) < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        nx_resource_close_quietly(obj);
        PyErr_Restore(et, ev, tb);
        Py_CLEAR(obj);
    }
done:
    Py_XDECREF(keep);
    return obj;
}

NX_MSIG(create_dev_comm, 1, 0, "requirements");
PyDoc_STRVAR(create_dev_comm__doc__, "create_dev_comm($self, requirements=None)\n--\n\n"
"Not implemented: nccl4py does not wrap the NCCL device API (ncclDevCommCreate and the DevComm\n"
"struct). Raises NotImplementedError (NcclInvalid on a null communicator).");
static PyObject *Communicator_create_dev_comm(NX_COMM_METHOD_ARGS)
{
    PyObject *a[1];
    if (nx_margs(&M_create_dev_comm, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    if (nx_comm_require(st, (nx_Communicator *)self, "create_dev_comm") == NULL)
        return NULL;
    PyErr_SetString(PyExc_NotImplementedError,
                    "create_dev_comm: the NCCL device API (ncclDevCommCreate, DevComm) is not supported by nccl4py; "
                    "device communicators need device-side code that this package does not provide");
    return NULL;
}

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)

PyMethodDef nx_resource_methods[] = {
    METHOD(register_buffer),
    METHOD(register_window),
    METHOD(create_pre_mul_sum),
    METHOD(create_dev_comm),
    {NULL, NULL, 0, NULL},
};

/* ---- setup ---- */

static int add_type(PyObject *module, nx_state *st, nx_core_type idx, PyType_Spec *spec, PyObject *base,
                    const char *name)
{
    PyObject *tp = PyType_FromModuleAndSpec(module, spec, base);
    if (tp == NULL)
        return -1;
    st->core_types[idx] = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, name, tp);
}

#define RESOURCE_FLAGS (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE)
#define COMMON_SLOTS                                  \
    {Py_tp_dealloc, CommResource_dealloc},            \
    {Py_tp_traverse, CommResource_traverse},          \
    {Py_tp_clear, CommResource_clear}

int nx_resources_setup(PyObject *module, nx_state *st)
{
    PyType_Slot base_slots[] = {
        COMMON_SLOTS,
        {Py_tp_doc, (void *)CommResource__doc__},
        {Py_tp_new, CommResource_new},
        {Py_tp_repr, CommResource_repr},
        {Py_tp_methods, CommResource_methods},
        {Py_tp_getset, CommResource_getset},
        {0, NULL},
    };
    PyType_Spec base_spec = {"nccl.core.resources.CommResource", sizeof(nx_CommResource), 0,
                             RESOURCE_FLAGS | Py_TPFLAGS_BASETYPE, base_slots};
    if (add_type(module, st, NX_TYPE_COMM_RESOURCE, &base_spec, NULL, "CommResource") < 0)
        return -1;
    PyObject *base = (PyObject *)st->core_types[NX_TYPE_COMM_RESOURCE];

    PyType_Slot buffer_slots[] = {
        COMMON_SLOTS,
        {Py_tp_doc, (void *)"A buffer registered with ncclCommRegister (Communicator.register_buffer)."},
        {Py_tp_repr, RegisteredBuffer_repr},
        {Py_tp_getset, RegisteredBuffer_getset},
        {0, NULL},
    };
    PyType_Spec buffer_spec = {"nccl.core.resources.RegisteredBufferHandle", sizeof(nx_RegisteredBuffer), 0,
                               RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, buffer_slots};
    PyType_Slot window_slots[] = {
        COMMON_SLOTS,
        {Py_tp_doc, (void *)"A window registered with ncclCommWindowRegister (Communicator.register_window)."},
        {Py_tp_repr, RegisteredWindow_repr},
        {Py_tp_methods, RegisteredWindow_methods},
        {Py_tp_getset, RegisteredWindow_getset},
        {0, NULL},
    };
    PyType_Spec window_spec = {"nccl.core.resources.RegisteredWindowHandle", sizeof(nx_RegisteredWindow), 0,
                               RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, window_slots};
    PyType_Slot op_slots[] = {
        COMMON_SLOTS,
        {Py_tp_doc, (void *)"A PreMulSum reduction operator (Communicator.create_pre_mul_sum); int(op) is the ncclRedOp_t."},
        {Py_tp_repr, CustomRedOp_repr},
        {Py_nb_int, CustomRedOp_int},
        {Py_nb_index, CustomRedOp_int},
        {Py_tp_getset, CustomRedOp_getset},
        {0, NULL},
    };
    PyType_Spec op_spec = {"nccl.core.resources.CustomRedOp", sizeof(nx_CustomRedOp), 0,
                           RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, op_slots};
    if (add_type(module, st, NX_TYPE_REGISTERED_BUFFER, &buffer_spec, base, "RegisteredBufferHandle") < 0 ||
        add_type(module, st, NX_TYPE_REGISTERED_WINDOW, &window_spec, base, "RegisteredWindowHandle") < 0 ||
        add_type(module, st, NX_TYPE_CUSTOM_RED_OP, &op_spec, base, "CustomRedOp") < 0)
        return -1;
    return 0;
}
