"""Reference counts stay put over 10^5 binding calls, on the success path and on a scripted
failure path (where leaks usually live), for pointer-like arguments and unique-id buffers."""


def test_refcounts_do_not_grow_over_many_calls(stub_python):
    r = stub_python("nccl").run("""
        import sys
        box = b.PointerBox(0x5555)
        raw = bytes(128)
        args = (0x1000, 0x2000, 3, 7, 0, box, 0)
        counts = [sys.getrefcount(box), sys.getrefcount(raw)]
        for _ in range(100_000):
            b.all_reduce(*args)
        for _ in range(20_000):
            b.comm_init_rank(box.address, 2, raw, 0)
        ok = [sys.getrefcount(box) - counts[0], sys.getrefcount(raw) - counts[1]]
        stub.script("ncclAllReduce", 4)
        stub.script("ncclCommInitRank", 5)
        failures = 0
        for _ in range(20_000):
            try:
                b.all_reduce(*args)
            except b.NCCLInvalidArgument:
                failures += 1
            try:
                b.comm_init_rank(box.address, 2, raw, 0)
            except b.NCCLInvalidUsage:
                failures += 1
        result = (ok, [sys.getrefcount(box) - counts[0], sys.getrefcount(raw) - counts[1]], failures)
    """)
    assert r == ([0, 0], [0, 0], 40_000)


def test_refcounts_over_the_0_6_bindings(stub_python):
    """The struct arguments (taken by value or filled), the returned Team wrappers, tuples, texts
    and key lists: no reference is gained or lost per call, on success or on a scripted failure,
    and no object is left behind (the count of live objects is stable)."""
    r = stub_python("nccl").run("""
        import gc, sys
        team, cfg, enc = b.Team(), b.CollConfig(), b.EncryptionConfig()
        h, req, mm = b.LsaBarrierHandle(), b.DevResourceRequirements(), b.MultimemHandle()
        key = "NCCL_PROTO"
        objs = (team, cfg, enc, h, req, mm, key)

        def once():
            b.all_reduce_config(0x1000, 0x2000, 3, 7, 0, 4, 0, cfg)
            b.broadcast_config(0x1000, 0x2000, 3, 7, 0, 4, 0, 0)
            b.team_world(4)
            b.team_rank_to_world(4, team, 1)
            b.lsa_barrier_create_requirement(team, 1, h, req)
            b.get_multimem_device_pointer(5, 0, mm)
            b.get_peer_device_le_info(5, 0, 1)
            b.param_get_parameter(key)
            b.param_get_all_keys()
            b.set_encryption(enc)

        def failing():
            n = 0
            for fn, args in ((b.all_reduce_config, (0x1000, 0x2000, 3, 7, 0, 4, 0, cfg)),
                             (b.lsa_barrier_create_requirement, (team, 1, h, req)),
                             (b.get_peer_device_le_info, (5, 0, 1)), (b.param_get_parameter, (key,)),
                             (b.set_encryption, (enc,))):
                try:
                    fn(*args)
                except b.NCCLError:
                    n += 1
            return n

        for _ in range(100):
            once()
        gc.collect()
        counts, live = [sys.getrefcount(o) for o in objs], len(gc.get_objects())
        for _ in range(5_000):
            once()
        gc.collect()
        ok = ([sys.getrefcount(o) for o in objs] == counts, len(gc.get_objects()) - live)
        for sym in ("ncclAllReduceConfig", "ncclLsaBarrierCreateRequirement", "ncclGetPeerDeviceLeInfo",
                    "ncclParamGetParameter", "ncclSetEncryption"):
            stub.script(sym, 4)
        failures = sum(failing() for _ in range(2_000))
        gc.collect()
        result = (ok, [sys.getrefcount(o) for o in objs] == counts, failures, len(gc.get_objects()) - live)
    """)
    (same, grown), same_after, failures, grown_after = r
    assert same and same_after and failures == 10_000
    assert abs(grown) < 50 and abs(grown_after) < 50
