/* Array object -> nx_buffer resolution (API.md section 5.5). Skeleton: being written. */
#include "core.h"

int nx_resolve_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out)
{
    (void)out;
    nx_invalid(st, "%s: unsupported buffer type %s", name, Py_TYPE(obj)->tp_name);
    return -1;
}

int nx_buffer_writable(nx_state *st, const nx_buffer *b, const char *name)
{
    if (b->readonly) {
        nx_invalid(st, "%s is read-only", name);
        return -1;
    }
    return 0;
}

int nx_buffer_setup(PyObject *module, nx_state *st)
{
    (void)module;
    (void)st;
    return 0;
}
