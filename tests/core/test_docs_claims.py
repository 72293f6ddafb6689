"""Claims of docs/api/*.md and docs/compatibility.md that a review found untrue, each held to the code
now that the text or the code is fixed: a child interpreter on the host backend checks each one."""

import subprocess
import sys

import children


def test_collectives_take_no_count_or_datatype(fresh_python):
    """docs/api/collectives.md: counts and dtypes come from the buffers; a slice uses part of one."""
    r = fresh_python("""
        import numpy as np
        import nccl.core as nccl
        out = {}
        with nccl.Communicator.from_env(environ={}) as comm:
            x = np.arange(8, dtype=np.float32)
            for kw in ("count", "datatype"):
                try:
                    comm.allreduce(x, x, nccl.SUM, **{kw: 4})
                except TypeError as e:
                    out[kw] = str(e)
            comm.allreduce(x[:4], x[:4], nccl.SUM)
            out["slice"] = x.tolist()
        result = out
    """, env={"NCCL_LIBRARY": "host"})
    assert r["count"] == "allreduce() got an unexpected keyword argument 'count'"
    assert r["datatype"] == "allreduce() got an unexpected keyword argument 'datatype'"
    assert r["slice"] == list(range(8))


def test_wrong_values_raise_ncclinvalid_and_wrong_types_typeerror(fresh_python):
    """docs/api/errors.md: NcclInvalid derives from Exception alone, as upstream's; a wrong type is a
    TypeError."""
    r = fresh_python("""
        import numpy as np
        import nccl.core as nccl
        out = {"mro": [c.__name__ for c in nccl.NcclInvalid.__mro__]}
        with nccl.Communicator.from_env(environ={}) as comm:
            x = np.ones(4, np.float32)
            for name, call in {"op": lambda: comm.allreduce(x, x, "sum"),
                               "stream": lambda: comm.allreduce(x, x, nccl.SUM, stream=True),
                               "config": lambda: comm.allreduce(x, x, nccl.SUM, config=5),
                               "dtypes": lambda: comm.allreduce(x, np.ones(4, np.int32), nccl.SUM),
                               "root": lambda: comm.broadcast(x, x, root=3)}.items():
                try:
                    call()
                except Exception as e:
                    out[name] = (type(e).__name__, str(e))
        result = out
    """, env={"NCCL_LIBRARY": "host"})
    assert r["mro"] == ["NcclInvalid", "Exception", "BaseException", "object"]
    assert r["op"][0] == r["stream"][0] == r["config"][0] == "TypeError"
    assert r["dtypes"] == ("NcclInvalid", "Dtype mismatch: sendbuf has dtype FLOAT32, recvbuf has dtype INT32")
    assert r["root"] == ("NcclInvalid", "broadcast: root=3 is out of range for a communicator of 1 rank")


def test_twelve_wrappers_take_two_forms():
    """docs/compatibility.md#nccl4py-versions: twelve wrappers accept the 0.2.0 and the 0.3.1 forms,
    and any other count names both."""
    r = children.run_python("""
        import json
        import nccl.bindings.nccl as nb
        two = {}
        for name in dir(nb):
            f = getattr(nb, name)
            if callable(f) and not isinstance(f, type):
                try:
                    f(*range(13))
                except TypeError as e:
                    if "(0.2 form)" in str(e):
                        two[name] = str(e)
                except Exception:
                    pass
        print(json.dumps(two))
    """, env=children.environment(NCCL_LIBRARY="host"), check_exit=True)
    two = children.last_json(r)
    assert sorted(two) == ["comm_get_unique_id", "comm_grow", "comm_init_rank", "comm_init_rank_config",
                           "comm_init_rank_scalable", "comm_query_properties", "comm_shrink", "comm_split",
                           "comm_window_register", "dev_comm_create", "get_unique_id", "group_simulate_end"]
    assert two["comm_grow"] == "comm_grow() takes 6 arguments (0.3 form) or 5 arguments (0.2 form), 13 given"


def test_cft_teams_are_empty_with_the_reason_as_last_error(fresh_python):
    """docs/compatibility.md#what-we-refuse and docs/host-backend.md: a team query returns no status,
    so the host backend refuses it with an empty team and its last error."""
    r = fresh_python("""
        import nccl.core as nccl
        with nccl.Communicator.from_env(environ={}) as comm:
            team = comm.team_cft()
            result = (team.n_ranks, team.rank, team.stride, comm.get_last_error(), comm.team_world.n_ranks)
    """, env={"NCCL_LIBRARY": "host"})
    assert r[:3] == (0, 0, 0) and r[4] == 1
    assert r[3].startswith("ncclTeamCft is not supported by the host backend")


def test_ignored_host_settings_warn_in_the_log_only(tmp_path):
    """docs/compatibility.md#what-we-refuse: NCCL_HOST_SHUFFLE=1 is a WARN line of the library's log,
    shown under NCCL_DEBUG=WARN as NCCL's warnings are, and nothing otherwise."""
    code = "import nccl.core as nccl\nnccl.Communicator.from_env(environ={}).destroy()\n"
    quiet, loud = (subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                                  env=children.environment(drop=children.LOADER_VARIABLES + ("NCCL_DEBUG",),
                                                           NCCL_LIBRARY="host", NCCL_HOST_SHUFFLE="1", **debug))
                   for debug in ({}, {"NCCL_DEBUG": "WARN"}))
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    assert "NCCL_HOST_SHUFFLE" not in quiet.stdout + quiet.stderr
    assert "NCCL-HOST WARN NCCL_HOST_SHUFFLE=1 is not implemented" in loud.stdout  # NCCL's log goes to stdout
