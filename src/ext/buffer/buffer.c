/* The resolver of buffer.h: dispatch, the numpy/torch fast paths, cupy, cuda.core Buffer and the
 * buffer protocol, plus the layout checks every producer shares.
 *
 * Hot paths: numpy arrays are read straight from numpy's public object layout (no Python-level
 * attribute per call), their dtype mapped through a cache keyed by the dtype object; torch tensors
 * cost a handful of C method calls and a cache keyed by the torch.dtype object. Everything else
 * (cupy, cuda.core Buffer, DLPack, __cuda_array_interface__, the buffer protocol) goes through
 * Python attributes. */
#include "buffer/buffer.h"

#include <string.h>

#include "loader/library.h"
#include "module/convert.h"
#include "module/errors.h"
#include "module/lazy.h"
#include "module/module.h"
#include "module/state.h"

/* ---- interned names and the classes seen in sys.modules (nx_buffer_cache) ---- */

static const char *const str_values[NX_BUF_NSTR] = {
    [NX_BSTR_DATA_PTR] = "data_ptr", [NX_BSTR_NUMEL] = "numel", [NX_BSTR_DTYPE] = "dtype",
    [NX_BSTR_IS_CONTIGUOUS] = "is_contiguous", [NX_BSTR_IS_CUDA] = "is_cuda", [NX_BSTR_GET_DEVICE] = "get_device",
    [NX_BSTR_DEVICE] = "device", [NX_BSTR_DLPACK] = "__dlpack__", [NX_BSTR_DLPACK_DEVICE] = "__dlpack_device__",
    [NX_BSTR_CAI] = "__cuda_array_interface__", [NX_BSTR_HANDLE] = "handle", [NX_BSTR_SIZE] = "size",
    [NX_BSTR_STRIDE] = "stride", [NX_BSTR_SHAPE] = "shape", [NX_BSTR_IS_CPU] = "is_cpu",
};

static const struct {
    const char *module, *attr;
} type_names[NX_NBTYPES] = {
    [NX_BTYPE_NDARRAY] = {"numpy", "ndarray"},
    [NX_BTYPE_TORCH] = {"torch", "Tensor"},
    [NX_BTYPE_CUPY] = {"cupy", "ndarray"},
    [NX_BTYPE_CC_BUFFER] = {"cuda.core", "Buffer"},
    [NX_BTYPE_CC_BUFFER_EXP] = {"cuda.core.experimental", "Buffer"},
    [NX_BTYPE_SHIM_BUFFER] = {"nccl._hip_compat.cuda_core_shim._memory", "Buffer"},
};

/* The class, if its module is already in sys.modules (we never import a framework); borrowed,
 * cached once found. NULL without an exception otherwise. */
static PyTypeObject *seen_type(nx_state *st, int which)
{
    nx_buffer_cache *c = &st->buffer;
    PyObject *cached = nx_cache_get(&c->types[which]);
    if (NX_LIKELY(cached != NULL))
        return (PyTypeObject *)cached;
    /* interned key: this lookup runs on every call until the framework is imported */
    PyObject *mod;
    if (PyDict_GetItemRef(PyImport_GetModuleDict(), c->str[NX_BSTR_MODULE0 + which], &mod) <= 0 || mod == Py_None) {
        PyErr_Clear();
        Py_XDECREF(mod);
        return NULL;
    }
    PyObject *tp = PyObject_GetAttrString(mod, type_names[which].attr);
    Py_DECREF(mod);
    if (tp == NULL || !PyType_Check(tp)) {
        PyErr_Clear();
        Py_XDECREF(tp);
        return NULL;
    }
    return (PyTypeObject *)nx_cache_publish(&c->types[which], tp);
}

/* ---- numpy's public object layout (numpy/ndarraytypes.h, PyArrayObject_fields), stable
 * across numpy 1.x and 2.x. We declare it ourselves: the build needs no numpy headers. ---- */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} np_array;
#define NP_C_CONTIGUOUS 0x0001
#define NP_F_CONTIGUOUS 0x0002
#define NP_WRITEABLE 0x0400

/* ---- messages (cold) ---- */

static const char *flavour_label(void)
{
    return nx_loader_info()->flavour == NX_FLAVOUR_RCCL ? "RCCL" : "NCCL";
}

static NX_COLD int host_memory_error(nx_state *st, const char *name)
{
    nx_invalid(st, "%s is in host memory; %s needs device memory or device-accessible host memory", name,
               flavour_label());
    return -1;
}

static NX_COLD PyObject *int_tuple(int n, const int64_t *v, int64_t div)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(div > 1 ? v[i] / div : v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* strides in bytes when itemsize > 1 is given for them, in elements when itemsize == 1 */
int nx_buffer_layout_error(nx_state *st, const char *name, int nd, const int64_t *shape, const int64_t *strides,
                           int64_t itemsize)
{
    PyObject *s = int_tuple(nd, shape, 1), *t = int_tuple(nd, strides, itemsize);
    if (s != NULL && t != NULL)
        nx_invalid(st,
                   "%s must be C- or F-contiguous; got shape %R, strides %R (elements): pass a contiguous copy, "
                   "numpy.ascontiguousarray(x) or x.contiguous() for a torch tensor",
                   name, s, t);
    Py_XDECREF(s);
    Py_XDECREF(t);
    return -1;
}

static NX_COLD int numpy_layout_error(nx_state *st, const char *name, np_array *a, int64_t itemsize)
{
    int64_t shape[64], strides[64];
    int nd = a->nd < 64 ? a->nd : 64;
    for (int i = 0; i < nd; i++) {
        shape[i] = a->dimensions[i];
        strides[i] = a->strides[i];
    }
    return nx_buffer_layout_error(st, name, nd, shape, strides, itemsize);
}

int nx_buffer_is_dense(int nd, const int64_t *shape, const int64_t *strides, int64_t unit)
{
    int c = 1, f = 1;
    int64_t expect = unit;
    for (int i = nd - 1; i >= 0; i--) {
        if (shape[i] == 0)
            return 1;
        if (shape[i] != 1) {
            if (strides[i] != expect)
                c = 0;
            expect *= shape[i];
        }
    }
    expect = unit;
    for (int i = 0; i < nd; i++) {
        if (shape[i] != 1) {
            if (strides[i] != expect)
                f = 0;
            expect *= shape[i];
        }
    }
    return c || f;
}

/* ---- the dtype caches (nx_buffer_cache.np, .torch): a fixed array of slots, each filled once ---- */

/* The datatype the cache maps `key` to, or -1 when it is not there. Slots fill in order, so the
 * first empty one ends the search. */
static inline int dtype_cache_find(nx_dtype_entry *const *slots, int n, PyObject *key)
{
    for (int i = 0; i < n; i++) {
        const nx_dtype_entry *e = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);
        if (e == NULL)
            return -1;
        if (e->key == key)
            return e->dtype;
    }
    return -1;
}

/* Adds key -> dt in the first empty slot. Threads resolving at once each claim a slot by
 * compare-and-swap; one that finds its key already published by another drops its entry. A full
 * cache, or no memory, only means the slow path for further dtypes. */
static NX_COLD void dtype_cache_add(nx_dtype_entry **slots, int n, PyObject *key, int dt)
{
    nx_dtype_entry *e = PyMem_Malloc(sizeof *e);
    if (e == NULL)
        return;
    e->key = Py_NewRef(key);
    e->dtype = dt;
    for (int i = 0; i < n; i++) {
        nx_dtype_entry *seen = NULL;
        if (__atomic_compare_exchange_n(&slots[i], &seen, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
        if (seen->key == key)
            break;
    }
    Py_DECREF(e->key);
    PyMem_Free(e);
}

static void dtype_cache_clear(nx_dtype_entry **slots, int n)
{
    for (int i = 0; i < n; i++) {
        nx_dtype_entry *e = slots[i];
        slots[i] = NULL;
        if (e != NULL) {
            Py_DECREF(e->key);
            PyMem_Free(e);
        }
    }
}

/* The datatype of a numpy dtype object, through the cache; the first sight of a dtype reads its
 * name/kind/itemsize/byteorder from Python. -1 with NcclInvalid (or another error). */
static NX_COLD int numpy_dtype_slow(nx_state *st, PyObject *descr, const char *name)
{
    int result = -1;
    PyObject *dname = PyObject_GetAttrString(descr, "name");
    PyObject *kind = dname ? PyObject_GetAttrString(descr, "kind") : NULL;
    PyObject *isz = kind ? PyObject_GetAttrString(descr, "itemsize") : NULL;
    PyObject *order = isz ? PyObject_GetAttrString(descr, "byteorder") : NULL;
    if (order == NULL)
        goto done;
    const char *n = PyUnicode_Check(dname) ? PyUnicode_AsUTF8(dname) : NULL;
    const char *k = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : NULL;
    const char *o = PyUnicode_Check(order) ? PyUnicode_AsUTF8(order) : NULL;
    Py_ssize_t itemsize = PyLong_AsSsize_t(isz);
    if (n == NULL || k == NULL || o == NULL || (itemsize == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        nx_invalid(st, "%s: dtype %R is not a numpy dtype", name, descr);
        goto done;
    }
    /* Byte-swapped data ('>' on this little-endian host) would be reduced as garbage. */
    int dt = o[0] == '>' ? -1 : nx_numpy_kind_dtype(n, k[0], itemsize);
    if (dt < 0) {
        nx_invalid(st,
                   "%s: Unsupported data type: numpy dtype %S (kind=%s, itemsize=%zd, name=%s) has no NCCL "
                   "equivalent",
                   name, descr, k, itemsize, n);
        goto done;
    }
    dtype_cache_add(st->buffer.np, NX_BUF_NDESCR, descr, dt);
    result = dt;
done:
    Py_XDECREF(dname);
    Py_XDECREF(kind);
    Py_XDECREF(isz);
    Py_XDECREF(order);
    return result;
}

int nx_buffer_numpy_dtype(nx_state *st, PyObject *descr, const char *name)
{
    int dt = dtype_cache_find(st->buffer.np, NX_BUF_NDESCR, descr);
    return NX_LIKELY(dt >= 0) ? dt : numpy_dtype_slow(st, descr, name);
}

int nx_buffer_host_device(nx_state *st, const char *name, nx_buffer *out)
{
    if (NX_UNLIKELY(nx_loader_info()->flavour != NX_FLAVOUR_HOST))
        return host_memory_error(st, name);
    out->device = NX_DEVICE_HOST;
    return 0;
}

static int from_numpy(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    np_array *a = (np_array *)obj;
    int dt = nx_buffer_numpy_dtype(st, a->descr, name);
    if (NX_UNLIKELY(dt < 0))
        return -1;
    if (NX_UNLIKELY(!(a->flags & (NP_C_CONTIGUOUS | NP_F_CONTIGUOUS))))
        return numpy_layout_error(st, name, a, (int64_t)nx_dtype_size(nx_dtype_of(dt)));
    size_t count = 1;
    for (int i = 0; i < a->nd; i++)
        count *= (size_t)a->dimensions[i];
    if (nx_buffer_host_device(st, name, out) < 0)
        return -1;
    out->ptr = a->data;
    out->count = count;
    nx_buffer_set_dtype(out, dt);
    out->readonly = !(a->flags & NP_WRITEABLE);
    return 0;
}

/* ---- torch ---- */

static NX_COLD int torch_dtype_slow(nx_state *st, PyObject *dtobj, const char *name)
{
    PyObject *s = PyObject_Str(dtobj);
    if (s == NULL)
        return -1;
    const char *n = PyUnicode_AsUTF8(s);
    int dt = n != NULL ? nx_torch_dtype(n) : -1;
    if (dt < 0 && n != NULL)
        nx_invalid(st,
                   "%s: Unsupported torch dtype %s has no NCCL equivalent. NCCL does not support complex, int16, "
                   "or quantized types.",
                   name, n);
    else if (dt >= 0)
        dtype_cache_add(st->buffer.torch, NX_BUF_NTORCH, dtobj, dt);
    Py_DECREF(s);
    return dt;
}

static inline int torch_dtype(nx_state *st, PyObject *dtobj, const char *name)
{
    int dt = dtype_cache_find(st->buffer.torch, NX_BUF_NTORCH, dtobj);
    return NX_LIKELY(dt >= 0) ? dt : torch_dtype_slow(st, dtobj, name);
}

/* Reads a tuple-like of ints (at most 64) into v. -1 with an exception. */
int nx_buffer_read_ints(PyObject *seq, int64_t *v, int *n)
{
    /* owned: an entry's __index__ may change the caller's list (docs/architecture.md) */
    PyObject *fast = nx_seq_snapshot(seq);
    if (fast == NULL)
        return -1;
    Py_ssize_t len = PyTuple_GET_SIZE(fast);
    int rc = 0;
    if (len > 64) {
        PyErr_SetString(PyExc_ValueError, "more than 64 dimensions");
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < len; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(fast, i));
        if (v[i] == -1 && PyErr_Occurred())
            rc = -1;
    }
    *n = (int)len;
    Py_DECREF(fast);
    return rc;
}

/* A tensor that is not C-contiguous may still be F-contiguous; is_contiguous() only knows C. */
static NX_COLD int torch_check_fortran(nx_state *st, PyObject *obj, const char *name)
{
    int64_t shape[64], strides[64];
    int nd = 0, nd2 = 0, rc = -1;
    PyObject *shp = PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_SHAPE]);
    PyObject *str = shp ? PyObject_CallMethodNoArgs(obj, st->buffer.str[NX_BSTR_STRIDE]) : NULL;
    if (str == NULL || nx_buffer_read_ints(shp, shape, &nd) < 0 || nx_buffer_read_ints(str, strides, &nd2) < 0 || nd != nd2)
        goto done;
    if (nx_buffer_is_dense(nd, shape, strides, 1))
        rc = 0;
    else
        nx_buffer_layout_error(st, name, nd, shape, strides, 1);
done:
    Py_XDECREF(shp);
    Py_XDECREF(str);
    return rc;
}

static int as_size(PyObject *v, size_t *out)
{
    if (v == NULL)
        return -1;
    *out = PyLong_AsSize_t(v);
    Py_DECREF(v);
    return (*out == (size_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

static int tensor_place(nx_state *st, PyObject *obj, int attr)
{
    PyObject *v = PyObject_GetAttr(obj, st->buffer.str[attr]);
    if (v == NULL)
        return -1;
    int r = v == Py_True;
    Py_DECREF(v);
    return r;
}

/* neither cpu nor cuda: meta, mps, xpu, ... */
static NX_COLD int torch_device_error(nx_state *st, PyObject *obj, const char *name)
{
    PyObject *dev = PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_DEVICE]);
    if (dev != NULL) {
        nx_invalid(st, "%s: torch tensor on device %S is not supported", name, dev);
        Py_DECREF(dev);
    }
    return -1;
}

static int from_torch(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    PyObject *dtobj = PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_DTYPE]);
    if (dtobj == NULL)
        return -1;
    int dt = torch_dtype(st, dtobj, name);
    Py_DECREF(dtobj); /* the cache holds dtype objects that mapped */
    if (dt < 0)
        return -1;
    size_t ptr, count;
    if (as_size(PyObject_CallMethodNoArgs(obj, st->buffer.str[NX_BSTR_DATA_PTR]), &ptr) < 0 ||
        as_size(PyObject_CallMethodNoArgs(obj, st->buffer.str[NX_BSTR_NUMEL]), &count) < 0)
        return -1;
    PyObject *c = PyObject_CallMethodNoArgs(obj, st->buffer.str[NX_BSTR_IS_CONTIGUOUS]);
    if (c == NULL)
        return -1;
    int contiguous = c == Py_True;
    Py_DECREF(c);
    if (!contiguous && torch_check_fortran(st, obj, name) < 0)
        return -1;
    /* is_cpu, is_cuda and get_device() are the cheap questions; .device builds an object */
    int where = tensor_place(st, obj, NX_BSTR_IS_CPU);
    if (where < 0)
        return -1;
    if (where) {
        if (nx_buffer_host_device(st, name, out) < 0)
            return -1;
    } else if ((where = tensor_place(st, obj, NX_BSTR_IS_CUDA)) != 0) {
        size_t dev;
        if (where < 0 || as_size(PyObject_CallMethodNoArgs(obj, st->buffer.str[NX_BSTR_GET_DEVICE]), &dev) < 0)
            return -1;
        out->device = (int)dev;
    } else
        return torch_device_error(st, obj, name);
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = count;
    nx_buffer_set_dtype(out, dt);
    out->readonly = 0;
    return 0;
}

/* ---- cupy (untested here: no cupy on CPU machines) ---- */

static PyObject *get_path(PyObject *obj, const char *a, const char *b)
{
    PyObject *x = PyObject_GetAttrString(obj, a);
    if (x == NULL || b == NULL)
        return x;
    PyObject *y = PyObject_GetAttrString(x, b);
    Py_DECREF(x);
    return y;
}

static int from_cupy(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    PyObject *descr = PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_DTYPE]);
    if (descr == NULL)
        return -1;
    int dt = nx_buffer_numpy_dtype(st, descr, name);
    Py_DECREF(descr);
    if (dt < 0)
        return -1;
    size_t ptr, count, dev;
    if (as_size(get_path(obj, "data", "ptr"), &ptr) < 0 || as_size(get_path(obj, "size", NULL), &count) < 0 ||
        as_size(get_path(obj, "device", "id"), &dev) < 0)
        return -1;
    PyObject *c = get_path(obj, "flags", "c_contiguous");
    PyObject *f = c ? get_path(obj, "flags", "f_contiguous") : NULL;
    int dense = c == Py_True || f == Py_True;
    Py_XDECREF(c);
    Py_XDECREF(f);
    if (f == NULL)
        return -1;
    if (!dense) {
        int64_t shape[64], strides[64];
        int nd = 0, nd2 = 0;
        PyObject *shp = PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_SHAPE]);
        PyObject *str = shp ? PyObject_GetAttrString(obj, "strides") : NULL;
        if (str != NULL && nx_buffer_read_ints(shp, shape, &nd) == 0 && nx_buffer_read_ints(str, strides, &nd2) == 0)
            nx_buffer_layout_error(st, name, nd, shape, strides, (int64_t)nx_dtype_size(nx_dtype_of(dt)));
        Py_XDECREF(shp);
        Py_XDECREF(str);
        return -1;
    }
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = count;
    nx_buffer_set_dtype(out, dt);
    out->device = (int)dev;
    out->readonly = 0;
    return 0;
}

/* ---- cuda.core Buffer (real or shim) ---- */

static int attr_true(PyObject *obj, const char *attr)
{
    PyObject *v = PyObject_GetAttrString(obj, attr);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* A Buffer reads handle 0 (and size 0) once close() or mem_free() gave its memory back: using it
 * would hand the library a NULL pointer, or register a window of 0 bytes. */
static NX_COLD int cc_buffer_closed(nx_state *st, const char *name, size_t size)
{
    if (size == 0)
        nx_invalid(st, "%s: the Buffer is closed: its memory was freed (Buffer.close() or nccl.core.mem_free()), "
                   "so there is nothing to use", name);
    else
        nx_invalid(st, "%s: the Buffer's handle is 0 (a null pointer of %zu bytes)", name, size);
    return -1;
}

static int from_cc_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    size_t ptr, size;
    PyObject *h = PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_HANDLE]);
    /* real cuda.core may hand out a CUdeviceptr object: int() it, as upstream does */
    if (h != NULL && !PyLong_Check(h))
        Py_SETREF(h, PyNumber_Long(h));
    if (as_size(h, &ptr) < 0 ||
        as_size(PyObject_GetAttr(obj, st->buffer.str[NX_BSTR_SIZE]), &size) < 0)
        return -1;
    if (ptr == 0)
        return cc_buffer_closed(st, name, size);
    int dev_ok = attr_true(obj, "is_device_accessible");
    int host_ok = dev_ok < 0 ? -1 : attr_true(obj, "is_host_accessible");
    if (host_ok < 0)
        return -1;
    /* the same mapping as DLPack's kDLCPU / kDLCUDAHost / kDLCUDA */
    if (host_ok && (!dev_ok || nx_loader_info()->flavour == NX_FLAVOUR_HOST)) {
        if (nx_buffer_host_device(st, name, out) < 0)
            return -1;
    } else {
        size_t dev;
        if (as_size(PyObject_GetAttrString(obj, "device_id"), &dev) < 0)
            return -1;
        out->device = (int)dev;
    }
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = size;
    nx_buffer_set_dtype(out, ncclInt8);
    out->readonly = 0;
    return 0;
}

/* ---- the buffer protocol (host flavour only) ---- */

static int format_dtype(const char *fmt, Py_ssize_t itemsize)
{
    if (fmt == NULL)
        return itemsize == 1 ? ncclUint8 : -1; /* plain bytes */
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    if (fmt[0] == '\0' || fmt[1] != '\0')
        return -1;
    switch (fmt[0]) {
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
        return nx_numpy_kind_dtype(NULL, 'i', itemsize);
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': case 'c':
        return nx_numpy_kind_dtype(NULL, 'u', itemsize);
    case '?':
        return nx_numpy_kind_dtype(NULL, 'b', itemsize);
    case 'e': case 'f': case 'd':
        return nx_numpy_kind_dtype(NULL, 'f', itemsize);
    default:
        return -1;
    }
}

/* The export is kept (out->keep, a memoryview holding it) while the caller uses the pointer: a
 * bytearray cannot be resized, an mmap not closed, a memoryview not released meanwhile, by the
 * call's callbacks or anything else. */
static int from_buffer_protocol(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    PyObject *mv = PyMemoryView_FromObject(obj);
    if (mv == NULL)
        return -1;
    const Py_buffer *view = PyMemoryView_GET_BUFFER(mv);
    int dt = format_dtype(view->format, view->itemsize);
    if (dt < 0) {
        nx_invalid(st, "%s: Unsupported data type: buffer format '%s' (itemsize=%zd) has no NCCL equivalent", name,
                   view->format ? view->format : "B", view->itemsize);
        goto error;
    }
    int64_t shape[64], strides[64];
    int nd = view->ndim < 64 ? view->ndim : 64;
    for (int i = 0; i < nd; i++) {
        shape[i] = view->shape[i];
        strides[i] = view->strides ? view->strides[i] : 0;
    }
    if (view->suboffsets != NULL ||
        (view->strides != NULL && !nx_buffer_is_dense(nd, shape, strides, view->itemsize))) {
        nx_buffer_layout_error(st, name, nd, shape, strides, view->itemsize);
        goto error;
    }
    out->ptr = view->buf;
    out->count = (size_t)(view->len / view->itemsize);
    nx_buffer_set_dtype(out, dt);
    out->device = NX_DEVICE_HOST;
    out->readonly = view->readonly;
    out->keep = mv;
    return 0;
error:
    Py_DECREF(mv);
    return -1;
}

/* ---- the resolver ---- */

static NX_COLD int unsupported(nx_state *st, PyObject *obj, const char *name)
{
    nx_invalid(st, "%s: unsupported buffer type %s; expected a cuda.core Buffer, a DLPack or "
                   "__cuda_array_interface__ object, a torch.Tensor or a cupy.ndarray", name, Py_TYPE(obj)->tp_name);
    return -1;
}

/* 1 (and *out, a new reference, when out is given) if obj has the attribute, 0 if not, -1 with
 * an exception for any error other than AttributeError (PyObject_GetOptionalAttr is 3.13+). */
static int optional_attr(PyObject *obj, PyObject *attr, PyObject **out)
{
    PyObject *v = PyObject_GetAttr(obj, attr);
    if (out != NULL)
        *out = v;
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (out == NULL)
        Py_DECREF(v);
    return 1;
}

/* The exchange protocol obj speaks, DLPack first: NX_PROTO_DLPACK (__dlpack__ and
 * __dlpack_device__), NX_PROTO_CAI (*cai: __cuda_array_interface__, a new reference) or
 * NX_PROTO_NONE; -1 with an exception other than AttributeError. */
enum { NX_PROTO_NONE, NX_PROTO_DLPACK, NX_PROTO_CAI };
static int array_protocol(nx_state *st, PyObject *obj, PyObject **cai)
{
    *cai = NULL;
    int has_dl = optional_attr(obj, st->buffer.str[NX_BSTR_DLPACK], NULL);
    if (has_dl > 0)
        has_dl = optional_attr(obj, st->buffer.str[NX_BSTR_DLPACK_DEVICE], NULL);
    if (has_dl != 0)
        return has_dl < 0 ? -1 : NX_PROTO_DLPACK;
    if (optional_attr(obj, st->buffer.str[NX_BSTR_CAI], cai) < 0)
        return -1;
    return *cai != NULL ? NX_PROTO_CAI : NX_PROTO_NONE;
}

static NX_COLD int resolve_generic(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    PyTypeObject *tp;
    if ((tp = seen_type(st, NX_BTYPE_CUPY)) != NULL && PyObject_TypeCheck(obj, tp))
        return from_cupy(st, obj, name, out);
    for (int k = NX_BTYPE_CC_BUFFER; k <= NX_BTYPE_SHIM_BUFFER; k++)
        if ((tp = seen_type(st, k)) != NULL && PyObject_TypeCheck(obj, tp))
            return from_cc_buffer(st, obj, name, out);
    PyObject *cai;
    int proto = array_protocol(st, obj, &cai);
    if (proto < 0)
        return -1;
    if (proto == NX_PROTO_DLPACK)
        return nx_buffer_from_dlpack(st, obj, name, out);
    if (proto == NX_PROTO_CAI) {
        int rc = nx_buffer_from_cai(st, cai, name, out);
        Py_DECREF(cai);
        return rc;
    }
    if (nx_loader_info()->flavour == NX_FLAVOUR_HOST && PyObject_CheckBuffer(obj))
        return from_buffer_protocol(st, obj, name, out);
    return unsupported(st, obj, name);
}

int nx_resolve_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    out->keep = NULL;
    if (NX_UNLIKELY(!nx_loader_ready()) && nx_load_library(st) < 0)
        return -1;
    /* numpy and torch first: the types are disjoint, so this does not change which rule wins */
    PyTypeObject *tp = seen_type(st, NX_BTYPE_NDARRAY);
    if (tp != NULL && PyObject_TypeCheck(obj, tp))
        return from_numpy(st, obj, name, out);
    tp = seen_type(st, NX_BTYPE_TORCH);
    if (tp != NULL && PyObject_TypeCheck(obj, tp))
        return from_torch(st, obj, name, out);
    return resolve_generic(st, obj, name, out);
}

PyDoc_STRVAR(array_protocol__doc__, "_array_protocol(obj, /)\n--\n\n"
"'dlpack' (obj has __dlpack__ and __dlpack_device__), else '__cuda_array_interface__' (it has\n"
"that attribute), else None: the resolver's choice between the two protocols, for the cuda.core\n"
"shim's StridedMemoryView.");

static PyObject *array_protocol_py(PyObject *module, PyObject *obj)
{
    PyObject *cai;
    int proto = array_protocol(nx_get_state(module), obj, &cai);
    Py_XDECREF(cai);
    if (proto < 0)
        return NULL;
    return proto == NX_PROTO_DLPACK ? PyUnicode_FromString("dlpack")
           : proto == NX_PROTO_CAI  ? PyUnicode_FromString("__cuda_array_interface__")
                                    : Py_NewRef(Py_None);
}

static PyMethodDef buffer_methods[] = {
    {"_array_protocol", array_protocol_py, METH_O, array_protocol__doc__},
    {NULL, NULL, 0, NULL},
};

/* What a read-only obj is, and the writable thing to pass instead. */
static NX_COLD int readonly_error(nx_state *st, PyObject *obj, const char *name)
{
    PyObject *np = nx_lazy(st, NX_LAZY_NUMPY); /* borrowed; registered by nccl.core */
    PyObject *generic = np != NULL ? PyObject_GetAttrString(np, "generic") : NULL;
    int scalar = generic != NULL && PyType_Check(generic) ? PyObject_TypeCheck(obj, (PyTypeObject *)generic) : 0;
    Py_XDECREF(generic);
    PyErr_Clear();
    PyTypeObject *ndarray = seen_type(st, NX_BTYPE_NDARRAY);
    if (scalar)
        nx_invalid(st, "%s is a numpy scalar (%s), which cannot be written: pass an array, e.g. numpy.zeros(1, %s)",
                   name, Py_TYPE(obj)->tp_name, Py_TYPE(obj)->tp_name);
    else if (ndarray != NULL && PyObject_TypeCheck(obj, ndarray))
        nx_invalid(st, "%s is read-only (a numpy array whose flags.writeable is False): pass a writable array, "
                       "e.g. its copy()", name);
    else
        nx_invalid(st, "%s is read-only (%s marks its memory read-only): pass a writable buffer", name,
                   Py_TYPE(obj)->tp_name);
    return -1;
}

int nx_buffer_writable(nx_state *st, const nx_buffer *b, PyObject *obj, const char *name)
{
    return NX_UNLIKELY(b->readonly) ? readonly_error(st, obj, name) : 0;
}


/* ---- setup and the cache's traverse/clear ---- */

int nx_buffer_cache_traverse(nx_buffer_cache *c, visitproc visit, void *arg)
{
    for (int i = 0; i < NX_BUF_NSTR; i++)
        Py_VISIT(c->str[i]);
    for (int i = 0; i < NX_NBTYPES; i++)
        Py_VISIT(c->types[i]);
    for (int i = 0; i < NX_BUF_NDESCR; i++)
        if (c->np[i] != NULL)
            Py_VISIT(c->np[i]->key);
    for (int i = 0; i < NX_BUF_NTORCH; i++)
        if (c->torch[i] != NULL)
            Py_VISIT(c->torch[i]->key);
    return 0;
}

void nx_buffer_cache_clear(nx_buffer_cache *c)
{
    for (int i = 0; i < NX_BUF_NSTR; i++)
        Py_CLEAR(c->str[i]);
    for (int i = 0; i < NX_NBTYPES; i++)
        Py_CLEAR(c->types[i]);
    dtype_cache_clear(c->np, NX_BUF_NDESCR);
    dtype_cache_clear(c->torch, NX_BUF_NTORCH);
}

int nx_buffer_setup(PyObject *module, nx_state *st)
{
    nx_buffer_cache *c = &st->buffer;
    if (nx_buffer_dtypes_setup(module) < 0 || nx_buffer_dlpack_setup(module) < 0 ||
        PyModule_AddFunctions(module, buffer_methods) < 0)
        return -1;
    for (int i = 0; i < NX_BUF_NSTR; i++)
        if (str_values[i] != NULL && (c->str[i] = PyUnicode_InternFromString(str_values[i])) == NULL)
            return -1;
    for (int k = 0; k < NX_NBTYPES; k++)
        if ((c->str[NX_BSTR_MODULE0 + k] = PyUnicode_InternFromString(type_names[k].module)) == NULL)
            return -1;
    c->str[NX_BSTR_KW_VERSIONED] = Py_BuildValue("(ss)", "stream", "max_version");
    c->str[NX_BSTR_KW_LEGACY] = Py_BuildValue("(s)", "stream");
    c->str[NX_BSTR_MINUS_ONE] = PyLong_FromLong(-1);
    if (c->str[NX_BSTR_KW_VERSIONED] == NULL || c->str[NX_BSTR_KW_LEGACY] == NULL || c->str[NX_BSTR_MINUS_ONE] == NULL)
        return -1;
    return 0;
}
