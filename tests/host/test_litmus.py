"""The litmus test of the host backend's cross-process publication (tests/host/litmus_test.c,
docs/host-backend.md#memory-order): thousands of rounds of eager Broadcast, AllReduce, Send/Recv
and put_signal/wait_signal between processes, every word each consumer reads checked against the
round's producer. .ci/aarch64 runs it with an aarch64 build under qemu-aarch64
(NCCL4PY_HOST_LITMUS_DRIVER)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

import artefacts

ROUNDS = int(os.environ.get("NCCL4PY_LITMUS_ROUNDS", "5000"))


@pytest.fixture(scope="module")
def driver():
    cross = os.environ.get("NCCL4PY_HOST_LITMUS_DRIVER")
    return Path(cross) if cross else artefacts.artefact("tests/host/litmus_test")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_every_round_on_every_path_reads_what_was_published(driver, nranks):
    env = artefacts.tool_env()
    for k in list(env):
        if k.startswith("NCCL_"):
            del env[k]
    env["NCCL_HOST_TIMEOUT"] = "30"
    proc = subprocess.run([str(driver), str(nranks), str(ROUNDS)], capture_output=True, text=True, timeout=280,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.match(rf"PASS litmus: {nranks} ranks x {ROUNDS} rounds x 4 paths, 128 words checked", proc.stdout)
    print(proc.stdout.strip())


@pytest.mark.timeout(120)
def test_a_wrong_word_is_caught(driver):
    """LITMUS_PLANT=1: rank 0 sends one flipped bit in round 7; rank 1 must say so."""
    env = dict(artefacts.tool_env(), NCCL_HOST_TIMEOUT="10", LITMUS_PLANT="1")
    proc = subprocess.run([str(driver), "2", "20"], capture_output=True, text=True, timeout=100, env=env)
    assert proc.returncode == 1
    assert "FAIL rank 1 round 7: Send/Recv word 5 is 0x" in proc.stderr


def test_bad_arguments_are_refused(driver):
    proc = subprocess.run([str(driver), "1", "10"], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (2, "nranks must be 2 to 16 and rounds at least 1\n")
