/* nccl.bindings.nccl: the host side of NCCL's device API (2.28-2.32, nccl4py 0.4.1-0.5.0 names):
 * teams and their rank conversions, the resource requirements a device communicator is built
 * from, and the multimem and logical-endpoint (LE) queries of a window. Teams travel by value as
 * Team wrappers; the requirement creators fill wrappers (or structs at int addresses) the caller
 * passes. bindings.h says how a binding is written; bindings_intake.h holds the struct intake. */
#include "bindings/bindings_intake.h"

/* ---- teams ---- */

/* A Team argument (a Team wrapper or the address of an ncclTeam_t), by value. */
static int arg_team(nx_state *st, const nx_sig *sig, PyObject *const *a, int i, ncclTeam_t *team)
{
    return nx_arg_struct_value(st, sig, a, i, NX_STRUCT_TEAM, "Team", team, sizeof *team);
}

/* A new Team wrapper holding t. */
static PyObject *team_result(nx_state *st, ncclTeam_t t)
{
    PyObject *obj = nx_struct_new(st, NX_STRUCT_TEAM);
    if (obj != NULL)
        memcpy(nx_struct_storage(st, obj, NX_STRUCT_TEAM), &t, sizeof t);
    return obj;
}

typedef ncclTeam_t (*comm_team_fn)(ncclComm_t);

/* (comm) -> Team: the world, LSA, rail and CFT-multimem teams share one C signature. These entry
 * points have no status: a failure shows as an empty team (and the library's last error). */
static PyObject *comm_team(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_sig *sig,
                           const comm_team_fn *slot)
{
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, slot, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    if (nx_arg_comm(sig, a, 0, &comm) < 0)
        return NULL;
    ncclTeam_t team;
    NX_RUN(team, (*slot)(comm));
    return team_result(st, team);
}

NX_BINDING(team_world, ("comm"), "ncclTeamWorld: the team of every rank of comm (a Team).");
static PyObject *team_world(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return comm_team(m, args, nargs, kwnames, &team_world_sig, &nx_api.ncclTeamWorld);
}

NX_BINDING(team_lsa, ("comm"),
"ncclTeamLsa: the team of the ranks sharing this rank's load/store-accessible memory (a Team).");
static PyObject *team_lsa(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return comm_team(m, args, nargs, kwnames, &team_lsa_sig, &nx_api.ncclTeamLsa);
}

NX_BINDING(team_rail, ("comm"),
"ncclTeamRail: the team of the ranks at this rank's position in every LSA team (a Team).");
static PyObject *team_rail(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return comm_team(m, args, nargs, kwnames, &team_rail_sig, &nx_api.ncclTeamRail);
}

NX_BINDING(team_cft_multimem, ("comm"), "ncclTeamCftMultimem: the CFT multimem team of comm (a Team).");
static PyObject *team_cft_multimem(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return comm_team(m, args, nargs, kwnames, &team_cft_multimem_sig, &nx_api.ncclTeamCftMultimem);
}

NX_BINDING(team_cft, ("comm", "mode"), "ncclTeamCft: the CFT team of comm in the given CftTeamMode (a Team).");
static PyObject *team_cft(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &team_cft_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclTeamCft, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    int mode;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 ||
        nx_enum(a[1], sig->fname, sig->names[1], ncclCftTeamFlat, ncclCftTeamHierLsa, "CftTeamMode", &mode) < 0)
        return NULL;
    ncclTeam_t team;
    NX_RUN(team, nx_api.ncclTeamCft(comm, (ncclCftTeamMode_t)mode));
    return team_result(st, team);
}

typedef int (*team_rank_fn)(ncclComm_t, ncclTeam_t, int);

/* (comm, team, rank) -> int: a rank of team as a world or LSA rank (one C signature). */
static PyObject *team_rank(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const nx_sig *sig,
                           const team_rank_fn *slot)
{
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, slot, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    ncclTeam_t team;
    int rank;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 ||
        arg_team(st, sig, a, 1, &team) < 0 ||
        nx_arg_int(sig, a, 2, &rank) < 0)
        return NULL;
    int r;
    NX_RUN(r, (*slot)(comm, team, rank));
    return PyLong_FromLong(r);
}

NX_BINDING(team_rank_to_world, ("comm", "team", "rank"), "ncclTeamRankToWorld: the world rank of team's rank `rank`.");
static PyObject *team_rank_to_world(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return team_rank(m, args, nargs, kwnames, &team_rank_to_world_sig, &nx_api.ncclTeamRankToWorld);
}

NX_BINDING(team_rank_to_lsa, ("comm", "team", "rank"), "ncclTeamRankToLsa: the LSA rank of team's rank `rank`.");
static PyObject *team_rank_to_lsa(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return team_rank(m, args, nargs, kwnames, &team_rank_to_lsa_sig, &nx_api.ncclTeamRankToLsa);
}

/* ---- resource requirements ---- */

/* The out-parameters every requirement creator ends with: out_handle at a[i] (a wrapper of class
 * kind, named cls) and out_req at a[i + 1] (a DevResourceRequirements), or their addresses. */
static int requirement_outs(nx_state *st, const nx_sig *sig, PyObject *const *a, int i, nx_struct_kind kind,
                            const char *cls, void **handle, void **req)
{
    if (nx_arg_struct_ptr(st, sig, a, i, kind, cls, handle) < 0)
        return -1;
    return nx_arg_struct_ptr(st, sig, a, i + 1, NX_STRUCT_DEV_RESOURCE_REQUIREMENTS, "DevResourceRequirements", req);
}

NX_BINDING(lsa_barrier_create_requirement, ("team", "n_barriers", "out_handle", "out_req"),
"ncclLsaBarrierCreateRequirement: fill out_handle (an LsaBarrierHandle) and out_req (a\n"
"DevResourceRequirements) for n_barriers LSA barriers over team; either may be an int address.");
static PyObject *lsa_barrier_create_requirement(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                                                PyObject *kwnames)
{
    const nx_sig *sig = &lsa_barrier_create_requirement_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclLsaBarrierCreateRequirement, buf, &st);
    if (a == NULL)
        return NULL;
    ncclTeam_t team;
    int n;
    void *handle, *req;
    if (arg_team(st, sig, a, 0, &team) < 0 ||
        nx_arg_int(sig, a, 1, &n) < 0 ||
        requirement_outs(st, sig, a, 2, NX_STRUCT_LSA_BARRIER_HANDLE, "LsaBarrierHandle", &handle, &req) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclLsaBarrierCreateRequirement(team, n, handle, req));
    return nx_none_or_error(st, rc, NULL);
}

NX_BINDING(gin_barrier_create_requirement, ("comm", "team", "n_barriers", "out_handle", "out_req"),
"ncclGinBarrierCreateRequirement: fill out_handle (a GinBarrierHandle) and out_req (a\n"
"DevResourceRequirements) for n_barriers GIN barriers over team; either may be an int address.");
static PyObject *gin_barrier_create_requirement(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                                                PyObject *kwnames)
{
    const nx_sig *sig = &gin_barrier_create_requirement_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGinBarrierCreateRequirement, buf, &st);
    if (a == NULL)
        return NULL;
    ncclComm_t comm;
    ncclTeam_t team;
    int n;
    void *handle, *req;
    if (nx_arg_comm(sig, a, 0, &comm) < 0 ||
        arg_team(st, sig, a, 1, &team) < 0 ||
        nx_arg_int(sig, a, 2, &n) < 0 ||
        requirement_outs(st, sig, a, 3, NX_STRUCT_GIN_BARRIER_HANDLE, "GinBarrierHandle", &handle, &req) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGinBarrierCreateRequirement(comm, team, n, handle, req));
    return nx_none_or_error(st, rc, comm);
}

NX_BINDING(ll_a2a_create_requirement, ("n_blocks", "n_slots", "out_handle", "out_req"),
"ncclLLA2ACreateRequirement: fill out_handle (an LLA2AHandle) and out_req (a\n"
"DevResourceRequirements) for a low-latency all-to-all; either may be an int address.");
static PyObject *ll_a2a_create_requirement(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &ll_a2a_create_requirement_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclLLA2ACreateRequirement, buf, &st);
    if (a == NULL)
        return NULL;
    int blocks, slots;
    void *handle, *req;
    if (nx_arg_int(sig, a, 0, &blocks) < 0 || nx_arg_int(sig, a, 1, &slots) < 0 ||
        requirement_outs(st, sig, a, 2, NX_STRUCT_LL_A2A_HANDLE, "LLA2AHandle", &handle, &req) < 0)
        return NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclLLA2ACreateRequirement(blocks, slots, handle, req));
    return nx_none_or_error(st, rc, NULL);
}

NX_BINDING(ll_a2a_calc_slots, ("max_elts", "max_elt_size"),
"ncclLLA2ACalcSlots: the slot count a low-latency all-to-all of max_elts elements of\n"
"max_elt_size bytes needs (0.3.1's spelling lla2a_calc_slots is an alias).");
static PyObject *ll_a2a_calc_slots(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &ll_a2a_calc_slots_sig;
    nx_state *st;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclLLA2ACalcSlots, buf, &st);
    if (a == NULL)
        return NULL;
    int elts, size;
    if (nx_arg_int(sig, a, 0, &elts) < 0 || nx_arg_int(sig, a, 1, &size) < 0)
        return NULL;
    int slots;
    NX_RUN(slots, nx_api.ncclLLA2ACalcSlots(elts, size));
    return PyLong_FromLong(slots);
}

/* ---- multimem pointers and logical endpoints of a window ---- */

/* The intake of the (window, offset, ...) queries: nx_intake, then the window (not null) and the
 * byte offset. The arguments, or NULL with the exception. */
static PyObject *const *window_intake(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                      const nx_sig *sig, const void *slot, PyObject **buf, nx_state **st,
                                      ncclWindow_t *win, size_t *offset)
{
    PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, slot, buf, st);
    if (a == NULL || nx_arg_window(sig, a, 0, win) < 0 || nx_arg_size(sig, a, 1, offset) < 0)
        return NULL;
    return a;
}

NX_BINDING(get_multimem_device_pointer, ("window", "offset", "multimem"),
"ncclGetMultimemDevicePointer: the multimem pointer at offset through multimem (a MultimemHandle).");
static PyObject *get_multimem_device_pointer(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &get_multimem_device_pointer_sig;
    nx_state *st;
    ncclWindow_t win;
    size_t offset;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = window_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetMultimemDevicePointer, buf, &st,
                                       &win, &offset);
    if (a == NULL)
        return NULL;
    ncclMultimemHandle_t mm;
    if (nx_arg_struct_value(st, sig, a, 2, NX_STRUCT_MULTIMEM_HANDLE, "MultimemHandle", &mm, sizeof mm) < 0)
        return NULL;
    void *p = NULL;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetMultimemDevicePointer(win, offset, mm, &p));
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return PyLong_FromVoidPtr(p);
}

/* The (le_id, le_offset) pair an LE query returns, or NULL with the exception when rc failed. */
static PyObject *le_info_result(nx_state *st, ncclResult_t rc, ncclCftLeId_t le_id, size_t le_offset)
{
    if (nx_check(st, rc, NULL) < 0)
        return NULL;
    return Py_BuildValue("(kn)", (unsigned long)le_id, (Py_ssize_t)le_offset);
}

NX_BINDING(get_multimem_device_le_info, ("window", "offset"),
"ncclGetMultimemDeviceLeInfo: (le_id, le_offset) of the multimem logical endpoint at offset.");
static PyObject *get_multimem_device_le_info(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &get_multimem_device_le_info_sig;
    nx_state *st;
    ncclWindow_t win;
    size_t offset;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = window_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetMultimemDeviceLeInfo, buf, &st,
                                       &win, &offset);
    if (a == NULL)
        return NULL;
    ncclCftLeId_t id = 0;
    size_t le_offset = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetMultimemDeviceLeInfo(win, offset, &id, &le_offset));
    return le_info_result(st, rc, id, le_offset);
}

NX_BINDING(get_cft_device_le_info, ("window", "offset", "peer_cft", "cft_team"),
"ncclGetCftDeviceLeInfo: (le_id, le_offset) of CFT rank peer_cft of cft_team (a Team) at offset.");
static PyObject *get_cft_device_le_info(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &get_cft_device_le_info_sig;
    nx_state *st;
    ncclWindow_t win;
    size_t offset;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = window_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetCftDeviceLeInfo, buf, &st, &win,
                                       &offset);
    if (a == NULL)
        return NULL;
    int peer;
    ncclTeam_t team;
    if (nx_arg_int(sig, a, 2, &peer) < 0 ||
        arg_team(st, sig, a, 3, &team) < 0)
        return NULL;
    ncclCftLeId_t id = 0;
    size_t le_offset = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetCftDeviceLeInfo(win, offset, peer, team, &id, &le_offset));
    return le_info_result(st, rc, id, le_offset);
}

NX_BINDING(get_peer_device_le_info, ("window", "offset", "peer_world"),
"ncclGetPeerDeviceLeInfo: (le_id, le_offset) of world rank peer_world's window at offset.");
static PyObject *get_peer_device_le_info(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const nx_sig *sig = &get_peer_device_le_info_sig;
    nx_state *st;
    ncclWindow_t win;
    size_t offset;
    PyObject *buf[NX_MAX_PARAMS];
    PyObject *const *a = window_intake(m, args, nargs, kwnames, sig, &nx_api.ncclGetPeerDeviceLeInfo, buf, &st, &win,
                                       &offset);
    if (a == NULL)
        return NULL;
    int peer;
    if (nx_arg_int(sig, a, 2, &peer) < 0)
        return NULL;
    ncclCftLeId_t id = 0;
    size_t le_offset = 0;
    ncclResult_t rc;
    NX_RUN(rc, nx_api.ncclGetPeerDeviceLeInfo(win, offset, peer, &id, &le_offset));
    return le_info_result(st, rc, id, le_offset);
}

PyMethodDef nx_bindings_team_methods[] = {
    NX_FASTCALL_DEF(team_world),
    NX_FASTCALL_DEF(team_lsa),
    NX_FASTCALL_DEF(team_rail),
    NX_FASTCALL_DEF(team_cft),
    NX_FASTCALL_DEF(team_cft_multimem),
    NX_FASTCALL_DEF(team_rank_to_world),
    NX_FASTCALL_DEF(team_rank_to_lsa),
    NX_FASTCALL_DEF(lsa_barrier_create_requirement),
    NX_FASTCALL_DEF(gin_barrier_create_requirement),
    NX_FASTCALL_DEF(ll_a2a_create_requirement),
    NX_FASTCALL_DEF(ll_a2a_calc_slots),
    NX_FASTCALL_DEF(get_multimem_device_pointer),
    NX_FASTCALL_DEF(get_multimem_device_le_info),
    NX_FASTCALL_DEF(get_cft_device_le_info),
    NX_FASTCALL_DEF(get_peer_device_le_info),
    {NULL, NULL, 0, NULL},
};
