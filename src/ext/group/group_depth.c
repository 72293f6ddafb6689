/* Open groups on this thread (nccl.core's register_window and the buffer keeping ask). Counted
 * where every group call of both APIs passes (bindings/bindings_groups.c's group_start, group_end
 * and group_simulate_end); per thread, like the group itself. */
#include "group/group.h"

static _Thread_local int group_depth;
static _Thread_local uint32_t group_serial, group_id;

int nx_group_depth(void) { return group_depth; }

int nx_groups_open_count;

uint32_t nx_group_current(void) { return group_depth > 0 ? group_id : 0; }

void nx_group_enter(void)
{
    if (group_depth++ == 0) {
        group_id = ++group_serial;
        __atomic_add_fetch(&nx_groups_open_count, 1, __ATOMIC_RELAXED);
    }
}

void nx_group_leave(void)
{
    if (group_depth > 0 && --group_depth == 0)
        __atomic_sub_fetch(&nx_groups_open_count, 1, __ATOMIC_RELAXED);
    if (group_depth == 0)
        nx_group_release(); /* the group's work has run: its buffers may go */
}

PyDoc_STRVAR(group_depth_py__doc__, "_group_depth()\n--\n\nNumber of groups open on this thread.");
static PyObject *group_depth_py(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromLong(nx_group_depth());
}

static PyMethodDef group_methods[] = {
    {"_group_depth", group_depth_py, METH_NOARGS, group_depth_py__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_group_setup(PyObject *module) { return PyModule_AddFunctions(module, group_methods); }
