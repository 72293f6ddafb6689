/* The struct wrapper classes. Storage is either owned (calloc'd, stamped by the class's
 * initializer) or borrowed from a buffer or a pointer whose owner we keep alive. */
#include "structs.h"

#include <float.h>
#include <stddef.h>
#include <string.h>

#include "module.h"

typedef enum { F_I32, F_U32, F_SIZE, F_BOOL8, F_F32, F_CSTR, F_BYTES } field_kind;

typedef struct {
    const char *name;
    field_kind kind;
    size_t offset;
    size_t len;     /* F_BYTES: byte count */
    int keep;       /* F_CSTR: index of the slot keeping the encoded bytes alive */
} nx_field;

typedef struct {
    const char *name;       /* Python class name */
    const char *dtype_name; /* module-level numpy dtype */
    size_t size;
    void (*init)(void *);
    const nx_field *fields;
} nx_struct_desc;

#define NX_MAX_KEEP 2

typedef struct {
    PyObject_HEAD
    char *ptr;
    const nx_struct_desc *desc;
    int readonly;
    int owns;           /* ptr was calloc'd by us */
    int has_view;       /* view holds the borrowed buffer */
    Py_buffer view;
    PyObject *owner;    /* keeps borrowed memory alive (from_ptr owner=, from_data's array) */
    PyObject *keep[NX_MAX_KEEP];
} nx_Struct;

/* ---- layouts and initializers (nccl_abi.h; API.md section 3.6) ---- */

static void init_zero(void *p) { (void)p; }

static void init_config(void *p)
{
    ncclConfig_t *c = p;
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
    int *ints[] = {&c->blocking, &c->cgaClusterSize, &c->minCTAs, &c->maxCTAs, &c->splitShare,
                   &c->trafficClass, &c->collnetEnable, &c->CTAPolicy, &c->shrinkShare, &c->nvlsCTAs,
                   &c->nChannelsPerNetPeer, &c->nvlinkCentricSched, &c->graphUsageMode, &c->numRmaCtx,
                   &c->maxP2pPeers, &c->graphStreamOrdering};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        *ints[i] = NCCL_CONFIG_UNDEF_INT;
}

static void init_sim_info(void *p)
{
    ncclSimInfo_t *s = p;
    s->size = sizeof *s;
    s->magic = NCCL_SIM_INFO_MAGIC;
    s->version = NCCL_ABI_API_VERSION;
    s->estimatedTime = NCCL_UNDEF_FLOAT;
}

static void init_comm_properties(void *p)
{
    ncclCommProperties_t *c = p;
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
}

#define FIELD(pyname, kind, type, member) {pyname, kind, offsetof(type, member), 0, -1}
static const nx_field unique_id_fields[] = {
    {"internal", F_BYTES, 0, NCCL_UNIQUE_ID_BYTES, -1},
    {NULL, 0, 0, 0, 0},
};
static const nx_field config_fields[] = {
    FIELD("size_", F_SIZE, ncclConfig_t, size),
    FIELD("magic", F_U32, ncclConfig_t, magic),
    FIELD("version", F_U32, ncclConfig_t, version),
    FIELD("blocking", F_I32, ncclConfig_t, blocking),
    FIELD("cga_cluster_size", F_I32, ncclConfig_t, cgaClusterSize),
    FIELD("min_ctas", F_I32, ncclConfig_t, minCTAs),
    FIELD("max_ctas", F_I32, ncclConfig_t, maxCTAs),
    {"net_name", F_CSTR, offsetof(ncclConfig_t, netName), 0, 0},
    FIELD("split_share", F_I32, ncclConfig_t, splitShare),
    FIELD("traffic_class", F_I32, ncclConfig_t, trafficClass),
    {"comm_name", F_CSTR, offsetof(ncclConfig_t, commName), 0, 1},
    FIELD("collnet_enable", F_I32, ncclConfig_t, collnetEnable),
    FIELD("cta_policy", F_I32, ncclConfig_t, CTAPolicy),
    FIELD("shrink_share", F_I32, ncclConfig_t, shrinkShare),
    FIELD("nvls_ctas", F_I32, ncclConfig_t, nvlsCTAs),
    FIELD("n_channels_per_net_peer", F_I32, ncclConfig_t, nChannelsPerNetPeer),
    FIELD("nvlink_centric_sched", F_I32, ncclConfig_t, nvlinkCentricSched),
    FIELD("graph_usage_mode", F_I32, ncclConfig_t, graphUsageMode),
    FIELD("num_rma_ctx", F_I32, ncclConfig_t, numRmaCtx),
    FIELD("max_p2p_peers", F_I32, ncclConfig_t, maxP2pPeers),
    FIELD("graph_stream_ordering", F_I32, ncclConfig_t, graphStreamOrdering),
    {NULL, 0, 0, 0, 0},
};
static const nx_field sim_info_fields[] = {
    FIELD("size_", F_SIZE, ncclSimInfo_t, size),
    FIELD("magic", F_U32, ncclSimInfo_t, magic),
    FIELD("version", F_U32, ncclSimInfo_t, version),
    FIELD("estimated_time", F_F32, ncclSimInfo_t, estimatedTime),
    {NULL, 0, 0, 0, 0},
};
static const nx_field wait_signal_desc_fields[] = {
    FIELD("op_cnt", F_I32, ncclWaitSignalDesc_t, opCnt),
    FIELD("peer", F_I32, ncclWaitSignalDesc_t, peer),
    FIELD("sig_idx", F_I32, ncclWaitSignalDesc_t, sigIdx),
    FIELD("ctx", F_I32, ncclWaitSignalDesc_t, ctx),
    {NULL, 0, 0, 0, 0},
};
static const nx_field comm_properties_fields[] = {
    FIELD("size_", F_SIZE, ncclCommProperties_t, size),
    FIELD("magic", F_U32, ncclCommProperties_t, magic),
    FIELD("version", F_U32, ncclCommProperties_t, version),
    FIELD("rank", F_I32, ncclCommProperties_t, rank),
    FIELD("n_ranks", F_I32, ncclCommProperties_t, nRanks),
    FIELD("cuda_dev", F_I32, ncclCommProperties_t, cudaDev),
    FIELD("nvml_dev", F_I32, ncclCommProperties_t, nvmlDev),
    FIELD("device_api_support", F_BOOL8, ncclCommProperties_t, deviceApiSupport),
    FIELD("multimem_support", F_BOOL8, ncclCommProperties_t, multimemSupport),
    FIELD("gin_type", F_I32, ncclCommProperties_t, ginType),
    FIELD("n_lsa_teams", F_I32, ncclCommProperties_t, nLsaTeams),
    FIELD("host_rma_support", F_BOOL8, ncclCommProperties_t, hostRmaSupport),
    FIELD("railed_gin_type", F_I32, ncclCommProperties_t, railedGinType),
    {NULL, 0, 0, 0, 0},
};
#undef FIELD

static const nx_struct_desc descs[NX_NSTRUCTS] = {
    [NX_STRUCT_UNIQUE_ID] = {"UniqueId", "unique_id_dtype", sizeof(ncclUniqueId), init_zero, unique_id_fields},
    [NX_STRUCT_CONFIG] = {"Config", "config_dtype", sizeof(ncclConfig_t), init_config, config_fields},
    [NX_STRUCT_SIM_INFO] = {"SimInfo", "sim_info_dtype", sizeof(ncclSimInfo_t), init_sim_info, sim_info_fields},
    [NX_STRUCT_WAIT_SIGNAL_DESC] = {"WaitSignalDesc", "wait_signal_desc_dtype", sizeof(ncclWaitSignalDesc_t),
                                    init_zero, wait_signal_desc_fields},
    [NX_STRUCT_COMM_PROPERTIES] = {"CommProperties", "comm_properties_dtype", sizeof(ncclCommProperties_t),
                                   init_comm_properties, comm_properties_fields},
};

/* ---- field access ---- */

static PyObject *Struct_get_field(PyObject *op, void *closure)
{
    nx_Struct *self = (nx_Struct *)op;
    const nx_field *f = closure;
    const char *p = self->ptr + f->offset;
    switch (f->kind) {
    case F_I32: { int32_t v; memcpy(&v, p, sizeof v); return PyLong_FromLong(v); }
    case F_U32: { uint32_t v; memcpy(&v, p, sizeof v); return PyLong_FromUnsignedLong(v); }
    case F_SIZE: { size_t v; memcpy(&v, p, sizeof v); return PyLong_FromSize_t(v); }
    case F_BOOL8: return PyLong_FromLong((unsigned char)*p);
    case F_F32: { float v; memcpy(&v, p, sizeof v); return PyFloat_FromDouble(v); }
    case F_CSTR: {
        const char *s;
        memcpy(&s, p, sizeof s);
        return PyUnicode_FromString(s ? s : "");
    }
    case F_BYTES: return PyBytes_FromStringAndSize(p, (Py_ssize_t)f->len);
    }
    Py_UNREACHABLE();
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
        Py_XSETREF(self->keep[f->keep], encoded);
        return 0;
    }
    case F_BYTES: {
        Py_buffer view;
        if (PyObject_GetBuffer(value, &view, PyBUF_SIMPLE) < 0)
            return -1;
        int ok = view.len == (Py_ssize_t)f->len;
        if (ok)
            memcpy(p, view.buf, f->len);
        PyBuffer_Release(&view);
        if (!ok)
            PyErr_Format(PyExc_ValueError, "%s.%s must be %zu bytes", self->desc->name, f->name, f->len);
        return ok ? 0 : -1;
    }
    default: break;
    }
    long long lo, hi;
    switch (f->kind) {
    case F_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case F_U32: lo = 0, hi = UINT32_MAX; break;
    case F_BOOL8: lo = 0, hi = UINT8_MAX; break;
    default: lo = 0, hi = -1; break; /* F_SIZE: checked below */
    }
    if (f->kind == F_SIZE) {
        size_t v = PyLong_AsSize_t(value);
        if (v == (size_t)-1 && PyErr_Occurred())
            return -1;
        memcpy(p, &v, sizeof v);
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_OverflowError, "%s.%s must be in [%lld, %lld]", self->desc->name, f->name, lo, hi);
        return -1;
    }
    if (f->kind == F_I32) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, sizeof x);
    } else if (f->kind == F_U32) {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, sizeof x);
    } else {
        *(unsigned char *)p = (unsigned char)v;
    }
    return 0;
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

/* Borrows the memory of any buffer: read-only exactly when the source is (API.md D23). */
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
    if (st->structs.ndarray_type == NULL || !PyObject_TypeCheck(data, (PyTypeObject *)st->structs.ndarray_type)) {
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
    int same = st->structs.dtypes[kind] ? PyObject_RichCompareBool(dtype, st->structs.dtypes[kind], Py_EQ) : 0;
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

/* One getset table per class: the getset descriptors keep pointers into it, so it is static. */
#define NX_MAX_FIELDS 24
static PyGetSetDef getsets[NX_NSTRUCTS][NX_MAX_FIELDS + 2];

static void build_getsets(nx_struct_kind kind)
{
    PyGetSetDef *g = getsets[kind];
    size_t n = 0;
    g[n++] = (PyGetSetDef){"ptr", Struct_get_ptr, NULL, "Address of the struct's storage.", NULL};
    for (const nx_field *f = descs[kind].fields; f->name != NULL; f++)
        g[n++] = (PyGetSetDef){f->name, Struct_get_field, Struct_set_field, NULL, (void *)f};
    g[n] = (PyGetSetDef){NULL, NULL, NULL, NULL, NULL};
}

static PyObject *make_type(PyObject *module, nx_struct_kind kind)
{
    char qualname[96];
    snprintf(qualname, sizeof qualname, "nccl.bindings.nccl.%s", descs[kind].name);
    build_getsets(kind);
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
        {0, NULL},
    };
    PyType_Spec spec = {
        .name = qualname,
        .basicsize = sizeof(nx_Struct),
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
        .slots = slots,
    };
    return PyType_FromModuleAndSpec(module, &spec, NULL);
}

static const char *kind_code(const nx_field *f)
{
    switch (f->kind) {
    case F_I32: return "<i4";
    case F_U32: return "<u4";
    case F_SIZE: return "<u8";
    case F_BOOL8: return "u1";
    case F_F32: return "<f4";
    case F_CSTR: return "<u8";
    case F_BYTES: return "i1";
    }
    return "?";
}

PyDoc_STRVAR(struct_layouts__doc__, "_struct_layouts()\n--\n\n"
"{class name: (dtype name, size, ((field, offset, numpy type code, count), ...))}: the C layouts\n"
"from which nccl.bindings.nccl builds the *_dtype structured dtypes.");

static PyObject *struct_layouts(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    PyObject *out = PyDict_New();
    for (int k = 0; out != NULL && k < NX_NSTRUCTS; k++) {
        PyObject *fields = PyList_New(0);
        for (const nx_field *f = descs[k].fields; fields != NULL && f->name != NULL; f++) {
            PyObject *row = Py_BuildValue("(snsn)", f->name, (Py_ssize_t)f->offset, kind_code(f),
                                          (Py_ssize_t)(f->kind == F_BYTES ? f->len : 1));
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
"Give the struct classes numpy.ndarray and their dtypes ({class name: dtype}) for from_data().");

static PyObject *register_numpy(PyObject *module, PyObject *args)
{
    nx_state *st = nx_get_state(module);
    PyObject *ndarray, *dtypes;
    if (!PyArg_ParseTuple(args, "OO!:_register_numpy", &ndarray, &PyDict_Type, &dtypes))
        return NULL;
    Py_XSETREF(st->structs.ndarray_type, Py_NewRef(ndarray));
    for (int k = 0; k < NX_NSTRUCTS; k++) {
        PyObject *dt = PyDict_GetItemString(dtypes, descs[k].name); /* borrowed */
        if (dt != NULL)
            Py_XSETREF(st->structs.dtypes[k], Py_NewRef(dt));
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
