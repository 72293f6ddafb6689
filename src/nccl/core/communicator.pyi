# Stub of nccl.core.communicator: Communicator is C (nccl._ext); docs/compatibility.md#communicator.
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from typing_extensions import Self

from nccl._enums import Result
from nccl.core._config import NCCLCollConfig as NCCLCollConfig
from nccl.core._config import NCCLConfig as NCCLConfig
from nccl.core._config import VendorOption as VendorOption
from nccl.core._config import NCCLDevCommRequirements as NCCLDevCommRequirements
from nccl.core._config import WaitSignalDesc as WaitSignalDesc
from nccl.core._team import GinBarrierRequirement as GinBarrierRequirement
from nccl.core._team import LLA2ARequirement as LLA2ARequirement
from nccl.core._team import LsaBarrierRequirement as LsaBarrierRequirement
from nccl.core._team import NCCLCommProperties as NCCLCommProperties
from nccl.core._team import NCCLTeam
from nccl.core._team import TeamRequirement as TeamRequirement
from nccl.core._types import (
    CommShrinkFlag, CommSuspendFlag, NcclCftTeamMode, NcclCommMemStat, NcclDataType, NcclGinType, NcclRedOp,
    WindowFlag,
)
from nccl.core._unique_id import UniqueId
from nccl.core.resources import CustomRedOp, DevCommResource, RegisteredBufferHandle, RegisteredWindowHandle
from nccl.core.typing import NcclBufferSpec, NcclScalarSpec, NcclStreamSpec

__all__ = ["NCCLConfig", "NCCLCollConfig", "VendorOption", "NCCLCommProperties", "WaitSignalDesc",
           "TeamRequirement", "LsaBarrierRequirement", "GinBarrierRequirement", "LLA2ARequirement",
           "NCCLDevCommRequirements", "Communicator"]

_Op = NcclRedOp | CustomRedOp | int

class Communicator:
    """One NCCL communicator. Create it with Communicator.init(nranks, rank, unique_id) (or init_all,
    split, shrink, grow); wrap an existing ncclComm_t with Communicator(ptr) (None or 0: a null
    communicator). Release it explicitly
    with destroy() or abort(), or use it as a context manager. Not thread-safe, as in NCCL.
    """
    def __new__(cls, ptr: int | None = None) -> Self: ...
    @classmethod
    def init(cls, nranks: int, rank: int, unique_id: UniqueId | Sequence[UniqueId],
             config: NCCLConfig | None = None, *, trace_buffer: int | None = None) -> Communicator:
        """Create a communicator: cls() then initialize(...). Collective over the nranks ranks.
        trace_buffer: the flight recorder's ring size for it (None: NCCL4PY_TRACE_BUFFER; 0: not recorded).
        """
    def initialize(self, nranks: int, rank: int, unique_id: UniqueId | Sequence[UniqueId],
                   config: NCCLConfig | None = None, *, trace_buffer: int | None = None) -> None:
        """Create the communicator in place: ncclCommInitRankScalable with every id given; for one id on
        libraries without it, ncclCommInitRankConfig, or, on one without that too and with config None,
        ncclCommInitRank. Collective.
        trace_buffer: the flight recorder's ring size for it (None: NCCL4PY_TRACE_BUFFER; 0: not recorded).
        """
    @classmethod
    def from_env(cls, *, config: NCCLConfig | None = None, timeout: float | None = None,
                 environ: Mapping[str, str] | None = None, trace_buffer: int | None = None) -> Communicator:
        """A communicator from the launcher's environment: python -m nccl.run, torchrun, mpirun or srun.

        The rank and the rank count come from the launcher's variables; rank 0 creates the unique id and
        the others receive it. Outside any launcher the result is a one-rank communicator.

        Args:
            config: an NCCLConfig for the init, or None.
            timeout: seconds the unique-id exchange may take (default: NCCL4PY_ID_TIMEOUT, else 300).
            environ: a mapping used instead of os.environ.
            trace_buffer: the flight recorder's ring size for it (None: NCCL4PY_TRACE_BUFFER; 0: not
                recorded; docs/api/trace.md).

        Raises:
            ValueError: the launcher's variables are inconsistent or give no channel for the id.
            TimeoutError: a rank did not join the id exchange in time.
            NCCLError: the library's init failed.
        """
    @classmethod
    def init_all(cls, devices: int | Sequence[int] | None = None) -> list[Communicator]:
        """One communicator per device in this process (ncclCommInitAll); rank i uses devices[i]. None means
        every visible device, an int n means range(n). Each must be destroyed separately.
        """
    def split(self, color: int | None = None, key: int = 0, config: NCCLConfig | None = None, *,
              trace_buffer: int | None = None) -> Communicator:
        """ncclCommSplit. Collective. color=None (NCCL_SPLIT_NOCOLOR) gives this rank a null communicator;
        config=None inherits the parent's. trace_buffer: the child's flight-recorder ring size (None:
        NCCL4PY_TRACE_BUFFER; 0: not recorded).
        """
    def shrink(self, exclude_ranks: Sequence[int] | None = None, config: NCCLConfig | None = None,
               flag: CommShrinkFlag = ..., *, trace_buffer: int | None = None) -> Communicator:
        """ncclCommShrink: a communicator without the excluded ranks, called by the surviving ranks only.
        flag=ABORT aborts outstanding operations first. trace_buffer: as for split().
        """
    def get_unique_id(self) -> UniqueId:
        """ncclCommGetUniqueId: a single-use id for grow(), called by the grow root only."""
    def grow(self, nranks: int, unique_id: UniqueId | None = None, rank: int | None = None,
             config: NCCLConfig | None = None, *, trace_buffer: int | None = None) -> Communicator:
        """ncclCommGrow. Existing root: comm.grow(n, uid); existing non-root: comm.grow(n); a new rank:
        Communicator().grow(n, uid, rank=r). trace_buffer: as for split().
        """
    def finalize(self) -> None:
        """ncclCommFinalize: flush outstanding work (collective). No-op when null; a nonblocking
        communicator then reports InProgress from get_async_error() until done.
        """
    def destroy(self) -> None:
        """Close the tracked resources, then ncclCommDestroy (an intra-node collective). No-op when null."""
    def abort(self) -> None:
        """Close the tracked resources, then ncclCommAbort: stops in-flight operations (also from another
        thread). No-op when null.
        """
    def revoke(self, flags: int = 0) -> None:
        """ncclCommRevoke: stop in-flight operations; get_async_error() reports InProgress until quiescent."""
    def suspend(self, flags: CommSuspendFlag = ...) -> None:
        """ncclCommSuspend: release dynamic GPU memory; unusable until resume()."""
    def resume(self) -> None:
        """ncclCommResume: undo suspend()."""
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    @property
    def ptr(self) -> int:
        """The raw ncclComm_t (0 when null or destroyed)."""
    @property
    def is_valid(self) -> bool:
        """True while the communicator is initialised and not destroyed."""
    @property
    def nranks(self) -> int:
        """Number of ranks (ncclCommCount, cached). Raises NcclInvalid on a null communicator."""
    @property
    def rank(self) -> int:
        """This rank (ncclCommUserRank, cached). Raises NcclInvalid on a null communicator."""
    @property
    def device(self) -> Any:
        """The cuda.core Device (real or the shim) of ncclCommCuDevice. Raises NcclInvalid on a null communicator."""
    @property
    def cuda_dev(self) -> int:
        """CUDA/HIP device ordinal (ncclCommQueryProperties). Raises NcclInvalid on a null communicator."""
    @property
    def nvml_dev(self) -> int:
        """NVML device index (ncclCommQueryProperties). Raises NcclInvalid on a null communicator."""
    @property
    def device_api_support(self) -> bool:
        """Device API usable. Raises NcclInvalid on a null communicator."""
    @property
    def multimem_support(self) -> bool:
        """Multimem (NVLS) usable. Raises NcclInvalid on a null communicator."""
    @property
    def host_rma_support(self) -> bool:
        """Host-initiated RMA usable. Raises NcclInvalid on a null communicator."""
    @property
    def n_lsa_teams(self) -> int:
        """Number of LSA teams. Raises NcclInvalid on a null communicator."""
    @property
    def gin_type(self) -> NcclGinType | int:
        """GIN transport: an NcclGinType member or a plain int. Raises NcclInvalid on a null communicator."""
    @property
    def railed_gin_type(self) -> NcclGinType | int:
        """Railed GIN transport, as gin_type. Raises NcclInvalid on a null communicator."""
    @property
    def properties(self) -> NCCLCommProperties:
        """Everything ncclCommQueryProperties reports, as an NCCLCommProperties (fields the loaded library predates are None). Raises NcclInvalid on a null communicator."""
    @property
    def team_world(self) -> NCCLTeam:
        """The NCCLTeam of every rank (ncclTeamWorld). Raises NcclInvalid on a null communicator."""
    @property
    def team_lsa(self) -> NCCLTeam:
        """The NCCLTeam of this rank's LSA domain (ncclTeamLsa). Raises NcclInvalid on a null communicator."""
    @property
    def team_rail(self) -> NCCLTeam:
        """The NCCLTeam of this rank's rail (ncclTeamRail). Raises NcclInvalid on a null communicator."""
    @property
    def team_cft_multimem(self) -> NCCLTeam:
        """The CFT multimem NCCLTeam (ncclTeamCftMultimem, 2.31). Raises NcclInvalid on a null communicator."""
    def team_cft(self, mode: NcclCftTeamMode = ...) -> NCCLTeam:
        """The CFT NCCLTeam of this rank in the given NcclCftTeamMode (ncclTeamCft, NCCL 2.31)."""
    def team_rank_to_world(self, team: NCCLTeam, team_rank: int) -> int:
        """The world rank of member team_rank of team (ncclTeamRankToWorld). team: an NCCLTeam of this
        communicator.
        """
    def team_rank_to_lsa(self, team: NCCLTeam, team_rank: int) -> int:
        """The LSA rank of member team_rank of team (ncclTeamRankToLsa)."""

    def send(self, sendbuf: NcclBufferSpec, peer: int, *, stream: NcclStreamSpec | None = None) -> None:
        """Send all of sendbuf (count and dtype from the buffer) to peer (ncclSend). Pair it with peer's
        recv, inside a group when ranks exchange both ways. Enqueued on stream.
        """
    def recv(self, recvbuf: NcclBufferSpec, peer: int, *, stream: NcclStreamSpec | None = None) -> None:
        """Receive from peer into all of recvbuf (ncclRecv); recvbuf must be writable. Enqueued on stream."""
    def signal(self, peer: int, signal_index: int = 0, context: int = 0, flags: int = 0, *,
               stream: NcclStreamSpec | None = None) -> None:
        """Raise signal signal_index on peer (ncclSignal). NCCL requires index, context and flags to be 0
        for now and checks it. Enqueued on stream.
        """
    def wait_signal(self, descs: WaitSignalDesc | Sequence[WaitSignalDesc], *,
                    stream: NcclStreamSpec | None = None) -> None:
        """Wait for the signals described by descs, a WaitSignalDesc or a list/tuple of them, packed into
        one contiguous ncclWaitSignalDesc_t array (ncclWaitSignal). Enqueued on stream.
        """
    def put_signal(self, local_buffer: NcclBufferSpec, peer: int, peer_window: RegisteredWindowHandle,
                   peer_window_offset: int = 0, signal_index: int = 0, context: int = 0, flags: int = 0, *,
                   stream: NcclStreamSpec | None = None) -> None:
        """Write local_buffer into peer's registered window at peer_window_offset (in elements of
        local_buffer's dtype, converted to bytes) and raise a signal there (ncclPutSignal).
        peer_window is a RegisteredWindowHandle; its handle is passed as peerWin. Enqueued on stream.
        """

    # ---- Generated by tools/gen_stubs.py from tools/nccl_surface.py's METHODS: do not edit down to the end. ----
    def allreduce(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec, op: _Op, *,
                  stream: NcclStreamSpec | None = None, config: NCCLCollConfig | None = None) -> None:
        """Reduce sendbuf over all ranks with op into recvbuf on every rank (ncclAllReduce). Collective;
        enqueued on stream. count = sendbuf's element count; recvbuf must have at least that many
        elements of the same dtype and be writable. In place when recvbuf is sendbuf (same address).
        op: an NcclRedOp, an int, or a CustomRedOp of this communicator with the buffers' dtype.
        config: an NCCLCollConfig, passed to ncclAllReduceConfig (every collective takes one).
        Raises NcclInvalid for bad buffers, NCCLError when the library fails.
        """
    def reduce(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec | None, op: _Op, root: int | None = None, *,
               stream: NcclStreamSpec | None = None, config: NCCLCollConfig | None = None) -> None:
        """Reduce sendbuf over all ranks with op into recvbuf on root (ncclReduce); root=None is allreduce.
        Collective; enqueued on stream. count = sendbuf's element count. recvbuf is used (and resolved)
        only on root, where it needs at least count elements of sendbuf's dtype; elsewhere it may be
        anything (None). In place when recvbuf is sendbuf.
        """
    def broadcast(self, sendbuf: NcclBufferSpec | None, recvbuf: NcclBufferSpec, root: int, *,
                  stream: NcclStreamSpec | None = None, config: NCCLCollConfig | None = None) -> None:
        """Copy root's sendbuf into recvbuf on every rank (ncclBroadcast). Collective; enqueued on stream.
        count = recvbuf's element count. sendbuf is used (and resolved) only on root, where it must have
        exactly count elements of recvbuf's dtype; elsewhere it may be anything (None). In place when
        recvbuf is sendbuf.
        """
    def allgather(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec, *, stream: NcclStreamSpec | None = None,
                  config: NCCLCollConfig | None = None) -> None:
        """Concatenate every rank's sendbuf, in rank order, into recvbuf on every rank (ncclAllGather).
        Collective; enqueued on stream. count = sendbuf's element count; recvbuf needs at least
        nranks * count elements of the same dtype. In place when sendbuf is at recvbuf + rank * count.
        """
    def gather(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec | None, root: int | None = None, *,
               stream: NcclStreamSpec | None = None, config: NCCLCollConfig | None = None) -> None:
        """Concatenate every rank's sendbuf, in rank order, into recvbuf on root (ncclGather); root=None is
        allgather. Collective; enqueued on stream. count = sendbuf's element count. recvbuf is used (and
        resolved) only on root, where it needs at least nranks * count elements. In place when sendbuf
        is at recvbuf + root * count.
        """
    def reduce_scatter(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec, op: _Op, *,
                       stream: NcclStreamSpec | None = None, config: NCCLCollConfig | None = None) -> None:
        """Reduce sendbuf over all ranks with op; rank i receives block i (ncclReduceScatter). Collective;
        enqueued on stream. count = sendbuf's element count / nranks (a whole multiple, at least 1);
        recvbuf needs at least count elements. In place when recvbuf is at sendbuf + rank * count.
        """
    def alltoall(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec, *, stream: NcclStreamSpec | None = None,
                 config: NCCLCollConfig | None = None) -> None:
        """Block j of sendbuf goes to rank j, landing as block i (this rank) of its recvbuf
        (ncclAlltoAll; RCCL's ncclAllToAll where only that exists). Collective; enqueued on stream.
        count = sendbuf's element count / nranks per peer (a whole multiple, at least 1); recvbuf needs
        at least nranks * count elements. Identical pointers are passed through unchanged.
        """
    def scatter(self, sendbuf: NcclBufferSpec | None, recvbuf: NcclBufferSpec, root: int, *,
                stream: NcclStreamSpec | None = None, config: NCCLCollConfig | None = None) -> None:
        """Send block i of root's sendbuf to rank i's recvbuf (ncclScatter). Collective; enqueued on
        stream. count = recvbuf's element count. sendbuf is used (and resolved) only on root, where its
        element count must be a whole multiple of nranks with recvbuf holding exactly one block.
        In place when recvbuf is at sendbuf + root * count.
        """
    # ---- End of the generated collective methods. ----

    # RCCL-only collectives (FunctionNotFoundError on other libraries); counts in elements.
    def allreduce_with_bias(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec, bias: NcclBufferSpec, op: _Op,
                            *, stream: NcclStreamSpec | None = None) -> None:
        """RCCL only: allreduce of sendbuf with op into recvbuf, with bias (count elements of the same
        dtype) added into the result (ncclAllReduceWithBias). Collective; enqueued on stream. count =
        sendbuf's element count; recvbuf and bias need at least count elements. In place when recvbuf
        is sendbuf. FunctionNotFoundError on libraries without it.
        """
    def alltoallv(self, sendbuf: NcclBufferSpec, recvbuf: NcclBufferSpec, sendcounts: Sequence[int],
                  sdispls: Sequence[int], recvcounts: Sequence[int], rdispls: Sequence[int], *,
                  stream: NcclStreamSpec | None = None) -> None:
        """RCCL only: rank j receives sendcounts[j] elements from sendbuf + sdispls[j]; rank i's data lands
        at recvbuf + rdispls[i], recvcounts[i] elements (ncclAlltoAllv, or the older ncclAllToAllv).
        The four arguments are sequences of nranks ints, in elements (not bytes). Collective; enqueued
        on stream. Both buffers must cover every range they address; they must not overlap.
        """
    def register_buffer(self, buffer: NcclBufferSpec) -> RegisteredBufferHandle:
        """Register buffer (count * itemsize bytes) with the communicator for zero-copy transfers
        (ncclCommRegister). Local, not collective. Returns a tracked RegisteredBufferHandle, which keeps
        buffer alive until it is closed.
        """
    def register_window(self, buffer: NcclBufferSpec,
                        flags: WindowFlag | None = None) -> RegisteredWindowHandle:
        """Register buffer as a window for one-sided and symmetric operations (ncclCommWindowRegister).
        Collective. Always returns the RegisteredWindowHandle (nccl4py 0.6.0); its handle may stay 0
        until the group ends (inside group()) or until the state is Success (nonblocking).
        """
    def create_pre_mul_sum(self, scalar: NcclScalarSpec, datatype: NcclDataType | None = None) -> CustomRedOp:
        """A custom reduction computing scalar * sum(inputs) (ncclRedOpCreatePreMulSum). scalar: a Python
        int/float (a 1-element host array of datatype, or int64/float64, used as HostImmediate), a
        1-element numpy.ndarray (HostImmediate), or a 1-element device buffer (Device; its dtype must
        match datatype when given). The host array is kept alive on the returned, tracked CustomRedOp,
        which collectives accept as op for buffers of its dtype.
        """
    def create_dev_comm(self, requirements: NCCLDevCommRequirements | None = None) -> DevCommResource:
        """A DevCommResource: a device communicator made by ncclDevCommCreate from requirements (an
        NCCLDevCommRequirements; None is the initializer's). Collective. The library's error when it
        refuses (the host backend does, by name); NcclInvalid on a null communicator.
        """
    def close_all_resources(self) -> None:
        """Close every tracked resource (registered buffers and windows, custom operators), swallowing
        errors. Idempotent.
        """
    def get_last_error(self) -> str:
        """ncclGetLastError: the library's last error text."""
    def get_async_error(self) -> Result | int:
        """ncclCommGetAsyncError: the state code as a Result member (Success, InProgress or an error), not
        raised. Once it is not InProgress, split/shrink children kept alive are released.
        """
    def get_mem_stat(self, stat: NcclCommMemStat) -> int:
        """ncclCommMemStats: bytes for the NcclCommMemStat kind (0/1 for GPU_MEM_SUSPENDED)."""
