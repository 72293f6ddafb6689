/* The module state of nccl._ext whole: the types (module/module.h), then each file's cache. Only
 * module/module.c (traverse, clear) and the owner of a cache include this header; every other
 * file passes nx_state pointers without looking inside. */
#ifndef NCCL4PY_STATE_H
#define NCCL4PY_STATE_H

#include "module/module.h"

#include <stddef.h>

#include "buffer/buffer.h"
#include "buffer/stream.h"
#include "core/coll_config.h"
#include "module/errors.h"
#include "module/lazy.h"
#include "structs/handles.h"
#include "structs/structs.h"

struct nx_state {
    nx_types types;                   /* first: module.h's nx_types_of */
    nx_errors_cache errors;           /* module/errors.c */
    nx_handles_cache handles;         /* structs/handles.c */
    nx_lazy_cache lazy;               /* module/lazy.c */
    nx_structs_cache structs;         /* structs/structs.c */
    nx_buffer_cache buffer;           /* buffer/buffer.c */
    nx_stream_cache stream;           /* buffer/stream.c */
    nx_coll_config_cache coll_config; /* core/coll_config.c */
};

_Static_assert(offsetof(struct nx_state, types) == 0, "nx_types_of reads the types at the state's start");

#endif
