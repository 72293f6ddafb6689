/* __cuda_array_interface__ (version 3 and later) for the resolver (buffer.h). The dict gives the
 * pointer, typestr, shape and strides; the device comes from the driver (buffer_device.c). */
#include "buffer/buffer.h"

#include <stdlib.h>
#include <string.h>

#include "module/errors.h"
#include "module/module.h"

static NX_COLD int cai_bad(nx_state *st, const char *name, const char *what)
{
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError) ||
        PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        nx_invalid(st, "%s: __cuda_array_interface__ has an invalid %s", name, what);
    }
    return -1;
}

/* The dict's item `key` as a new reference (NULL without an exception when absent): items are
 * owned while read, since reading one (__bool__, __index__) may run code that changes the dict. */
static PyObject *item(PyObject *cai, const char *key)
{
    PyObject *v;
    if (PyDict_GetItemStringRef(cai, key, &v) < 0)
        PyErr_Clear(); /* a key whose comparison raised: treated as absent, reported below */
    return v;
}

static int read_cai(nx_state *st, PyObject *cai, const char *name, nx_buffer *out, PyObject **items)
{
    enum { VERSION, MASK, DATA, TYPESTR, SHAPE, STRIDES };
    static const char *const keys[] = {"version", "mask", "data", "typestr", "shape", "strides"};
    for (int i = 0; i <= STRIDES; i++)
        items[i] = item(cai, keys[i]);
    PyObject *v = items[VERSION];
    long version = v != NULL ? PyLong_AsLong(v) : -1;
    if (version == -1 && PyErr_Occurred())
        return cai_bad(st, name, "version");
    if (version < 3) {
        nx_invalid(st, "%s: __cuda_array_interface__ version %ld is not supported (need 3 or later)", name, version);
        return -1;
    }
    PyObject *mask = items[MASK];
    if (mask != NULL && mask != Py_None) {
        nx_invalid(st, "%s: a __cuda_array_interface__ with a mask is not supported", name);
        return -1;
    }
    PyObject *data = items[DATA];
    if (data == NULL || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return cai_bad(st, name, "data (expected (ptr, readonly))");
    size_t ptr = PyLong_AsSize_t(PyTuple_GET_ITEM(data, 0));
    int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if ((ptr == (size_t)-1 && PyErr_Occurred()) || readonly < 0)
        return cai_bad(st, name, "data (expected (ptr, readonly))");
    PyObject *ts = items[TYPESTR];
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
    PyObject *shp = items[SHAPE];
    if (shp == NULL || !PyTuple_Check(shp) || nx_buffer_read_ints(shp, shape, &nd) < 0)
        return cai_bad(st, name, "shape");
    PyObject *str = items[STRIDES];
    if (str != NULL && str != Py_None) {
        if (!PyTuple_Check(str) || nx_buffer_read_ints(str, strides, &nd2) < 0 || nd2 != nd)
            return cai_bad(st, name, "strides");
        if (!nx_buffer_is_dense(nd, shape, strides, itemsize))
            return nx_buffer_layout_error(st, name, nd, shape, strides, itemsize);
    }
    size_t count = 1;
    for (int i = 0; i < nd; i++)
        count *= (size_t)shape[i];
    int device;
    if (nx_buffer_pointer_device(st, name, (void *)(uintptr_t)ptr, &device) < 0)
        return -1;
    out->ptr = (void *)(uintptr_t)ptr;
    out->count = count;
    nx_buffer_set_dtype(out, dt);
    out->device = device;
    out->readonly = readonly;
    return 0;
}

int nx_buffer_from_cai(nx_state *st, PyObject *cai, const char *name, nx_buffer *out)
{
    if (!PyDict_Check(cai)) {
        nx_invalid(st, "%s: __cuda_array_interface__ must be a dict, got %s", name, Py_TYPE(cai)->tp_name);
        return -1;
    }
    PyObject *items[6];
    int rc = read_cai(st, cai, name, out, items);
    for (int i = 0; i < 6; i++)
        Py_XDECREF(items[i]);
    return rc;
}
