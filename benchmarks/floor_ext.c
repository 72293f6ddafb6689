/* The floors for the overhead benchmark: bare METH_FASTCALL C functions that take the same seven
 * integers as nccl.bindings.nccl.all_reduce and convert them.
 *
 *   seven_ints        converts them and does nothing else;
 *   seven_ints_nogil  also calls the null library's ncclAllReduce (set_target) with the GIL
 *                     released around the call, as every binding does: the floor a binding is
 *                     compared with like for like. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef int (*all_reduce_fn)(const void *, void *, size_t, int, int, void *, void *);
static all_reduce_fn target;

static int convert(PyObject *const *args, Py_ssize_t nargs, long long *v)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "takes 7 arguments");
        return -1;
    }
    for (int i = 0; i < 7; i++)
        if ((v[i] = PyLong_AsLongLong(args[i])) == -1 && PyErr_Occurred())
            return -1;
    return 0;
}

static PyObject *seven_ints(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    long long v[7];
    if (convert(args, nargs, v) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *seven_ints_nogil(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    long long v[7];
    if (convert(args, nargs, v) < 0)
        return NULL;
    if (target == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "set_target() first");
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = target((const void *)(intptr_t)v[0], (void *)(intptr_t)v[1], (size_t)v[2], (int)v[3], (int)v[4],
                (void *)(intptr_t)v[5], (void *)(intptr_t)v[6]);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "status %d", rc);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *set_target(PyObject *m, PyObject *addr)
{
    (void)m;
    void *p = PyLong_AsVoidPtr(addr);
    if (p == NULL && PyErr_Occurred())
        return NULL;
    target = (all_reduce_fn)p;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"seven_ints", (PyCFunction)(void (*)(void))seven_ints, METH_FASTCALL, NULL},
    {"seven_ints_nogil", (PyCFunction)(void (*)(void))seven_ints_nogil, METH_FASTCALL, NULL},
    {"set_target", set_target, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "floor_ext", NULL, 0, methods};
PyMODINIT_FUNC PyInit_floor_ext(void) { return PyModuleDef_Init(&def); }
