/* The struct wrapper classes. Storage is either owned (calloc'd, stamped by the class's
 * initializer) or borrowed from a buffer, a pointer whose owner we keep alive, or the wrapper of
 * the struct a nested field lives in. The layouts are struct_layouts.c's tables. */
#include "structs/structs.h"

#include <float.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "loader/loader.h"
#include "module/convert.h"
#include "module/module.h"
#include "module/state.h"
#include "structs/struct_layouts.h"

typedef struct {
    PyObject_HEAD
    char *ptr;
    const nx_struct_desc *desc;
    int readonly;
    int owns;           /* ptr was calloc'd by us */
    int has_view;       /* view holds the borrowed buffer */
    Py_buffer view;
    PyObject *owner;    /* keeps borrowed memory alive (from_ptr owner=, from_data's array, a parent) */
    PyObject *keep[NX_MAX_KEEP];
} nx_Struct;

#define descs nx_struct_descs

/* Structs whose `version` the library checks against its own (it refuses a newer one, and fills
 * or reads that version's fields only); see nccl_abi.h. */
void nx_struct_fit_library(nx_struct_kind kind, void *ptr)
{
    unsigned int *version;
    if (!nx_loader_ready() || ptr == NULL)
        return;
    if (kind == NX_STRUCT_COMM_PROPERTIES)
        version = &((ncclCommProperties_t *)ptr)->version;
    else if (kind == NX_STRUCT_DEV_COMM_REQUIREMENTS)
        version = &((ncclDevCommRequirements_t *)ptr)->version;
    else
        return;
    int lib = nx_loader_info()->version;
    if (lib > 0 && *version > (unsigned int)lib)
        *version = (unsigned int)lib;
}

static nx_Struct *alloc_struct(PyTypeObject *tp, const nx_struct_desc *d);

/* ---- field access ---- */

static const char *elem_format(nx_field_kind elem)
{
    return elem == F_U8 ? "B" : elem == F_I32 ? "i" : "Q";
}

/* A nested struct: a wrapper of the nested class over this one's memory, keeping this alive. */
static PyObject *nested_get(nx_Struct *self, const nx_field *f)
{
    nx_state *st = PyType_GetModuleState(Py_TYPE(self));
    nx_Struct *sub = alloc_struct(st->structs.types[f->aux], &descs[f->aux]);
    if (sub == NULL)
        return NULL;
    sub->ptr = self->ptr + f->offset;
    sub->readonly = self->readonly;
    sub->owner = Py_NewRef((PyObject *)self);
    return (PyObject *)sub;
}

/* An array: a memoryview of its elements over this wrapper's buffer (writable unless this is). */
static PyObject *array_get(nx_Struct *self, const nx_field *f)
{
    size_t n = f->len * nx_field_elem_size((nx_field_kind)f->aux);
    PyObject *out = NULL, *part = NULL, *range = NULL;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)self);
    PyObject *start = PyLong_FromSize_t(f->offset), *stop = PyLong_FromSize_t(f->offset + n);
    if (mv != NULL && start != NULL && stop != NULL)
        range = PySlice_New(start, stop, NULL);
    if (range != NULL)
        part = PyObject_GetItem(mv, range);
    if (part != NULL)
        out = PyObject_CallMethod(part, "cast", "s", elem_format((nx_field_kind)f->aux));
    Py_XDECREF(part);
    Py_XDECREF(range);
    Py_XDECREF(start);
    Py_XDECREF(stop);
    Py_XDECREF(mv);
    return out;
}

static PyObject *Struct_get_field(PyObject *op, void *closure)
{
    nx_Struct *self = (nx_Struct *)op;
    const nx_field *f = closure;
    const char *p = self->ptr + f->offset;
    switch (f->kind) {
    case F_I32: { int32_t v; memcpy(&v, p, sizeof v); return PyLong_FromLong(v); }
    case F_U32: { uint32_t v; memcpy(&v, p, sizeof v); return PyLong_FromUnsignedLong(v); }
    case F_U8: return PyLong_FromLong((unsigned char)*p);
    case F_SIZE: { size_t v; memcpy(&v, p, sizeof v); return PyLong_FromSize_t(v); }
    case F_U64: { uint64_t v; memcpy(&v, p, sizeof v); return PyLong_FromUnsignedLongLong(v); }
    case F_F32: { float v; memcpy(&v, p, sizeof v); return PyFloat_FromDouble(v); }
    case F_PTR: { void *v; memcpy(&v, p, sizeof v); return PyLong_FromVoidPtr(v); }
    case F_CSTR: {
        const char *s;
        memcpy(&s, p, sizeof s);
        return PyUnicode_FromString(s ? s : "");
    }
    case F_BYTES: return PyBytes_FromStringAndSize(p, (Py_ssize_t)f->len);
    case F_STRUCT: return nested_get(self, f);
    case F_ARRAY: return array_get(self, f);
    }
    Py_UNREACHABLE();
}

/* One integer of kind k into p, range-checked; name for the message. */
static int set_int(const nx_Struct *self, const char *name, nx_field_kind k, PyObject *value, char *p)
{
    if (k == F_SIZE || k == F_U64) {
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        uint64_t x = v;
        memcpy(p, &x, sizeof x);
        return 0;
    }
    if (k == F_PTR) {
        /* an address: any int of [-2**63, 2**64), negatives as two's complement */
        PyObject *index = PyNumber_Index(value);
        if (index == NULL)
            return -1;
        int overflow;
        long long sv = PyLong_AsLongLongAndOverflow(index, &overflow);
        unsigned long long v = (unsigned long long)sv;
        if (overflow > 0)
            v = PyLong_AsUnsignedLongLong(index);
        Py_DECREF(index);
        if (overflow < 0 || PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError, "%s.%s must be an address in [-2**63, 2**64)", self->desc->name, name);
            return -1;
        }
        uintptr_t x = (uintptr_t)v;
        memcpy(p, &x, sizeof x);
        return 0;
    }
    long long lo = k == F_I32 ? INT32_MIN : 0, hi = k == F_I32 ? INT32_MAX : k == F_U32 ? UINT32_MAX : UINT8_MAX;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_OverflowError, "%s.%s must be in [%lld, %lld]", self->desc->name, name, lo, hi);
        return -1;
    }
    if (k == F_I32) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, sizeof x);
    } else if (k == F_U32) {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, sizeof x);
    } else {
        *(unsigned char *)p = (unsigned char)v;
    }
    return 0;
}

/* Exactly n bytes from a buffer (a struct wrapper is one) into p. */
static int set_from_buffer(const nx_Struct *self, const char *name, PyObject *value, char *p, size_t n)
{
    Py_buffer view;
    if (PyObject_GetBuffer(value, &view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    int ok = view.len == (Py_ssize_t)n;
    if (ok)
        memcpy(p, view.buf, n);
    PyBuffer_Release(&view);
    if (!ok)
        PyErr_Format(PyExc_ValueError, "%s.%s must be %zu bytes", self->desc->name, name, n);
    return ok ? 0 : -1;
}

/* An array from a sequence of len ints, or from a buffer of its exact size. */
static int array_set(const nx_Struct *self, const nx_field *f, PyObject *value, char *p)
{
    nx_field_kind elem = (nx_field_kind)f->aux;
    size_t size = nx_field_elem_size(elem);
    if (PyObject_CheckBuffer(value))
        return set_from_buffer(self, f->name, value, p, f->len * size);
    PyObject *seq = nx_seq_snapshot(value); /* owned: an entry's __index__ may change the caller's list */
    if (seq == NULL || PyTuple_GET_SIZE(seq) != (Py_ssize_t)f->len) {
        PyErr_Clear();
        Py_XDECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s.%s must be a sequence of %zu ints", self->desc->name, f->name, f->len);
        return -1;
    }
    char tmp[NCCL_GIN_SUPPORT_SLOTS * 8];
    int rc = f->len * size <= sizeof tmp ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < f->len; i++)
        rc = set_int(self, f->name, elem, PyTuple_GET_ITEM(seq, (Py_ssize_t)i), tmp + i * size);
    if (rc == 0)
        memcpy(p, tmp, f->len * size); /* all or nothing */
    Py_DECREF(seq);
    return rc;
}

static int Struct_set_field(PyObject *op, PyObject *value, void *closure)
{
    nx_Struct *self = (nx_Struct *)op;
    const nx_field *f = closure;
    char *p = self->ptr + f->offset;
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "cannot delete field '%s'", f->name);
        return -1;
    }
    if (self->readonly) {
        PyErr_Format(PyExc_ValueError, "This %s instance is read-only", self->desc->name);
        return -1;
    }
    switch (f->kind) {
    case F_F32: {
        double d = PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        float v = (float)d;
        memcpy(p, &v, sizeof v);
        return 0;
    }
    case F_CSTR: {
        PyObject *encoded = NULL;
        const char *s = NULL;
        if (value != Py_None) {
            if (!PyUnicode_Check(value)) {
                PyErr_Format(PyExc_TypeError, "%s.%s must be a str, not %.200s", self->desc->name, f->name,
                             Py_TYPE(value)->tp_name);
                return -1;
            }
            if ((encoded = PyUnicode_AsUTF8String(value)) == NULL)
                return -1;
            s = PyBytes_AS_STRING(encoded);
        }
        /* The library keeps the pointer, so the bytes stay alive as long as this wrapper. */
        memcpy(p, &s, sizeof s);
        Py_XSETREF(self->keep[f->aux], encoded);
        return 0;
    }
    case F_BYTES: return set_from_buffer(self, f->name, value, p, f->len);
    case F_STRUCT: return set_from_buffer(self, f->name, value, p, descs[f->aux].size);
    case F_ARRAY: return array_set(self, f, value, p);
    default: return set_int(self, f->name, f->kind, value, p);
    }
}

/* ---- construction ---- */

static const nx_struct_desc *desc_of_type(nx_state *st, PyTypeObject *tp, nx_struct_kind *kind)
{
    for (int i = 0; i < NX_NSTRUCTS; i++)
        if (st->structs.types[i] == tp) {
            if (kind)
                *kind = (nx_struct_kind)i;
            return &descs[i];
        }
    return NULL;
}

static nx_Struct *alloc_struct(PyTypeObject *tp, const nx_struct_desc *d)
{
    nx_Struct *self = (nx_Struct *)tp->tp_alloc(tp, 0);
    if (self == NULL)
        return NULL;
    self->desc = d;
    return self;
}

const char *nx_struct_name(nx_struct_kind kind) { return descs[kind].name; }

PyObject *nx_struct_new(nx_state *st, nx_struct_kind kind)
{
    const nx_struct_desc *d = &descs[kind];
    nx_Struct *self = alloc_struct(st->structs.types[kind], d);
    if (self == NULL)
        return NULL;
    if ((self->ptr = PyMem_Calloc(1, d->size)) == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->owns = 1;
    d->init(self->ptr);
    return (PyObject *)self;
}

void *nx_struct_storage(nx_state *st, PyObject *o, nx_struct_kind kind)
{
    return Py_TYPE(o) == st->structs.types[kind] ? ((nx_Struct *)o)->ptr : NULL;
}

static PyObject *Struct_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_Format(PyExc_TypeError, "%s() takes no arguments", tp->tp_name);
        return NULL;
    }
    nx_state *st = PyType_GetModuleState(tp);
    nx_struct_kind kind;
    if (desc_of_type(st, tp, &kind) == NULL) {
        PyErr_SetString(PyExc_TypeError, "unknown struct wrapper class");
        return NULL;
    }
    return nx_struct_new(st, kind);
}

/* Borrows the memory of any buffer: read-only exactly when the source is
 * (docs/compatibility.md#where-we-differ-from-the-peers). */
static PyObject *wrap_buffer(PyTypeObject *tp, const nx_struct_desc *d, PyObject *buffer, PyObject *owner)
{
    nx_Struct *self = NULL;
    Py_buffer view;
    if (!PyObject_CheckBuffer(buffer)) {
        PyErr_SetString(PyExc_TypeError, "buffer argument does not support the buffer protocol");
        return NULL;
    }
    int readonly = 0;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_WRITABLE | PyBUF_ND) < 0) {
        PyErr_Clear();
        readonly = 1;
        if (PyObject_GetBuffer(buffer, &view, PyBUF_ND) < 0)
            return NULL;
    }
    if (!PyBuffer_IsContiguous(&view, 'C')) {
        PyErr_SetString(PyExc_ValueError, "buffer must be contiguous");
        goto error;
    }
    if (view.itemsize != 1 && owner == NULL) {
        PyErr_SetString(PyExc_ValueError, "buffer itemsize must be 1 byte");
        goto error;
    }
    if (view.len != (Py_ssize_t)d->size) {
        PyErr_Format(PyExc_ValueError, "buffer length must be %zu bytes", d->size);
        goto error;
    }
    if ((self = alloc_struct(tp, d)) == NULL)
        goto error;
    self->ptr = view.buf;
    self->readonly = readonly;
    self->view = view;
    self->has_view = 1;
    self->owner = Py_XNewRef(owner);
    return (PyObject *)self;
error:
    PyBuffer_Release(&view);
    return NULL;
}

PyDoc_STRVAR(Struct_from_buffer__doc__, "from_buffer(buffer)\n--\n\n"
"Wrap the memory of a buffer (no copy). Read-only exactly when the buffer is.");

static PyObject *Struct_from_buffer(PyObject *cls, PyObject *buffer)
{
    PyTypeObject *tp = (PyTypeObject *)cls;
    const nx_struct_desc *d = desc_of_type(PyType_GetModuleState(tp), tp, NULL);
    return wrap_buffer(tp, d, buffer, NULL);
}

PyDoc_STRVAR(Struct_from_data__doc__, "from_data(data)\n--\n\n"
"Wrap a 1-element NumPy array of this class's structured dtype (no copy).");

static PyObject *Struct_from_data(PyObject *cls, PyObject *data)
{
    PyTypeObject *tp = (PyTypeObject *)cls;
    nx_state *st = PyType_GetModuleState(tp);
    nx_struct_kind kind = NX_STRUCT_UNIQUE_ID;
    const nx_struct_desc *d = desc_of_type(st, tp, &kind);
    PyObject *ndarray = nx_cache_get(&st->structs.ndarray_type);
    if (ndarray == NULL || !PyObject_TypeCheck(data, (PyTypeObject *)ndarray)) {
        PyErr_SetString(PyExc_TypeError, "data argument must be a NumPy ndarray");
        return NULL;
    }
    PyObject *size = PyObject_GetAttrString(data, "size");
    if (size == NULL)
        return NULL;
    long n = PyLong_AsLong(size);
    Py_DECREF(size);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n != 1) {
        PyErr_SetString(PyExc_ValueError, "data array must have a size of 1");
        return NULL;
    }
    PyObject *dtype = PyObject_GetAttrString(data, "dtype");
    if (dtype == NULL)
        return NULL;
    PyObject *want = nx_cache_get(&st->structs.dtypes[kind]);
    int same = want ? PyObject_RichCompareBool(dtype, want, Py_EQ) : 0;
    Py_DECREF(dtype);
    if (same < 0)
        return NULL;
    if (!same) {
        PyErr_Format(PyExc_ValueError, "data array must be of dtype %s", d->dtype_name);
        return NULL;
    }
    return wrap_buffer(tp, d, data, data);
}

PyDoc_STRVAR(Struct_from_ptr__doc__, "from_ptr(ptr, readonly=False, owner=None)\n--\n\n"
"Wrap the struct at address ptr: copied into owned storage, unless owner is given, in which case\n"
"the memory is borrowed and owner is kept alive.");

static PyObject *Struct_from_ptr(PyObject *cls, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ptr", "readonly", "owner", NULL};
    PyTypeObject *tp = (PyTypeObject *)cls;
    const nx_struct_desc *d = desc_of_type(PyType_GetModuleState(tp), tp, NULL);
    PyObject *ptr_obj, *owner = Py_None;
    int readonly = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|pO:from_ptr", kwlist, &ptr_obj, &readonly, &owner))
        return NULL;
    void *ptr = PyLong_AsVoidPtr(ptr_obj);
    if (ptr == NULL && PyErr_Occurred())
        return NULL;
    if (ptr == NULL) {
        PyErr_SetString(PyExc_ValueError, "ptr must not be null (0)");
        return NULL;
    }
    nx_Struct *self = alloc_struct(tp, d);
    if (self == NULL)
        return NULL;
    self->readonly = readonly;
    if (owner != Py_None) {
        self->ptr = ptr;
        self->owner = Py_NewRef(owner);
    } else {
        if ((self->ptr = PyMem_Malloc(d->size)) == NULL) {
            Py_DECREF(self);
            return PyErr_NoMemory();
        }
        self->owns = 1;
        memcpy(self->ptr, ptr, d->size);
    }
    return (PyObject *)self;
}

/* ---- protocols ---- */

static int Struct_getbuffer(PyObject *op, Py_buffer *view, int flags)
{
    nx_Struct *self = (nx_Struct *)op;
    if (PyBuffer_FillInfo(view, op, self->ptr, (Py_ssize_t)self->desc->size, self->readonly, flags) < 0)
        return -1;
    if (flags & PyBUF_FORMAT)
        view->format = "b";
    return 0;
}

static PyObject *Struct_richcompare(PyObject *a, PyObject *b, int op)
{
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != Py_TYPE(b))
        Py_RETURN_NOTIMPLEMENTED;
    nx_Struct *x = (nx_Struct *)a, *y = (nx_Struct *)b;
    int eq = memcmp(x->ptr, y->ptr, x->desc->size) == 0;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *Struct_int(PyObject *op) { return PyLong_FromVoidPtr(((nx_Struct *)op)->ptr); }

static PyObject *Struct_get_ptr(PyObject *op, void *closure)
{
    (void)closure;
    return Struct_int(op);
}

static int Struct_ass_subscript(PyObject *op, PyObject *key, PyObject *value)
{
    nx_Struct *self = (nx_Struct *)op;
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return -1;
    if (i != 0) {
        PyErr_SetString(PyExc_IndexError, "index out of range: a struct wrapper holds one element");
        return -1;
    }
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot delete the element");
        return -1;
    }
    if (self->readonly) {
        PyErr_Format(PyExc_ValueError, "This %s instance is read-only", self->desc->name);
        return -1;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(value, &view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    int ok = view.len == (Py_ssize_t)self->desc->size;
    if (ok)
        memcpy(self->ptr, view.buf, self->desc->size);
    PyBuffer_Release(&view);
    if (!ok)
        PyErr_Format(PyExc_ValueError, "value must be %zu bytes", self->desc->size);
    return ok ? 0 : -1;
}

static PyObject *Struct_repr(PyObject *op)
{
    return PyUnicode_FromFormat("<%s object at %p>", Py_TYPE(op)->tp_name, op);
}

static int Struct_traverse(PyObject *op, visitproc visit, void *arg)
{
    nx_Struct *self = (nx_Struct *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->owner);
    if (self->has_view)
        Py_VISIT(self->view.obj);
    for (int i = 0; i < NX_MAX_KEEP; i++)
        Py_VISIT(self->keep[i]);
    return 0;
}

static int Struct_clear(PyObject *op)
{
    nx_Struct *self = (nx_Struct *)op;
    /* The view is released only in dealloc: clearing it while the storage is still in use would
     * leave ptr dangling. */
    Py_CLEAR(self->owner);
    for (int i = 0; i < NX_MAX_KEEP; i++)
        Py_CLEAR(self->keep[i]);
    return 0;
}

static void Struct_dealloc(PyObject *op)
{
    nx_Struct *self = (nx_Struct *)op;
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    Struct_clear(op);
    if (self->has_view)
        PyBuffer_Release(&self->view);
    if (self->owns)
        PyMem_Free(self->ptr);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* bytes(obj) must give the raw bytes: since the class has __index__, bytes() would otherwise
 * build a zero-filled object of that length. */
static PyObject *Struct_bytes(PyObject *op, PyObject *unused)
{
    (void)unused;
    nx_Struct *self = (nx_Struct *)op;
    return PyBytes_FromStringAndSize(self->ptr, (Py_ssize_t)self->desc->size);
}

static PyMethodDef Struct_methods[] = {
    {"__bytes__", Struct_bytes, METH_NOARGS, "The struct's raw bytes."},
    {"from_buffer", Struct_from_buffer, METH_O | METH_CLASS, Struct_from_buffer__doc__},
    {"from_data", Struct_from_data, METH_O | METH_CLASS, Struct_from_data__doc__},
    {"from_ptr", (PyCFunction)(void (*)(void))Struct_from_ptr, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     Struct_from_ptr__doc__},
    {NULL, NULL, 0, NULL},
};

/* One getset table per class: the getset descriptors keep pointers into it, so it is static,
 * built once per process (every interpreter that imports the module shares it, and two may run
 * their exec slots at the same time). */
static PyGetSetDef getsets[NX_NSTRUCTS][NX_MAX_FIELDS + 2];
static pthread_once_t getsets_once = PTHREAD_ONCE_INIT;

static void build_getsets(void)
{
    for (int kind = 0; kind < NX_NSTRUCTS; kind++) {
        PyGetSetDef *g = getsets[kind];
        size_t n = 0;
        g[n++] = (PyGetSetDef){"ptr", Struct_get_ptr, NULL, "Address of the struct's storage.", NULL};
        for (const nx_field *f = descs[kind].fields; f->name != NULL; f++)
            g[n++] = (PyGetSetDef){f->name, Struct_get_field, Struct_set_field, f->doc, (void *)f};
        g[n] = (PyGetSetDef){NULL, NULL, NULL, NULL, NULL};
    }
}

static PyObject *make_type(PyObject *module, nx_struct_kind kind)
{
    PyType_Slot slots[] = {
        {Py_tp_new, Struct_new},
        {Py_tp_dealloc, Struct_dealloc},
        {Py_tp_traverse, Struct_traverse},
        {Py_tp_clear, Struct_clear},
        {Py_tp_repr, Struct_repr},
        {Py_tp_richcompare, Struct_richcompare},
        {Py_tp_methods, Struct_methods},
        {Py_tp_getset, getsets[kind]},
        {Py_nb_int, Struct_int},
        {Py_nb_index, Struct_int},
        {Py_mp_ass_subscript, Struct_ass_subscript},
        {Py_bf_getbuffer, Struct_getbuffer},
        {Py_tp_doc, (void *)descs[kind].doc},
        {0, NULL},
    };
    PyType_Spec spec = {
        .name = descs[kind].tp_name, /* static: the type keeps it as tp_name on 3.10 */
        .basicsize = sizeof(nx_Struct),
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
        .slots = slots,
    };
    return PyType_FromModuleAndSpec(module, &spec, NULL);
}

/* The numpy type code of a scalar field kind. */
static const char *kind_code(nx_field_kind k)
{
    switch (k) {
    case F_I32: return "<i4";
    case F_U32: return "<u4";
    case F_U8: return "u1";
    case F_SIZE: return "<u8";
    case F_U64: return "<u8";
    case F_F32: return "<f4";
    case F_PTR: return "<i8";
    case F_CSTR: return "<u8";
    case F_BYTES: return "i1";
    default: return "?";
    }
}

PyDoc_STRVAR(struct_layouts__doc__, "_struct_layouts()\n--\n\n"
"{class name: (dtype name, size, ((field, offset, type, count), ...))}: the C layouts from which\n"
"nccl.bindings.nccl builds the *_dtype structured dtypes. type is a numpy type code, or the class\n"
"name of a nested struct; count > 1 for arrays.");

static PyObject *struct_layouts(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    PyObject *out = PyDict_New();
    for (int k = 0; out != NULL && k < NX_NSTRUCTS; k++) {
        PyObject *fields = PyList_New(0);
        for (const nx_field *f = descs[k].fields; fields != NULL && f->name != NULL; f++) {
            const char *type = f->kind == F_STRUCT ? descs[f->aux].name
                               : kind_code(f->kind == F_ARRAY ? (nx_field_kind)f->aux : f->kind);
            Py_ssize_t count = (Py_ssize_t)(f->kind == F_BYTES || f->kind == F_ARRAY ? f->len : 1);
            PyObject *row = Py_BuildValue("(snsn)", f->name, (Py_ssize_t)f->offset, type, count);
            if (row == NULL || PyList_Append(fields, row) < 0)
                Py_CLEAR(fields);
            Py_XDECREF(row);
        }
        PyObject *entry = fields ? Py_BuildValue("(snN)", descs[k].dtype_name, (Py_ssize_t)descs[k].size, fields) : NULL;
        if (entry == NULL || PyDict_SetItemString(out, descs[k].name, entry) < 0)
            Py_CLEAR(out);
        Py_XDECREF(entry);
    }
    return out;
}

PyDoc_STRVAR(register_numpy__doc__, "_register_numpy(ndarray, dtypes)\n--\n\n"
"Give the struct classes numpy.ndarray and their dtypes ({class name: dtype}) for from_data().\n"
"The first registration of each stays (from_data reads them without a lock).");

static PyObject *register_numpy(PyObject *module, PyObject *args)
{
    nx_state *st = nx_get_state(module);
    PyObject *ndarray, *dtypes;
    if (!PyArg_ParseTuple(args, "OO!:_register_numpy", &ndarray, &PyDict_Type, &dtypes))
        return NULL;
    nx_cache_publish(&st->structs.ndarray_type, Py_NewRef(ndarray));
    for (int k = 0; k < NX_NSTRUCTS; k++) {
        PyObject *dt;
        int found = PyDict_GetItemStringRef(dtypes, descs[k].name, &dt);
        if (found < 0)
            return NULL;
        if (found)
            nx_cache_publish(&st->structs.dtypes[k], dt);
    }
    Py_RETURN_NONE;
}

int nx_structs_cache_traverse(nx_structs_cache *c, visitproc visit, void *arg)
{
    for (int k = 0; k < NX_NSTRUCTS; k++) {
        Py_VISIT(c->types[k]);
        Py_VISIT(c->dtypes[k]);
    }
    Py_VISIT(c->ndarray_type);
    return 0;
}

void nx_structs_cache_clear(nx_structs_cache *c)
{
    for (int k = 0; k < NX_NSTRUCTS; k++) {
        Py_CLEAR(c->types[k]);
        Py_CLEAR(c->dtypes[k]);
    }
    Py_CLEAR(c->ndarray_type);
}

static PyMethodDef structs_methods[] = {
    {"_struct_layouts", struct_layouts, METH_NOARGS, struct_layouts__doc__},
    {"_register_numpy", register_numpy, METH_VARARGS, register_numpy__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_structs_setup(PyObject *module, nx_state *st)
{
    pthread_once(&getsets_once, build_getsets);
    for (int k = 0; k < NX_NSTRUCTS; k++) {
        PyObject *tp = make_type(module, (nx_struct_kind)k);
        if (tp == NULL)
            return -1;
        st->structs.types[k] = (PyTypeObject *)tp;
        if (PyModule_AddObjectRef(module, descs[k].name, tp) < 0)
            return -1;
    }
    return PyModule_AddFunctions(module, structs_methods);
}
