/* nccl.bindings.nccl: buffer and window registration, one-sided signals, window device pointers
 * and device communicators (bindings.h says how a binding is written). */
#include "bindings/bindings_intake.h"

#include "structs/structs.h"

/* ---- buffer registration ---- */

NX_BINDING(comm_register, ("comm", "buff", "size"), "ncclCommRegister: returns the handle.");
static PyObject *comm_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &comm_register_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclCommRegister, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *buff;
    size_t size;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_addr(sig, a, 1, &buff) < 0 || nx_arg_size(sig, a, 2, &size) < 0)
        return NULL;
    void *handle = NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommRegister(comm, buff, size, &handle));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromVoidPtr(handle);
}

NX_BINDING(comm_deregister, ("comm", "handle"), "ncclCommDeregister.");
static PyObject *comm_deregister(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &comm_deregister_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclCommDeregister, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *handle;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_addr(sig, a, 1, &handle) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclCommDeregister(comm, handle));
    return nx_none_or_error(st, rc, comm);
}

/* ---- windows ---- */

NX_FORM(comm_window_register, short, "comm", "buff", "size", "win_flags");
NX_BINDING(comm_window_register, ("comm", "buff", "size", "win", "win_flags"),
"ncclCommWindowRegister into the slot at address win; returns the status. Collective.\n"
"Short form comm_window_register(comm, buff, size, win_flags) returns the new Window (inside a group\n"
"the library fills it when the group ends).");
static PyObject *comm_window_register(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int short_form;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &comm_window_register_sig, &comm_window_register_sig_short, args, nargs,
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
    nx_trace_mark tm = nx_trace_binding(comm, (nx_trace_call){.op = NX_T_WIN_REGISTER, .flags = NX_TF_COUNT | NX_TF_SEND,
                                                              .count = size, .send = (uintptr_t)buff});
    NX_RUN(rc, nx_api.ncclCommWindowRegister(comm, buff, size, (ncclWindow_t *)slot, flags));
    nx_trace_leave(tm, rc);
    return nx_creation_result(st, rc, handle, comm);
}

NX_BINDING(comm_window_deregister, ("comm", "win"), "ncclCommWindowDeregister.");
static PyObject *comm_window_deregister(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &comm_window_deregister_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclCommWindowDeregister, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    ncclWindow_t win;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_window(sig, a, 1, &win) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(comm, (nx_trace_call){.op = NX_T_WIN_DEREGISTER});
    NX_RUN(rc, nx_api.ncclCommWindowDeregister(comm, win));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_BINDING(win_get_user_ptr, ("comm", "win"), "ncclWinGetUserPtr: the window's user pointer.");
static PyObject *win_get_user_ptr(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &win_get_user_ptr_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclWinGetUserPtr, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    ncclWindow_t win;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_window(sig, a, 1, &win) < 0)
        return NULL;
    void *p = NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclWinGetUserPtr(comm, win, &p));
    if (nx_check(st, rc, comm) < 0)
        return NULL;
    return PyLong_FromVoidPtr(p);
}

/* ---- one-sided signals ---- */

NX_BINDING(put_signal,
           ("localbuff", "count", "datatype", "peer", "peer_win", "peer_win_offset", "sig_idx", "ctx", "flags",
            "comm", "stream"),
"ncclPutSignal: one-sided write into peer's window (offset in bytes), then signal.");
static PyObject *put_signal(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &put_signal_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclPutSignal, buf, &st);
    if (a == NULL)
        return NULL;
    void *local;
    size_t count, offset;
    ncclDataType_t dt;
    int peer, sig_idx, ctx;
    ncclWindow_t win;
    unsigned int flags;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_addr(sig, a, 0, &local) < 0 || nx_arg_size(sig, a, 1, &count) < 0 || nx_arg_dtype(sig, a, 2, &dt) < 0 ||
        nx_arg_int(sig, a, 3, &peer) < 0 || nx_arg_window(sig, a, 4, &win) < 0 ||
        nx_arg_size(sig, a, 5, &offset) < 0 || nx_arg_int(sig, a, 6, &sig_idx) < 0 || nx_arg_int(sig, a, 7, &ctx) < 0 ||
        nx_arg_uint(sig, a, 8, &flags) < 0 || nx_arg_comm(sig, a, 9, &comm) < 0 || nx_arg_stream(sig, a, 10, &stream) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm =
        nx_trace_binding(comm, nx_trace_coll(NX_T_PUT_SIGNAL, NX_TF_PEER, local, NULL, count, dt, 0, peer, stream));
    NX_RUN(rc, nx_api.ncclPutSignal(local, count, dt, peer, win, offset, sig_idx, ctx, flags, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_BINDING(signal, ("peer", "sig_idx", "ctx", "flags", "comm", "stream"), "ncclSignal: signal peer without data.");
/* Named signal_ in C: <signal.h>'s signal() may be declared through Python.h. */
static PyObject *signal_(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &signal_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclSignal, buf, &st);
    if (a == NULL)
        return NULL;
    int peer, sig_idx, ctx;
    unsigned int flags;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_int(sig, a, 0, &peer) < 0 || nx_arg_int(sig, a, 1, &sig_idx) < 0 || nx_arg_int(sig, a, 2, &ctx) < 0 ||
        nx_arg_uint(sig, a, 3, &flags) < 0 || nx_arg_comm(sig, a, 4, &comm) < 0 || nx_arg_stream(sig, a, 5, &stream) < 0)
        return NULL;
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(comm, (nx_trace_call){.op = NX_T_SIGNAL, .flags = NX_TF_PEER | NX_TF_STREAM,
                                                              .rank = peer, .stream = (uintptr_t)stream});
    NX_RUN(rc, nx_api.ncclSignal(peer, sig_idx, ctx, flags, comm, stream));
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, comm);
}

NX_BINDING(wait_signal, ("n_desc", "signal_descs", "comm", "stream"),
"ncclWaitSignal: wait for the signals described by n_desc WaitSignalDesc entries (an address or a buffer).");
static PyObject *wait_signal(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &wait_signal_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclWaitSignal, buf, &st);
    if (a == NULL)
        return NULL;
    int n;
    ncclComm_t comm;
    cudaStream_t stream;
    if (nx_arg_int(sig, a, 0, &n) < 0 || nx_arg_comm(sig, a, 2, &comm) < 0 || nx_arg_stream(sig, a, 3, &stream) < 0)
        return NULL;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "wait_signal() argument 'n_desc' must be non-negative, got %d", n);
        return NULL;
    }
    /* an address is used in place; a buffer is copied (and freed below) */
    ncclWaitSignalDesc_t *descs = NULL, *copy = NULL;
    if (nx_is_address(a[1])) {
        void *addr;
        if (nx_arg_addr(sig, a, 1, &addr) < 0)
            return NULL;
        descs = addr;
    } else if (nx_read_bytes_alloc(a[1], sig->fname, sig->names[1], (size_t)n * sizeof *copy, (void **)&copy) < 0) {
        return NULL;
    } else {
        descs = copy;
    }
    ncclResult_t rc;
    nx_trace_mark tm = nx_trace_binding(comm, (nx_trace_call){.op = NX_T_WAIT_SIGNAL, .flags = NX_TF_COUNT | NX_TF_STREAM,
                                                              .count = (uint64_t)n, .stream = (uintptr_t)stream});
    NX_RUN(rc, nx_api.ncclWaitSignal(n, descs, comm, stream));
    nx_trace_leave(tm, rc);
    PyMem_Free(copy);
    return nx_none_or_error(st, rc, comm);
}

/* ---- device pointers of a window ---- */

NX_BINDING(get_lsa_multimem_device_pointer, ("window", "offset"),
"ncclGetLsaMultimemDevicePointer: the multimem pointer at offset.");
static PyObject *get_lsa_multimem_device_pointer(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                                                 PyObject *kwnames)
{
    const nx_sig *sig = &get_lsa_multimem_device_pointer_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetLsaMultimemDevicePointer, buf, &st);
    if (a == NULL)
        return NULL;
    ncclWindow_t win;
    size_t offset;
    if (nx_arg_window(sig, a, 0, &win) < 0 || nx_arg_size(sig, a, 1, &offset) < 0)
        return NULL;
    void *p = NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetLsaMultimemDevicePointer(win, offset, &p));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return PyLong_FromVoidPtr(p);
}

/* (window, offset, rank) -> pointer lookups; is_peer picks ncclGetPeerDevicePointer over
 * ncclGetLsaDevicePointer (same C signature). */
static PyObject *window_rank_pointer(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                     const nx_sig *sig, int is_peer)
{
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_args(sig, args, nargs, kwnames, buf);
    nx_state *st = nx_get_state(m);
    if (a == NULL || nx_require(st, is_peer ? (const void *)&nx_api.ncclGetPeerDevicePointer
                                            : (const void *)&nx_api.ncclGetLsaDevicePointer) < 0)
        return NULL;
    ncclWindow_t win;
    size_t offset;
    int r;
    if (nx_arg_window(sig, a, 0, &win) < 0 || nx_arg_size(sig, a, 1, &offset) < 0 || nx_arg_int(sig, a, 2, &r) < 0)
        return NULL;
    void *p = NULL;
    ncclResult_t rc;
    if (is_peer)
        NX_RUN(rc, nx_api.ncclGetPeerDevicePointer(win, offset, r, &p));
    else
        NX_RUN(rc, nx_api.ncclGetLsaDevicePointer(win, offset, r, &p));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return PyLong_FromVoidPtr(p);
}

NX_BINDING(get_lsa_device_pointer, ("window", "offset", "lsa_rank"),
"ncclGetLsaDevicePointer: the pointer of lsa_rank's window at offset.");
static PyObject *get_lsa_device_pointer(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return window_rank_pointer(m, args, nargs, kwnames, &get_lsa_device_pointer_sig, 0);
}

NX_BINDING(get_peer_device_pointer, ("window", "offset", "peer"),
"ncclGetPeerDevicePointer: the pointer of peer's window at offset.");
static PyObject *get_peer_device_pointer(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return window_rank_pointer(m, args, nargs, kwnames, &get_peer_device_pointer_sig, 1);
}

/* ---- device communicators ---- */

NX_FORM(dev_comm_create, 02, "comm", "reqs", "out_dev_comm");
NX_BINDING(dev_comm_create, ("comm", "reqs"),
"ncclDevCommCreate: a new DevComm built from the requirements reqs (a DevCommRequirements or its\n"
"address). The 3-argument form dev_comm_create(comm, reqs, out_dev_comm) fills the struct at\n"
"address out_dev_comm instead and returns None.");
static PyObject *dev_comm_create(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int legacy;
    const nx_sig *sig;
    PyObject *buf[NX_MAX_PARAMS];
    nx_state *st;
    PyObject *const *a = nx_dual_intake(m, &dev_comm_create_sig, &dev_comm_create_sig_02, args, nargs, kwnames,
                                        &nx_api.ncclDevCommCreate, buf, &legacy, &sig, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *reqs, *out = NULL;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_addr(sig, a, 1, &reqs) < 0 ||
        (legacy && nx_arg_addr(sig, a, 2, &out) < 0))
        return NULL;
    ncclResult_t rc;
    if (legacy) {
        NX_RUN(rc, nx_api.ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)reqs, (ncclDevComm_t *)out));
        return nx_none_or_error(st, rc, comm);
    }
    PyObject *obj = nx_struct_new(st, NX_STRUCT_DEV_COMM);
    if (obj == NULL)
        return NULL;
    ncclDevComm_t *dev = nx_struct_storage(st, obj, NX_STRUCT_DEV_COMM);
    NX_RUN(rc, nx_api.ncclDevCommCreate(comm, (const ncclDevCommRequirements_t *)reqs, dev));
    return nx_struct_result(st, obj, rc, comm);
}

NX_BINDING(dev_comm_destroy, ("comm", "dev_comm"), "ncclDevCommDestroy.");
static PyObject *dev_comm_destroy(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &dev_comm_destroy_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclDevCommDestroy, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    void *dev;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_addr(sig, a, 1, &dev) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclDevCommDestroy(comm, (const ncclDevComm_t *)dev));
    return nx_none_or_error(st, rc, comm);
}

PyMethodDef nx_bindings_window_methods[] = {
    NX_FASTCALL_DEF(comm_register),
    NX_FASTCALL_DEF(comm_deregister),
    NX_FASTCALL_DEF(comm_window_register),
    NX_FASTCALL_DEF(comm_window_deregister),
    NX_FASTCALL_DEF(win_get_user_ptr),
    NX_FASTCALL_DEF(put_signal),
    {"signal", (PyCFunction)(void (*)(void))signal_, METH_FASTCALL | METH_KEYWORDS, signal__doc__},
    NX_FASTCALL_DEF(wait_signal),
    NX_FASTCALL_DEF(get_lsa_multimem_device_pointer),
    NX_FASTCALL_DEF(get_lsa_device_pointer),
    NX_FASTCALL_DEF(get_peer_device_pointer),
    NX_FASTCALL_DEF(dev_comm_create),
    NX_FASTCALL_DEF(dev_comm_destroy),
    {NULL, NULL, 0, NULL},
};
