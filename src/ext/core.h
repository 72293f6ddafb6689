/* The C side of nccl.core (API.md section 5): the Communicator type, buffer and stream resolution,
 * and the communicator-owned resources. Shared declarations of communicator.c, collectives.c,
 * buffer.c, stream.c, resources.c and lazy.c. */
#ifndef NCCL4PY_CORE_H
#define NCCL4PY_CORE_H

#include "bindings.h"

#include <stdint.h>

/* ---- Python-level objects the core uses (nx_lazy_kind in module.h), imported on first use ----
 * They live in Python modules (enums, dataclasses, cuda.core) that import nccl._ext themselves, so
 * they cannot be fetched at exec time. */

/* A borrowed reference to the object, importing its module on first use; NULL with an exception. */
PyObject *nx_lazy(nx_state *st, nx_lazy_kind kind);

/* Raises nccl.core.NcclInvalid with a printf-style message (PyUnicode_FromFormat). Returns NULL. */
NX_COLD PyObject *nx_invalid(nx_state *st, const char *fmt, ...);

/* ---- datatypes ---- */
/* Element size in bytes of a valid ncclDataType_t; 0 for anything else. */
size_t nx_dtype_size(ncclDataType_t dt);
/* The NcclDataType member name ("FLOAT32"), for messages; "<invalid>" for anything else. */
const char *nx_dtype_name(ncclDataType_t dt);

/* ---- buffers (buffer.c) ---- */
#define NX_DEVICE_HOST (-1) /* nx_buffer.device of host memory (pinned/managed memory carries the
                            * device its producer reports) */

typedef struct {
    void *ptr;            /* first element */
    size_t count;         /* elements of dtype */
    ncclDataType_t dtype;
    int device;           /* device ordinal, or NX_DEVICE_HOST */
    int readonly;         /* the producer marked the memory read-only */
} nx_buffer;

/* Resolves an array object to a dense buffer per API.md section 5.5: fast paths (numpy, torch and
 * cupy when already imported), cuda.core Buffer, DLPack, __cuda_array_interface__, then (host
 * flavour only) the buffer protocol. `name` is the parameter name used in every message
 * ("sendbuf", ...). Checks layout and dtype; not the device (the communicator does that) and not
 * writability (the caller asks for it with nx_buffer_writable). 0, or -1 with NcclInvalid set. */
int nx_resolve_buffer(nx_state *st, PyObject *obj, const char *name, nx_buffer *out);

/* A numpy-style dtype (name, kind, itemsize) as a datatype per API.md section 5.3: the ml_dtypes
 * names first, then kind and itemsize (bool is UINT8); -1 if it has no NCCL equivalent. */
int nx_numpy_kind_dtype(const char *dname, int kind, Py_ssize_t itemsize);

/* NcclInvalid("<name> is read-only") when b is read-only. */
int nx_buffer_writable(nx_state *st, const nx_buffer *b, const char *name);

/* ---- streams (stream.c) ---- */
/* A stream spec (API.md section 5.6) to the handle passed to the library. 0, or -1 with
 * NcclInvalid. */
int nx_resolve_stream(nx_state *st, PyObject *obj, cudaStream_t *out);

/* ---- Communicator (communicator.c) ---- */
typedef struct {
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
} nx_Communicator;

#define NX_DEVICE_UNKNOWN (-2)

/* The communicator handle (NULL for a null or destroyed one). A volatile read: a nonblocking
 * creation may fill the slot from another thread. */
static inline ncclComm_t nx_comm_handle(const nx_Communicator *c) { return *(ncclComm_t volatile *)c->slot; }

/* The handle, or NULL with NcclInvalid("Cannot <op>: Communicator not initialized"). */
ncclComm_t nx_comm_require(nx_state *st, nx_Communicator *c, const char *op);
/* Cached queries; 0 or -1 with an exception (NcclInvalid naming `op` for a null communicator). */
int nx_comm_nranks(nx_state *st, nx_Communicator *c, const char *op, int *out);
int nx_comm_rank(nx_state *st, nx_Communicator *c, const char *op, int *out);
/* Checks that b lives where the communicator computes: on the host flavour host memory always
 * matches (and device memory never does); on a GPU flavour b.device must equal the
 * communicator's device. 0, or -1 with the NcclInvalid of API.md section 5.5. */
int nx_comm_check_device(nx_state *st, nx_Communicator *c, const nx_buffer *b, const char *name);
/* Adds a resource to the communicator's tracked list (closed by destroy/abort/close_all_resources). */
int nx_comm_track(nx_Communicator *c, PyObject *resource);
/* Nonzero when o is a Communicator (or a subclass instance). */
int nx_is_communicator(nx_state *st, PyObject *o);

/* Methods of Communicator defined in other files. All are METH_METHOD | METH_FASTCALL |
 * METH_KEYWORDS, so the module state comes from the defining class without a lookup. */
#define NX_COMM_METHOD_ARGS PyObject *self, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames
#define NX_COMM_STATE(cls) ((nx_state *)PyType_GetModuleState(cls))
#define NX_COMM_METHOD_DEF(pyname, fn, doc) \
    {pyname, (PyCFunction)(void (*)(void))fn, METH_METHOD | METH_FASTCALL | METH_KEYWORDS, doc}

/* collectives.c: allreduce, reduce, broadcast, allgather, gather, reduce_scatter, alltoall,
 * scatter, send, recv, signal, wait_signal, put_signal, allreduce_with_bias, alltoallv. */
extern PyMethodDef nx_collective_methods[];
/* resources.c: register_buffer, register_window, create_pre_mul_sum, create_dev_comm. */
extern PyMethodDef nx_resource_methods[];

/* ---- resources (resources.c) ---- */
/* The reduction operator argument of a collective: an NcclRedOp/int, or a CustomRedOp that must be
 * open, belong to comm and have dtype `dt`. 0, or -1 with NcclInvalid/TypeError. */
int nx_comm_redop(nx_state *st, nx_Communicator *comm, PyObject *op, ncclDataType_t dt, ncclRedOp_t *out);
/* Closes one tracked resource as destroy()/abort() do (errors swallowed). */
void nx_resource_close_quietly(PyObject *resource);

/* ---- setup (called from module.c, in this order) ---- */
int nx_buffer_setup(PyObject *module, nx_state *st);
int nx_stream_setup(PyObject *module, nx_state *st);
int nx_resources_setup(PyObject *module, nx_state *st);
int nx_communicator_setup(PyObject *module, nx_state *st);

#endif
