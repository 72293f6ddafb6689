/* DLPack consumption for the resolver (buffer.h): __dlpack_device__, then __dlpack__ with
 * max_version=(1, 0) (falling back to the pre-1.0 call), then the capsule read and kept,
 * unconsumed, as long as the caller uses the memory. The structs are the shared declaration of
 * src/include/dlpack_abi.h.
 *
 * The call and the capsule read are also the cuda.core shim's (StridedMemoryView and
 * _dlpack.parse_capsule, src/nccl/_hip_compat/cuda_core_shim/): nccl._ext._dlpack_capsule and
 * _dlpack_read, so the shim declares no DLPack layout of its own. */
#include "buffer/buffer.h"

#include "dlpack_abi.h"
#include "loader/library.h"
#include "module/convert.h"
#include "module/errors.h"
#include "module/module.h"
#include "module/state.h"

/* An unconsumed DLPack capsule's managed tensor (dlpack_open). */
typedef struct {
    void *managed;         /* dl_managed_versioned or dl_managed */
    int versioned;
    const dl_tensor *t;
    unsigned major, minor; /* 0.0 for an unversioned capsule */
    int readonly;
    const char *used_name; /* the name that marks it consumed */
} dl_view;

/* Fills *v from an unconsumed DLPack capsule: 0, or -1 (no exception) for anything else. */
static int dlpack_open(PyObject *cap, dl_view *v)
{
    if (PyCapsule_IsValid(cap, DL_CAPSULE_VERSIONED)) {
        dl_managed_versioned *m = PyCapsule_GetPointer(cap, DL_CAPSULE_VERSIONED);
        *v = (dl_view){m, 1, &m->dl_tensor, m->version.major, m->version.minor, (m->flags & DL_FLAG_READ_ONLY) != 0,
                       DL_CAPSULE_USED_VERSIONED};
        return 0;
    }
    if (PyCapsule_IsValid(cap, DL_CAPSULE)) {
        dl_managed *m = PyCapsule_GetPointer(cap, DL_CAPSULE);
        *v = (dl_view){m, 0, &m->dl_tensor, 0, 0, 0, DL_CAPSULE_USED};
        return 0;
    }
    return -1;
}

/* obj.__dlpack__(stream=stream, max_version=(1, 0)), or obj.__dlpack__(stream=stream) when that
 * raises TypeError (a pre-1.0 producer: no max_version keyword). New reference, or NULL. */
static PyObject *dlpack_call(nx_state *st, PyObject *obj, PyObject *stream)
{
    PyObject *vers = Py_BuildValue("(ii)", 1, 0);
    if (vers == NULL)
        return NULL;
    PyObject *argv[3] = {obj, stream, vers};
    PyObject *cap = PyObject_VectorcallMethod(st->buffer.str[NX_BSTR_DLPACK], argv,
                                              1 | PY_VECTORCALL_ARGUMENTS_OFFSET, st->buffer.str[NX_BSTR_KW_VERSIONED]);
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(st->buffer.str[NX_BSTR_DLPACK], argv, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                        st->buffer.str[NX_BSTR_KW_LEGACY]);
    }
    Py_DECREF(vers);
    return cap;
}

/* dlpack_abi.h's codes, the names after "kDL" (nccl._ext._dlpack_codes); memory: DL_MEM_*. */
typedef struct {
    const char *name;
    int value, memory;
} dl_code;
#define DL_DEVICE_ROW(name, value, memory) {#name, value, memory},
#define DL_CODE_ROW(name, value) {#name, value, DL_MEM_NONE}, /* no memory: not a device */
static const dl_code device_types[] = {DL_DEVICE_TYPES(DL_DEVICE_ROW)};
static const dl_code datatype_codes[] = {DL_DATATYPE_CODES(DL_CODE_ROW)};
#undef DL_DEVICE_ROW
#undef DL_CODE_ROW
#define NDEVICE_TYPES ((int)(sizeof device_types / sizeof device_types[0]))

/* The memory (DL_MEM_*) of a tensor on a device of this type. */
static int device_memory(int32_t device_type)
{
    for (int i = 0; i < NDEVICE_TYPES; i++)
        if (device_types[i].value == device_type)
            return device_types[i].memory;
    return DL_MEM_NONE;
}

/* Reads the tensor's metadata into out. -1 with NcclInvalid; the caller still consumes the
 * capsule either way. */
static int dl_read(nx_state *st, const dl_tensor *t, const char *name, nx_buffer *out)
{
    if (t->dtype.lanes != 1) {
        nx_invalid(st, "%s: DLPack dtype with lanes=%d is not supported (NCCL has no vector types)", name,
                   (int)t->dtype.lanes);
        return -1;
    }
    int dt = nx_dlpack_dtype(t->dtype.code, t->dtype.bits);
    if (dt < 0) {
        nx_invalid(st, "%s: Unsupported data type: DLPack dtype (code=%d, bits=%d) has no NCCL equivalent", name,
                   (int)t->dtype.code, (int)t->dtype.bits);
        return -1;
    }
    if (t->ndim < 0 || t->ndim > 64 || (t->ndim > 0 && t->shape == NULL)) {
        nx_invalid(st, "%s: DLPack tensor with ndim=%d is malformed", name, (int)t->ndim);
        return -1;
    }
    size_t count = 1;
    for (int i = 0; i < t->ndim; i++)
        count *= (size_t)t->shape[i];
    if (t->strides != NULL && !nx_buffer_is_dense(t->ndim, t->shape, t->strides, 1))
        return nx_buffer_layout_error(st, name, t->ndim, t->shape, t->strides, 1);
    switch (device_memory(t->device.device_type)) {
    case DL_MEM_DEVICE:
        out->device = t->device.device_id;
        break;
    case DL_MEM_PINNED:
        /* device-accessible host memory: host memory to the host backend, else the reported device */
        out->device = nx_loader_info()->flavour == NX_FLAVOUR_HOST ? NX_DEVICE_HOST : t->device.device_id;
        break;
    case DL_MEM_HOST:
        if (nx_buffer_host_device(st, name, out) < 0)
            return -1;
        break;
    default:
        nx_invalid(st, "%s: DLPack device type %d is not supported", name, (int)t->device.device_type);
        return -1;
    }
    out->ptr = (char *)t->data + t->byte_offset;
    out->count = count;
    nx_buffer_set_dtype(out, dt);
    return 0;
}

int nx_buffer_from_dlpack(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    int rc = -1;
    PyObject *cap = NULL;
    PyObject *dev = PyObject_CallMethodNoArgs(obj, st->buffer.str[NX_BSTR_DLPACK_DEVICE]);
    if (dev == NULL)
        goto done;
    if (!PyTuple_Check(dev) || PyTuple_GET_SIZE(dev) != 2) {
        nx_invalid(st, "%s: __dlpack_device__() must return a (device_type, device_id) tuple, got %R", name, dev);
        goto done;
    }
    long devtype = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
    if (devtype == -1 && PyErr_Occurred())
        goto done;
    /* stream=-1: "do not synchronise". The array API requires None for CPU producers (numpy
     * raises on anything else), and there is no stream to order against there anyway. */
    cap = dlpack_call(st, obj, devtype == kDLCPU ? Py_None : st->buffer.str[NX_BSTR_MINUS_ONE]);
    if (cap == NULL)
        goto done;
    dl_view v;
    if (dlpack_open(cap, &v) < 0) {
        nx_invalid(st, "%s: __dlpack__() returned %s, not an unused DLPack capsule", name, Py_TYPE(cap)->tp_name);
        goto done;
    }
    if (v.major > 1) {
        /* not ours to read; the capsule stays unconsumed, so its destructor frees it */
        nx_invalid(st, "%s: DLPack version %u.%u is not supported (need 1.x)", name, v.major, v.minor);
        goto done;
    }
    rc = dl_read(st, v.t, name, out);
    out->readonly = v.readonly;
    if (rc == 0) {
        /* The capsule, unconsumed, pins the memory while the caller uses it (out->keep): a
         * producer may hand out a capsule of a temporary, which only the managed tensor keeps
         * alive. Released unconsumed, its destructor calls the tensor's deleter (DLPack's rule). */
        out->keep = cap;
        cap = NULL;
    }
done:
    Py_XDECREF(dev);
    if (cap != NULL) {
        /* an unconsumed capsule's destructor runs the producer's code: not with our error pending */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        Py_DECREF(cap);
        PyErr_Restore(et, ev, tb);
    }
    return rc;
}

/* ---- for the cuda.core shim (cold) ---- */

NX_MSIG(_dlpack_capsule, 2, 2, "obj", "stream");
PyDoc_STRVAR(dlpack_capsule__doc__, "_dlpack_capsule(obj, stream)\n--\n\n"
"obj.__dlpack__(stream=stream, max_version=(1, 0)), or obj.__dlpack__(stream=stream) for a\n"
"producer older than DLPack 1.0 (one that raises TypeError): the resolver's call, for the\n"
"cuda.core shim's StridedMemoryView.");

static PyObject *dlpack_capsule(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    if (nx_margs(&M__dlpack_capsule, args, nargs, kwnames, a) < 0)
        return NULL;
    return dlpack_call(nx_get_state(module), a[0], a[1]);
}

/* A tuple of n int64 values. New reference. */
static PyObject *int64_tuple(int n, const int64_t *v)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

PyDoc_STRVAR(dlpack_read__doc__, "_dlpack_read(capsule, /)\n--\n\n"
"(used_name, readonly, (data, (device_type, device_id), ndim, (code, bits, lanes), shape,\n"
"strides or None, byte_offset)) of an unconsumed DLPack capsule, which stays unconsumed: the\n"
"name that consumes it, the producer's read-only flag (DLPack 1.0) and its DLTensor's fields.\n"
"BufferError for anything else, or a tensor with a negative ndim or no shape.");

static PyObject *dlpack_read(PyObject *Py_UNUSED(module), PyObject *cap)
{
    dl_view v;
    if (dlpack_open(cap, &v) < 0) {
        PyErr_Format(PyExc_BufferError, "%s is not an unused DLPack capsule", Py_TYPE(cap)->tp_name);
        return NULL;
    }
    const dl_tensor *t = v.t;
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL)) {
        PyErr_Format(PyExc_BufferError, "DLPack tensor with ndim=%d is malformed", (int)t->ndim);
        return NULL;
    }
    PyObject *shape = int64_tuple(t->ndim, t->shape);
    PyObject *strides = t->strides != NULL ? int64_tuple(t->ndim, t->strides) : Py_NewRef(Py_None);
    if (shape == NULL || strides == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return NULL;
    }
    return Py_BuildValue("(sO(N(ii)i(iii)NNK))", v.used_name, v.readonly ? Py_True : Py_False,
                         PyLong_FromVoidPtr(t->data), (int)t->device.device_type, (int)t->device.device_id,
                         (int)t->ndim, (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes, shape, strides,
                         (unsigned long long)t->byte_offset);
}

static PyMethodDef dlpack_methods[] = {
    {"_dlpack_capsule", (PyCFunction)(void (*)(void))dlpack_capsule, METH_FASTCALL | METH_KEYWORDS,
     dlpack_capsule__doc__},
    {"_dlpack_read", dlpack_read, METH_O, dlpack_read__doc__},
    {NULL, NULL, 0, NULL},
};

/* ((name, value), ...) of n codes, or ((name, value, device-accessible), ...) with `memory`. New
 * reference. */
static PyObject *code_rows(const dl_code *codes, int n, int memory)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        int accessible = codes[i].memory == DL_MEM_DEVICE || codes[i].memory == DL_MEM_PINNED;
        PyObject *pair = memory ? Py_BuildValue("(siO)", codes[i].name, codes[i].value, accessible ? Py_True : Py_False)
                                : Py_BuildValue("(si)", codes[i].name, codes[i].value);
        if (pair == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, pair);
    }
    return t;
}

int nx_buffer_dlpack_setup(PyObject *module)
{
    /* _dlpack_codes: (DLDeviceType rows, DLDataTypeCode rows) */
    PyObject *codes = Py_BuildValue("(NN)", code_rows(device_types, NDEVICE_TYPES, 1),
                                    code_rows(datatype_codes, (int)(sizeof datatype_codes / sizeof *datatype_codes), 0));
    if (codes == NULL)
        return -1;
    int rc = PyModule_AddObjectRef(module, "_dlpack_codes", codes);
    Py_DECREF(codes);
    return rc < 0 ? -1 : PyModule_AddFunctions(module, dlpack_methods);
}
