/* RegisteredWindowHandle's device-pointer and CFT logical-endpoint queries of nccl4py 0.5.0:
 * get_multimem_device_pointer(multimem, offset=0) (ncclGetMultimemDevicePointer, 2.29.2) and
 * get_multimem_le_info / get_peer_le_info / get_cft_le_info (ncclGet*DeviceLeInfo, 2.31.2), which
 * return a CftLeInfo(le_id, le_offset). Offsets are in bytes, as the C calls take them. */
#include "resources.h"

#include "structs.h"

static PyObject *le_info(nx_state *st, ncclCftLeId_t id, size_t offset)
{
    PyObject *cls = nx_lazy(st, NX_LAZY_CFT_LE_INFO); /* borrowed */
    return cls ? PyObject_CallFunction(cls, "kn", (unsigned long)id, (Py_ssize_t)offset) : NULL;
}

static int offset_arg(PyObject *o, const char *fname, size_t *out)
{
    *out = 0;
    return o == NULL ? 0 : nx_size(o, fname, "offset", out);
}

/* A MultimemHandle view (its mc_base_pointer) or a bindings MultimemHandle struct. */
static int multimem_arg(nx_state *st, PyObject *o, const char *fname, ncclMultimemHandle_t *out)
{
    const ncclMultimemHandle_t *raw = nx_struct_storage(st, o, NX_STRUCT_MULTIMEM_HANDLE);
    if (raw != NULL) {
        *out = *raw;
        return 0;
    }
    PyObject *v = PyObject_GetAttrString(o, "mc_base_pointer");
    if (v == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: multimem must be a MultimemHandle, got %s", fname, Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    int r = nx_addr(v, fname, "multimem", &out->mcBasePtr);
    Py_DECREF(v);
    return r;
}

NX_MSIG(get_multimem_device_pointer, 2, 1, "multimem", "offset");
const char nx_window_multimem_pointer__doc__[] = "get_multimem_device_pointer($self, multimem, offset=0)\n--\n\n"
    "ncclGetMultimemDevicePointer: the multicast address of this window at a byte offset, for a\n"
    "MultimemHandle (DevCommResource.multimem_handle(team)); None when NCCL returns NULL.";
PyObject *nx_window_multimem_pointer(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    const char *fname = "get_multimem_device_pointer";
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    ncclMultimemHandle_t mm;
    size_t offset;
    if (st == NULL || nx_margs(&M_get_multimem_device_pointer, args, nargs, kwnames, a) < 0 ||
        multimem_arg(st, a[0], fname, &mm) < 0 || offset_arg(a[1], fname, &offset) < 0)
        return NULL;
    ncclWindow_t win = nx_window_open(self);
    if (win == NULL || nx_require(st, &nx_api.ncclGetMultimemDevicePointer) < 0)
        return NULL;
    void *out = NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetMultimemDevicePointer(win, offset, mm, &out));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    if (out == NULL)
        Py_RETURN_NONE;
    return PyLong_FromVoidPtr(out);
}

NX_MSIG(get_multimem_le_info, 1, 0, "offset");
const char nx_window_multimem_le_info__doc__[] = "get_multimem_le_info($self, offset=0)\n--\n\n"
    "ncclGetMultimemDeviceLeInfo: the CftLeInfo of this window's multicast mapping at a byte offset.";
PyObject *nx_window_multimem_le_info(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[1];
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    size_t offset;
    if (st == NULL || nx_margs(&M_get_multimem_le_info, args, nargs, kwnames, a) < 0 ||
        offset_arg(a[0], "get_multimem_le_info", &offset) < 0)
        return NULL;
    ncclWindow_t win = nx_window_open(self);
    if (win == NULL || nx_require(st, &nx_api.ncclGetMultimemDeviceLeInfo) < 0)
        return NULL;
    ncclCftLeId_t id = 0;
    size_t le_offset = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetMultimemDeviceLeInfo(win, offset, &id, &le_offset));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return le_info(st, id, le_offset);
}

NX_MSIG(get_peer_le_info, 2, 1, "peer", "offset");
const char nx_window_peer_le_info__doc__[] = "get_peer_le_info($self, peer, offset=0)\n--\n\n"
    "ncclGetPeerDeviceLeInfo: the CftLeInfo of world rank peer's window at a byte offset.";
PyObject *nx_window_peer_le_info(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    const char *fname = "get_peer_le_info";
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    int peer;
    size_t offset;
    if (st == NULL || nx_margs(&M_get_peer_le_info, args, nargs, kwnames, a) < 0 ||
        nx_int(a[0], fname, "peer", &peer) < 0 || offset_arg(a[1], fname, &offset) < 0)
        return NULL;
    ncclWindow_t win = nx_window_open(self);
    if (win == NULL || nx_require(st, &nx_api.ncclGetPeerDeviceLeInfo) < 0)
        return NULL;
    ncclCftLeId_t id = 0;
    size_t le_offset = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetPeerDeviceLeInfo(win, offset, peer, &id, &le_offset));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return le_info(st, id, le_offset);
}

/* cft_team: an NCCLTeam or a bindings Team struct. */
static int team_arg(nx_state *st, PyObject *o, const char *fname, ncclTeam_t *out)
{
    const ncclTeam_t *raw = nx_struct_storage(st, o, NX_STRUCT_TEAM);
    if (raw != NULL) {
        *out = *raw;
        return 0;
    }
    static const char *const names[3] = {"n_ranks", "rank", "stride"};
    int *dst[3] = {&out->nRanks, &out->rank, &out->stride};
    for (int i = 0; i < 3; i++) {
        PyObject *v = PyObject_GetAttrString(o, names[i]);
        if (v == NULL) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s: cft_team must be an NCCLTeam, got %s", fname, Py_TYPE(o)->tp_name);
            }
            return -1;
        }
        int r = nx_int(v, fname, "cft_team", dst[i]);
        Py_DECREF(v);
        if (r < 0)
            return -1;
    }
    return 0;
}

NX_MSIG(get_cft_le_info, 3, 2, "peer_cft", "cft_team", "offset");
const char nx_window_cft_le_info__doc__[] = "get_cft_le_info($self, peer_cft, cft_team, offset=0)\n--\n\n"
    "ncclGetCftDeviceLeInfo: the CftLeInfo of member peer_cft of cft_team (Communicator.team_cft) at a\n"
    "byte offset of this window.";
PyObject *nx_window_cft_le_info(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[3];
    const char *fname = "get_cft_le_info";
    nx_state *st = nx_state_of_type(Py_TYPE(self));
    int peer;
    ncclTeam_t team;
    size_t offset;
    if (st == NULL || nx_margs(&M_get_cft_le_info, args, nargs, kwnames, a) < 0 ||
        nx_int(a[0], fname, "peer_cft", &peer) < 0 || team_arg(st, a[1], fname, &team) < 0 ||
        offset_arg(a[2], fname, &offset) < 0)
        return NULL;
    ncclWindow_t win = nx_window_open(self);
    if (win == NULL || nx_require(st, &nx_api.ncclGetCftDeviceLeInfo) < 0)
        return NULL;
    ncclCftLeId_t id = 0;
    size_t le_offset = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetCftDeviceLeInfo(win, offset, peer, team, &id, &le_offset));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return le_info(st, id, le_offset);
}
