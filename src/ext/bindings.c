/* nccl.bindings.nccl: one function per NCCL host entry point (API.md section 3.3), with
 * upstream 0.3.1's names and argument conventions, plus the 0.2.0 forms of section 3.4 chosen by
 * argument count. Order of checks in every function: arity, then the library load, then the
 * symbol, then argument conversion, then the call with the GIL released. */
#include "bindings.h"

#include <stdint.h>
#include <string.h>

#include "structs.h"

/* ---- argument helpers shared with rocm_extensions.c ---- */

int nx_is_address(PyObject *o)
{
    /* numpy arrays have __index__ too (for size-1 integer arrays): anything that is also a buffer
     * or a sequence is data, not an address. */
    return PyLong_Check(o) || (PyIndex_Check(o) && !PyObject_CheckBuffer(o) && !PySequence_Check(o));
}

static NX_COLD int bad_bytes_arg(const char *fname, const char *argname, size_t size)
{
    PyErr_Format(PyExc_ValueError,
                 "%s() argument '%s': buf must be either a Python int representing the pointer address to a "
                 "valid buffer, or a 1D contiguous buffer, of size bytes (%zu bytes expected)",
                 fname, argname, size);
    return -1;
}

int nx_read_bytes_arg(PyObject *o, const char *fname, const char *argname, void *out, size_t size)
{
    if (nx_is_address(o)) {
        intptr_t p;
        if (nx_intptr(o, fname, argname, &p) < 0)
            return -1;
        if (p == 0) {
            PyErr_Format(PyExc_ValueError, "%s() argument '%s' must not be a null pointer", fname, argname);
            return -1;
        }
        memcpy(out, (const void *)p, size);
        return 0;
    }
    Py_buffer view;
    if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, &view, PyBUF_ND) < 0) {
        PyErr_Clear();
        return bad_bytes_arg(fname, argname, size);
    }
    int ok = view.ndim <= 1 && PyBuffer_IsContiguous(&view, 'C') && view.len == (Py_ssize_t)size;
    if (ok)
        memcpy(out, view.buf, size);
    PyBuffer_Release(&view);
    return ok ? 0 : bad_bytes_arg(fname, argname, size);
}

/* nx_read_bytes_arg into new PyMem storage (*out, which the caller frees), allocated only once a
 * buffer argument is known to hold exactly size bytes: a wrong-length buffer is a ValueError
 * naming the argument, whatever size it claims (never a MemoryError first). */
static int read_bytes_alloc(PyObject *o, const char *fname, const char *argname, size_t size, void **out)
{
    *out = NULL;
    if (!nx_is_address(o)) {
        Py_buffer view;
        if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, &view, PyBUF_ND) < 0) {
            PyErr_Clear();
            return bad_bytes_arg(fname, argname, size);
        }
        int ok = view.ndim <= 1 && PyBuffer_IsContiguous(&view, 'C') && (size_t)view.len == size;
        PyBuffer_Release(&view);
        if (!ok)
            return bad_bytes_arg(fname, argname, size);
    }
    if ((*out = PyMem_Malloc(size > 0 ? size : 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (nx_read_bytes_arg(o, fname, argname, *out, size) < 0) {
        PyMem_Free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int nx_size_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t n, const size_t **out,
                      size_t **copy)
{
    *copy = NULL;
    if (nx_is_address(o)) {
        intptr_t p;
        if (nx_intptr(o, fname, argname, &p) < 0)
            return -1;
        *out = (const size_t *)p;
        return 0;
    }
    if ((*copy = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof(size_t))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_buffer view;
    if (PyObject_CheckBuffer(o) && PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        int ok = view.ndim == 1 && view.itemsize == 8 && view.format != NULL && strchr("QLK", view.format[0]);
        Py_ssize_t m = view.itemsize ? view.len / view.itemsize : 0;
        if (ok && m == n)
            memcpy(*copy, view.buf, (size_t)n * sizeof(size_t));
        PyBuffer_Release(&view);
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "%s must be a 1-D C-contiguous uint64 buffer or a sequence of ints", argname);
            goto error;
        }
        if (m != n) {
            PyErr_Format(PyExc_ValueError, "%s must have nranks=%zd entries, got %zd", argname, n, m);
            goto error;
        }
        *out = *copy;
        return 0;
    }
    PyErr_Clear();
    PyObject *seq = PySequence_Fast(o, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be an int address, a sequence of ints or a uint64 buffer, "
                     "not %.200s", fname, argname, Py_TYPE(o)->tp_name);
        goto error;
    }
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    if (m != n) {
        PyErr_Format(PyExc_ValueError, "%s must have nranks=%zd entries, got %zd", argname, n, m);
        Py_DECREF(seq);
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (nx_size(PySequence_Fast_GET_ITEM(seq, i), fname, argname, &(*copy)[i]) < 0) {
            Py_DECREF(seq);
            goto error;
        }
    Py_DECREF(seq);
    *out = *copy;
    return 0;
error:
    PyMem_Free(*copy);
    *copy = NULL;
    return -1;
}

/* An int[] given as an int address or a sequence of ints (copied; at least `count` entries);
 * None gives NULL when allow_none. */
static int int_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t count, int allow_none,
                         int **out, int **copy)
{
    *copy = NULL;
    if (o == Py_None && allow_none) {
        *out = NULL;
        return 0;
    }
    if (nx_is_address(o)) {
        intptr_t p;
        if (nx_intptr(o, fname, argname, &p) < 0)
            return -1;
        *out = (int *)p;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a sequence of ints or an int address, not %.200s",
                     fname, argname, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    int rc = -1;
    if (m < count) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' has %zd entries, fewer than the count %zd", fname,
                     argname, m, count);
        goto done;
    }
    if ((*copy = PyMem_Calloc(m > 0 ? (size_t)m : 1, sizeof(int))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        if (nx_int(PySequence_Fast_GET_ITEM(seq, i), fname, argname, &(*copy)[i]) < 0) {
            PyMem_Free(*copy);
            *copy = NULL;
            goto done;
        }
    *out = *copy;
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

/* A function with two forms told apart by the total argument count: n03 arguments (0.3.1, sig
 * s03) or n02 (0.2.0, sig s02, which may be s03 itself when the names are shared). Returns the
 * arguments in parameter order and sets *legacy and *S; NULL with TypeError otherwise. `buf` has
 * room for the larger count. */
static PyObject *const *dual_args(const nx_sig *s03, Py_ssize_t n03, const nx_sig *s02, Py_ssize_t n02,
                                  PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **buf,
                                  int *legacy, const nx_sig **S)
{
    Py_ssize_t total = nx_total_args(nargs, kwnames);
    if (total != n03 && total != n02) {
        nx_bad_arity2(s03->fname, n03, n02, total);
        return NULL;
    }
    *legacy = total == n02;
    *S = *legacy ? s02 : s03;
    return nx_args(*S, total, args, nargs, kwnames, buf);
}

/* A wrapper freshly filled by the library, or the exception for a failed call (dropping it). */
static PyObject *struct_result(nx_state *st, PyObject *obj, ncclResult_t rc, ncclComm_t comm)
{
    if (NX_FAILED(rc)) {
        Py_DECREF(obj);
        return nx_raise_status(st, rc, comm);
    }
    return obj;
}

/* ---- memory, version, unique ids ---- */

NX_SIG(mem_alloc, "size");
PyDoc_STRVAR(mem_alloc__doc__, "mem_alloc(size)\n--\n\nncclMemAlloc: allocate size bytes; returns the pointer.");
static PyObject *mem_alloc(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(mem_alloc, 1);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclMemAlloc);
    size_t size;
    if (NX_ARG_SIZE(0, size))
        return NULL;
    void *ptr = NULL;
    NX_CALL(st, NULL, nx_api.ncclMemAlloc(&ptr, size));
    return PyLong_FromVoidPtr(ptr);
}

NX_SIG(mem_free, "ptr");
PyDoc_STRVAR(mem_free__doc__, "mem_free(ptr)\n--\n\nncclMemFree: free memory from mem_alloc.");
static PyObject *mem_free(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(mem_free, 1);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclMemFree);
    intptr_t ptr;
    if (NX_ARG_PTR(0, ptr))
        return NULL;
    NX_CALL(st, NULL, nx_api.ncclMemFree(NX_PTR(ptr)));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(get_version__doc__, "get_version()\n--\n\nncclGetVersion: the library's version code.");
static PyObject *get_version(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclGetVersion);
    int v = 0;
    NX_CALL(st, NULL, nx_api.ncclGetVersion(&v));
    return PyLong_FromLong(v);
}

/* () -> a new struct wrapper the library fills; the 0.2.0 form (out) fills the struct at address
 * out instead and returns None. */
#define STRUCT_OUT(fn, cname, outname, kind, ctype, after, doc)                              \
    static const nx_sig S_##fn = {#fn, (const char *const[]){outname, NULL}};                \
    PyDoc_STRVAR(fn##__doc__, #fn "()\n--\n\n" doc);                                        \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        int legacy;                                                                          \
        const nx_sig *S;                                                                     \
        PyObject *buf[1];                                                                    \
        PyObject *const *a = dual_args(&S_##fn, 0, &S_##fn, 1, args, nargs, kwnames, buf, &legacy, &S); \
        if (a == NULL)                                                                       \
            return NULL;                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        if (legacy) {                                                                        \
            intptr_t out;                                                                    \
            if (NX_ARG_PTR(0, out))                                                          \
                return NULL;                                                                 \
            ncclResult_t rc;                                                                 \
            NX_RUN(rc, nx_api.cname((ctype *)out));                                          \
            after;                                                                           \
            if (NX_FAILED(rc))                                                               \
                return nx_raise_status(st, rc, NULL);                                        \
            Py_RETURN_NONE;                                                                  \
        }                                                                                    \
        PyObject *obj = nx_struct_new(st, kind);                                             \
        if (obj == NULL)                                                                     \
            return NULL;                                                                     \
        ctype *p = nx_struct_storage(st, obj, kind);                                         \
        ncclResult_t rc;                                                                     \
        NX_RUN(rc, nx_api.cname(p));                                                         \
        after;                                                                               \
        return struct_result(st, obj, rc, NULL);                                             \
    }

STRUCT_OUT(get_unique_id, ncclGetUniqueId, "unique_id", NX_STRUCT_UNIQUE_ID, ncclUniqueId, (void)0,
           "ncclGetUniqueId: a new UniqueId. The 0.2.0 form get_unique_id(unique_id) writes to that address.")

/* ---- communicator creation: 0.3.1 form returns the status, 0.2.0 form the new comm ---- */

/* The result of a creation call: the status (0.3.1) or the new handle (0.2.0). */
static PyObject *creation_result(nx_state *st, ncclResult_t rc, int legacy, ncclComm_t newcomm, ncclComm_t comm)
{
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, comm);
    return legacy ? PyLong_FromVoidPtr(newcomm) : PyLong_FromLong((long)rc);
}

static const nx_sig S_comm_init_rank_config = {
    "comm_init_rank_config", (const char *const[]){"comm", "nranks", "comm_id", "rank", "config", NULL}};
static const nx_sig S_comm_init_rank_config_02 = {
    "comm_init_rank_config", (const char *const[]){"nranks", "comm_id", "rank", "config", NULL}};
PyDoc_STRVAR(comm_init_rank_config__doc__, "comm_init_rank_config(comm, nranks, comm_id, rank, config)\n--\n\n"
"ncclCommInitRankConfig into the slot at address comm; returns the status (0, or 7 in progress).\n"
"0.2.0 form comm_init_rank_config(nranks, comm_id, rank, config) returns the new comm.");
static PyObject *comm_init_rank_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[5];
    PyObject *const *a = dual_args(&S_comm_init_rank_config, 5, &S_comm_init_rank_config_02, 4, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommInitRankConfig);
    intptr_t slot = 0, config;
    int nranks, rank, o = legacy ? -1 : 0;
    ncclUniqueId id;
    ncclComm_t newcomm = NULL;
    if ((!legacy && NX_ARG_PTR(0, slot)) || NX_ARG_INT(o + 1, nranks) ||
        nx_read_bytes_arg(a[o + 2], S->fname, S->names[o + 2], &id, sizeof id) < 0 || NX_ARG_INT(o + 3, rank) ||
        NX_ARG_PTR(o + 4, config))
        return NULL;
    ncclComm_t *out = legacy ? &newcomm : (ncclComm_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitRankConfig(out, nranks, id, rank, (ncclConfig_t *)config));
    return creation_result(st, rc, legacy, newcomm, NULL);
}

static const nx_sig S_comm_init_rank = {"comm_init_rank",
                                        (const char *const[]){"comm", "nranks", "comm_id", "rank", NULL}};
static const nx_sig S_comm_init_rank_02 = {"comm_init_rank", (const char *const[]){"nranks", "comm_id", "rank", NULL}};
PyDoc_STRVAR(comm_init_rank__doc__, "comm_init_rank(comm, nranks, comm_id, rank)\n--\n\n"
"ncclCommInitRank into the slot at address comm; returns the status. Collective, blocking.\n"
"0.2.0 form comm_init_rank(nranks, comm_id, rank) returns the new comm.");
static PyObject *comm_init_rank(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[4];
    PyObject *const *a = dual_args(&S_comm_init_rank, 4, &S_comm_init_rank_02, 3, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommInitRank);
    intptr_t slot = 0;
    int nranks, rank, o = legacy ? -1 : 0;
    ncclUniqueId id;
    ncclComm_t newcomm = NULL;
    if ((!legacy && NX_ARG_PTR(0, slot)) || NX_ARG_INT(o + 1, nranks) ||
        nx_read_bytes_arg(a[o + 2], S->fname, S->names[o + 2], &id, sizeof id) < 0 || NX_ARG_INT(o + 3, rank))
        return NULL;
    ncclComm_t *out = legacy ? &newcomm : (ncclComm_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitRank(out, nranks, id, rank));
    return creation_result(st, rc, legacy, newcomm, NULL);
}

NX_SIG(comm_init_all, "ndev", "devlist");
PyDoc_STRVAR(comm_init_all__doc__, "comm_init_all(ndev, devlist)\n--\n\n"
"ncclCommInitAll: ndev communicators in this process; returns array('q') of their handles.\n"
"devlist: a sequence of ints, an int address, or None (devices 0..ndev-1).");
static PyObject *comm_init_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(comm_init_all, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommInitAll);
    PyObject *result = NULL, *array_mod = NULL, *raw = NULL;
    int ndev, *devlist = NULL, *devcopy = NULL;
    ncclComm_t *comms = NULL;
    if (NX_ARG_INT(0, ndev))
        return NULL;
    if (ndev < 0) {
        PyErr_Format(PyExc_ValueError, "comm_init_all() argument 'ndev' must be non-negative, got %d", ndev);
        return NULL;
    }
    if (int_array_arg(a[1], S->fname, S->names[1], ndev, 1, &devlist, &devcopy) < 0)
        return NULL;
    if ((array_mod = PyImport_ImportModule("array")) == NULL)
        goto done;
    if ((comms = PyMem_Calloc(ndev > 0 ? (size_t)ndev : 1, sizeof *comms)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (ndev > 0) {
        ncclResult_t rc;
        NX_RUN(rc, nx_api.ncclCommInitAll(comms, ndev, devlist));
        if (NX_FAILED(rc)) {
            nx_raise_status(st, rc, NULL);
            goto done;
        }
    }
    if ((raw = PyBytes_FromStringAndSize((const char *)comms, (Py_ssize_t)ndev * (Py_ssize_t)sizeof *comms)) == NULL)
        goto done;
    result = PyObject_CallMethod(array_mod, "array", "sO", "q", raw);
done:
    Py_XDECREF(raw);
    Py_XDECREF(array_mod);
    PyMem_Free(comms);
    PyMem_Free(devcopy);
    return result;
}

/* Functions taking only a communicator. */
#define COMM_ONLY(fn, cname, doc)                                                            \
    NX_SIG(fn, "comm");                                                                      \
    PyDoc_STRVAR(fn##__doc__, #fn "(comm)\n--\n\n" doc);                                      \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 1);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t comm;                                                                       \
        if (NX_ARG_PTR(0, comm))                                                             \
            return NULL;                                                                     \
        NX_CALL(st, comm, nx_api.cname((ncclComm_t)comm));                                   \
        Py_RETURN_NONE;                                                                      \
    }

COMM_ONLY(comm_finalize, ncclCommFinalize, "ncclCommFinalize: flush this rank's work. Collective.")
COMM_ONLY(comm_destroy, ncclCommDestroy, "ncclCommDestroy: free the communicator.")
COMM_ONLY(comm_abort, ncclCommAbort, "ncclCommAbort: abort in-flight operations and free the communicator.")
COMM_ONLY(comm_resume, ncclCommResume, "ncclCommResume: resume a suspended communicator.")

/* Functions taking a communicator and one int flag. */
#define COMM_FLAG(fn, cname, flagname, doc)                                                  \
    NX_SIG(fn, "comm", flagname);                                                            \
    PyDoc_STRVAR(fn##__doc__, #fn "(comm, " flagname ")\n--\n\n" doc);                        \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 2);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t comm;                                                                       \
        int flags;                                                                           \
        if (NX_ARG_PTR(0, comm) || NX_ARG_INT(1, flags))                                     \
            return NULL;                                                                     \
        NX_CALL(st, comm, nx_api.cname((ncclComm_t)comm, flags));                            \
        Py_RETURN_NONE;                                                                      \
    }

COMM_FLAG(comm_revoke, ncclCommRevoke, "revoke_flags", "ncclCommRevoke: stop in-flight work, keep resources.")
COMM_FLAG(comm_suspend, ncclCommSuspend, "flags", "ncclCommSuspend: release resources (NCCL_SUSPEND_MEM).")

static const nx_sig S_comm_split = {"comm_split",
                                    (const char *const[]){"comm", "color", "key", "newcomm", "config", NULL}};
static const nx_sig S_comm_split_02 = {"comm_split", (const char *const[]){"comm", "color", "key", "config", NULL}};
PyDoc_STRVAR(comm_split__doc__, "comm_split(comm, color, key, newcomm, config)\n--\n\n"
"ncclCommSplit into the slot at address newcomm; returns the status. Collective over comm.\n"
"0.2.0 form comm_split(comm, color, key, config) returns the new comm.");
static PyObject *comm_split(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[5];
    PyObject *const *a = dual_args(&S_comm_split, 5, &S_comm_split_02, 4, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommSplit);
    intptr_t comm, slot = 0, config;
    int color, key;
    ncclComm_t newcomm = NULL;
    if (NX_ARG_PTR(0, comm) || NX_ARG_INT(1, color) || NX_ARG_INT(2, key) || (!legacy && NX_ARG_PTR(3, slot)) ||
        NX_ARG_PTR(legacy ? 3 : 4, config))
        return NULL;
    ncclComm_t *out = legacy ? &newcomm : (ncclComm_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommSplit((ncclComm_t)comm, color, key, out, (ncclConfig_t *)config));
    return creation_result(st, rc, legacy, newcomm, (ncclComm_t)comm);
}

static const nx_sig S_comm_shrink = {
    "comm_shrink",
    (const char *const[]){"comm", "exclude_ranks_list", "exclude_ranks_count", "newcomm", "config", "shrink_flags", NULL}};
static const nx_sig S_comm_shrink_02 = {
    "comm_shrink", (const char *const[]){"comm", "exclude_ranks_list", "exclude_ranks_count", "config", "shrink_flags", NULL}};
PyDoc_STRVAR(comm_shrink__doc__,
"comm_shrink(comm, exclude_ranks_list, exclude_ranks_count, newcomm, config, shrink_flags)\n--\n\n"
"ncclCommShrink into the slot at address newcomm; returns the status. Called by the survivors.\n"
"exclude_ranks_list: a sequence of ints (copied) or an int address. 0.2.0 form (without newcomm)\n"
"returns the new comm.");
static PyObject *comm_shrink(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[6];
    PyObject *const *a = dual_args(&S_comm_shrink, 6, &S_comm_shrink_02, 5, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommShrink);
    intptr_t comm, slot = 0, config;
    int count, flags, *list = NULL, *copy = NULL, o = legacy ? -1 : 0;
    ncclComm_t newcomm = NULL;
    if (NX_ARG_PTR(0, comm) || NX_ARG_INT(2, count) || (!legacy && NX_ARG_PTR(3, slot)) ||
        NX_ARG_PTR(o + 4, config) || NX_ARG_INT(o + 5, flags))
        return NULL;
    if (int_array_arg(a[1], S->fname, S->names[1], count > 0 ? count : 0, 0, &list, &copy) < 0)
        return NULL;
    ncclComm_t *out = legacy ? &newcomm : (ncclComm_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommShrink((ncclComm_t)comm, list, count, out, (ncclConfig_t *)config, flags));
    PyMem_Free(copy);
    return creation_result(st, rc, legacy, newcomm, (ncclComm_t)comm);
}

/* (comm) -> a new struct wrapper the library fills; the 0.2.0 form (comm, out) fills the struct at
 * address out instead and returns None. */
#define COMM_STRUCT_QUERY(fn, cname, outname, kind, ctype, doc)                              \
    static const nx_sig S_##fn = {#fn, (const char *const[]){"comm", outname, NULL}};        \
    PyDoc_STRVAR(fn##__doc__, #fn "(comm)\n--\n\n" doc);                                    \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        int legacy;                                                                          \
        const nx_sig *S;                                                                     \
        PyObject *buf[2];                                                                    \
        PyObject *const *a = dual_args(&S_##fn, 1, &S_##fn, 2, args, nargs, kwnames, buf, &legacy, &S); \
        if (a == NULL)                                                                       \
            return NULL;                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t comm, out = 0;                                                              \
        if (NX_ARG_PTR(0, comm) || (legacy && NX_ARG_PTR(1, out)))                           \
            return NULL;                                                                     \
        if (legacy) {                                                                        \
            NX_CALL(st, comm, nx_api.cname((ncclComm_t)comm, (ctype *)out));                 \
            Py_RETURN_NONE;                                                                  \
        }                                                                                    \
        PyObject *obj = nx_struct_new(st, kind);                                             \
        if (obj == NULL)                                                                     \
            return NULL;                                                                     \
        ctype *p = nx_struct_storage(st, obj, kind);                                         \
        nx_struct_fit_library(kind, p);                                                      \
        ncclResult_t rc;                                                                     \
        NX_RUN(rc, nx_api.cname((ncclComm_t)comm, p));                                       \
        return struct_result(st, obj, rc, (ncclComm_t)comm);                                 \
    }

COMM_STRUCT_QUERY(comm_get_unique_id, ncclCommGetUniqueId, "unique_id", NX_STRUCT_UNIQUE_ID, ncclUniqueId,
                  "ncclCommGetUniqueId: a UniqueId for growing comm. 0.2.0 form (comm, unique_id) writes to that address.")

static const nx_sig S_comm_grow = {
    "comm_grow", (const char *const[]){"comm", "n_ranks", "unique_id", "rank", "newcomm", "config", NULL}};
static const nx_sig S_comm_grow_02 = {"comm_grow",
                                      (const char *const[]){"comm", "n_ranks", "unique_id", "rank", "config", NULL}};
PyDoc_STRVAR(comm_grow__doc__, "comm_grow(comm, n_ranks, unique_id, rank, newcomm, config)\n--\n\n"
"ncclCommGrow into the slot at address newcomm; returns the status. unique_id is an address or 0.\n"
"0.2.0 form (without newcomm) returns the new comm.");
static PyObject *comm_grow(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[6];
    PyObject *const *a = dual_args(&S_comm_grow, 6, &S_comm_grow_02, 5, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommGrow);
    intptr_t comm, uid, slot = 0, config;
    int n_ranks, rank;
    ncclComm_t newcomm = NULL;
    if (NX_ARG_PTR(0, comm) || NX_ARG_INT(1, n_ranks) || NX_ARG_PTR(2, uid) || NX_ARG_INT(3, rank) ||
        (!legacy && NX_ARG_PTR(4, slot)) || NX_ARG_PTR(legacy ? 4 : 5, config))
        return NULL;
    ncclComm_t *out = legacy ? &newcomm : (ncclComm_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommGrow((ncclComm_t)comm, n_ranks, (const ncclUniqueId *)uid, rank, out,
                                   (ncclConfig_t *)config));
    return creation_result(st, rc, legacy, newcomm, (ncclComm_t)comm);
}

static const nx_sig S_comm_init_rank_scalable = {
    "comm_init_rank_scalable", (const char *const[]){"newcomm", "nranks", "myrank", "n_id", "comm_ids", "config", NULL}};
static const nx_sig S_comm_init_rank_scalable_02 = {
    "comm_init_rank_scalable", (const char *const[]){"nranks", "myrank", "n_id", "comm_ids", "config", NULL}};
PyDoc_STRVAR(comm_init_rank_scalable__doc__, "comm_init_rank_scalable(newcomm, nranks, myrank, n_id, comm_ids, config)\n--\n\n"
"ncclCommInitRankScalable into the slot at address newcomm; returns the status. comm_ids: an address\n"
"or a buffer of n_id * 128 bytes. 0.2.0 form (without newcomm) returns the new comm.");
static PyObject *comm_init_rank_scalable(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[6];
    PyObject *const *a = dual_args(&S_comm_init_rank_scalable, 6, &S_comm_init_rank_scalable_02, 5, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommInitRankScalable);
    intptr_t slot = 0, config;
    int nranks, myrank, n_id, o = legacy ? -1 : 0;
    ncclComm_t newcomm = NULL;
    if ((!legacy && NX_ARG_PTR(0, slot)) || NX_ARG_INT(o + 1, nranks) || NX_ARG_INT(o + 2, myrank) ||
        NX_ARG_INT(o + 3, n_id) || NX_ARG_PTR(o + 5, config))
        return NULL;
    if (n_id < 1) {
        PyErr_Format(PyExc_ValueError, "comm_init_rank_scalable() argument 'n_id' must be at least 1, got %d", n_id);
        return NULL;
    }
    ncclUniqueId *ids;
    if (read_bytes_alloc(a[o + 4], S->fname, S->names[o + 4], (size_t)n_id * sizeof *ids, (void **)&ids) < 0)
        return NULL;
    ncclComm_t *out = legacy ? &newcomm : (ncclComm_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitRankScalable(out, nranks, myrank, n_id, ids, (ncclConfig_t *)config));
    PyMem_Free(ids);
    return creation_result(st, rc, legacy, newcomm, NULL);
}

/* ---- errors and queries ---- */

NX_SIG(get_error_string, "result");
PyDoc_STRVAR(get_error_string__doc__, "get_error_string(result)\n--\n\nncclGetErrorString: the text of a result code.");
static PyObject *get_error_string(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(get_error_string, 1);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclGetErrorString);
    int result;
    if (NX_ARG_INT(0, result))
        return NULL;
    const char *s;
    Py_BEGIN_ALLOW_THREADS
    s = nx_api.ncclGetErrorString((ncclResult_t)result);
    Py_END_ALLOW_THREADS
    return PyUnicode_FromString(s ? s : "");
}

NX_SIG(get_last_error, "comm");
PyDoc_STRVAR(get_last_error__doc__, "get_last_error(comm)\n--\n\nncclGetLastError: the last error text ('' if none).");
static PyObject *get_last_error(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(get_last_error, 1);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclGetLastError);
    intptr_t comm;
    if (NX_ARG_PTR(0, comm))
        return NULL;
    const char *s;
    Py_BEGIN_ALLOW_THREADS
    s = nx_api.ncclGetLastError((ncclComm_t)comm);
    Py_END_ALLOW_THREADS
    return PyUnicode_FromString(s ? s : "");
}

NX_SIG(comm_get_async_error, "comm");
PyDoc_STRVAR(comm_get_async_error__doc__, "comm_get_async_error(comm)\n--\n\n"
"ncclCommGetAsyncError: the communicator's asynchronous state (returned, not raised).");
static PyObject *comm_get_async_error(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(comm_get_async_error, 1);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommGetAsyncError);
    intptr_t comm;
    if (NX_ARG_PTR(0, comm))
        return NULL;
    ncclResult_t state = ncclSuccess;
    NX_CALL(st, comm, nx_api.ncclCommGetAsyncError((ncclComm_t)comm, &state));
    return PyLong_FromLong((long)state);
}

/* Queries writing one int. */
#define COMM_QUERY_INT(fn, cname, doc)                                                       \
    NX_SIG(fn, "comm");                                                                      \
    PyDoc_STRVAR(fn##__doc__, #fn "(comm)\n--\n\n" doc);                                      \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 1);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t comm;                                                                       \
        if (NX_ARG_PTR(0, comm))                                                             \
            return NULL;                                                                     \
        int v = 0;                                                                           \
        NX_CALL(st, comm, nx_api.cname((ncclComm_t)comm, &v));                               \
        return PyLong_FromLong(v);                                                           \
    }

COMM_QUERY_INT(comm_count, ncclCommCount, "ncclCommCount: the number of ranks.")
COMM_QUERY_INT(comm_cu_device, ncclCommCuDevice, "ncclCommCuDevice: the device ordinal.")
COMM_QUERY_INT(comm_user_rank, ncclCommUserRank, "ncclCommUserRank: this rank.")

NX_SIG(comm_register, "comm", "buff", "size");
PyDoc_STRVAR(comm_register__doc__, "comm_register(comm, buff, size)\n--\n\nncclCommRegister: returns the handle.");
static PyObject *comm_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(comm_register, 3);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommRegister);
    intptr_t comm, buff;
    size_t size;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, buff) || NX_ARG_SIZE(2, size))
        return NULL;
    void *handle = NULL;
    NX_CALL(st, comm, nx_api.ncclCommRegister((ncclComm_t)comm, NX_PTR(buff), size, &handle));
    return PyLong_FromVoidPtr(handle);
}

NX_SIG(comm_deregister, "comm", "handle");
PyDoc_STRVAR(comm_deregister__doc__, "comm_deregister(comm, handle)\n--\n\nncclCommDeregister.");
static PyObject *comm_deregister(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(comm_deregister, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommDeregister);
    intptr_t comm, handle;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, handle))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclCommDeregister((ncclComm_t)comm, NX_PTR(handle)));
    Py_RETURN_NONE;
}

NX_SIG(comm_mem_stats, "comm", "stat");
PyDoc_STRVAR(comm_mem_stats__doc__, "comm_mem_stats(comm, stat)\n--\n\nncclCommMemStats: the value of a CommMemStat.");
static PyObject *comm_mem_stats(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(comm_mem_stats, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommMemStats);
    intptr_t comm;
    int stat;
    if (NX_ARG_PTR(0, comm) || nx_enum(a[1], S->fname, S->names[1], 0, ncclStatGpuMemTotal, "CommMemStat", &stat) < 0)
        return NULL;
    uint64_t v = 0;
    NX_CALL(st, comm, nx_api.ncclCommMemStats((ncclComm_t)comm, (ncclCommMemStat_t)stat, &v));
    return PyLong_FromUnsignedLongLong(v);
}

/* ---- windows ---- */

static const nx_sig S_comm_window_register = {
    "comm_window_register", (const char *const[]){"comm", "buff", "size", "win", "win_flags", NULL}};
static const nx_sig S_comm_window_register_02 = {
    "comm_window_register", (const char *const[]){"comm", "buff", "size", "win_flags", NULL}};
PyDoc_STRVAR(comm_window_register__doc__, "comm_window_register(comm, buff, size, win, win_flags)\n--\n\n"
"ncclCommWindowRegister into the slot at address win; returns the status. Collective.\n"
"0.2.0 form (without win) returns the window.");
static PyObject *comm_window_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *S;
    PyObject *buf[5];
    PyObject *const *a = dual_args(&S_comm_window_register, 5, &S_comm_window_register_02, 4, args, nargs, kwnames, buf, &legacy, &S);
    if (a == NULL)
        return NULL;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommWindowRegister);
    intptr_t comm, buff, slot = 0;
    size_t size;
    int flags;
    ncclWindow_t win = NULL;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, buff) || NX_ARG_SIZE(2, size) || (!legacy && NX_ARG_PTR(3, slot)) ||
        NX_ARG_INT(legacy ? 3 : 4, flags))
        return NULL;
    ncclWindow_t *out = legacy ? &win : (ncclWindow_t *)slot;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommWindowRegister((ncclComm_t)comm, NX_PTR(buff), size, out, flags));
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, (ncclComm_t)comm);
    return legacy ? PyLong_FromVoidPtr(win) : PyLong_FromLong((long)rc);
}

NX_SIG(comm_window_deregister, "comm", "win");
PyDoc_STRVAR(comm_window_deregister__doc__, "comm_window_deregister(comm, win)\n--\n\nncclCommWindowDeregister.");
static PyObject *comm_window_deregister(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(comm_window_deregister, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclCommWindowDeregister);
    intptr_t comm, win;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, win))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclCommWindowDeregister((ncclComm_t)comm, (ncclWindow_t)win));
    Py_RETURN_NONE;
}

NX_SIG(win_get_user_ptr, "comm", "win");
PyDoc_STRVAR(win_get_user_ptr__doc__, "win_get_user_ptr(comm, win)\n--\n\nncclWinGetUserPtr: the window's user pointer.");
static PyObject *win_get_user_ptr(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(win_get_user_ptr, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclWinGetUserPtr);
    intptr_t comm, win;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, win))
        return NULL;
    void *p = NULL;
    NX_CALL(st, comm, nx_api.ncclWinGetUserPtr((ncclComm_t)comm, (ncclWindow_t)win, &p));
    return PyLong_FromVoidPtr(p);
}

/* ---- custom reduction operators ---- */

NX_SIG(red_op_create_pre_mul_sum, "scalar", "datatype", "residence", "comm");
PyDoc_STRVAR(red_op_create_pre_mul_sum__doc__, "red_op_create_pre_mul_sum(scalar, datatype, residence, comm)\n--\n\n"
"ncclRedOpCreatePreMulSum: a new reduction op (returned as an int). scalar is an address.");
static PyObject *red_op_create_pre_mul_sum(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(red_op_create_pre_mul_sum, 4);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclRedOpCreatePreMulSum);
    intptr_t scalar, comm;
    ncclDataType_t dt;
    int residence;
    if (NX_ARG_PTR(0, scalar) || NX_ARG_DTYPE(1, dt) ||
        nx_enum(a[2], S->fname, S->names[2], 0, 1, "ScalarResidence", &residence) < 0 || NX_ARG_PTR(3, comm))
        return NULL;
    ncclRedOp_t op = ncclSum;
    NX_CALL(st, comm, nx_api.ncclRedOpCreatePreMulSum(&op, NX_PTR(scalar), dt, (ncclScalarResidence_t)residence,
                                                      (ncclComm_t)comm));
    return PyLong_FromLong((long)op);
}

NX_SIG(red_op_destroy, "op", "comm");
PyDoc_STRVAR(red_op_destroy__doc__, "red_op_destroy(op, comm)\n--\n\nncclRedOpDestroy.");
static PyObject *red_op_destroy(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(red_op_destroy, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclRedOpDestroy);
    ncclRedOp_t op;
    intptr_t comm;
    if (NX_ARG_REDOP(0, op) || NX_ARG_PTR(1, comm))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclRedOpDestroy(op, (ncclComm_t)comm));
    Py_RETURN_NONE;
}

/* ---- collectives and point-to-point: return once enqueued on stream ---- */

NX_SIG(reduce, "sendbuff", "recvbuff", "count", "datatype", "op", "root", "comm", "stream");
PyDoc_STRVAR(reduce__doc__, "reduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream)\n--\n\n"
"ncclReduce: reduce onto root. Collective; enqueued on stream.");
static PyObject *reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(reduce, 8);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclReduce);
    intptr_t send, recv, comm, stream;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int root;
    if (NX_ARG_PTR(0, send) || NX_ARG_PTR(1, recv) || NX_ARG_SIZE(2, count) || NX_ARG_DTYPE(3, dt) ||
        NX_ARG_REDOP(4, op) || NX_ARG_INT(5, root) || NX_ARG_PTR(6, comm) || NX_ARG_PTR(7, stream))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclReduce(NX_PTR(send), NX_PTR(recv), count, dt, op, root, (ncclComm_t)comm,
                                        (cudaStream_t)stream));
    Py_RETURN_NONE;
}

NX_SIG(bcast, "buff", "count", "datatype", "root", "comm", "stream");
PyDoc_STRVAR(bcast__doc__, "bcast(buff, count, datatype, root, comm, stream)\n--\n\n"
"ncclBcast (deprecated, in place): broadcast from root. Collective; enqueued on stream.");
static PyObject *bcast(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(bcast, 6);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclBcast);
    intptr_t buff, comm, stream;
    size_t count;
    ncclDataType_t dt;
    int root;
    if (NX_ARG_PTR(0, buff) || NX_ARG_SIZE(1, count) || NX_ARG_DTYPE(2, dt) || NX_ARG_INT(3, root) ||
        NX_ARG_PTR(4, comm) || NX_ARG_PTR(5, stream))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclBcast(NX_PTR(buff), count, dt, root, (ncclComm_t)comm, (cudaStream_t)stream));
    Py_RETURN_NONE;
}

/* (sendbuff, recvbuff, count, datatype, root, comm, stream) collectives. */
#define ROOTED(fn, cname, doc)                                                               \
    NX_SIG(fn, "sendbuff", "recvbuff", "count", "datatype", "root", "comm", "stream");      \
    PyDoc_STRVAR(fn##__doc__, #fn "(sendbuff, recvbuff, count, datatype, root, comm, stream)\n--\n\n" doc); \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 7);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t send, recv, comm, stream;                                                   \
        size_t count;                                                                        \
        ncclDataType_t dt;                                                                   \
        int root;                                                                            \
        if (NX_ARG_PTR(0, send) || NX_ARG_PTR(1, recv) || NX_ARG_SIZE(2, count) || NX_ARG_DTYPE(3, dt) || \
            NX_ARG_INT(4, root) || NX_ARG_PTR(5, comm) || NX_ARG_PTR(6, stream))             \
            return NULL;                                                                     \
        NX_CALL(st, comm, nx_api.cname(NX_PTR(send), NX_PTR(recv), count, dt, root, (ncclComm_t)comm, \
                                       (cudaStream_t)stream));                               \
        Py_RETURN_NONE;                                                                      \
    }

ROOTED(broadcast, ncclBroadcast, "ncclBroadcast: copy root's sendbuff to every recvbuff. Collective; enqueued on stream.")
ROOTED(gather, ncclGather, "ncclGather: gather count elements from every rank onto root. Collective.")
ROOTED(scatter, ncclScatter, "ncclScatter: scatter count elements per rank from root. Collective.")

/* (sendbuff, recvbuff, count, datatype, op, comm, stream) reductions. */
#define REDUCING(fn, cname, countname, doc)                                                  \
    NX_SIG(fn, "sendbuff", "recvbuff", countname, "datatype", "op", "comm", "stream");      \
    PyDoc_STRVAR(fn##__doc__, #fn "(sendbuff, recvbuff, " countname ", datatype, op, comm, stream)\n--\n\n" doc); \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 7);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t send, recv, comm, stream;                                                   \
        size_t count;                                                                        \
        ncclDataType_t dt;                                                                   \
        ncclRedOp_t op;                                                                      \
        if (NX_ARG_PTR(0, send) || NX_ARG_PTR(1, recv) || NX_ARG_SIZE(2, count) || NX_ARG_DTYPE(3, dt) || \
            NX_ARG_REDOP(4, op) || NX_ARG_PTR(5, comm) || NX_ARG_PTR(6, stream))             \
            return NULL;                                                                     \
        NX_CALL(st, comm, nx_api.cname(NX_PTR(send), NX_PTR(recv), count, dt, op, (ncclComm_t)comm, \
                                       (cudaStream_t)stream));                               \
        Py_RETURN_NONE;                                                                      \
    }

REDUCING(all_reduce, ncclAllReduce, "count", "ncclAllReduce: reduce over all ranks into every recvbuff. Collective; enqueued on stream.")
REDUCING(reduce_scatter, ncclReduceScatter, "recvcount", "ncclReduceScatter: reduce, then scatter recvcount elements per rank. Collective.")

/* (sendbuff, recvbuff, count, datatype, comm, stream) data movers. */
#define MOVING(fn, cname, countname, doc)                                                    \
    NX_SIG(fn, "sendbuff", "recvbuff", countname, "datatype", "comm", "stream");            \
    PyDoc_STRVAR(fn##__doc__, #fn "(sendbuff, recvbuff, " countname ", datatype, comm, stream)\n--\n\n" doc); \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 6);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t send, recv, comm, stream;                                                   \
        size_t count;                                                                        \
        ncclDataType_t dt;                                                                   \
        if (NX_ARG_PTR(0, send) || NX_ARG_PTR(1, recv) || NX_ARG_SIZE(2, count) || NX_ARG_DTYPE(3, dt) || \
            NX_ARG_PTR(4, comm) || NX_ARG_PTR(5, stream))                                    \
            return NULL;                                                                     \
        NX_CALL(st, comm, nx_api.cname(NX_PTR(send), NX_PTR(recv), count, dt, (ncclComm_t)comm, \
                                       (cudaStream_t)stream));                               \
        Py_RETURN_NONE;                                                                      \
    }

MOVING(all_gather, ncclAllGather, "sendcount", "ncclAllGather: gather sendcount elements from every rank everywhere. Collective.")

NX_SIG(allto_all, "sendbuff", "recvbuff", "count", "datatype", "comm", "stream");
PyDoc_STRVAR(allto_all__doc__, "allto_all(sendbuff, recvbuff, count, datatype, comm, stream)\n--\n\n"
"ncclAlltoAll (RCCL's older ncclAllToAll when that is all the library has): count elements to and\n"
"from every rank. Collective; enqueued on stream.");
static PyObject *allto_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(allto_all, 6);
    nx_state *st = nx_get_state(m);
    if (NX_UNLIKELY(!nx_loader_ready()) && nx_load_library(st) < 0)
        return NULL;
    ncclResult_t (*fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nx_api.ncclAlltoAll;
    if (fn == NULL && nx_loader_info()->flavour == NX_FLAVOUR_RCCL)
        fn = nx_api.ncclAllToAll;
    if (fn == NULL)
        return nx_raise_function_not_found(st, "ncclAlltoAll", NULL);
    intptr_t send, recv, comm, stream;
    size_t count;
    ncclDataType_t dt;
    if (NX_ARG_PTR(0, send) || NX_ARG_PTR(1, recv) || NX_ARG_SIZE(2, count) || NX_ARG_DTYPE(3, dt) ||
        NX_ARG_PTR(4, comm) || NX_ARG_PTR(5, stream))
        return NULL;
    NX_CALL(st, comm, fn(NX_PTR(send), NX_PTR(recv), count, dt, (ncclComm_t)comm, (cudaStream_t)stream));
    Py_RETURN_NONE;
}

/* (buff, count, datatype, peer, comm, stream) point-to-point. */
#define P2P(fn, cname, bufname, doc)                                                         \
    NX_SIG(fn, bufname, "count", "datatype", "peer", "comm", "stream");                     \
    PyDoc_STRVAR(fn##__doc__, #fn "(" bufname ", count, datatype, peer, comm, stream)\n--\n\n" doc); \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 6);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t buff, comm, stream;                                                         \
        size_t count;                                                                        \
        ncclDataType_t dt;                                                                   \
        int peer;                                                                            \
        if (NX_ARG_PTR(0, buff) || NX_ARG_SIZE(1, count) || NX_ARG_DTYPE(2, dt) || NX_ARG_INT(3, peer) || \
            NX_ARG_PTR(4, comm) || NX_ARG_PTR(5, stream))                                    \
            return NULL;                                                                     \
        NX_CALL(st, comm, nx_api.cname(NX_PTR(buff), count, dt, peer, (ncclComm_t)comm, (cudaStream_t)stream)); \
        Py_RETURN_NONE;                                                                      \
    }

P2P(send, ncclSend, "sendbuff", "ncclSend: send count elements to peer. Enqueued on stream; pair with recv.")
P2P(recv, ncclRecv, "recvbuff", "ncclRecv: receive count elements from peer. Enqueued on stream.")

NX_SIG(put_signal, "localbuff", "count", "datatype", "peer", "peer_win", "peer_win_offset", "sig_idx", "ctx",
       "flags", "comm", "stream");
PyDoc_STRVAR(put_signal__doc__, "put_signal(localbuff, count, datatype, peer, peer_win, peer_win_offset, sig_idx, "
"ctx, flags, comm, stream)\n--\n\nncclPutSignal: one-sided write into peer's window (offset in bytes), then signal.");
static PyObject *put_signal(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(put_signal, 11);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclPutSignal);
    intptr_t local, win, comm, stream;
    size_t count, offset;
    ncclDataType_t dt;
    int peer, sig, ctx;
    unsigned int flags;
    if (NX_ARG_PTR(0, local) || NX_ARG_SIZE(1, count) || NX_ARG_DTYPE(2, dt) || NX_ARG_INT(3, peer) ||
        NX_ARG_PTR(4, win) || NX_ARG_SIZE(5, offset) || NX_ARG_INT(6, sig) || NX_ARG_INT(7, ctx) ||
        NX_ARG_UINT(8, flags) || NX_ARG_PTR(9, comm) || NX_ARG_PTR(10, stream))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclPutSignal(NX_PTR(local), count, dt, peer, (ncclWindow_t)win, offset, sig, ctx, flags,
                                           (ncclComm_t)comm, (cudaStream_t)stream));
    Py_RETURN_NONE;
}

NX_SIG(signal, "peer", "sig_idx", "ctx", "flags", "comm", "stream");
PyDoc_STRVAR(signal__doc__, "signal(peer, sig_idx, ctx, flags, comm, stream)\n--\n\nncclSignal: signal peer without data.");
static PyObject *signal_(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(signal, 6);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclSignal);
    intptr_t comm, stream;
    int peer, sig, ctx;
    unsigned int flags;
    if (NX_ARG_INT(0, peer) || NX_ARG_INT(1, sig) || NX_ARG_INT(2, ctx) || NX_ARG_UINT(3, flags) ||
        NX_ARG_PTR(4, comm) || NX_ARG_PTR(5, stream))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclSignal(peer, sig, ctx, flags, (ncclComm_t)comm, (cudaStream_t)stream));
    Py_RETURN_NONE;
}

NX_SIG(wait_signal, "n_desc", "signal_descs", "comm", "stream");
PyDoc_STRVAR(wait_signal__doc__, "wait_signal(n_desc, signal_descs, comm, stream)\n--\n\n"
"ncclWaitSignal: wait for the signals described by n_desc WaitSignalDesc entries (an address or a buffer).");
static PyObject *wait_signal(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(wait_signal, 4);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclWaitSignal);
    intptr_t comm, stream;
    int n;
    if (NX_ARG_INT(0, n) || NX_ARG_PTR(2, comm) || NX_ARG_PTR(3, stream))
        return NULL;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "wait_signal() argument 'n_desc' must be non-negative, got %d", n);
        return NULL;
    }
    ncclWaitSignalDesc_t *descs = NULL;
    intptr_t addr = 0;
    if (nx_is_address(a[1])) {
        if (NX_ARG_PTR(1, addr))
            return NULL;
        descs = (ncclWaitSignalDesc_t *)addr;
    } else if (read_bytes_alloc(a[1], S->fname, S->names[1], (size_t)n * sizeof *descs, (void **)&descs) < 0) {
        return NULL;
    }
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclWaitSignal(n, descs, (ncclComm_t)comm, (cudaStream_t)stream));
    if (addr == 0)
        PyMem_Free(descs);
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, (ncclComm_t)comm);
    Py_RETURN_NONE;
}

/* ---- groups ---- */

/* Open groups on this thread (nccl.core's register_window asks). Counted here, where every group
 * call of both APIs passes: incremented by a successful ncclGroupStart, decremented by every
 * ncclGroupEnd/ncclGroupSimulateEnd that ran, failed or not (the library closes the group). */
static _Thread_local int group_depth;

int nx_group_depth(void) { return group_depth; }

static void group_depth_leave(void)
{
    if (group_depth > 0)
        group_depth--;
    if (group_depth == 0)
        nx_group_release(); /* the group's work has run: its buffers may go */
}

PyDoc_STRVAR(group_depth__doc__, "_group_depth()\n--\n\nNumber of groups open on this thread.");
static PyObject *group_depth_py(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromLong(group_depth);
}

PyDoc_STRVAR(group_start__doc__, "group_start()\n--\n\nncclGroupStart: defer calls until the matching group_end().");
static PyObject *group_start(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclGroupStart);
    NX_CALL(st, NULL, nx_api.ncclGroupStart());
    group_depth++;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(group_end__doc__, "group_end()\n--\n\nncclGroupEnd: the outermost one executes the group.");
static PyObject *group_end(PyObject *m, PyObject *unused)
{
    (void)unused;
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclGroupEnd);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGroupEnd());
    group_depth_leave();
    if (NX_FAILED(rc))
        return nx_raise_status(st, rc, NULL);
    Py_RETURN_NONE;
}

STRUCT_OUT(group_simulate_end, ncclGroupSimulateEnd, "sim_info", NX_STRUCT_SIM_INFO, ncclSimInfo_t,
           group_depth_leave(),
           "ncclGroupSimulateEnd: end the group without communicating; returns a SimInfo with the estimate.\n"
           "0.2.0 form group_simulate_end(sim_info) fills the struct at that address.")

/* ---- properties and device communicators ---- */

COMM_STRUCT_QUERY(comm_query_properties, ncclCommQueryProperties, "props", NX_STRUCT_COMM_PROPERTIES,
                  ncclCommProperties_t,
                  "ncclCommQueryProperties: a CommProperties. 0.2.0 form (comm, props) fills the struct at that address.")

NX_SIG(dev_comm_create, "comm", "reqs", "out_dev_comm");
PyDoc_STRVAR(dev_comm_create__doc__, "dev_comm_create(comm, reqs, out_dev_comm)\n--\n\n"
"ncclDevCommCreate: fill the device communicator at address out_dev_comm from the requirements at\n"
"address reqs. (The 0.3.1 form returning a DevComm wrapper is not provided: the device API is out\n"
"of scope.)");
static PyObject *dev_comm_create(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(dev_comm_create, 3);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclDevCommCreate);
    intptr_t comm, reqs, out;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, reqs) || NX_ARG_PTR(2, out))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclDevCommCreate((ncclComm_t)comm, (const ncclDevCommRequirements_t *)reqs,
                                               (ncclDevComm_t *)out));
    Py_RETURN_NONE;
}

NX_SIG(dev_comm_destroy, "comm", "dev_comm");
PyDoc_STRVAR(dev_comm_destroy__doc__, "dev_comm_destroy(comm, dev_comm)\n--\n\nncclDevCommDestroy.");
static PyObject *dev_comm_destroy(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    NX_PARSE(dev_comm_destroy, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclDevCommDestroy);
    intptr_t comm, dev;
    if (NX_ARG_PTR(0, comm) || NX_ARG_PTR(1, dev))
        return NULL;
    NX_CALL(st, comm, nx_api.ncclDevCommDestroy((ncclComm_t)comm, (const ncclDevComm_t *)dev));
    Py_RETURN_NONE;
}

NX_SIG(get_lsa_multimem_device_pointer, "window", "offset");
PyDoc_STRVAR(get_lsa_multimem_device_pointer__doc__, "get_lsa_multimem_device_pointer(window, offset)\n--\n\n"
"ncclGetLsaMultimemDevicePointer: the multimem pointer at offset.");
static PyObject *get_lsa_multimem_device_pointer(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                                                 PyObject *kwnames)
{
    NX_PARSE(get_lsa_multimem_device_pointer, 2);
    nx_state *st = nx_get_state(m);
    NX_REQUIRE(st, ncclGetLsaMultimemDevicePointer);
    intptr_t win;
    size_t offset;
    if (NX_ARG_PTR(0, win) || NX_ARG_SIZE(1, offset))
        return NULL;
    void *p = NULL;
    NX_CALL(st, NULL, nx_api.ncclGetLsaMultimemDevicePointer((ncclWindow_t)win, offset, &p));
    return PyLong_FromVoidPtr(p);
}

/* (window, offset, rank) -> pointer lookups. */
#define WINDOW_PEER_PTR(fn, cname, rankname, doc)                                            \
    NX_SIG(fn, "window", "offset", rankname);                                               \
    PyDoc_STRVAR(fn##__doc__, #fn "(window, offset, " rankname ")\n--\n\n" doc);              \
    static PyObject *fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                        \
        NX_PARSE(fn, 3);                                                                     \
        nx_state *st = nx_get_state(m);                                                      \
        NX_REQUIRE(st, cname);                                                               \
        intptr_t win;                                                                        \
        size_t offset;                                                                       \
        int r;                                                                               \
        if (NX_ARG_PTR(0, win) || NX_ARG_SIZE(1, offset) || NX_ARG_INT(2, r))                \
            return NULL;                                                                     \
        void *p = NULL;                                                                      \
        NX_CALL(st, NULL, nx_api.cname((ncclWindow_t)win, offset, r, &p));                   \
        return PyLong_FromVoidPtr(p);                                                        \
    }

WINDOW_PEER_PTR(get_lsa_device_pointer, ncclGetLsaDevicePointer, "lsa_rank",
                "ncclGetLsaDevicePointer: the pointer of lsa_rank's window at offset.")
WINDOW_PEER_PTR(get_peer_device_pointer, ncclGetPeerDevicePointer, "peer",
                "ncclGetPeerDevicePointer: the pointer of peer's window at offset.")

static PyMethodDef bindings_methods[] = {
    NX_FASTCALL_DEF(mem_alloc),
    NX_FASTCALL_DEF(mem_free),
    {"get_version", get_version, METH_NOARGS, get_version__doc__},
    NX_FASTCALL_DEF(get_unique_id),
    NX_FASTCALL_DEF(comm_init_rank_config),
    NX_FASTCALL_DEF(comm_init_rank),
    NX_FASTCALL_DEF(comm_init_all),
    NX_FASTCALL_DEF(comm_finalize),
    NX_FASTCALL_DEF(comm_destroy),
    NX_FASTCALL_DEF(comm_abort),
    NX_FASTCALL_DEF(comm_revoke),
    NX_FASTCALL_DEF(comm_split),
    NX_FASTCALL_DEF(comm_shrink),
    NX_FASTCALL_DEF(comm_get_unique_id),
    NX_FASTCALL_DEF(comm_grow),
    NX_FASTCALL_DEF(comm_init_rank_scalable),
    NX_FASTCALL_DEF(get_error_string),
    NX_FASTCALL_DEF(get_last_error),
    NX_FASTCALL_DEF(comm_get_async_error),
    NX_FASTCALL_DEF(comm_count),
    NX_FASTCALL_DEF(comm_cu_device),
    NX_FASTCALL_DEF(comm_user_rank),
    NX_FASTCALL_DEF(comm_register),
    NX_FASTCALL_DEF(comm_deregister),
    NX_FASTCALL_DEF(comm_suspend),
    NX_FASTCALL_DEF(comm_resume),
    NX_FASTCALL_DEF(comm_mem_stats),
    NX_FASTCALL_DEF(comm_window_register),
    NX_FASTCALL_DEF(comm_window_deregister),
    NX_FASTCALL_DEF(win_get_user_ptr),
    NX_FASTCALL_DEF(red_op_create_pre_mul_sum),
    NX_FASTCALL_DEF(red_op_destroy),
    NX_FASTCALL_DEF(reduce),
    NX_FASTCALL_DEF(bcast),
    NX_FASTCALL_DEF(broadcast),
    NX_FASTCALL_DEF(all_reduce),
    NX_FASTCALL_DEF(reduce_scatter),
    NX_FASTCALL_DEF(all_gather),
    NX_FASTCALL_DEF(allto_all),
    NX_FASTCALL_DEF(gather),
    NX_FASTCALL_DEF(scatter),
    NX_FASTCALL_DEF(send),
    NX_FASTCALL_DEF(recv),
    NX_FASTCALL_DEF(put_signal),
    {"signal", (PyCFunction)(void (*)(void))signal_, METH_FASTCALL | METH_KEYWORDS, signal__doc__},
    NX_FASTCALL_DEF(wait_signal),
    {"group_start", group_start, METH_NOARGS, group_start__doc__},
    {"group_end", group_end, METH_NOARGS, group_end__doc__},
    {"_group_depth", group_depth_py, METH_NOARGS, group_depth__doc__},
    NX_FASTCALL_DEF(group_simulate_end),
    NX_FASTCALL_DEF(comm_query_properties),
    NX_FASTCALL_DEF(dev_comm_create),
    NX_FASTCALL_DEF(dev_comm_destroy),
    NX_FASTCALL_DEF(get_lsa_multimem_device_pointer),
    NX_FASTCALL_DEF(get_lsa_device_pointer),
    NX_FASTCALL_DEF(get_peer_device_pointer),
    {NULL, NULL, 0, NULL},
};

int nx_bindings_setup(PyObject *module, nx_state *st)
{
    (void)st;
    return PyModule_AddFunctions(module, bindings_methods);
}
