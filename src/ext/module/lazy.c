/* Python-level objects the C code uses: enums, dataclasses and cuda.core helpers written in Python.
 * Those modules import nccl._ext themselves, so C never imports them: the packages that define them
 * hand them over once, at their own import, through nccl._ext._register(name=object), and they are
 * kept in module state. */
#include "module/lazy.h"

#include <string.h>

#include "module/errors.h"
#include "module/module.h"
#include "module/state.h"

/* Each object's keyword in _register and the package whose import registers it (for the message
 * when C needs an object nobody registered). */
static const struct {
    const char *name;
    const char *registrant;
} lazy_names[NX_NLAZY] = {
    [NX_LAZY_DATATYPE] = {"NcclDataType", "nccl.core"},
    [NX_LAZY_RESULT] = {"Result", "nccl.core"},
    [NX_LAZY_UNIQUE_ID] = {"UniqueId", "nccl.core"},
    [NX_LAZY_NCCL_CONFIG] = {"NCCLConfig", "nccl.core"},
    [NX_LAZY_GET_DEVICE] = {"get_cuda_device", "nccl.core"},
    [NX_LAZY_NUM_DEVICES] = {"get_num_devices", "nccl.core"},
    [NX_LAZY_WAIT_SIGNAL] = {"WaitSignalDesc", "nccl.core"},
    [NX_LAZY_GIN_TYPE] = {"NcclGinType", "nccl.core"},
    [NX_LAZY_NUMPY] = {"numpy", "nccl.core or nccl.bindings.nccl"},
    [NX_LAZY_COLL_CONFIG] = {"NCCLCollConfig", "nccl.core"},
    [NX_LAZY_GET_EVENT_PTR] = {"get_event_ptr", "nccl.core"},
    [NX_LAZY_CHECK_ONE_RANK] = {"check_one_rank", "nccl.core or nccl.bindings.nccl"},
    [NX_LAZY_ML_DTYPE] = {"ml_dtype", "nccl.core"},
};

PyObject *nx_lazy(nx_state *st, nx_lazy_kind kind)
{
    PyObject *obj = nx_cache_get(&st->lazy.obj[kind]);
    if (NX_LIKELY(obj != NULL))
        return obj;
    PyErr_Format(PyExc_RuntimeError, "nccl._ext: %s is not registered yet; importing %s registers it",
                 lazy_names[kind].name, lazy_names[kind].registrant);
    return NULL;
}

/* _register's keywords naming one of nccl.core's C types (Communicator=..., RegisteredWindowHandle=...):
 * a dict of the class attributes written in Python (nccl.core._methods), set in the type's dict so
 * that an immutable type takes them too; the first registration of each name stays. */
static PyTypeObject *core_type_named(nx_state *st, PyObject *key)
{
    for (int i = 0; i < NX_NCORE_TYPES; i++) {
        const char *n = nx_types_of(st)->core[i]->tp_name, *dot = strrchr(n, '.');
        if (PyUnicode_CompareWithASCIIString(key, dot ? dot + 1 : n) == 0)
            return nx_types_of(st)->core[i];
    }
    return NULL;
}

static int register_type_attributes(PyTypeObject *tp, PyObject *key, PyObject *attrs)
{
    if (!PyDict_Check(attrs)) {
        PyErr_Format(PyExc_TypeError, "_register() argument '%U' must be a dict of attributes, not %.200s", key,
                     Py_TYPE(attrs)->tp_name);
        return -1;
    }
    /* a list of (name, value) pairs, owned: setting one may run a name's __eq__ */
    PyObject *items = PyDict_Items(attrs);
    if (items == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        if (PyDict_SetDefault(tp->tp_dict, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) == NULL) {
            Py_DECREF(items);
            return -1;
        }
    }
    Py_DECREF(items);
    PyType_Modified(tp);
    return 0;
}

static int register_one(nx_state *st, PyObject *key, PyObject *value)
{
    for (int i = 0; i < NX_NLAZY; i++) {
        if (PyUnicode_CompareWithASCIIString(key, lazy_names[i].name) == 0) {
            nx_cache_publish(&st->lazy.obj[i], Py_NewRef(value)); /* the first registration stays */
            return 0;
        }
    }
    int r = nx_errors_register(st, key, value);
    if (r != 0)
        return r < 0 ? -1 : 0;
    PyTypeObject *tp = core_type_named(st, key);
    if (tp != NULL)
        return register_type_attributes(tp, key, value);
    PyErr_Format(PyExc_TypeError, "_register() got an unexpected keyword argument '%U'", key);
    return -1;
}

PyDoc_STRVAR(register__doc__, "_register(**objects)\n--\n\n"
"Hand the C code the Python objects it uses (NcclDataType=..., check_one_rank=..., the exception\n"
"classes of nccl._errors, ...), once, from the import of the package that defines them;\n"
"Communicator={name: attribute, ...} (any of nccl.core's C types) sets class attributes written\n"
"in Python.\n"
"The first registration of each object stays (C reads them without a lock).");

static PyObject *register_objects(PyObject *module, PyObject *args, PyObject *kwargs)
{
    nx_state *st = nx_get_state(module);
    if (PyTuple_GET_SIZE(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "_register() takes keyword arguments only");
        return NULL;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (kwargs != NULL && PyDict_Next(kwargs, &pos, &key, &value)) {
        if (register_one(st, key, value) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef lazy_methods[] = {
    {"_register", (PyCFunction)(void (*)(void))register_objects, METH_VARARGS | METH_KEYWORDS, register__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_lazy_setup(PyObject *module, nx_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, lazy_methods);
}

int nx_check_one_rank(nx_state *st, int nranks)
{
    if (nranks != 1)
        return 0;
    PyObject *fn = nx_lazy(st, NX_LAZY_CHECK_ONE_RANK);
    PyObject *r = fn != NULL ? PyObject_CallNoArgs(fn) : NULL;
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

int nx_lazy_cache_traverse(nx_lazy_cache *c, visitproc visit, void *arg)
{
    for (int i = 0; i < NX_NLAZY; i++)
        Py_VISIT(c->obj[i]);
    return 0;
}

void nx_lazy_cache_clear(nx_lazy_cache *c)
{
    for (int i = 0; i < NX_NLAZY; i++)
        Py_CLEAR(c->obj[i]);
}
