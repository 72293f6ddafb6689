/* The floor for the overhead benchmark: a bare METH_FASTCALL C function that takes the same seven
 * integers as nccl.bindings.nccl.all_reduce, converts them, and does nothing else. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *seven_ints(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "seven_ints() takes 7 arguments");
        return NULL;
    }
    long long v[7];
    for (int i = 0; i < 7; i++)
        if ((v[i] = PyLong_AsLongLong(args[i])) == -1 && PyErr_Occurred())
            return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"seven_ints", (PyCFunction)(void (*)(void))seven_ints, METH_FASTCALL, NULL},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "floor_ext", NULL, 0, methods};
PyMODINIT_FUNC PyInit_floor_ext(void) { return PyModuleDef_Init(&def); }
