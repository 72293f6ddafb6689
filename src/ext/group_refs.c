/* Buffers named inside a group live until the outermost group end.
 *
 * Between ncclGroupStart and ncclGroupEnd the library only records a call's pointers; the data
 * moves at the outermost ncclGroupEnd (the host backend runs the work there). A temporary passed
 * to comm.send() inside a group would be freed before then, and the send would read freed
 * memory. So every buffer object a nccl.core call resolves while a group is open on this thread
 * is kept in this thread's list, which the outermost group end (bindings.c) drops after the
 * library call returned. Outside a group nothing is recorded: the caller checks the group depth
 * first. The list is per thread, like the group itself. */
#include "core.h"

static _Thread_local PyObject *kept; /* a list, created at the first buffer of a group */

int nx_group_keep(PyObject *o)
{
    if (kept == NULL && (kept = PyList_New(0)) == NULL)
        return -1;
    return PyList_Append(kept, o);
}

void nx_group_release(void)
{
    PyObject *list = kept;
    kept = NULL; /* before the decref: a finalizer may open and close a group of its own */
    Py_XDECREF(list);
}
