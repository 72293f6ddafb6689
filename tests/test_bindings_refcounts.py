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
