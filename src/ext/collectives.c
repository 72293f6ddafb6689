/* Collective and point-to-point methods of Communicator (API.md sections 5.9.3, 5.9.4).
 * Skeleton: being written. */
#include "core.h"

PyMethodDef nx_collective_methods[] = {
    {NULL, NULL, 0, NULL},
};
