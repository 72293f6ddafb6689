/* nccl.core.buffer.NcclBuffer: the resolver's result (buffer.h) as a Python object, for callers
 * that resolve once and reuse the pointer, count and dtype. */
#include "core/core.h"

/* Holds no Python references (only the resolved C values), so it needs no GC support. */
typedef struct {
    PyObject_HEAD
    nx_buffer b;
} nx_NcclBuffer;

static PyObject *NcclBuffer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"buffer", "stream", NULL};
    PyObject *obj, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:NcclBuffer", kwlist, &obj, &stream))
        return NULL;
    nx_state *st = PyType_GetModuleState(type);
    nx_buffer b;
    cudaStream_t s;
    /* the stream is validated like every stream= argument; resolution does not synchronise */
    if (nx_resolve_stream(st, stream, &s) < 0 || nx_resolve_buffer(st, obj, "buffer", &b) < 0)
        return NULL;
    /* a view of the values only: what pins the memory is the caller's to keep (the object) */
    Py_CLEAR(b.keep);
    nx_NcclBuffer *self = (nx_NcclBuffer *)type->tp_alloc(type, 0);
    if (self != NULL)
        self->b = b;
    return (PyObject *)self;
}

static void NcclBuffer_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static const nx_buffer *resolved(PyObject *self) { return &((nx_NcclBuffer *)self)->b; }

static PyObject *NcclBuffer_ptr(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong((uintptr_t)resolved(self)->ptr);
}
static PyObject *NcclBuffer_count(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(resolved(self)->count);
}
static PyObject *NcclBuffer_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(resolved(self)->count * nx_dtype_size(resolved(self)->dtype));
}
static PyObject *NcclBuffer_device_id(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(resolved(self)->device);
}
static PyObject *NcclBuffer_readonly(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(resolved(self)->readonly);
}
static PyObject *NcclBuffer_dtype(PyObject *self, void *c)
{
    (void)c;
    nx_state *st = PyType_GetModuleState(Py_TYPE(self));
    PyObject *cls = nx_lazy(st, NX_LAZY_DATATYPE); /* borrowed */
    return cls ? PyObject_CallFunction(cls, "i", (int)resolved(self)->dtype) : NULL;
}

static PyObject *NcclBuffer_repr(PyObject *self)
{
    const nx_buffer *b = resolved(self);
    if (b->device == NX_DEVICE_HOST)
        return PyUnicode_FromFormat("<NcclBuffer ptr=%p count=%zu dtype=%s device=host>", b->ptr, b->count,
                                    nx_dtype_name(b->dtype));
    return PyUnicode_FromFormat("<NcclBuffer ptr=%p count=%zu dtype=%s device=%d>", b->ptr, b->count,
                                nx_dtype_name(b->dtype), b->device);
}

static PyGetSetDef NcclBuffer_getset[] = {
    {"ptr", NcclBuffer_ptr, NULL, "Address of the first element.", NULL},
    {"count", NcclBuffer_count, NULL, "Number of elements of dtype.", NULL},
    {"dtype", NcclBuffer_dtype, NULL, "The NcclDataType of the elements.", NULL},
    {"device_id", NcclBuffer_device_id, NULL, "Device ordinal, or -1 for host memory.", NULL},
    {"nbytes", NcclBuffer_nbytes, NULL, "count * dtype.itemsize.", NULL},
    {"readonly", NcclBuffer_readonly, NULL, "The producer marked the memory read-only.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(NcclBuffer__doc__, "NcclBuffer(buffer, stream=None)\n--\n\n"
"A resolved view of an array object (torch, cupy, numpy, cuda.core Buffer, DLPack, CUDA array\n"
"interface, or on the host backend any buffer-protocol object): ptr, count, dtype, device_id.\n"
"Raises NcclInvalid for unsupported types, dtypes or non-dense layouts. Keeps no reference to\n"
"buffer: the caller keeps the memory alive.");

static PyType_Slot NcclBuffer_slots[] = {
    {Py_tp_new, NcclBuffer_new},
    {Py_tp_dealloc, NcclBuffer_dealloc},
    {Py_tp_repr, NcclBuffer_repr},
    {Py_tp_getset, NcclBuffer_getset},
    {Py_tp_doc, (void *)NcclBuffer__doc__},
    {0, NULL},
};

static PyType_Spec NcclBuffer_spec = {
    .name = "nccl.core.buffer.NcclBuffer",
    .basicsize = sizeof(nx_NcclBuffer),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = NcclBuffer_slots,
};

int nx_ncclbuffer_setup(PyObject *module, nx_state *st)
{
    PyObject *tp = PyType_FromModuleAndSpec(module, &NcclBuffer_spec, NULL);
    if (tp == NULL)
        return -1;
    nx_types_of(st)->core[NX_TYPE_NCCL_BUFFER] = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, "NcclBuffer", tp);
}
