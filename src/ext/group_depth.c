/* Open groups on this thread (nccl.core's register_window and the buffer keeping ask). Counted
 * where every group call of both APIs passes (bindings_collectives.c's group_start, group_end and
 * group_simulate_end); per thread, like the group itself. */
#include "group.h"

static _Thread_local int group_depth;

int nx_group_depth(void) { return group_depth; }

void nx_group_enter(void) { group_depth++; }

void nx_group_leave(void)
{
    if (group_depth > 0)
        group_depth--;
    if (group_depth == 0)
        nx_group_release(); /* the group's work has run: its buffers may go */
}
