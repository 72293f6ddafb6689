"""What launchers set for the ranks of a job on two nodes, and running such a job in a
tests/netns.py Cluster (tests/multihost).

``launcher_environ(convention, rank, nranks, node, local, per_node, master_addr, master_port)``:
the variables torchrun, srun, an MPICH-style PMI launch or Open MPI's mpirun give one rank
(``CONVENTIONS``), with MASTER_ADDR/MASTER_PORT, which the MPI and srun launches need for the id
when there is no mpi4py.

``layout(convention, address, per_node, cluster, port, secret)``: {(node, slot): environ or None}
for a job of 2 x per_node ranks, ranks numbered node by node; ``address`` is "ipv4", "ipv6" or
"name" (node A's, the last through the hosts file the cluster writes).

``host_env(**overrides)``: a rank's environment on the host backend.

``run_job(cluster, launches, env, timeout)``: starts tests/multihost/rank_job.py once per
(node, slot) of ``launches`` ({(node, slot): [launch, ...]}) inside that node, all at once, and
returns {(node, slot): [record, ...]}, one record per launch (rank_job.py's JSON); a process that
fails or overruns fails the test with its output. ``start`` and ``collect`` are its two halves,
for a test that starts its ranks at different moments.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import children

RANK_JOB = Path(__file__).resolve().parent / "rank_job.py"


def host_env(**overrides):
    """A rank's environment on the host backend, allowed a non-loopback bootstrap, without this
    process's launcher variables; keyword arguments set (None: remove) variables."""
    drop = children.LOADER_VARIABLES + children.LAUNCH_VARIABLES + ("NCCL4PY_ID_SECRET", "NCCL_SOCKET_IFNAME",
                                                                    "NCCL4PY_ID_TIMEOUT", "NCCL4PY_ID_PORT")
    base = {"NCCL_LIBRARY": "host", "NCCL_HOST_TIMEOUT": "60", "NCCL_HOST_ALLOW_NONLOOPBACK": "1"}
    return children.environment(drop=drop, drop_prefix="NCCL_HOST_", **{**base, **overrides})


def _torchrun(rank, nranks, node, local, per_node):
    return {"RANK": rank, "WORLD_SIZE": nranks, "LOCAL_RANK": local, "LOCAL_WORLD_SIZE": per_node,
            "GROUP_RANK": node, "ROLE_RANK": rank, "ROLE_WORLD_SIZE": nranks}


def _srun(rank, nranks, node, local, per_node):
    return {"SLURM_PROCID": rank, "SLURM_NTASKS": nranks, "SLURM_STEP_NUM_TASKS": nranks, "SLURM_LOCALID": local,
            "SLURM_NODEID": node, "SLURM_NNODES": 2, "SLURM_STEP_ID": 0, "SLURM_JOB_ID": 4242,
            "SLURM_NTASKS_PER_NODE": per_node}


def _pmi(rank, nranks, node, local, per_node):
    # what MPICH's and Intel MPI's hydra give a rank
    return {"PMI_RANK": rank, "PMI_SIZE": nranks, "MPI_LOCALRANKID": local, "MPI_LOCALNRANKS": per_node}


def _ompi(rank, nranks, node, local, per_node):
    return {"OMPI_COMM_WORLD_RANK": rank, "OMPI_COMM_WORLD_SIZE": nranks, "OMPI_COMM_WORLD_LOCAL_RANK": local,
            "OMPI_COMM_WORLD_LOCAL_SIZE": per_node, "OMPI_COMM_WORLD_NODE_RANK": local}


# convention -> (the variables of one rank, what detect() reports: kind and the variable it went by)
CONVENTIONS = {
    "torchrun": (_torchrun, "torchrun", "RANK"),
    "srun": (_srun, "slurm", None),  # detect's source names the task: "SLURM_PROCID=..., ..."
    "pmi": (_pmi, "mpi", "PMI_RANK"),
    "ompi": (_ompi, "mpi", "OMPI_COMM_WORLD_RANK"),
}


def launcher_environ(convention, rank, nranks, node, local, per_node, master_addr, master_port):
    variables = CONVENTIONS[convention][0](rank, nranks, node, local, per_node)
    variables.update(MASTER_ADDR=master_addr, MASTER_PORT=master_port)
    return {k: str(v) for k, v in variables.items()}


def master_address(cluster, address):
    a = cluster.nodes[0]
    return {"ipv4": a.addr, "ipv6": a.addr6, "name": a.name}[address]


def layout(convention, address, per_node, cluster, port, secret=None, slots=2):
    """{(node, slot): environ or None} of a 2 x per_node job; slots processes run on each node."""
    nranks = 2 * per_node
    out = {}
    for node in range(2):
        for slot in range(slots):
            if slot >= per_node:
                out[(node, slot)] = None
                continue
            env = launcher_environ(convention, node * per_node + slot, nranks, node, slot, per_node,
                                   master_address(cluster, address), port)
            if secret is not None:
                env["NCCL4PY_ID_SECRET"] = secret
            out[(node, slot)] = env
    return out


def start(cluster, key, specs, env):
    """rank_job.py running the launches specs inside node key[0] (key: (node, slot))."""
    node, slot = key
    path = cluster.dir / f"job-{node}-{slot}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps({"launches": specs}))
    return cluster.nodes[node].popen([sys.executable, RANK_JOB, path], env=env)


def collect(procs, launches, timeout=120):
    """{key: [record, ...]} of the rank_job.py processes procs ({key: Popen}) that ran launches
    ({key: [launch, ...]}), waiting at most timeout seconds for all of them."""
    deadline = time.monotonic() + timeout
    records = {}
    for key, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"process {key} ran past {timeout} s\n--- stdout\n{out}\n--- stderr\n{err[-4000:]}")
        if proc.returncode != 0:
            raise AssertionError(f"process {key} exited with {proc.returncode}\n--- stdout\n{out}\n--- stderr\n"
                                 f"{err[-4000:]}")
        records[key] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert len(records[key]) == len(launches[key]), (key, out, err[-4000:])
    return records


def run_job(cluster, launches, env, timeout=120):
    """Runs rank_job.py for every (node, slot) of launches in its node, all at once; the records
    per process."""
    procs = {key: start(cluster, key, specs, env) for key, specs in launches.items()}
    return collect(procs, launches, timeout)
