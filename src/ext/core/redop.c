/* CustomRedOp, the PreMulSum reduction operator of nccl.core (docs/compatibility.md#resources): its type,
 * Communicator.create_pre_mul_sum that makes one, and the op check every collective runs on a
 * CustomRedOp argument. A CommResource (resources.h): tracked by its communicator, released by
 * close() (ncclRedOpDestroy). */
#include "core/resources.h"

#include <string.h>

typedef struct {
    nx_CommResource base;
    ncclRedOp_t op;
    ncclDataType_t dtype;
    ncclScalarResidence_t residence;
    PyObject *scalar; /* the host array or device buffer object the library reads */
} nx_CustomRedOp;

/* ---- the type ---- */

static int CustomRedOp_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((nx_CustomRedOp *)op)->scalar);
    return nx_resource_traverse(op, visit, arg);
}

static int CustomRedOp_clear(PyObject *op)
{
    Py_CLEAR(((nx_CustomRedOp *)op)->scalar);
    return nx_resource_clear(op);
}

static int CustomRedOp_release(nx_state *st, PyObject *self, ncclComm_t comm)
{
    if (nx_require(st, &nx_api.ncclRedOpDestroy) < 0)
        return -1;
    ncclRedOp_t op = ((nx_CustomRedOp *)self)->op;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclRedOpDestroy(op, comm));
    return nx_check(st, rc, comm);
}

static PyObject *CustomRedOp_int(PyObject *self)
{
    nx_CustomRedOp *o = (nx_CustomRedOp *)self;
    if (!o->base.open)
        return nx_resource_closed_error(self);
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

/* ---- the op check of the collectives (core.h) ---- */

int nx_comm_redop(nx_state *st, nx_Communicator *comm, PyObject *op, ncclDataType_t dt, ncclRedOp_t *out)
{
    if (!PyObject_TypeCheck(op, nx_types_of(st)->core[NX_TYPE_CUSTOM_RED_OP]))
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

/* ---- numpy helpers of create_pre_mul_sum (cold) ---- */

/* The numpy module (borrowed), imported on first use. */
static PyObject *numpy_module(nx_state *st) { return nx_lazy(st, NX_LAZY_NUMPY); }

/* numpy.dtype of an NCCL datatype (bf16 and fp8 through the optional ml_dtypes package, which
 * nccl.core's registered ml_dtype imports when first asked). New reference. */
static PyObject *numpy_dtype(nx_state *st, ncclDataType_t dt)
{
    PyObject *np = numpy_module(st);
    if (np == NULL)
        return NULL;
    int ml_dtypes = 0;
    const char *name = nx_dtype_numpy_name(dt, &ml_dtypes);
    if (!ml_dtypes)
        return PyObject_CallMethod(np, "dtype", "s", name);
    PyObject *ml_dtype = nx_lazy(st, NX_LAZY_ML_DTYPE); /* borrowed */
    PyObject *t = ml_dtype ? PyObject_CallFunction(ml_dtype, "s", name) : NULL;
    if (t == NULL && PyErr_ExceptionMatches(PyExc_ImportError)) {
        PyErr_Clear();
        return nx_invalid(st, "Cannot create numpy dtype '%s': ml-dtypes package is not installed.", name);
    }
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
        *out = nx_dtype_of(dt);
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

/* ---- Communicator.create_pre_mul_sum ---- */

NX_MSIG(create_pre_mul_sum, 2, 1, "scalar", "datatype");
PyDoc_STRVAR(create_pre_mul_sum__doc__, "create_pre_mul_sum($self, scalar, datatype=None)\n--\n\n"
"A custom reduction computing scalar * sum(inputs) (ncclRedOpCreatePreMulSum). scalar: a Python\n"
"int/float (a 1-element host array of datatype, or int64/float64, used as HostImmediate), a\n"
"1-element numpy.ndarray (HostImmediate), or a 1-element device buffer (Device; its dtype must\n"
"match datatype when given). The host array is kept alive on the returned, tracked CustomRedOp,\n"
"which collectives accept as op for buffers of its dtype.");
/* The scalar is converted (numpy calls, the resolver: Python code) before the handle is read
 * (nx_call, core.h). */
static PyObject *create_pre_mul_sum_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    if (nx_margs(&M_create_pre_mul_sum, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = k->st;
    nx_Communicator *c = k->c;
    if (nx_call_begin(k, "create_pre_mul_sum") < 0)
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
        /* the operator reads the scalar at every use: it keeps what pins its memory, else the object */
        keep = b.keep != NULL ? b.keep : Py_NewRef(a[0]);
        if (nx_comm_check_device(st, c, &b, "scalar") < 0)
            goto done;
        if (b.count != 1) {
            nx_invalid(st, "Device buffer must contain exactly 1 element for scalar, got %zu elements", b.count);
            goto done;
        }
        if (have_dt && b.dtype != want) {
            nx_invalid(st, "Device buffer datatype %s doesn't match requested datatype %s", nx_dtype_name(b.dtype),
                       nx_dtype_name(want));
            goto done;
        }
        dt = b.dtype;
        ptr = b.ptr;
        residence = ncclScalarDevice;
    }
    if (nx_require(st, &nx_api.ncclRedOpCreatePreMulSum) < 0)
        goto done;
    /* allocated before the handle is read: an allocation may run the collector (and finalizers) */
    if ((obj = nx_resource_alloc(st, NX_TYPE_CUSTOM_RED_OP, c, CustomRedOp_release)) == NULL)
        goto done;
    ncclComm_t comm = nx_call_ready(k);
    if (comm == NULL) {
        Py_CLEAR(obj);
        goto done;
    }
    nx_CustomRedOp *o = (nx_CustomRedOp *)obj;
    ncclRedOp_t op = ncclSum;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclRedOpCreatePreMulSum(&op, ptr, dt, residence, comm));
    if (nx_check(st, rc, comm) < 0) {
        Py_CLEAR(obj); /* not open: nothing to release */
        goto done;
    }
    o->base.open = 1;
    o->op = op;
    o->dtype = dt;
    o->residence = residence;
    o->scalar = keep;
    keep = NULL;
    if (nx_resource_track(c, obj) < 0)
        Py_CLEAR(obj);
done:
    Py_XDECREF(keep);
    return obj;
}

static PyObject *Communicator_create_pre_mul_sum(NX_COMM_METHOD_ARGS)
{
    return nx_comm_call(create_pre_mul_sum_body, NX_COMM_METHOD_PASS);
}

PyMethodDef nx_redop_methods[] = {
    NX_COMM_METHOD_DEF("create_pre_mul_sum", Communicator_create_pre_mul_sum, create_pre_mul_sum__doc__),
    {NULL, NULL, 0, NULL},
};

int nx_redop_setup(PyObject *module, nx_state *st)
{
    PyType_Slot slots[] = {
        {Py_tp_dealloc, nx_resource_dealloc},
        {Py_tp_traverse, CustomRedOp_traverse},
        {Py_tp_clear, CustomRedOp_clear},
        {Py_tp_doc, (void *)"A PreMulSum reduction operator (Communicator.create_pre_mul_sum); int(op) is the ncclRedOp_t."},
        {Py_tp_repr, CustomRedOp_repr},
        {Py_nb_int, CustomRedOp_int},
        {Py_nb_index, CustomRedOp_int},
        {Py_tp_getset, CustomRedOp_getset},
        {0, NULL},
    };
    PyType_Spec spec = {"nccl.core.resources.CustomRedOp", sizeof(nx_CustomRedOp), 0,
                        NX_RESOURCE_FLAGS | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots};
    return nx_resource_add_type(module, st, NX_TYPE_CUSTOM_RED_OP, &spec,
                                (PyObject *)nx_types_of(st)->core[NX_TYPE_COMM_RESOURCE], "CustomRedOp");
}
