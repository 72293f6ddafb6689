/* nccl.bindings.nccl.Comm and Window: a communicator or window handle as an object, nccl4py
 * 0.5+'s surface (handle, handle_ptr, __int__, __index__, __bool__, not picklable).
 *
 * 0.2.0 code and the RCCL fork got plain ints from the same creation calls, so a handle also
 * behaves like its int where such code used one: == and hash as the int's, %x/hex() through
 * __index__, format specs through the int, and every binding accepts either (convert.c). It is
 * not an int subclass: an int subclass is immutable, and the library must be able to write the
 * handle into the object (handle_ptr) when a group ends. docs/compatibility.md#handles. */
#include "structs/handles.h"

#include <stdint.h>

#include "module/convert.h"
#include "module/module.h"
#include "module/state.h"

static nx_handle_kind kind_of(PyTypeObject *tp)
{
    return tp->tp_dealloc == nx_window_dealloc ? NX_HANDLE_WINDOW : NX_HANDLE_COMM;
}

PyObject *nx_handle_new(nx_state *st, nx_handle_kind kind, void *value)
{
    PyTypeObject *tp = st->handles.types[kind];
    PyObject *h = tp->tp_alloc(tp, 0);
    if (h != NULL)
        ((nx_Handle *)h)->slot = value;
    return h;
}

static PyObject *Handle_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"handle", NULL};
    nx_handle_kind kind = kind_of(tp);
    const char *name = nx_handle_kind_name(kind);
    PyObject *arg = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, kind == NX_HANDLE_COMM ? "|O:Comm" : "|O:Window", kwlist, &arg))
        return NULL;
    void *value = NULL;
    if (arg != NULL && Py_TYPE(arg) == tp) {
        value = nx_handle_value(arg);
    } else if (arg != NULL) {
        intptr_t v;
        /* refuses the other kind of handle (TypeError), accepts any int */
        if (nx_intptr(arg, name, "handle", &v) < 0)
            return NULL;
        value = (void *)v;
    }
    PyObject *h = tp->tp_alloc(tp, 0);
    if (h != NULL)
        ((nx_Handle *)h)->slot = value;
    return h;
}

static PyObject *Handle_int(PyObject *op) { return PyLong_FromVoidPtr(nx_handle_value(op)); }

static int Handle_bool(PyObject *op) { return nx_handle_value(op) != NULL; }

static PyObject *Handle_get_handle(PyObject *op, void *closure)
{
    (void)closure;
    return Handle_int(op);
}

static PyObject *Handle_get_handle_ptr(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(nx_handle_slot(op));
}

static PyObject *Handle_repr(PyObject *op)
{
    char text[64];
    snprintf(text, sizeof text, "<%s handle=0x%zx>", nx_handle_kind_name(kind_of(Py_TYPE(op))),
             (size_t)(uintptr_t)nx_handle_value(op));
    return PyUnicode_FromString(text);
}

/* As the int would hash, so a handle and its int find each other in dicts and sets. (The value,
 * and so the hash, changes once when a group end fills a pending handle.) */
static Py_hash_t Handle_hash(PyObject *op)
{
    PyObject *v = Handle_int(op);
    if (v == NULL)
        return -1;
    Py_hash_t h = PyObject_Hash(v);
    Py_DECREF(v);
    return h;
}

/* Compares as the int would, against ints, floats, anything with __index__ and handles of the
 * same type; a handle of the other type, or anything else, is not comparable (NotImplemented). */
static PyObject *Handle_richcompare(PyObject *self, PyObject *other, int op)
{
    PyObject *theirs;
    if (Py_TYPE(other) == Py_TYPE(self))
        theirs = Handle_int(other);
    else if (nx_is_handle(other))
        Py_RETURN_NOTIMPLEMENTED;
    else if (PyLong_Check(other) || PyFloat_Check(other))
        theirs = Py_NewRef(other);
    else if (PyIndex_Check(other)) {
        if ((theirs = PyNumber_Index(other)) == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError))
                return NULL;
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
    } else
        Py_RETURN_NOTIMPLEMENTED;
    if (theirs == NULL)
        return NULL;
    PyObject *mine = Handle_int(self), *result = NULL;
    if (mine != NULL)
        result = PyObject_RichCompare(mine, theirs, op);
    Py_XDECREF(mine);
    Py_DECREF(theirs);
    return result;
}

/* A format spec formats the int (f"{comm:#x}"); the empty spec is str(), as for any object. */
static PyObject *Handle_format(PyObject *op, PyObject *spec)
{
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "__format__() argument must be str, not %.200s", Py_TYPE(spec)->tp_name);
        return NULL;
    }
    if (PyUnicode_GET_LENGTH(spec) == 0)
        return PyObject_Str(op);
    PyObject *v = Handle_int(op);
    if (v == NULL)
        return NULL;
    PyObject *s = PyObject_Format(v, spec);
    Py_DECREF(v);
    return s;
}

static PyObject *Handle_reduce(PyObject *op, PyObject *unused)
{
    (void)unused;
    PyErr_Format(PyExc_TypeError, "cannot pickle '%s' object: a handle is valid only in the process that made it",
                 nx_handle_kind_name(kind_of(Py_TYPE(op))));
    return NULL;
}

static int Handle_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(op));
    return 0;
}

static void handle_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* Two functions with one body: their addresses tell the types apart (handles.h). */
void nx_comm_dealloc(PyObject *op) { handle_dealloc(op); }
void nx_window_dealloc(PyObject *op) { handle_dealloc(op); }

static PyGetSetDef Handle_getset[] = {
    {"handle", Handle_get_handle, NULL, "The handle's value, as an int (0 while empty or still pending).", NULL},
    {"handle_ptr", Handle_get_handle_ptr, NULL,
     "Address of this object's own handle slot: pass it where a 0.3.1-form creation call wants the\n"
     "address of the slot to fill, and keep the object alive until the library wrote it.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Handle_methods[] = {
    {"__format__", Handle_format, METH_O, "Format the handle's int value (an empty spec gives str())."},
    {"__reduce__", Handle_reduce, METH_NOARGS, "Handles cannot be pickled."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Comm__doc__, "Comm(handle=0)\n--\n\n"
"A communicator handle (ncclComm_t). Creation calls in their short form return one; inside a group\n"
"the library fills it when the group ends. Every binding takes a Comm or an int; int(comm),\n"
"comm.handle and comm.__index__() give the address, and a Comm compares and hashes as that int.");

PyDoc_STRVAR(Window__doc__, "Window(handle=0)\n--\n\n"
"A window handle (ncclWindow_t), returned by comm_window_register(comm, buff, size, win_flags);\n"
"inside a group the library fills it when the group ends. Every binding takes a Window or an int.");

static PyType_Slot Comm_slots[] = {
    {Py_tp_doc, (void *)Comm__doc__},
    {Py_tp_new, Handle_new},
    {Py_tp_dealloc, nx_comm_dealloc},
    {Py_tp_traverse, Handle_traverse},
    {Py_tp_repr, Handle_repr},
    {Py_tp_hash, Handle_hash},
    {Py_tp_richcompare, Handle_richcompare},
    {Py_tp_getset, Handle_getset},
    {Py_tp_methods, Handle_methods},
    {Py_nb_int, Handle_int},
    {Py_nb_index, Handle_int},
    {Py_nb_bool, Handle_bool},
    {0, NULL},
};

static PyType_Slot Window_slots[] = {
    {Py_tp_doc, (void *)Window__doc__},
    {Py_tp_new, Handle_new},
    {Py_tp_dealloc, nx_window_dealloc},
    {Py_tp_traverse, Handle_traverse},
    {Py_tp_repr, Handle_repr},
    {Py_tp_hash, Handle_hash},
    {Py_tp_richcompare, Handle_richcompare},
    {Py_tp_getset, Handle_getset},
    {Py_tp_methods, Handle_methods},
    {Py_nb_int, Handle_int},
    {Py_nb_index, Handle_int},
    {Py_nb_bool, Handle_bool},
    {0, NULL},
};

/* Final types (no Py_TPFLAGS_BASETYPE): the converters' dealloc test is then an exact-type test. */
static PyType_Spec handle_specs[NX_NHANDLE_KINDS] = {
    [NX_HANDLE_COMM] = {.name = "nccl.bindings.nccl.Comm", .basicsize = sizeof(nx_Handle),
                        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
                        .slots = Comm_slots},
    [NX_HANDLE_WINDOW] = {.name = "nccl.bindings.nccl.Window", .basicsize = sizeof(nx_Handle),
                          .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
                          .slots = Window_slots},
};

int nx_handles_cache_traverse(nx_handles_cache *c, visitproc visit, void *arg)
{
    for (int i = 0; i < NX_NHANDLE_KINDS; i++)
        Py_VISIT(c->types[i]);
    return 0;
}

void nx_handles_cache_clear(nx_handles_cache *c)
{
    for (int i = 0; i < NX_NHANDLE_KINDS; i++)
        Py_CLEAR(c->types[i]);
}

int nx_handles_setup(PyObject *module, nx_state *st)
{
    for (int i = 0; i < NX_NHANDLE_KINDS; i++) {
        PyObject *tp = PyType_FromModuleAndSpec(module, &handle_specs[i], NULL);
        if (tp == NULL)
            return -1;
        st->handles.types[i] = (PyTypeObject *)tp;
        if (PyModule_AddObjectRef(module, nx_handle_kind_name((nx_handle_kind)i), tp) < 0)
            return -1;
    }
    return 0;
}
