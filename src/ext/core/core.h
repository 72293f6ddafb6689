/* The C side of nccl.core (docs/compatibility.md#ncclcore): the Communicator type and the declarations its files
 * share (communicator.c, communicator_create.c, collectives.c, resources.c, redop.c). Buffer and
 * stream resolution (buffer.h, stream.h) and the lazy Python objects (lazy.h) come in through the
 * includes below. */
#ifndef NCCL4PY_CORE_H
#define NCCL4PY_CORE_H

#include "module/common.h"

#include <stdint.h>

#include "buffer/buffer.h"
#include "buffer/stream.h"
#include "group/group.h"
#include "loader/library.h"
#include "module/convert.h"
#include "module/errors.h"
#include "module/lazy.h"
#include "module/module.h"
#include "trace/trace.h"

/* ---- Communicator (communicator.c) ---- */
struct nx_Communicator {
    PyObject_HEAD
    PyObject *box;        /* the PointerBox whose slot holds the ncclComm_t */
    void **slot;          /* &box->slot: where creation calls write, read on every call */
    int nranks;           /* cached; -1 until first queried */
    int rank;             /* cached; -1 until first queried */
    int device_id;        /* cached ncclCommCuDevice; NX_DEVICE_UNKNOWN until first queried */
    PyObject *device;     /* cached cuda.core Device, or NULL */
    PyObject *props;      /* cached bindings CommProperties, or NULL */
    PyObject *resources;  /* list of the tracked resources (CommResource instances) */
    PyObject *children;   /* split/shrink children kept alive while creation is in progress */
    PyObject *weakrefs;
    nx_trace_ring *trace; /* the flight recorder's ring (a reference), or NULL */
    int trace_bound;      /* trace is settled for the current handle (nx_comm_trace) */
    int why_null;         /* why the handle is NULL, for the message: an nx_why_null */
    int converting;       /* calls converting their arguments now (nx_call_begin); atomic */
    const char *converting_op; /* the latest of them, for the refusal's message */
};

/* Why a communicator has no handle: never created, or what ended it (nx_comm_require's message). */
typedef enum { NX_NULL_NEVER, NX_NULL_DESTROYED, NX_NULL_ABORTED, NX_NULL_NOCOLOR } nx_why_null;

#define NX_DEVICE_UNKNOWN (-2)

/* The communicator handle (NULL for a null or destroyed one). An atomic load: a nonblocking
 * creation may fill the slot from another thread, and destroy/abort empties it with an atomic
 * exchange (communicator.c). */
static inline ncclComm_t nx_comm_handle(const nx_Communicator *c)
{
    return __atomic_load_n((ncclComm_t *)c->slot, __ATOMIC_ACQUIRE);
}

/* The handle, or NULL with NCCLNullHandleError (an NcclInvalid) "Cannot <op>: Communicator not
 * initialized", followed by why (destroyed, aborted, left out of a split) and what to do. */
ncclComm_t nx_comm_require(nx_Communicator *c, const char *op);
/* Cached queries; 0 or -1 with an exception (NcclInvalid naming `op` for a null communicator). */
int nx_comm_nranks(nx_state *st, nx_Communicator *c, const char *op, int *out);
int nx_comm_rank(nx_state *st, nx_Communicator *c, const char *op, int *out);
/* Checks that b lives where the communicator computes: on the host flavour host memory always
 * matches (and device memory never does); on a GPU flavour b.device must equal the
 * communicator's device. 0, or -1 with the NcclInvalid of docs/architecture.md#buffer-resolution. */
int nx_comm_check_device(nx_state *st, nx_Communicator *c, const nx_buffer *b, const char *name);
/* Adds a resource to the communicator's tracked list (closed by destroy/abort/close_all_resources). */
int nx_comm_track(nx_Communicator *c, PyObject *resource);
/* The tracked list as a new reference (NULL, no exception, once the collector cleared it). */
PyObject *nx_comm_resources(nx_Communicator *c);
/* Keeps a split/shrink child alive while its creation is in progress (released by
 * get_async_error once it is not, and by teardown). 0, or -1 with an exception. */
int nx_comm_keep_child(nx_Communicator *c, PyObject *child);
/* Nonzero when o is a Communicator (or a subclass instance). */
int nx_is_communicator(nx_state *st, PyObject *o);
/* A new, null communicator of Python class tp (subclasses keep their class). */
nx_Communicator *nx_comm_new(nx_state *st, PyTypeObject *tp);
/* Forgets the cached rank, size, device and properties (after the handle changed). */
void nx_comm_reset_caches(nx_Communicator *c);

/* The flight recorder's ring for a call on c with handle h (docs/api/trace.md), or NULL: not
 * recorded. The first call that sees the handle settles it (nx_comm_trace_settle): c's own ring
 * is bound to h; a communicator wrapped with Communicator(ptr) takes the ring of the handle if
 * nccl4py created it through the bindings. Later calls read two fields. */
nx_trace_ring *nx_comm_trace_settle(nx_Communicator *c, ncclComm_t h);
static inline nx_trace_ring *nx_comm_trace(nx_Communicator *c, ncclComm_t h)
{
    if (NX_LIKELY(__atomic_load_n(&c->trace_bound, __ATOMIC_ACQUIRE)))
        return c->trace;
    return nx_comm_trace_settle(c, h);
}
/* Gives c the ring r (a new reference; NULL: not recorded) for the handle being created, dropping
 * the one it had. */
void nx_comm_set_trace(nx_Communicator *c, nx_trace_ring *r);

/* ---- one call on a communicator (communicator.c; docs/architecture.md#callbacks-into-python) ----
 * A method converts its arguments before its library call, and converting runs Python code
 * (__index__, properties, __cuda_stream__, __dlpack__, buffer exports, finalizers of objects
 * collected meanwhile). While a call converts, its communicator refuses destroy() and abort()
 * (NcclInvalid naming the call), and so does this thread's close() of a cuda.core shim Buffer
 * (nccl._ext._converting_arguments). The handle is read by nx_call_ready, once every argument is
 * converted; no Python code runs from there to the library call. What pins the memory of the
 * buffers the call resolved (buffer-protocol exports, DLPack capsules) is kept until the call
 * returns (nx_call_keep). */
#define NX_CALL_KEEP 4
typedef struct {
    nx_state *st;
    nx_Communicator *c;
    const char *op;   /* "allreduce", "get mem stat": the verb of "Cannot <op>: ..." */
    int converting;   /* holds c->converting and this thread's count, until nx_call_ready */
    int nkeep;
    PyObject *keep[NX_CALL_KEEP];
} nx_call;

/* The communicator must be open ("Cannot <op>: Communicator not initialized"); then the
 * conversion starts. 0, or -1 with the exception. */
int nx_call_begin(nx_call *k, const char *op);
/* The conversion ends: the handle, read now, or NULL with NCCLNullHandleError (another thread
 * tore the communicator down meanwhile). */
ncclComm_t nx_call_ready(nx_call *k);
/* Keeps o (a reference the call takes over; NULL is nothing) until the call returns. 0 or -1. */
int nx_call_keep(nx_call *k, PyObject *o);
/* Resolves a buffer argument (nx_resolve_buffer) and keeps what pins its memory, for this call
 * and, inside a group, until the group ends. 0, or -1 with the exception. */
int nx_call_buffer(nx_call *k, PyObject *o, const char *name, nx_buffer *out);

/* destroy()/abort() (`what`) of a communicator whose call is converting its arguments (from one of
 * that call's callbacks, or from another thread meanwhile): refused, since that call reads the
 * handle next. -1 with NcclInvalid, or 0. */
int nx_call_refuse_while_converting(nx_state *st, nx_Communicator *c, const char *what);
/* Adds nccl._ext._converting_arguments (the cuda.core shim's Buffer.close() asks it). */
int nx_call_setup(PyObject *module);

/* A method body: what it returns is the method's result, once nx_comm_call ended the call
 * (the conversion, if still open, and the kept objects). */
typedef PyObject *(*nx_call_body)(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *nx_comm_call(nx_call_body body, PyObject *self, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames);

/* Methods of Communicator defined in other files. All are METH_METHOD | METH_FASTCALL |
 * METH_KEYWORDS, so the module state comes from the defining class without a lookup. */
#define NX_COMM_METHOD_ARGS PyObject *self, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames
/* The arguments of a method, passed on as they came (to nx_comm_call). */
#define NX_COMM_METHOD_PASS self, cls, args, nargs, kwnames
#define NX_COMM_STATE(cls) ((nx_state *)PyType_GetModuleState(cls))
#define NX_COMM_METHOD_DEF(pyname, fn, doc) \
    {pyname, (PyCFunction)(void (*)(void))fn, METH_METHOD | METH_FASTCALL | METH_KEYWORDS, doc}

/* communicator_create.c: init, init_all (class methods), initialize, split, shrink, grow,
 * get_unique_id. */
extern PyMethodDef nx_comm_create_methods[];
/* collectives.c: allreduce, reduce, broadcast, allgather, gather, reduce_scatter, alltoall,
 * scatter, send, recv, signal, wait_signal, put_signal, allreduce_with_bias, alltoallv. */
extern PyMethodDef nx_collective_methods[];
/* resources.c: register_buffer, register_window. */
extern PyMethodDef nx_resource_methods[];
/* redop.c: create_pre_mul_sum. */
extern PyMethodDef nx_redop_methods[];
/* devcomm.c: create_dev_comm. */
extern PyMethodDef nx_devcomm_methods[];

/* ---- resources (resources.h: resources.c, redop.c) ---- */
/* The reduction operator argument of a collective: an NcclRedOp/int, or a CustomRedOp that must be
 * open, belong to comm and have dtype `dt`. 0, or -1 with NcclInvalid/TypeError. */
int nx_comm_redop(nx_state *st, nx_Communicator *comm, PyObject *op, ncclDataType_t dt, ncclRedOp_t *out);
/* Closes one tracked resource as destroy()/abort() do (errors swallowed). */
void nx_resource_close_quietly(PyObject *resource);

/* ---- setup (called from module.c, in this order) ---- */
int nx_buffer_setup(PyObject *module, nx_state *st);
int nx_ncclbuffer_setup(PyObject *module, nx_state *st);
int nx_stream_setup(PyObject *module, nx_state *st);
int nx_resources_setup(PyObject *module, nx_state *st);
int nx_redop_setup(PyObject *module, nx_state *st);
int nx_devcomm_setup(PyObject *module, nx_state *st);
int nx_communicator_setup(PyObject *module, nx_state *st);

#endif
