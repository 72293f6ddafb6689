/* Buffers named inside a group live until the outermost group end.
 *
 * Between ncclGroupStart and ncclGroupEnd the library only records a call's pointers; the data
 * moves at the outermost ncclGroupEnd (the host backend runs the work there). A temporary passed
 * to comm.send() inside a group would be freed before then, and the send would read freed
 * memory. So every buffer object a nccl.core call resolves while a group is open on this thread
 * is kept in this thread's list, which the outermost group end (bindings.c) drops after the
 * library call returned. Outside a group nothing is recorded: the caller checks the group depth
 * first. The list is per thread, like the group itself, and per interpreter: it lives in the
 * thread state's dict (PyThreadState_GetDict), which each interpreter has for each of its threads,
 * so no object crosses interpreters, and a thread that exits with a group open frees it. */
#include "group/group.h"

/* The list's key in the thread state's dict. */
static const char key_text[] = "nccl4py: buffers of the open group";

int nx_group_keep(PyObject *o)
{
    PyObject *d = PyThreadState_GetDict(); /* borrowed */
    PyObject *key = PyUnicode_InternFromString(key_text);
    PyObject *list = NULL;
    int r = -1;
    if (d == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "no thread state dict to keep a grouped call's buffers in");
        goto done;
    }
    if (key == NULL)
        goto done;
    list = Py_XNewRef(PyDict_GetItemWithError(d, key));
    if (list == NULL && !PyErr_Occurred() && (list = PyList_New(0)) != NULL && PyDict_SetItem(d, key, list) < 0)
        Py_CLEAR(list);
    if (list != NULL)
        r = PyList_Append(list, o);
done:
    Py_XDECREF(list);
    Py_XDECREF(key);
    return r;
}

void nx_group_release(void)
{
    PyObject *d = PyThreadState_GetDict(); /* borrowed */
    PyObject *key = d != NULL ? PyUnicode_InternFromString(key_text) : NULL;
    PyObject *list = key != NULL ? Py_XNewRef(PyDict_GetItemWithError(d, key)) : NULL;
    /* Out of the dict before the decref: a finalizer may open and close a group of its own. */
    if (list != NULL && PyDict_DelItem(d, key) < 0)
        PyErr_WriteUnraisable(NULL);
    else if (list == NULL && PyErr_Occurred())
        PyErr_WriteUnraisable(NULL);
    Py_XDECREF(list);
    Py_XDECREF(key);
}
