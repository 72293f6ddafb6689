/* One call on a communicator (core.h; docs/architecture.md#callbacks-into-python): a method's
 * conversion of its arguments, which runs Python code, then the handle read once nothing else
 * will; the objects that pin the buffers' memory kept until the call returns (and, inside a
 * group, until the group ends); destroy()/abort() refused meanwhile. */
#include "core/core.h"

/* Calls converting their arguments on this thread: a cuda.core shim Buffer refuses close() while
 * it is not 0 (the call may have resolved that Buffer's memory already). */
static _Thread_local int thread_converting;

static void conversion_ends(nx_call *k)
{
    if (!k->converting)
        return;
    k->converting = 0;
    thread_converting--;
    __atomic_sub_fetch(&k->c->converting, 1, __ATOMIC_ACQ_REL);
}

int nx_call_begin(nx_call *k, const char *op)
{
    k->op = op;
    if (nx_comm_require(k->c, op) == NULL)
        return -1;
    __atomic_store_n(&k->c->converting_op, op, __ATOMIC_RELAXED);
    __atomic_add_fetch(&k->c->converting, 1, __ATOMIC_ACQ_REL);
    thread_converting++;
    k->converting = 1;
    return 0;
}

ncclComm_t nx_call_ready(nx_call *k)
{
    conversion_ends(k);
    return nx_comm_require(k->c, k->op);
}

int nx_call_keep(nx_call *k, PyObject *o)
{
    if (o == NULL)
        return 0;
    if (k->nkeep == NX_CALL_KEEP) {
        Py_DECREF(o);
        PyErr_Format(PyExc_SystemError, "%s(): more than %d objects to keep", k->op, NX_CALL_KEEP);
        return -1;
    }
    k->keep[k->nkeep++] = o;
    return 0;
}

int nx_call_buffer(nx_call *k, PyObject *o, const char *name, nx_buffer *out)
{
    if (NX_UNLIKELY(nx_resolve_buffer(k->st, o, name, out) < 0))
        return -1;
    PyObject *pin = out->keep;
    out->keep = NULL;
    /* Inside a group the library uses the memory at the outermost group end, not now. */
    if (NX_UNLIKELY(nx_group_depth() > 0) &&
        (nx_group_keep(o) < 0 || (pin != NULL && nx_group_keep(pin) < 0))) {
        Py_XDECREF(pin);
        return -1;
    }
    return nx_call_keep(k, pin);
}

PyObject *nx_comm_call(nx_call_body body, PyObject *self, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    nx_call k = {.st = NX_COMM_STATE(cls), .c = (nx_Communicator *)self, .op = "call"};
    PyObject *r = body(&k, args, nargs, kwnames);
    conversion_ends(&k);
    if (k.nkeep > 0) {
        /* releasing an export or a capsule may run the producer's code: not with our error pending */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        for (int i = k.nkeep; i-- > 0;)
            Py_DECREF(k.keep[i]);
        PyErr_Restore(et, ev, tb);
    }
    return r;
}

int nx_call_refuse_while_converting(nx_state *st, nx_Communicator *c, const char *what)
{
    if (NX_LIKELY(__atomic_load_n(&c->converting, __ATOMIC_ACQUIRE) == 0))
        return 0;
    const char *op = __atomic_load_n(&c->converting_op, __ATOMIC_RELAXED);
    nx_invalid(st, "Cannot %s: the communicator is in use by %s(), which is still converting its arguments; "
               "%s it after that call returns", what, op ? op : "a call", what);
    return -1;
}

PyDoc_STRVAR(converting_arguments__doc__, "_converting_arguments()\n--\n\n"
"True while a Communicator call on this thread is converting its arguments (its callbacks are\n"
"running): the cuda.core shim's Buffer.close() refuses then (docs/architecture.md).");
static PyObject *converting_arguments(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(thread_converting > 0);
}

static PyMethodDef call_functions[] = {
    {"_converting_arguments", converting_arguments, METH_NOARGS, converting_arguments__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_call_setup(PyObject *module) { return PyModule_AddFunctions(module, call_functions); }
