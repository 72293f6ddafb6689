/* This thread's open NCCL groups, which both APIs' group calls keep (group_depth.c), and the
 * objects they keep alive until the outermost end (group_refs.c). */
#ifndef NCCL4PY_GROUP_H
#define NCCL4PY_GROUP_H

#include "module/common.h"

#include <stdint.h>

/* Groups open on this thread (ncclGroupStart calls not yet ended). */
int nx_group_depth(void);
/* The id of this thread's open outermost group (a count of this thread's outermost group starts,
 * from 1), or 0 outside a group: the flight recorder's "group" (docs/api/trace.md). */
uint32_t nx_group_current(void);
/* Whether any thread of the process has a group open (one load: the flight recorder asks it on
 * every call before the per-thread nx_group_current). */
extern int nx_groups_open_count;
static inline int nx_groups_open(void) { return __atomic_load_n(&nx_groups_open_count, __ATOMIC_RELAXED) != 0; }
/* After a successful ncclGroupStart. */
void nx_group_enter(void);
/* After every ncclGroupEnd/ncclGroupSimulateEnd that ran, failed or not (the library closes the
 * group); the outermost one drops what the group kept. */
void nx_group_leave(void);

/* Keeps o alive until the outermost group end of this thread; call only while a group is open.
 * -1 with an exception set on failure. */
int nx_group_keep(PyObject *o);
/* Drops what nx_group_keep kept (the outermost group end, after the library call). */
void nx_group_release(void);

/* Adds nccl._ext._group_depth (the tests read this thread's depth). */
int nx_group_setup(PyObject *module);

#endif
