"""torch's own distributed tests against a backend: DistributedTest._DistTestBase, shipped in the
torch wheel (torch/testing/_internal/distributed/distributed_test.py), run with BACKEND=<backend>.

    python tests/torch/distributed_test_runner.py --backend nccl4py --world-size 2 [--selection ci]
    python tests/torch/distributed_test_runner.py --backend gloo --world-size 3 --selection all
    python tests/torch/distributed_test_runner.py --backend nccl4py -k test_all_reduce_sum

--selection ci (default) runs CI_SELECTION below; all runs every test of the class (tens of minutes
on two CPUs: on demand). The summary line counts passed, failed, errors and skipped; --json
writes every test's outcome and message.

How it runs. torch's test class starts the ranks of each test with spawn, which imports torch
afresh in every rank (seconds each); here they are forked from this process, which has imported
torch and the test module but created nothing (no process group, no library loaded), as
torch's test_distributed_fork.py once did. Each rank then does what torch's harness does:
init_process_group(BACKEND, file://...), a file barrier, the test, a barrier,
destroy_process_group().

torch's test file gates some tests by backend name. A backend it does not know is told what
nccl4py offers before the test module is imported: DDP, subgroups, and, like the nccl backend,
no receive from any source (DistTestCases' tables, common_distributed.py). Tests that name the
backends they run on ({"gloo"}, {"nccl", "gloo", "ucc"}, "mpi, nccl and gloo") and exercise what
nccl4py has (LIFTED) run with their gate lifted; the gates of the others stay
(docs/api/torch.md#torchs-own-tests lists both, and why).
"""

import argparse
import json
import os
import sys
import time
import unittest

# What runs on a machine without a GPU: every test of the class that a full run (--selection all)
# does not skip for nccl4py at 2 and 3 ranks, with LIFTED's (docs/api/torch.md#torchs-own-tests).
# The tests skipped there cost a fork each and test nothing here; --selection all runs them.
CI_SELECTION = (
    "test_Backend_enum_class", "test_DistributedDataParallelCPU",
    "test_DistributedDataParallelCPU_grad_is_view", "test_DistributedDataParallel_requires_grad",
    "test_all_gather", "test_all_gather_coalesced_complex", "test_all_gather_coalesced_full_group",
    "test_all_gather_coalesced_simple", "test_all_gather_coalesced_with_empty", "test_all_gather_complex",
    "test_all_gather_full_group", "test_all_gather_object_default_pg", "test_all_gather_object_subgroup",
    "test_all_reduce_coalesced_full_group_max", "test_all_reduce_coalesced_full_group_min",
    "test_all_reduce_coalesced_full_group_product", "test_all_reduce_coalesced_full_group_sum",
    "test_all_reduce_coalesced_max", "test_all_reduce_coalesced_max_complex_unsupported",
    "test_all_reduce_coalesced_min", "test_all_reduce_coalesced_product", "test_all_reduce_coalesced_sum",
    "test_all_reduce_complex_unsupported_ops", "test_all_reduce_full_group_max",
    "test_all_reduce_full_group_min", "test_all_reduce_full_group_product", "test_all_reduce_full_group_sum",
    "test_all_reduce_max", "test_all_reduce_min", "test_all_reduce_product", "test_all_reduce_sum",
    "test_all_reduce_sum_async", "test_all_reduce_sum_complex", "test_barrier", "test_barrier_full_group",
    "test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags", "test_broadcast",
    "test_broadcast_full_group", "test_ddp_create_graph", "test_ddp_logging_data_cpu",
    "test_destroy_full_group", "test_destroy_group", "test_dump_DDP_relevant_env_vars", "test_gather",
    "test_gather_checks", "test_gather_full_group", "test_get_backend", "test_get_future", "test_get_rank",
    "test_get_rank_size_full_group", "test_get_rank_size_group", "test_grads_same_across_ranks_with_no_sync",
    "test_irecv", "test_isend", "test_isend_autograd_profiler", "test_isend_torch_profiler",
    "test_reduce_full_group_max", "test_reduce_full_group_min", "test_reduce_full_group_product",
    "test_reduce_full_group_sum", "test_reduce_max", "test_reduce_min", "test_reduce_product",
    "test_reduce_sum", "test_reduce_sum_twice", "test_scatter", "test_scatter_checks", "test_scatter_complex",
    "test_scatter_full_group", "test_scatter_object_list", "test_send_recv",
    "test_send_recv_autograd_profiler", "test_send_recv_torch_profiler", "test_send_recv_with_tag",
    "test_send_recv_with_tag_autograd_profiler", "test_send_recv_with_tag_torch_profiler",
    "test_static_graph_api_cpu",
)


# Tests torch runs only for backends it names, whose features nccl4py has: object collectives,
# coalesced allreduce, Work.get_future (and the DDP no_sync tests that use it), gloo's
# batch_isend_irecv tests. Left gated: receive from any source (refused), monitored_barrier
# (torch's own front end allows it for gloo only), sparse tensors, a barrier's own timeout.
LIFTED = (
    "test_get_future", "test_grads_same_across_ranks_with_no_sync",
    "test_all_gather_object_default_pg", "test_all_gather_object_subgroup", "test_scatter_object_list",
    "test_all_reduce_coalesced_sum", "test_all_reduce_coalesced_max", "test_all_reduce_coalesced_min",
    "test_all_reduce_coalesced_product", "test_all_reduce_coalesced_full_group_sum",
    "test_all_reduce_coalesced_full_group_max", "test_all_reduce_coalesced_full_group_min",
    "test_all_reduce_coalesced_full_group_product",
    "test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags",
)


def lift_gates(cls):
    """Runs the LIFTED tests, which torch marks skipped for a backend it does not name."""
    for name in LIFTED:
        fn = getattr(cls, name)
        if getattr(fn, "__unittest_skip__", False):
            fn.__unittest_skip__ = False


def prepare(backend, world_size):
    """The environment and the tables torch's test module reads when it is imported."""
    os.environ["BACKEND"] = backend
    os.environ["WORLD_SIZE"] = str(world_size)
    os.environ.setdefault("NCCL_LIBRARY", "host")
    os.environ.setdefault("NCCL_HOST_TIMEOUT", "60")
    import torch.distributed  # noqa: F401 - before the tables below

    from torch.testing._internal.common_distributed import DistTestCases

    if backend == "nccl4py":
        import nccl.torch  # noqa: F401 - registers the backend (torch's autoload does too)

        for feature in ("ddp", "subgroup", "plugin"):
            DistTestCases.backend_feature[feature].add(backend)
        DistTestCases.skip_collective["sendrecv anysource"].add(backend)


def test_class():
    import torch.multiprocessing
    from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend

    class TestDistBackendWithFork(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            self._start_processes(torch.multiprocessing.get_context("fork").Process)

    return TestDistBackendWithFork


class Outcomes(unittest.TextTestResult):
    """unittest's result, with each test's outcome, message and duration kept for --json."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}
        self._t0 = {}

    def startTest(self, test):  # noqa: N802
        self._t0[test.id()] = time.monotonic()
        super().startTest(test)

    def _keep(self, test, outcome, message=""):
        name = test.id().rsplit(".", 1)[-1]
        self.outcomes[name] = {"outcome": outcome, "message": message[-3000:],
                               "seconds": round(time.monotonic() - self._t0.get(test.id(), time.monotonic()), 2)}

    def addSuccess(self, test):  # noqa: N802
        super().addSuccess(test)
        self._keep(test, "passed")

    def addFailure(self, test, err):  # noqa: N802
        super().addFailure(test, err)
        self._keep(test, "failed", self._exc_info_to_string(err, test))

    def addError(self, test, err):  # noqa: N802
        super().addError(test, err)
        self._keep(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):  # noqa: N802
        super().addSkip(test, reason)
        self._keep(test, "skipped", reason)

    def addExpectedFailure(self, test, err):  # noqa: N802
        super().addExpectedFailure(test, err)
        self._keep(test, "xfail")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        super().addUnexpectedSuccess(test)
        self._keep(test, "xpass")


def select(cls, selection, pattern):
    names = sorted(n for n in dir(cls) if n.startswith("test_"))
    if selection == "ci":
        missing = sorted(set(CI_SELECTION) - set(names))
        if missing:
            raise SystemExit(f"tests of CI_SELECTION that this torch does not have: {missing}")
        names = [n for n in names if n in CI_SELECTION]
    if pattern:
        names = [n for n in names if pattern in n]
    return names


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="nccl4py")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--selection", choices=("ci", "all"), default="ci")
    p.add_argument("-k", help="only the tests whose name contains this text")
    p.add_argument("--json", help="write each test's outcome here")
    p.add_argument("-v", action="store_true", help="a line per test")
    args = p.parse_args(argv)
    prepare(args.backend, args.world_size)
    cls = test_class()
    if args.backend == "nccl4py":
        lift_gates(cls)
    names = select(cls, args.selection, args.k)
    suite = unittest.TestSuite(cls(n) for n in names)
    t0 = time.monotonic()
    runner = unittest.TextTestRunner(resultclass=Outcomes, verbosity=2 if args.v else 1, stream=sys.stderr)
    result = runner.run(suite)
    counts = {k: sum(1 for o in result.outcomes.values() if o["outcome"] == k)
              for k in ("passed", "failed", "error", "skipped", "xfail", "xpass")}
    summary = {"backend": args.backend, "world_size": args.world_size, "selection": args.selection,
               "tests": len(names), "seconds": round(time.monotonic() - t0, 1), **counts}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "tests": result.outcomes}, f, indent=1)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
