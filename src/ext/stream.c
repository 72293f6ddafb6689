/* Stream spec -> library stream handle (API.md section 5.6). Skeleton: being written. */
#include "core.h"

int nx_resolve_stream(nx_state *st, PyObject *obj, cudaStream_t *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = NULL;
        return 0;
    }
    nx_invalid(st, "stream must be None");
    return -1;
}

int nx_stream_setup(PyObject *module, nx_state *st)
{
    (void)module;
    (void)st;
    return 0;
}
