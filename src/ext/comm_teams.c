/* Teams and properties of nccl.core.Communicator (nccl4py 0.4.1 to 0.6.0): team_world, team_lsa,
 * team_rail, team_cft_multimem (properties), team_cft(mode), team_rank_to_world/lsa, and
 * properties (an NCCLCommProperties). Teams are nccl.core._team.NCCLTeam dataclasses; one made
 * here remembers its communicator's handle in `_origin` (not a field: equality is by value, as
 * upstream), and a team from another communicator is refused before the library sees it. */
#include "core.h"

static nx_state *state_of(PyObject *self) { return nx_state_of_type(Py_TYPE(self)); }

enum { TEAM_WORLD, TEAM_LSA, TEAM_RAIL, TEAM_CFT_MULTIMEM };
const nx_team_kind nx_team_world = {"get team_world", TEAM_WORLD};
const nx_team_kind nx_team_lsa = {"get team_lsa", TEAM_LSA};
const nx_team_kind nx_team_rail = {"get team_rail", TEAM_RAIL};
const nx_team_kind nx_team_cft_multimem = {"get team_cft_multimem", TEAM_CFT_MULTIMEM};

/* An NCCLTeam for t, stamped with the communicator it came from. */
static PyObject *team_object(nx_state *st, ncclComm_t comm, ncclTeam_t t)
{
    PyObject *cls = nx_lazy(st, NX_LAZY_TEAM);
    if (cls == NULL)
        return NULL;
    PyObject *team = PyObject_CallFunction(cls, "iii", t.nRanks, t.rank, t.stride);
    if (team == NULL)
        return NULL;
    PyObject *origin = PyLong_FromVoidPtr((void *)comm);
    PyObject *name = PyUnicode_FromString("_origin");
    int r = origin && name ? PyObject_GenericSetAttr(team, name, origin) : -1;
    Py_XDECREF(origin);
    Py_XDECREF(name);
    if (r < 0)
        Py_CLEAR(team);
    return team;
}

PyObject *nx_comm_get_team(PyObject *self, void *closure)
{
    const nx_team_kind *k = closure;
    nx_state *st = state_of(self);
    if (st == NULL)
        return NULL;
    ncclComm_t comm = nx_comm_require((nx_Communicator *)self, k->op);
    if (comm == NULL)
        return NULL;
    const void *slot = k->which == TEAM_WORLD ? (const void *)&nx_api.ncclTeamWorld
                       : k->which == TEAM_LSA ? (const void *)&nx_api.ncclTeamLsa
                       : k->which == TEAM_RAIL ? (const void *)&nx_api.ncclTeamRail
                                               : (const void *)&nx_api.ncclTeamCftMultimem;
    if (nx_require(st, slot) < 0)
        return NULL;
    ncclTeam_t t;
    switch (k->which) {
    case TEAM_WORLD: NX_RUN(t, nx_api.ncclTeamWorld(comm)); break;
    case TEAM_LSA: NX_RUN(t, nx_api.ncclTeamLsa(comm)); break;
    case TEAM_RAIL: NX_RUN(t, nx_api.ncclTeamRail(comm)); break;
    default: NX_RUN(t, nx_api.ncclTeamCftMultimem(comm)); break;
    }
    return team_object(st, comm, t);
}

static NX_COLD int foreign_team(nx_state *st, const char *fname)
{
    nx_invalid(st, "%s: team belongs to another communicator", fname);
    return -1;
}

/* A team argument: an NCCLTeam (made by this communicator, or by the caller) or a bindings Team
 * struct. 0, or -1 with TypeError/NcclInvalid naming `team`. */
static int team_arg(nx_state *st, ncclComm_t comm, PyObject *o, const char *fname, ncclTeam_t *out)
{
    const ncclTeam_t *raw = nx_struct_storage(st, o, NX_STRUCT_TEAM);
    if (raw != NULL) {
        *out = *raw;
        return 0;
    }
    PyObject *cls = nx_lazy(st, NX_LAZY_TEAM);
    if (cls == NULL)
        return -1;
    int ok = PyObject_IsInstance(o, cls);
    if (ok <= 0) {
        if (ok == 0)
            PyErr_Format(PyExc_TypeError, "%s: team must be an NCCLTeam, got %s", fname, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *origin = PyObject_GetAttrString(o, "_origin");
    if (origin == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear(); /* a team the caller made: no origin to check */
    } else {
        void *p = PyLong_AsVoidPtr(origin);
        Py_DECREF(origin);
        if (p == NULL && PyErr_Occurred())
            return -1;
        if (p != (void *)comm)
            return foreign_team(st, fname);
    }
    static const char *const names[3] = {"n_ranks", "rank", "stride"};
    int *dst[3] = {&out->nRanks, &out->rank, &out->stride};
    for (int i = 0; i < 3; i++) {
        PyObject *v = PyObject_GetAttrString(o, names[i]);
        int r = v ? nx_int(v, fname, names[i], dst[i]) : -1;
        Py_XDECREF(v);
        if (r < 0)
            return -1;
    }
    return 0;
}

NX_MSIG(team_cft, 1, 0, "mode");
PyDoc_STRVAR(team_cft__doc__, "team_cft($self, mode=nccl.core.NcclCftTeamMode.FLAT)\n--\n\n"
"The CFT NCCLTeam of this rank in the given NcclCftTeamMode (ncclTeamCft, NCCL 2.31).");
static PyObject *Communicator_team_cft(NX_COMM_METHOD_ARGS)
{
    PyObject *a[1];
    if (nx_margs(&M_team_cft, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require((nx_Communicator *)self, "team_cft");
    int mode = ncclCftTeamFlat;
    if (comm == NULL || (a[0] != NULL && nx_enum(a[0], "team_cft", "mode", 0, 2, "an NcclCftTeamMode", &mode) < 0))
        return NULL;
    if (nx_require(st, &nx_api.ncclTeamCft) < 0)
        return NULL;
    ncclTeam_t t;
    NX_RUN(t, nx_api.ncclTeamCft(comm, (ncclCftTeamMode_t)mode));
    return team_object(st, comm, t);
}

/* team_rank_to_world and team_rank_to_lsa. */
static PyObject *rank_to(PyObject *self, PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, const nx_msig *sig, int lsa)
{
    PyObject *a[2];
    if (nx_margs(sig, args, nargs, kwnames, a) < 0)
        return NULL;
    nx_state *st = NX_COMM_STATE(cls);
    ncclComm_t comm = nx_comm_require((nx_Communicator *)self, sig->fname);
    ncclTeam_t team;
    int rank;
    if (comm == NULL || team_arg(st, comm, a[0], sig->fname, &team) < 0 ||
        nx_int(a[1], sig->fname, "team_rank", &rank) < 0)
        return NULL;
    if (rank < 0 || rank >= team.nRanks)
        return nx_invalid(st, "%s: team_rank=%d is out of range for a team of %d rank%s", sig->fname, rank,
                          team.nRanks, team.nRanks == 1 ? "" : "s");
    if (nx_require(st, lsa ? (const void *)&nx_api.ncclTeamRankToLsa : (const void *)&nx_api.ncclTeamRankToWorld) < 0)
        return NULL;
    int r;
    if (lsa)
        NX_RUN(r, nx_api.ncclTeamRankToLsa(comm, team, rank));
    else
        NX_RUN(r, nx_api.ncclTeamRankToWorld(comm, team, rank));
    return PyLong_FromLong(r);
}

NX_MSIG(team_rank_to_world, 2, 2, "team", "team_rank");
PyDoc_STRVAR(team_rank_to_world__doc__, "team_rank_to_world($self, team, team_rank)\n--\n\n"
"The world rank of member team_rank of team (ncclTeamRankToWorld). team: an NCCLTeam of this\n"
"communicator.");
static PyObject *Communicator_team_rank_to_world(NX_COMM_METHOD_ARGS)
{
    return rank_to(self, cls, args, nargs, kwnames, &M_team_rank_to_world, 0);
}

NX_MSIG(team_rank_to_lsa, 2, 2, "team", "team_rank");
PyDoc_STRVAR(team_rank_to_lsa__doc__, "team_rank_to_lsa($self, team, team_rank)\n--\n\n"
"The LSA rank of member team_rank of team (ncclTeamRankToLsa).");
static PyObject *Communicator_team_rank_to_lsa(NX_COMM_METHOD_ARGS)
{
    return rank_to(self, cls, args, nargs, kwnames, &M_team_rank_to_lsa, 1);
}

PyObject *nx_comm_get_properties(PyObject *self, void *closure)
{
    (void)closure;
    nx_state *st = state_of(self);
    if (st == NULL)
        return NULL;
    PyObject *props = nx_comm_properties_struct(self, "get properties");
    if (props == NULL)
        return NULL;
    PyObject *cls = nx_lazy(st, NX_LAZY_COMM_PROPERTIES);
    PyObject *r = cls ? PyObject_CallMethod(cls, "_from_lowpp", "Oi", props, nx_loader_info()->version) : NULL;
    Py_DECREF(props);
    return r;
}

#define METHOD(name) NX_COMM_METHOD_DEF(#name, Communicator_##name, name##__doc__)

PyMethodDef nx_team_methods[] = {
    METHOD(team_cft),
    METHOD(team_rank_to_world),
    METHOD(team_rank_to_lsa),
    {NULL, NULL, 0, NULL},
};
