/* nccl.core.Communicator (API.md section 5.9). Skeleton: being written. */
#include "core.h"

ncclComm_t nx_comm_require(nx_state *st, nx_Communicator *c, const char *op)
{
    ncclComm_t h = nx_comm_handle(c);
    if (h == NULL)
        nx_invalid(st, "Cannot %s: Communicator not initialized", op);
    return h;
}

int nx_communicator_setup(PyObject *module, nx_state *st)
{
    (void)module;
    (void)st;
    return 0;
}
