/* PointerBox: stable storage for one pointer that NCCL may fill after the call returns
 * (nonblocking communicator creation). `address` is the slot's address, valid for the box's life. */
#include "structs/pointerbox.h"

#include "module/module.h"

static PyObject *PointerBox_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ptr", NULL};
    PyObject *ptr_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:PointerBox", kwlist, &ptr_obj))
        return NULL;
    void *ptr = NULL;
    if (ptr_obj != NULL && (ptr = PyLong_AsVoidPtr(ptr_obj)) == NULL && PyErr_Occurred())
        return NULL;
    nx_PointerBox *self = (nx_PointerBox *)tp->tp_alloc(tp, 0);
    if (self != NULL)
        self->slot = ptr;
    return (PyObject *)self;
}

static PyObject *PointerBox_int(PyObject *op)
{
    /* An atomic load: the library may have written the slot from another thread. */
    return PyLong_FromVoidPtr(__atomic_load_n(&((nx_PointerBox *)op)->slot, __ATOMIC_ACQUIRE));
}

static PyObject *PointerBox_get_ptr(PyObject *op, void *closure)
{
    (void)closure;
    return PointerBox_int(op);
}

static int PointerBox_set_ptr(PyObject *op, PyObject *value, void *closure)
{
    (void)closure;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete PointerBox.ptr");
        return -1;
    }
    void *p = PyLong_AsVoidPtr(value);
    if (p == NULL && PyErr_Occurred())
        return -1;
    ((nx_PointerBox *)op)->slot = p;
    return 0;
}

static PyObject *PointerBox_get_address(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(&((nx_PointerBox *)op)->slot);
}

static int PointerBox_bool(PyObject *op) { return ((nx_PointerBox *)op)->slot != NULL; }

static PyObject *PointerBox_repr(PyObject *op)
{
    char text[48];
    snprintf(text, sizeof text, "<PointerBox ptr=0x%zx>", (size_t)(uintptr_t)((nx_PointerBox *)op)->slot);
    return PyUnicode_FromString(text);
}

static PyObject *PointerBox_format(PyObject *op, PyObject *spec)
{
    /* PyObject_Format takes only a str (anything else is its SystemError) */
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "__format__() argument must be str, not %.200s", Py_TYPE(spec)->tp_name);
        return NULL;
    }
    PyObject *v = PointerBox_int(op);
    if (v == NULL)
        return NULL;
    PyObject *s = PyObject_Format(v, spec);
    Py_DECREF(v);
    return s;
}

static int PointerBox_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static void PointerBox_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyGetSetDef PointerBox_getset[] = {
    {"ptr", PointerBox_get_ptr, PointerBox_set_ptr, "The pointer value held in the box.", NULL},
    {"address", PointerBox_get_address, NULL, "Address of the box's slot (pass it as an out-parameter).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef PointerBox_methods[] = {
    {"__format__", PointerBox_format, METH_O, "Format the pointer value."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(PointerBox__doc__, "PointerBox(ptr=0)\n--\n\n"
"Stable storage for a pointer that NCCL may fill asynchronously; keep the box alive until then.");

static PyType_Slot PointerBox_slots[] = {
    {Py_tp_doc, (void *)PointerBox__doc__},
    {Py_tp_new, PointerBox_new},
    {Py_tp_dealloc, PointerBox_dealloc},
    {Py_tp_traverse, PointerBox_traverse},
    {Py_tp_repr, PointerBox_repr},
    {Py_tp_getset, PointerBox_getset},
    {Py_tp_methods, PointerBox_methods},
    {Py_nb_int, PointerBox_int},
    {Py_nb_index, PointerBox_int},
    {Py_nb_bool, PointerBox_bool},
    {0, NULL},
};

static PyType_Spec PointerBox_spec = {
    .name = "nccl.bindings.nccl.PointerBox",
    .basicsize = sizeof(nx_PointerBox),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = PointerBox_slots,
};

int nx_pointer_box_setup(PyObject *module, nx_state *st)
{
    PyObject *tp = PyType_FromModuleAndSpec(module, &PointerBox_spec, NULL);
    if (tp == NULL)
        return -1;
    nx_types_of(st)->pointer_box = (PyTypeObject *)tp;
    return PyModule_AddObjectRef(module, "PointerBox", tp);
}
