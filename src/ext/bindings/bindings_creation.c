/* nccl.bindings.nccl: communicator and window creation, written by hand (tools/nccl_surface.py's
 * IRREGULAR says why; bindings.h how a binding is written). Their signatures and docstrings are
 * generated (<section>.gen.c).
 *
 * Creation functions have two forms, told apart by the argument count: the 0.3.1 form takes the
 * address of the slot to fill (PointerBox().address, Comm().handle_ptr) and returns the status (0,
 * or 7 while a nonblocking creation is in progress); the short form (0.2.0's argument counts,
 * which nccl4py 0.5+ went back to) has no slot argument and returns a Comm, whose own slot the
 * library fills (nx_creation_handle; inside a group, possibly only at the group's end). */
#include "bindings/bindings.gen.h"
#include "bindings/bindings_intake.h"

#include <string.h>
#include <unistd.h>

#include "module/lazy.h"
#include "structs/structs.h"
#include "trace/trace.h"

/* ---- the flight recorder (docs/api/trace.md) ----
 * A communicator created here gets its ring before the call (with its Init entry) and is bound to
 * its handle after it; the list keeps the ring (a Comm holds none: its handle finds it). A handle
 * the library fills only later (inside a group) is not known here: that ring is closed at once,
 * with its Init entry, and the communicator is not recorded. */

typedef struct {
    nx_trace_ring *ring;
    nx_trace_mark init;
} creation_trace;

static creation_trace trace_creating(uint64_t id, nx_trace_origin origin, nx_trace_ring *parent, int color, int key)
{
    creation_trace t;
    t.ring = nx_trace_ring_new(nx_trace_default_size(), id, origin, parent, color, key);
    t.init = nx_trace_enter(t.ring, &(nx_trace_call){.op = NX_T_INIT});
    return t;
}

static void trace_created(creation_trace *t, ncclResult_t rc, ncclComm_t *out, int rank, int nranks)
{
    nx_trace_leave(t->init, rc);
    ncclComm_t h = !NX_FAILED(rc) && out != NULL ? *out : NULL;
    if (h != NULL)
        nx_trace_ring_bind_query(t->ring, h, rank, nranks);
    else
        nx_trace_ring_closed(t->ring);
    nx_trace_ring_decref(t->ring);
}

/* The parent's entry of a split, shrink or grow, and the child's identity (as nccl.core's). */
static nx_trace_mark trace_parent(ncclComm_t comm, int op, nx_trace_origin origin, int color, nx_trace_ring **pr,
                                  uint64_t *child_id)
{
    *pr = nx_trace_find(comm);
    *child_id = *pr != NULL ? nx_trace_child_id(*pr, origin, color) : nx_trace_fnv(NX_FNV_BASIS, &color, sizeof color);
    return nx_trace_enter(*pr, &(nx_trace_call){.op = (uint8_t)op});
}

/* The slot a creation call fills: the caller's (0.3.1 form) or a new Comm's (short form, *handle
 * set). 0, or -1 with the exception. */
static int creation_slot(nx_state *st, int short_form, void *caller_slot, PyObject **handle, ncclComm_t **out)
{
    void *slot = caller_slot;
    *handle = NULL;
    if (short_form && nx_creation_handle(st, NX_HANDLE_COMM, handle, &slot) < 0)
        return -1;
    *out = (ncclComm_t *)slot;
    return 0;
}

PyObject *nx_binding_comm_init_rank_config(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_init_rank_config_sig, &nx_binding_comm_init_rank_config_sig_short, args, nargs,
                                        kwnames, &nx_api.ncclCommInitRankConfig, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    int o = short_form ? -1 : 0; /* the short form has no slot argument */
    void *slot = NULL, *config;
    int nranks, rank;
    ncclUniqueId id;
    if ((!short_form && nx_arg_slot(sig, a, 0, &slot) < 0) || nx_arg_int(sig, a, o + 1, &nranks) < 0 ||
        nx_read_bytes_arg(a[o + 2], sig->fname, sig->names[o + 2], &id, sizeof id) < 0 ||
        nx_arg_int(sig, a, o + 3, &rank) < 0 || nx_arg_addr(sig, a, o + 4, &config) < 0 ||
        nx_check_one_rank(st, nranks) < 0)
        return NULL;
    PyObject *handle;
    ncclComm_t *out;
    if (creation_slot(st, short_form, slot, &handle, &out) < 0)
        return NULL;
    creation_trace t = trace_creating(nx_trace_fnv(NX_FNV_BASIS, &id, sizeof id), NX_ORIGIN_INIT, NULL, 0, 0);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitRankConfig(out, nranks, id, rank, (ncclConfig_t *)config));
    trace_created(&t, rc, out, rank, nranks);
    return nx_creation_result(st, rc, handle, NULL);
}

PyObject *nx_binding_comm_init_rank(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_init_rank_sig, &nx_binding_comm_init_rank_sig_short, args, nargs, kwnames,
                                        &nx_api.ncclCommInitRank, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    int o = short_form ? -1 : 0;
    void *slot = NULL;
    int nranks, rank;
    ncclUniqueId id;
    if ((!short_form && nx_arg_slot(sig, a, 0, &slot) < 0) || nx_arg_int(sig, a, o + 1, &nranks) < 0 ||
        nx_read_bytes_arg(a[o + 2], sig->fname, sig->names[o + 2], &id, sizeof id) < 0 ||
        nx_arg_int(sig, a, o + 3, &rank) < 0 || nx_check_one_rank(st, nranks) < 0)
        return NULL;
    PyObject *handle;
    ncclComm_t *out;
    if (creation_slot(st, short_form, slot, &handle, &out) < 0)
        return NULL;
    creation_trace t = trace_creating(nx_trace_fnv(NX_FNV_BASIS, &id, sizeof id), NX_ORIGIN_INIT, NULL, 0, 0);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitRank(out, nranks, id, rank));
    trace_created(&t, rc, out, rank, nranks);
    return nx_creation_result(st, rc, handle, NULL);
}

PyObject *nx_binding_comm_init_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &nx_binding_comm_init_all_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclCommInitAll, buf, &st);
    if (a == NULL)
        return NULL;
    int ndev, *devlist = NULL, *devcopy = NULL;
    if (nx_arg_int(sig, a, 0, &ndev) < 0)
        return NULL;
    if (ndev < 0) {
        PyErr_Format(PyExc_ValueError, "comm_init_all() argument 'ndev' must be non-negative, got %d", ndev);
        return NULL;
    }
    if (nx_int_array_arg(a[1], sig->fname, sig->names[1], ndev, 1, &devlist, &devcopy) < 0)
        return NULL;
    /* The list of empty Comms and the handle array exist before the call, so nothing can fail once
     * the communicators exist (they would be leaked). The library writes the handles into one
     * array, not into the objects: they are copied in after the call. NCCL and the host backend
     * write them during the call, even inside a group; the array is a bytes object kept until the
     * group ends all the same, so a library writing later could never write into freed memory. */
    PyObject *array = NULL, *result = PyList_New(ndev);
    if (result == NULL)
        goto done;
    for (int i = 0; i < ndev; i++) {
        PyObject *h = nx_handle_new(st, NX_HANDLE_COMM, NULL);
        if (h == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, h);
    }
    if (ndev == 0)
        goto done;
    if ((array = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)ndev * (Py_ssize_t)sizeof(ncclComm_t))) == NULL ||
        (nx_group_depth() > 0 && nx_group_keep(array) < 0)) {
        Py_CLEAR(result);
        goto done;
    }
    ncclComm_t *comms = (ncclComm_t *)PyBytes_AS_STRING(array);
    memset(comms, 0, (size_t)ndev * sizeof *comms);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitAll(comms, ndev, devlist));
    if (nx_check(st, rc, NULL) < 0) {
        Py_CLEAR(result);
        goto done;
    }
    pid_t pid = getpid(); /* one communicator, every rank in this process (as nccl.core's init_all) */
    uint64_t tid = nx_trace_fnv(NX_FNV_BASIS, &pid, sizeof pid);
    if (devlist != NULL)
        tid = nx_trace_fnv(tid, devlist, (size_t)ndev * sizeof *devlist);
    for (int i = 0; i < ndev; i++) {
        *nx_handle_slot(PyList_GET_ITEM(result, i)) = comms[i];
        creation_trace t = trace_creating(tid, NX_ORIGIN_INIT, NULL, 0, 0);
        trace_created(&t, rc, &comms[i], i, ndev);
    }
done:
    Py_XDECREF(array);
    PyMem_Free(devcopy);
    return result;
}

PyObject *nx_binding_comm_init_rank_scalable(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_init_rank_scalable_sig, &nx_binding_comm_init_rank_scalable_sig_short, args,
                                        nargs, kwnames, &nx_api.ncclCommInitRankScalable, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    int o = short_form ? -1 : 0;
    void *slot = NULL, *config;
    int nranks, myrank, n_id;
    if ((!short_form && nx_arg_slot(sig, a, 0, &slot) < 0) || nx_arg_int(sig, a, o + 1, &nranks) < 0 ||
        nx_arg_int(sig, a, o + 2, &myrank) < 0 || nx_arg_int(sig, a, o + 3, &n_id) < 0 ||
        nx_arg_addr(sig, a, o + 5, &config) < 0 || nx_check_one_rank(st, nranks) < 0)
        return NULL;
    if (n_id < 1) {
        PyErr_Format(PyExc_ValueError, "comm_init_rank_scalable() argument 'n_id' must be at least 1, got %d", n_id);
        return NULL;
    }
    ncclUniqueId *ids;
    if (nx_read_bytes_alloc(a[o + 4], sig->fname, sig->names[o + 4], (size_t)n_id * sizeof *ids, (void **)&ids) < 0)
        return NULL;
    PyObject *handle;
    ncclComm_t *out;
    if (creation_slot(st, short_form, slot, &handle, &out) < 0) {
        PyMem_Free(ids);
        return NULL;
    }
    creation_trace t =
        trace_creating(nx_trace_fnv(NX_FNV_BASIS, ids, (size_t)n_id * sizeof *ids), NX_ORIGIN_INIT, NULL, 0, 0);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommInitRankScalable(out, nranks, myrank, n_id, ids, (ncclConfig_t *)config));
    trace_created(&t, rc, out, myrank, nranks);
    PyMem_Free(ids);
    return nx_creation_result(st, rc, handle, NULL);
}

PyObject *nx_binding_comm_split(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_split_sig, &nx_binding_comm_split_sig_short, args, nargs, kwnames,
                                        &nx_api.ncclCommSplit, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *slot = NULL, *config;
    int color, key;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_int(sig, a, 1, &color) < 0 || nx_arg_int(sig, a, 2, &key) < 0 ||
        (!short_form && nx_arg_slot(sig, a, 3, &slot) < 0) || nx_arg_addr(sig, a, short_form ? 3 : 4, &config) < 0)
        return NULL;
    PyObject *handle;
    ncclComm_t *out;
    if (creation_slot(st, short_form, slot, &handle, &out) < 0)
        return NULL;
    uint64_t tid;
    nx_trace_ring *pr;
    nx_trace_mark tm = trace_parent(comm, NX_T_SPLIT, NX_ORIGIN_SPLIT, color, &pr, &tid);
    creation_trace t = trace_creating(tid, NX_ORIGIN_SPLIT, pr, color, key);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommSplit(comm, color, key, out, (ncclConfig_t *)config));
    nx_trace_leave(tm, rc);
    trace_created(&t, color == NCCL_SPLIT_NOCOLOR ? ncclInvalidUsage : rc, out, -1, -1);
    return nx_creation_result(st, rc, handle, comm);
}

PyObject *nx_binding_comm_shrink(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_shrink_sig, &nx_binding_comm_shrink_sig_short, args, nargs, kwnames,
                                        &nx_api.ncclCommShrink, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    int o = short_form ? -1 : 0;
    ncclComm_t comm;
    void *slot = NULL, *config;
    int count, flags, *list = NULL, *copy = NULL;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_int(sig, a, 2, &count) < 0 ||
        (!short_form && nx_arg_slot(sig, a, 3, &slot) < 0) || nx_arg_addr(sig, a, o + 4, &config) < 0 ||
        nx_arg_int(sig, a, o + 5, &flags) < 0)
        return NULL;
    if (nx_int_array_arg(a[1], sig->fname, sig->names[1], count > 0 ? count : 0, 0, &list, &copy) < 0)
        return NULL;
    PyObject *handle;
    ncclComm_t *out;
    if (creation_slot(st, short_form, slot, &handle, &out) < 0) {
        PyMem_Free(copy);
        return NULL;
    }
    uint64_t tid;
    nx_trace_ring *pr;
    nx_trace_mark tm = trace_parent(comm, NX_T_SHRINK, NX_ORIGIN_SHRINK, -1, &pr, &tid);
    creation_trace t = trace_creating(tid, NX_ORIGIN_SHRINK, pr, -1, 0);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommShrink(comm, list, count, out, (ncclConfig_t *)config, flags));
    nx_trace_leave(tm, rc);
    trace_created(&t, rc, out, -1, -1);
    PyMem_Free(copy);
    return nx_creation_result(st, rc, handle, comm);
}

PyObject *nx_binding_comm_grow(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_grow_sig, &nx_binding_comm_grow_sig_short, args, nargs, kwnames,
                                        &nx_api.ncclCommGrow, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *uid, *slot = NULL, *config;
    int n_ranks, rank;
    /* NULL comm: a new rank joining (NCCL's API); existing ranks pass their communicator. */
    if (nx_arg_nullable_comm(sig, a, 0, &comm) < 0 || nx_arg_int(sig, a, 1, &n_ranks) < 0 ||
        nx_arg_addr(sig, a, 2, &uid) < 0 || nx_arg_int(sig, a, 3, &rank) < 0 ||
        (!short_form && nx_arg_slot(sig, a, 4, &slot) < 0) || nx_arg_addr(sig, a, short_form ? 4 : 5, &config) < 0)
        return NULL;
    PyObject *handle;
    ncclComm_t *out;
    if (creation_slot(st, short_form, slot, &handle, &out) < 0)
        return NULL;
    uint64_t tid;
    nx_trace_ring *pr = NULL;
    nx_trace_mark tm = comm != NULL ? trace_parent(comm, NX_T_GROW, NX_ORIGIN_GROW, 0, &pr, &tid) : (nx_trace_mark){0};
    if (uid != NULL) /* the root and the new ranks share the grow's id */
        tid = nx_trace_fnv(NX_FNV_BASIS, uid, sizeof(ncclUniqueId));
    else if (comm == NULL)
        tid = 0;
    creation_trace t = trace_creating(tid, NX_ORIGIN_GROW, pr, 0, 0);
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommGrow(comm, n_ranks, (const ncclUniqueId *)uid, rank, out, (ncclConfig_t *)config));
    nx_trace_leave(tm, rc);
    trace_created(&t, rc, out, -1, -1);
    return nx_creation_result(st, rc, handle, comm);
}

/* ---- windows ---- */

PyObject *nx_binding_comm_window_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &nx_binding_comm_window_register_sig, &nx_binding_comm_window_register_sig_short, args, nargs,
                                        kwnames, &nx_api.ncclCommWindowRegister, buf, &short_form, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *buff, *slot = NULL;
    size_t size;
    int flags;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_addr(sig, a, 1, &buff) < 0 || nx_arg_size(sig, a, 2, &size) < 0 ||
        (!short_form && nx_arg_slot(sig, a, 3, &slot) < 0) || nx_arg_int(sig, a, short_form ? 3 : 4, &flags) < 0)
        return NULL;
    PyObject *handle = NULL;
    if (short_form && nx_creation_handle(st, NX_HANDLE_WINDOW, &handle, &slot) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_call tc = {.op = NX_T_WIN_REGISTER, .flags = NX_TF_COUNT | NX_TF_SEND, .count = size,
                        .send = (uintptr_t)buff};
    nx_trace_mark tm = nx_trace_enter(nx_trace_find(comm), &tc);
    NX_RUN(rc, nx_api.ncclCommWindowRegister(comm, buff, size, (ncclWindow_t *)slot, flags));
    nx_trace_leave(tm, rc);
    return nx_creation_result(st, rc, handle, comm);
}
