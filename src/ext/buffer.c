/* Array object -> nx_buffer resolution (API.md section 5.5), and the NcclBuffer type.
 *
 * Hot paths: numpy arrays are read straight from numpy's public object layout (no Python-level
 * attribute per call), their dtype mapped through a cache keyed by the dtype object; torch tensors
 * cost a handful of C method calls and a cache keyed by the torch.dtype object. Everything else
 * (cupy, cuda.core Buffer, DLPack, __cuda_array_interface__, the buffer protocol) goes through
 * Python attributes. Error messages are built in NX_COLD functions. */
#include "core.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* ---- interned names (st->buf_str) ---- */
enum {
    S_DATA_PTR, S_NUMEL, S_DTYPE, S_IS_CONTIGUOUS, S_IS_CUDA, S_GET_DEVICE, S_DEVICE, S_TYPE,
    S_DLPACK, S_DLPACK_DEVICE, S_KW_VERSIONED, S_KW_LEGACY, S_MAX_VERSION, S_CAI, S_HANDLE, S_SIZE,
    S_STRIDE, S_SHAPE, S_IS_CPU, S_MINUS_ONE, S_MODULE0, S_NSTR = S_MODULE0 + 6
};
static const char *const str_values[S_NSTR] = {
    [S_DATA_PTR] = "data_ptr", [S_NUMEL] = "numel", [S_DTYPE] = "dtype", [S_IS_CONTIGUOUS] = "is_contiguous",
    [S_IS_CUDA] = "is_cuda", [S_GET_DEVICE] = "get_device", [S_DEVICE] = "device", [S_TYPE] = "type",
    [S_DLPACK] = "__dlpack__", [S_DLPACK_DEVICE] = "__dlpack_device__", [S_CAI] = "__cuda_array_interface__",
    [S_HANDLE] = "handle", [S_SIZE] = "size", [S_STRIDE] = "stride", [S_SHAPE] = "shape", [S_IS_CPU] = "is_cpu",
};
_Static_assert(S_NSTR <= NX_BUF_NSTR, "grow NX_BUF_NSTR");

/* ---- types seen in sys.modules (st->buf_types) ---- */
enum { T_NDARRAY, T_TORCH, T_CUPY, T_CC_BUFFER, T_CC_BUFFER_EXP, T_SHIM_BUFFER, T_NTYPES };
_Static_assert(T_NTYPES <= NX_BUF_NTYPES, "grow NX_BUF_NTYPES");
_Static_assert(T_NTYPES == S_NSTR - S_MODULE0, "one interned module name per type");
static const struct {
    const char *module, *attr;
} type_names[T_NTYPES] = {
    [T_NDARRAY] = {"numpy", "ndarray"},
    [T_TORCH] = {"torch", "Tensor"},
    [T_CUPY] = {"cupy", "ndarray"},
    [T_CC_BUFFER] = {"cuda.core", "Buffer"},
    [T_CC_BUFFER_EXP] = {"cuda.core.experimental", "Buffer"},
    [T_SHIM_BUFFER] = {"nccl._hip_compat.cuda_core_shim._memory", "Buffer"},
};

/* The class, if its module is already in sys.modules (we never import a framework); borrowed,
 * cached once found. NULL without an exception otherwise. */
static PyTypeObject *seen_type(nx_state *st, int which)
{
    if (NX_LIKELY(st->buf_types[which] != NULL))
        return (PyTypeObject *)st->buf_types[which];
    /* interned key: this lookup runs on every call until the framework is imported */
    PyObject *mod = PyDict_GetItemWithError(PyImport_GetModuleDict(), st->buf_str[S_MODULE0 + which]); /* borrowed */
    if (mod == NULL || mod == Py_None) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *tp = PyObject_GetAttrString(mod, type_names[which].attr);
    if (tp == NULL || !PyType_Check(tp)) {
        PyErr_Clear();
        Py_XDECREF(tp);
        return NULL;
    }
    st->buf_types[which] = tp;
    return (PyTypeObject *)tp;
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
static NX_COLD int layout_error(nx_state *st, const char *name, int nd, const int64_t *shape, const int64_t *strides,
                                int64_t itemsize)
{
    PyObject *s = int_tuple(nd, shape, 1), *t = int_tuple(nd, strides, itemsize);
    if (s != NULL && t != NULL)
        nx_invalid(st, "%s must be C- or F-contiguous; got shape %R, strides %R (elements)", name, s, t);
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
    return layout_error(st, name, nd, shape, strides, itemsize);
}

/* Dense in C or Fortran order; strides in units of `unit` (1 = elements). Dimensions of extent 1
 * may have any stride, and an empty array is dense (numpy's rules). */
static int is_dense(int nd, const int64_t *shape, const int64_t *strides, int64_t unit)
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

/* ---- numpy dtypes ---- */

int nx_numpy_kind_dtype(const char *dname, int kind, Py_ssize_t itemsize)
{
    if (dname != NULL) {
        if (strcmp(dname, "bfloat16") == 0)
            return ncclBfloat16;
        if (strcmp(dname, "float8_e4m3fn") == 0)
            return ncclFloat8e4m3;
        if (strcmp(dname, "float8_e5m2") == 0)
            return ncclFloat8e5m2;
    }
    switch (kind) {
    case 'b':
        return itemsize == 1 ? ncclUint8 : -1;
    case 'f':
        return itemsize == 2 ? ncclFloat16 : itemsize == 4 ? ncclFloat32 : itemsize == 8 ? ncclFloat64 : -1;
    case 'i':
        return itemsize == 1 ? ncclInt8 : itemsize == 4 ? ncclInt32 : itemsize == 8 ? ncclInt64 : -1;
    case 'u':
        return itemsize == 1 ? ncclUint8 : itemsize == 4 ? ncclUint32 : itemsize == 8 ? ncclUint64 : -1;
    default:
        return -1;
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
    for (int i = 0; i < NX_BUF_NDESCR; i++)
        if (st->np_descr[i] == NULL) {
            st->np_descr[i] = Py_NewRef(descr);
            st->np_dtype[i] = (signed char)dt;
            break;
        } /* a full cache just means the slow path for further dtypes */
    result = dt;
done:
    Py_XDECREF(dname);
    Py_XDECREF(kind);
    Py_XDECREF(isz);
    Py_XDECREF(order);
    return result;
}

static inline int numpy_dtype(nx_state *st, PyObject *descr, const char *name)
{
    for (int i = 0; i < NX_BUF_NDESCR && st->np_descr[i] != NULL; i++)
        if (st->np_descr[i] == descr)
            return st->np_dtype[i];
    return numpy_dtype_slow(st, descr, name);
}

static int host_device(nx_state *st, const char *name, nx_buffer *out)
{
    if (NX_UNLIKELY(nx_loader_info()->flavour != NX_FLAVOUR_HOST))
        return host_memory_error(st, name);
    out->device = NX_DEVICE_HOST;
    return 0;
}

static int from_numpy(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    np_array *a = (np_array *)obj;
    int dt = numpy_dtype(st, a->descr, name);
    if (NX_UNLIKELY(dt < 0))
        return -1;
    if (NX_UNLIKELY(!(a->flags & (NP_C_CONTIGUOUS | NP_F_CONTIGUOUS))))
        return numpy_layout_error(st, name, a, (int64_t)nx_dtype_size((ncclDataType_t)dt));
    size_t count = 1;
    for (int i = 0; i < a->nd; i++)
        count *= (size_t)a->dimensions[i];
    if (host_device(st, name, out) < 0)
        return -1;
    out->ptr = a->data;
    out->count = count;
    out->dtype = (ncclDataType_t)dt;
    out->readonly = !(a->flags & NP_WRITEABLE);
    return 0;
}

/* ---- torch ---- */

static NX_COLD int torch_dtype_slow(nx_state *st, PyObject *dtobj, const char *name)
{
    static const struct {
        const char *name;
        int dt;
    } table[] = {
        {"torch.float16", ncclFloat16}, {"torch.float32", ncclFloat32}, {"torch.float64", ncclFloat64},
        {"torch.bfloat16", ncclBfloat16}, {"torch.int8", ncclInt8}, {"torch.int32", ncclInt32},
        {"torch.int64", ncclInt64}, {"torch.uint8", ncclUint8}, {"torch.bool", ncclUint8},
        {"torch.float8_e4m3fn", ncclFloat8e4m3}, {"torch.float8_e5m2", ncclFloat8e5m2},
        {"torch.uint32", ncclUint32}, {"torch.uint64", ncclUint64},
    };
    PyObject *s = PyObject_Str(dtobj);
    if (s == NULL)
        return -1;
    const char *n = PyUnicode_AsUTF8(s);
    int dt = -1;
    for (size_t i = 0; n != NULL && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(n, table[i].name) == 0)
            dt = table[i].dt;
    if (dt < 0 && n != NULL)
        nx_invalid(st,
                   "%s: Unsupported torch dtype %s has no NCCL equivalent. NCCL does not support complex, int16, "
                   "or quantized types.",
                   name, n);
    else if (dt >= 0)
        for (int i = 0; i < NX_BUF_NTORCH; i++)
            if (st->torch_dtype_obj[i] == NULL) {
                st->torch_dtype_obj[i] = Py_NewRef(dtobj);
                st->torch_dtype[i] = (signed char)dt;
                break;
            }
    Py_DECREF(s);
    return dt;
}

static inline int torch_dtype(nx_state *st, PyObject *dtobj, const char *name)
{
    for (int i = 0; i < NX_BUF_NTORCH && st->torch_dtype_obj[i] != NULL; i++)
        if (st->torch_dtype_obj[i] == dtobj)
            return st->torch_dtype[i];
    return torch_dtype_slow(st, dtobj, name);
}

/* Reads a tuple-like of ints (at most 64) into v. -1 with an exception. */
static int read_ints(PyObject *seq, int64_t *v, int *n)
{
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of ints");
    if (fast == NULL)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    int rc = 0;
    if (len > 64) {
        PyErr_SetString(PyExc_ValueError, "more than 64 dimensions");
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < len; i++) {
        v[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
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
    PyObject *shp = PyObject_GetAttr(obj, st->buf_str[S_SHAPE]);
    PyObject *str = shp ? PyObject_CallMethodNoArgs(obj, st->buf_str[S_STRIDE]) : NULL;
    if (str == NULL || read_ints(shp, shape, &nd) < 0 || read_ints(str, strides, &nd2) < 0 || nd != nd2)
        goto done;
    if (is_dense(nd, shape, strides, 1))
        rc = 0;
    else
        layout_error(st, name, nd, shape, strides, 1);
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
    PyObject *v = PyObject_GetAttr(obj, st->buf_str[attr]);
    if (v == NULL)
        return -1;
    int r = v == Py_True;
    Py_DECREF(v);
    return r;
}

/* neither cpu nor cuda: meta, mps, xpu, ... */
static NX_COLD int torch_device_error(nx_state *st, PyObject *obj, const char *name)
{
    PyObject *dev = PyObject_GetAttr(obj, st->buf_str[S_DEVICE]);
    if (dev != NULL) {
        nx_invalid(st, "%s: torch tensor on device %S is not supported", name, dev);
        Py_DECREF(dev);
    }
    return -1;
}

static int from_torch(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    PyObject *dtobj = PyObject_GetAttr(obj, st->buf_str[S_DTYPE]);
    if (dtobj == NULL)
        return -1;
    int dt = torch_dtype(st, dtobj, name);
    Py_DECREF(dtobj); /* the cache holds dtype objects that mapped */
    if (dt < 0)
        return -1;
    size_t ptr, count;
    if (as_size(PyObject_CallMethodNoArgs(obj, st->buf_str[S_DATA_PTR]), &ptr) < 0 ||
        as_size(PyObject_CallMethodNoArgs(obj, st->buf_str[S_NUMEL]), &count) < 0)
        return -1;
    PyObject *c = PyObject_CallMethodNoArgs(obj, st->buf_str[S_IS_CONTIGUOUS]);
    if (c == NULL)
        return -1;
    int contiguous = c == Py_True;
    Py_DECREF(c);
    if (!contiguous && torch_check_fortran(st, obj, name) < 0)
        return -1;
    /* is_cpu, is_cuda and get_device() are the cheap questions; .device builds an object */
    int where = tensor_place(st, obj, S_IS_CPU);
    if (where < 0)
        return -1;
    if (where) {
        if (host_device(st, name, out) < 0)
            return -1;
    } else if ((where = tensor_place(st, obj, S_IS_CUDA)) != 0) {
        size_t dev;
        if (where < 0 || as_size(PyObject_CallMethodNoArgs(obj, st->buf_str[S_GET_DEVICE]), &dev) < 0)
            return -1;
        out->device = (int)dev;
    } else
        return torch_device_error(st, obj, name);
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = count;
    out->dtype = (ncclDataType_t)dt;
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
    PyObject *descr = PyObject_GetAttr(obj, st->buf_str[S_DTYPE]);
    if (descr == NULL)
        return -1;
    int dt = numpy_dtype(st, descr, name);
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
        PyObject *shp = PyObject_GetAttr(obj, st->buf_str[S_SHAPE]);
        PyObject *str = shp ? PyObject_GetAttrString(obj, "strides") : NULL;
        if (str != NULL && read_ints(shp, shape, &nd) == 0 && read_ints(str, strides, &nd2) == 0)
            layout_error(st, name, nd, shape, strides, (int64_t)nx_dtype_size((ncclDataType_t)dt));
        Py_XDECREF(shp);
        Py_XDECREF(str);
        return -1;
    }
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = count;
    out->dtype = (ncclDataType_t)dt;
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

static int from_cc_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    size_t ptr, size;
    PyObject *h = PyObject_GetAttr(obj, st->buf_str[S_HANDLE]);
    /* real cuda.core may hand out a CUdeviceptr object: int() it, as upstream does */
    if (h != NULL && !PyLong_Check(h))
        Py_SETREF(h, PyNumber_Long(h));
    if (as_size(h, &ptr) < 0 ||
        as_size(PyObject_GetAttr(obj, st->buf_str[S_SIZE]), &size) < 0)
        return -1;
    int dev_ok = attr_true(obj, "is_device_accessible");
    int host_ok = dev_ok < 0 ? -1 : attr_true(obj, "is_host_accessible");
    if (host_ok < 0)
        return -1;
    /* the same mapping as DLPack's kDLCPU / kDLCUDAHost / kDLCUDA */
    if (host_ok && (!dev_ok || nx_loader_info()->flavour == NX_FLAVOUR_HOST)) {
        if (host_device(st, name, out) < 0)
            return -1;
    } else {
        size_t dev;
        if (as_size(PyObject_GetAttrString(obj, "device_id"), &dev) < 0)
            return -1;
        out->device = (int)dev;
    }
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = size;
    out->dtype = ncclInt8;
    out->readonly = 0;
    return 0;
}

/* ---- DLPack (dlpack.h v1.x, declared here) ---- */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} dl_device;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
    dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *);
} dl_managed;
typedef struct dl_managed_versioned {
    struct {
        uint32_t major, minor;
    } version;
    void *manager_ctx;
    void (*deleter)(struct dl_managed_versioned *);
    uint64_t flags;
    dl_tensor dl_tensor;
} dl_managed_versioned;
#define DL_FLAG_READ_ONLY 1u

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLROCM = 10, kDLROCMHost = 11, kDLCUDAManaged = 13 };

static int dl_datatype(dl_dtype t)
{
    switch (t.code) {
    case 0: /* kDLInt */
        return t.bits == 8 ? ncclInt8 : t.bits == 32 ? ncclInt32 : t.bits == 64 ? ncclInt64 : -1;
    case 1: /* kDLUInt */
        return t.bits == 8 ? ncclUint8 : t.bits == 32 ? ncclUint32 : t.bits == 64 ? ncclUint64 : -1;
    case 2: /* kDLFloat */
        return t.bits == 16 ? ncclFloat16 : t.bits == 32 ? ncclFloat32 : t.bits == 64 ? ncclFloat64 : -1;
    case 4: /* kDLBfloat */
        return t.bits == 16 ? ncclBfloat16 : -1;
    case 6: /* kDLBool */
        return t.bits == 8 ? ncclUint8 : -1;
    case 10: /* kDLFloat8_e4m3fn */
        return t.bits == 8 ? ncclFloat8e4m3 : -1;
    case 12: /* kDLFloat8_e5m2 */
        return t.bits == 8 ? ncclFloat8e5m2 : -1;
    default:
        return -1;
    }
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
    int dt = dl_datatype(t->dtype);
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
    if (t->strides != NULL && !is_dense(t->ndim, t->shape, t->strides, 1))
        return layout_error(st, name, t->ndim, t->shape, t->strides, 1);
    switch (t->device.device_type) {
    case kDLCUDA:
    case kDLROCM:
        out->device = t->device.device_id;
        break;
    case kDLCUDAHost:
    case kDLCUDAManaged:
    case kDLROCMHost:
        /* device-accessible host memory: host memory to the host backend, else the reported device */
        out->device = nx_loader_info()->flavour == NX_FLAVOUR_HOST ? NX_DEVICE_HOST : t->device.device_id;
        break;
    case kDLCPU:
        if (host_device(st, name, out) < 0)
            return -1;
        break;
    default:
        nx_invalid(st, "%s: DLPack device type %d is not supported", name, (int)t->device.device_type);
        return -1;
    }
    out->ptr = (char *)t->data + t->byte_offset;
    out->count = count;
    out->dtype = (ncclDataType_t)dt;
    return 0;
}

static int from_dlpack(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    int rc = -1;
    PyObject *cap = NULL, *vers = NULL;
    PyObject *dev = PyObject_CallMethodNoArgs(obj, st->buf_str[S_DLPACK_DEVICE]);
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
    PyObject *stream = devtype == kDLCPU ? Py_None : st->buf_str[S_MINUS_ONE];
    vers = Py_BuildValue("(ii)", 1, 0);
    if (vers == NULL)
        goto done;
    PyObject *argv[3] = {obj, stream, vers};
    cap = PyObject_VectorcallMethod(st->buf_str[S_DLPACK], argv, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                    st->buf_str[S_KW_VERSIONED]);
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* a pre-1.0 producer: no max_version keyword */
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(st->buf_str[S_DLPACK], argv, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                        st->buf_str[S_KW_LEGACY]);
    }
    if (cap == NULL)
        goto done;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        dl_managed_versioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m->version.major > 1) {
            /* not ours to read; the capsule stays unconsumed, so its destructor frees it */
            nx_invalid(st, "%s: DLPack version %u.%u is not supported (need 1.x)", name, m->version.major,
                       m->version.minor);
            goto done;
        }
        rc = dl_read(st, &m->dl_tensor, name, out);
        out->readonly = (m->flags & DL_FLAG_READ_ONLY) != 0;
        /* Consume: renamed, the capsule's destructor leaves the tensor to us; we free it at once,
         * since the exporting object keeps the memory alive. */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyCapsule_SetName(cap, "used_dltensor_versioned");
        if (m->deleter != NULL)
            m->deleter(m);
        PyErr_Restore(et, ev, tb);
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
        rc = dl_read(st, &m->dl_tensor, name, out);
        out->readonly = 0;
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyCapsule_SetName(cap, "used_dltensor");
        if (m->deleter != NULL)
            m->deleter(m);
        PyErr_Restore(et, ev, tb);
    } else {
        nx_invalid(st, "%s: __dlpack__() returned %s, not an unused DLPack capsule", name, Py_TYPE(cap)->tp_name);
    }
done:
    Py_XDECREF(dev);
    Py_XDECREF(vers);
    if (cap != NULL) {
        /* an unconsumed capsule's destructor runs the producer's code: not with our error pending */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        Py_DECREF(cap);
        PyErr_Restore(et, ev, tb);
    }
    return rc;
}

/* ---- __cuda_array_interface__ ---- */

/* The driver's pointer query, opened on first use. Process-global on purpose (like the loader's
 * table): one dlopen handle per process, C values only, written under the GIL. */
typedef int (*cu_pointer_get_attribute_fn)(void *data, int attribute, unsigned long long ptr);
typedef int (*hip_pointer_get_attributes_fn)(void *attributes, const void *ptr);
static cu_pointer_get_attribute_fn cu_query;
static hip_pointer_get_attributes_fn hip_query;

static void *open_first(const char *const *names, size_t n)
{
    for (size_t pass = 0; pass < 2; pass++) /* a copy already in the process first */
        for (size_t i = 0; i < n; i++) {
            void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | (pass == 0 ? RTLD_NOLOAD : 0));
            if (h != NULL)
                return h;
        }
    return NULL;
}

static NX_COLD int pointer_device(nx_state *st, const char *name, void *ptr, int *device)
{
    nx_flavour fl = nx_loader_info()->flavour;
    if (fl == NX_FLAVOUR_HOST) {
        /* no driver: CAI memory is device memory, which the host backend never computes on */
        *device = 0;
        return 0;
    }
    int rc = -1;
    if (fl == NX_FLAVOUR_RCCL) {
        if (hip_query == NULL) {
            static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6"};
            void *h = open_first(names, 3);
            if (h != NULL)
                *(void **)&hip_query = dlsym(h, "hipPointerGetAttributes");
        }
        if (hip_query == NULL) {
            nx_invalid(st, "%s: cannot find the device of a __cuda_array_interface__ pointer: "
                           "hipPointerGetAttributes is unavailable (libamdhip64 not found)", name);
            return -1;
        }
        /* hipPointerAttribute_t begins {int type; int device; ...} in every ROCm; room to spare */
        int attrs[32] = {0};
        rc = hip_query(attrs, ptr);
        *device = attrs[1];
        if (rc != 0) {
            nx_invalid(st, "%s: cannot find the device of __cuda_array_interface__ pointer %p: "
                           "hipPointerGetAttributes failed (error %d)", name, ptr, rc);
            return -1;
        }
        return 0;
    }
    if (cu_query == NULL) {
        static const char *const names[] = {"libcuda.so.1"};
        void *h = open_first(names, 1);
        if (h != NULL)
            *(void **)&cu_query = dlsym(h, "cuPointerGetAttribute");
    }
    if (cu_query == NULL) {
        nx_invalid(st, "%s: cannot find the device of a __cuda_array_interface__ pointer: "
                       "cuPointerGetAttribute is unavailable (libcuda.so.1 not found)", name);
        return -1;
    }
    rc = cu_query(device, 9 /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */, (unsigned long long)(uintptr_t)ptr);
    if (rc != 0) {
        nx_invalid(st, "%s: cannot find the device of __cuda_array_interface__ pointer %p: "
                       "cuPointerGetAttribute failed (error %d)", name, ptr, rc);
        return -1;
    }
    return 0;
}

static NX_COLD int cai_bad(nx_state *st, const char *name, const char *what)
{
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError) ||
        PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        nx_invalid(st, "%s: __cuda_array_interface__ has an invalid %s", name, what);
    }
    return -1;
}

static int from_cai(nx_state *st, PyObject *cai, const char *name, nx_buffer *out)
{
    if (!PyDict_Check(cai)) {
        nx_invalid(st, "%s: __cuda_array_interface__ must be a dict, got %s", name, Py_TYPE(cai)->tp_name);
        return -1;
    }
    PyObject *v = PyDict_GetItemString(cai, "version"); /* borrowed, like the items below */
    long version = v != NULL ? PyLong_AsLong(v) : -1;
    if (version == -1 && PyErr_Occurred())
        return cai_bad(st, name, "version");
    if (version < 3) {
        nx_invalid(st, "%s: __cuda_array_interface__ version %ld is not supported (need 3 or later)", name, version);
        return -1;
    }
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask != NULL && mask != Py_None) {
        nx_invalid(st, "%s: a __cuda_array_interface__ with a mask is not supported", name);
        return -1;
    }
    PyObject *data = PyDict_GetItemString(cai, "data");
    if (data == NULL || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return cai_bad(st, name, "data (expected (ptr, readonly))");
    size_t ptr = PyLong_AsSize_t(PyTuple_GET_ITEM(data, 0));
    int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if ((ptr == (size_t)-1 && PyErr_Occurred()) || readonly < 0)
        return cai_bad(st, name, "data (expected (ptr, readonly))");
    PyObject *ts = PyDict_GetItemString(cai, "typestr");
    const char *typestr = ts != NULL && PyUnicode_Check(ts) ? PyUnicode_AsUTF8(ts) : NULL;
    if (typestr == NULL || strlen(typestr) < 3)
        return cai_bad(st, name, "typestr");
    long itemsize = strtol(typestr + 2, NULL, 10);
    int dt = typestr[0] == '>' ? -1 : nx_numpy_kind_dtype(NULL, typestr[1], itemsize);
    if (dt < 0) {
        nx_invalid(st, "%s: Unsupported data type: numpy dtype %s (kind=%c, itemsize=%ld, name=%s) has no NCCL "
                       "equivalent", name, typestr, typestr[1], itemsize, typestr);
        return -1;
    }
    int64_t shape[64], strides[64];
    int nd = 0, nd2 = 0;
    PyObject *shp = PyDict_GetItemString(cai, "shape");
    if (shp == NULL || !PyTuple_Check(shp) || read_ints(shp, shape, &nd) < 0)
        return cai_bad(st, name, "shape");
    PyObject *str = PyDict_GetItemString(cai, "strides");
    if (str != NULL && str != Py_None) {
        if (!PyTuple_Check(str) || read_ints(str, strides, &nd2) < 0 || nd2 != nd)
            return cai_bad(st, name, "strides");
        if (!is_dense(nd, shape, strides, itemsize))
            return layout_error(st, name, nd, shape, strides, itemsize);
    }
    size_t count = 1;
    for (int i = 0; i < nd; i++)
        count *= (size_t)shape[i];
    int device;
    if (pointer_device(st, name, (void *)(uintptr_t)ptr, &device) < 0)
        return -1;
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = count;
    out->dtype = (ncclDataType_t)dt;
    out->device = device;
    out->readonly = readonly;
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

static int from_buffer_protocol(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) < 0)
        return -1;
    int rc = -1;
    int dt = format_dtype(view.format, view.itemsize);
    if (dt < 0) {
        nx_invalid(st, "%s: Unsupported data type: buffer format '%s' (itemsize=%zd) has no NCCL equivalent", name,
                   view.format ? view.format : "B", view.itemsize);
        goto done;
    }
    int64_t shape[64], strides[64];
    int nd = view.ndim < 64 ? view.ndim : 64;
    for (int i = 0; i < nd; i++) {
        shape[i] = view.shape[i];
        strides[i] = view.strides ? view.strides[i] : 0;
    }
    if (view.strides != NULL && !is_dense(nd, shape, strides, view.itemsize)) {
        layout_error(st, name, nd, shape, strides, view.itemsize);
        goto done;
    }
    out->ptr = view.buf;
    out->count = (size_t)(view.len / view.itemsize);
    out->dtype = (ncclDataType_t)dt;
    out->device = NX_DEVICE_HOST;
    out->readonly = view.readonly;
    rc = 0;
done:
    /* The exporter keeps the memory alive for as long as the caller holds obj. */
    PyBuffer_Release(&view);
    return rc;
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

static NX_COLD int resolve_generic(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    PyTypeObject *tp;
    if ((tp = seen_type(st, T_CUPY)) != NULL && PyObject_TypeCheck(obj, tp))
        return from_cupy(st, obj, name, out);
    for (int k = T_CC_BUFFER; k <= T_SHIM_BUFFER; k++)
        if ((tp = seen_type(st, k)) != NULL && PyObject_TypeCheck(obj, tp))
            return from_cc_buffer(st, obj, name, out);
    int has_dl = optional_attr(obj, st->buf_str[S_DLPACK], NULL);
    if (has_dl > 0)
        has_dl = optional_attr(obj, st->buf_str[S_DLPACK_DEVICE], NULL);
    if (has_dl < 0)
        return -1;
    if (has_dl)
        return from_dlpack(st, obj, name, out);
    PyObject *cai;
    if (optional_attr(obj, st->buf_str[S_CAI], &cai) < 0)
        return -1;
    if (cai != NULL) {
        int rc = from_cai(st, cai, name, out);
        Py_DECREF(cai);
        return rc;
    }
    if (nx_loader_info()->flavour == NX_FLAVOUR_HOST && PyObject_CheckBuffer(obj))
        return from_buffer_protocol(st, obj, name, out);
    return unsupported(st, obj, name);
}

int nx_resolve_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    if (NX_UNLIKELY(!nx_loader_ready()) && nx_load_library(st) < 0)
        return -1;
    /* numpy and torch first: the types are disjoint, so this does not change which rule wins */
    PyTypeObject *tp = seen_type(st, T_NDARRAY);
    if (tp != NULL && PyObject_TypeCheck(obj, tp))
        return from_numpy(st, obj, name, out);
    tp = seen_type(st, T_TORCH);
    if (tp != NULL && PyObject_TypeCheck(obj, tp))
        return from_torch(st, obj, name, out);
    return resolve_generic(st, obj, name, out);
}

int nx_buffer_writable(nx_state *st, const nx_buffer *b, const char *name)
{
    if (b->readonly) {
        nx_invalid(st, "%s is read-only", name);
        return -1;
    }
    return 0;
}

/* ---- NcclBuffer ---- */

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

#define B(self) (&((nx_NcclBuffer *)(self))->b)

static PyObject *NcclBuffer_ptr(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong((uintptr_t)B(self)->ptr);
}
static PyObject *NcclBuffer_count(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(B(self)->count);
}
static PyObject *NcclBuffer_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(B(self)->count * nx_dtype_size(B(self)->dtype));
}
static PyObject *NcclBuffer_device_id(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(B(self)->device);
}
static PyObject *NcclBuffer_readonly(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(B(self)->readonly);
}
static PyObject *NcclBuffer_dtype(PyObject *self, void *c)
{
    (void)c;
    nx_state *st = PyType_GetModuleState(Py_TYPE(self));
    PyObject *cls = nx_lazy(st, NX_LAZY_DATATYPE); /* borrowed */
    return cls ? PyObject_CallFunction(cls, "i", (int)B(self)->dtype) : NULL;
}

static PyObject *NcclBuffer_repr(PyObject *self)
{
    const nx_buffer *b = B(self);
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

int nx_buffer_setup(PyObject *module, nx_state *st)
{
    for (int i = 0; i < S_NSTR; i++) {
        if (str_values[i] == NULL)
            continue;
        if ((st->buf_str[i] = PyUnicode_InternFromString(str_values[i])) == NULL)
            return -1;
    }
    st->buf_str[S_KW_VERSIONED] = Py_BuildValue("(ss)", "stream", "max_version");
    st->buf_str[S_KW_LEGACY] = Py_BuildValue("(s)", "stream");
    st->buf_str[S_MINUS_ONE] = PyLong_FromLong(-1);
    for (int k = 0; k < T_NTYPES; k++)
        if ((st->buf_str[S_MODULE0 + k] = PyUnicode_InternFromString(type_names[k].module)) == NULL)
            return -1;
    if (st->buf_str[S_KW_VERSIONED] == NULL || st->buf_str[S_KW_LEGACY] == NULL || st->buf_str[S_MINUS_ONE] == NULL)
        return -1;
    PyObject *tp = PyType_FromModuleAndSpec(module, &NcclBuffer_spec, NULL);
    if (tp == NULL)
        return -1;
    st->core_types[NX_TYPE_NCCL_BUFFER] = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, "NcclBuffer", tp);
}
