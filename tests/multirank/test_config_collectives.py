"""The *_config collectives (NCCL 2.31's ncclXxxConfig) on the host backend at 1-4 ranks, against
numpy (ranks_config.py): default, tuned and absent configs give the plain collective's results;
an invalid config is refused with the library's NCCLInvalidArgument on every rank."""

import pytest

import harness  # tests/multirank is on sys.path (conftest.py)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_config_collectives(run_ranks, nranks):
    results = run_ranks(nranks, "ranks_config:config_collectives", timeout=90)
    harness.assert_clean(results)
    for res in results:
        kind, message, untouched = res.value["refused"]
        assert kind == "NCCLInvalidArgument" and untouched
        assert "ncclAllReduceConfig: config.minCTAs = 8 exceeds config.maxCTAs = 2" in message
        assert res.value["after"] is True


# The other 0.4.1-0.6.0 bindings on the host backend: teams and their rank arithmetic (the LSA team
# is the world, the rail team one rank), the LL all-to-all slot count, parameters by key, plaintext
# encryption accepted and PSK refused, and the device-API entry points refused by name.
HOST_CODE = """
def outcome(fn, *args):
    try:
        return ["ok", fn(*args)]
    except Exception as exc:
        return [type(exc).__name__, str(exc)]

w, lsa, rail = b.team_world(comm), b.team_lsa(comm), b.team_rail(comm)
keys = b.param_get_all_keys()
psk = b.EncryptionConfig()
psk.mode, psk.psk = b.EncryptionMode.PSK, "secret"
cft = b.team_cft(comm, b.CftTeamMode.FLAT)
result = {
    "teams": [[t.n_ranks, t.rank, t.stride] for t in (w, lsa, rail)],
    "to_world": [b.team_rank_to_world(comm, w, k) for k in range(size)],
    "to_lsa": [b.team_rank_to_lsa(comm, lsa, k) for k in range(size)],
    "rail0": b.team_rank_to_world(comm, rail, 0),
    "slots": [b.ll_a2a_calc_slots(32, 16), b.lla2a_calc_slots(3, 9)],
    "keys": keys,
    "values": {k: b.param_get_parameter(k) for k in keys},
    "unknown": outcome(b.param_get_parameter, "NCCL_NO_SUCH"),
    "plain": outcome(b.set_encryption, b.EncryptionConfig()),
    "psk": outcome(b.set_encryption, psk),
    "cft": [cft.n_ranks, cft.rank, cft.stride],
    "lsa_req": outcome(b.lsa_barrier_create_requirement, w, 1, b.LsaBarrierHandle(), b.DevResourceRequirements()),
    "le": outcome(b.get_peer_device_le_info, 1, 0, 0),
}
"""


@pytest.mark.timeout(60)
def test_team_param_and_encryption_bindings_on_the_host_backend(run_ranks):
    results = run_ranks(2, HOST_CODE, timeout=45, env={"NCCL_HOST_SPIN_US": "7", "NCCL_HOST_DIRECT_MIN": "4096"})
    for rank, res in enumerate(r.value for r in results):
        assert res["teams"] == [[2, rank, 1], [2, rank, 1], [1, 0, 2]]
        assert res["to_world"] == res["to_lsa"] == [0, 1] and res["rail0"] == rank
        assert res["slots"] == [64, 6]
        assert "NCCL_HOST_TIMEOUT" in res["keys"] and len(res["keys"]) == len(set(res["keys"]))
        assert res["values"]["NCCL_HOST_FLAVOR"] == "nccl"
        # the transport tunables are parameters too, read as the values in force
        assert (res["values"]["NCCL_HOST_SPIN_US"], res["values"]["NCCL_HOST_DIRECT_MIN"]) == ("7", "4096")
        assert res["values"]["NCCL_HOST_DIRECT"] in ("0", "1", "auto")
        assert res["unknown"][0] == "NCCLInvalidArgument"
        assert "ncclParamBind: NCCL_NO_SUCH is not a parameter of the host backend" in res["unknown"][1]
        assert res["plain"] == ["ok", None]
        assert res["psk"][0] == "NCCLInvalidUsage" and "PSK encryption is not supported" in res["psk"][1]
        assert res["cft"] == [0, 0, 0]  # refused: no status to carry it, an empty team
        assert res["lsa_req"][0] == "NCCLInvalidUsage"
        assert "ncclLsaBarrierCreateRequirement is not supported by the host backend" in res["lsa_req"][1]
        assert res["le"][0] == "NCCLInvalidUsage" and "ncclGetPeerDeviceLeInfo is not supported" in res["le"][1]
