/* DLPack consumption for the resolver (buffer.h): __dlpack_device__, then __dlpack__ with
 * max_version=(1, 0) (falling back to the pre-1.0 call), then the capsule read and consumed at
 * once. The structs are the shared declaration of src/include/dlpack_abi.h. */
#include "buffer.h"

#include "dlpack_abi.h"
#include "lazy.h"
#include "library.h"
#include "module.h"

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
        if (nx_buffer_host_device(st, name, out) < 0)
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

int nx_buffer_from_dlpack(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    int rc = -1;
    PyObject *cap = NULL, *vers = NULL;
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
    PyObject *stream = devtype == kDLCPU ? Py_None : st->buffer.str[NX_BSTR_MINUS_ONE];
    vers = Py_BuildValue("(ii)", 1, 0);
    if (vers == NULL)
        goto done;
    PyObject *argv[3] = {obj, stream, vers};
    cap = PyObject_VectorcallMethod(st->buffer.str[NX_BSTR_DLPACK], argv, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                    st->buffer.str[NX_BSTR_KW_VERSIONED]);
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* a pre-1.0 producer: no max_version keyword */
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(st->buffer.str[NX_BSTR_DLPACK], argv, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                        st->buffer.str[NX_BSTR_KW_LEGACY]);
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

