# Stub of nccl.bindings.nccl (C functions of nccl._ext, set into the module by nccl.py).
# Every public name is declared (tests/core/test_typing.py checks it against __all__).
#
# The head, down to the marker line below, is written by hand: the handle classes, the type
# aliases the bindings' parameters use and the struct wrappers' common base. The rest is written
# by tools/gen_stubs.py from the installed package (the C text signatures and docstrings, the
# struct layouts) and from the description of the NCCL surface (tools/nccl_surface.py: the
# parameter and return types); every docstring here, the head's too, is the runtime's. Regenerate
# with `python tools/gen_stubs.py`.
from collections.abc import Sequence
from typing import Any, SupportsIndex, final, overload, type_check_only

from typing_extensions import Buffer, Self

import numpy

__version__: str

@final
class Comm:
    """A communicator handle (ncclComm_t). Creation calls in their short form return one; inside a group
    the library fills it when the group ends. Every binding takes a Comm or an int; int(comm),
    comm.handle and comm.__index__() give the address, and a Comm compares and hashes as that int.
    """
    def __new__(cls, handle: SupportsIndex | Comm = 0) -> Self: ...
    @property
    def handle(self) -> int:
        """The handle's value, as an int (0 while empty or still pending)."""
    @property
    def handle_ptr(self) -> int:
        """Address of this object's own handle slot: pass it where a 0.3.1-form creation call wants the
        address of the slot to fill, and keep the object alive until the library wrote it.
        """
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: SupportsIndex | float, /) -> bool: ...
    def __le__(self, other: SupportsIndex | float, /) -> bool: ...
    def __gt__(self, other: SupportsIndex | float, /) -> bool: ...
    def __ge__(self, other: SupportsIndex | float, /) -> bool: ...
    def __format__(self, spec: str) -> str: ...

@final
class Window:
    """A window handle (ncclWindow_t), returned by comm_window_register(comm, buff, size, win_flags);
    inside a group the library fills it when the group ends. Every binding takes a Window or an int.
    """
    def __new__(cls, handle: SupportsIndex | Window = 0) -> Self: ...
    @property
    def handle(self) -> int:
        """The handle's value, as an int (0 while empty or still pending)."""
    @property
    def handle_ptr(self) -> int:
        """Address of this object's own handle slot: pass it where a 0.3.1-form creation call wants the
        address of the slot to fill, and keep the object alive until the library wrote it.
        """
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: SupportsIndex | float, /) -> bool: ...
    def __le__(self, other: SupportsIndex | float, /) -> bool: ...
    def __gt__(self, other: SupportsIndex | float, /) -> bool: ...
    def __ge__(self, other: SupportsIndex | float, /) -> bool: ...
    def __format__(self, spec: str) -> str: ...

@final
class PointerBox:
    """Stable storage for a pointer that NCCL may fill asynchronously; keep the box alive until then."""
    def __new__(cls, ptr: int = 0) -> Self: ...
    ptr: int
    @property
    def address(self) -> int:
        """Address of the box's slot (pass it as an out-parameter)."""
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __format__(self, spec: str) -> str: ...

# A communicator or window parameter: the handle object, or its address as an int (0.3.1).
_CommArg = Comm | int
_WindowArg = Window | int
# An address: an int, or an object with __index__ (PointerBox, struct wrappers); never a handle.
_Address = int | PointerBox | _Struct
# A unique id: its address, or a buffer of exactly its size (bytes, UniqueId, numpy ...).
_Ids = int | PointerBox | _Struct | Buffer

# Struct wrappers: each is its own C type at run time; _StructWrapper exists only here, to declare
# once the methods they all have.
@type_check_only
class _StructWrapper:
    def __init__(self) -> None: ...
    @classmethod
    def from_buffer(cls, buffer: Buffer) -> Self: ...
    @classmethod
    def from_data(cls, data: numpy.ndarray[Any, Any]) -> Self: ...
    @classmethod
    def from_ptr(cls, ptr: int, readonly: bool = False, owner: object = None) -> Self: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __bytes__(self) -> bytes: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...  # memoryview(wrapper): the struct's bytes
    @property
    def ptr(self) -> int: ...

# ---- Generated below by tools/gen_stubs.py from the runtime: do not edit below this line. ----

# Enums and constants: the runtime module itself (nccl._enums, plain typed Python), so that
# their members and values have one source.
from nccl._enums import (
    CftCap as CftCap,
    CftTeamMode as CftTeamMode,
    CommMemStat as CommMemStat,
    DataType as DataType,
    EncryptionMode as EncryptionMode,
    GinConnectionType as GinConnectionType,
    GinSignalOp as GinSignalOp,
    GinType as GinType,
    HostCftMode as HostCftMode,
    NCCL_API_MAGIC as NCCL_API_MAGIC,
    NCCL_CONFIG_UNDEF_INT as NCCL_CONFIG_UNDEF_INT,
    NCCL_CTA_POLICY_DEFAULT as NCCL_CTA_POLICY_DEFAULT,
    NCCL_CTA_POLICY_EFFICIENCY as NCCL_CTA_POLICY_EFFICIENCY,
    NCCL_CTA_POLICY_ZERO as NCCL_CTA_POLICY_ZERO,
    NCCL_REVOKE_DEFAULT as NCCL_REVOKE_DEFAULT,
    NCCL_SHRINK_ABORT as NCCL_SHRINK_ABORT,
    NCCL_SHRINK_DEFAULT as NCCL_SHRINK_DEFAULT,
    NCCL_SPLIT_NOCOLOR as NCCL_SPLIT_NOCOLOR,
    NCCL_SUSPEND_MEM as NCCL_SUSPEND_MEM,
    NCCL_UNIQUE_ID_BYTES as NCCL_UNIQUE_ID_BYTES,
    NCCL_WIN_COLL_SYMMETRIC as NCCL_WIN_COLL_SYMMETRIC,
    NCCL_WIN_DEFAULT as NCCL_WIN_DEFAULT,
    NCCL_WIN_REQUIRED_ALIGNMENT as NCCL_WIN_REQUIRED_ALIGNMENT,
    NCCL_WIN_STRICT_ORDERING as NCCL_WIN_STRICT_ORDERING,
    NvlsHostMode as NvlsHostMode,
    RedOp as RedOp,
    RedOpDummy as RedOpDummy,
    RedOp_dummy as RedOp_dummy,
    Result as Result,
    ScalarResidence as ScalarResidence,
)

# Errors (nccl._errors)
from nccl._errors import (
    FunctionNotFoundError as FunctionNotFoundError,
    HostBackendWarning as HostBackendWarning,
    NCCLError as NCCLError,
    NCCLInternalError as NCCLInternalError,
    NCCLInvalidArgument as NCCLInvalidArgument,
    NCCLInvalidUsage as NCCLInvalidUsage,
    NCCLNullHandleError as NCCLNullHandleError,
    NCCLRemoteError as NCCLRemoteError,
    NCCLSystemError as NCCLSystemError,
    NCCLTimeout as NCCLTimeout,
    NCCLUnhandledCudaError as NCCLUnhandledCudaError,
    NotSupportedError as NotSupportedError,
)

# The numpy structured dtype of each struct wrapper
cft_barrier_handle_dtype: numpy.dtype[numpy.void]
coll_config_dtype: numpy.dtype[numpy.void]
comm_properties_dtype: numpy.dtype[numpy.void]
config_dtype: numpy.dtype[numpy.void]
config_ext_dtype: numpy.dtype[numpy.void]
dev_comm_dtype: numpy.dtype[numpy.void]
dev_comm_requirements_dtype: numpy.dtype[numpy.void]
dev_resource_requirements_dtype: numpy.dtype[numpy.void]
encryption_config_dtype: numpy.dtype[numpy.void]
gin_barrier_handle_dtype: numpy.dtype[numpy.void]
ll_a2a_handle_dtype: numpy.dtype[numpy.void]
lsa_barrier_handle_dtype: numpy.dtype[numpy.void]
multimem_handle_dtype: numpy.dtype[numpy.void]
resource_window_vidmem_dtype: numpy.dtype[numpy.void]
sim_info_dtype: numpy.dtype[numpy.void]
team_dtype: numpy.dtype[numpy.void]
team_requirements_dtype: numpy.dtype[numpy.void]
unique_id_dtype: numpy.dtype[numpy.void]
wait_signal_desc_dtype: numpy.dtype[numpy.void]

# Struct wrappers: attribute access to one C struct, in memory of their own or at an address
# (fields from the layout tables, src/ext/structs/struct_layouts.c).

@final
class CftBarrierHandle(_StructWrapper):
    """A CFT barrier handle of a device communicator.

    A wrapper of ncclCftBarrierHandle_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; cft_barrier_handle_dtype is the matching numpy dtype.
    """
    buf_handle: int
    n_barriers: int

@final
class CollConfig(_StructWrapper):
    """Per-call settings of the ``*_config`` collectives (CTAs, algorithm selection).

    A wrapper of ncclCollConfig_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; coll_config_dtype is the matching numpy dtype.
    """
    size_: int
    magic: int
    version: int
    ext: int
    min_ctas: int
    max_ctas: int
    nvls_ctas: int
    cga_cluster_size: int
    alg_selection: str
    force_alg_selection: int
    cta_policy: int
    user_profiler_tag: int
    launch_completion_event_handle: int

@final
class CommProperties(_StructWrapper):
    """What comm_query_properties reports about a communicator (ranks, devices, supported features).

    A wrapper of ncclCommProperties_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; comm_properties_dtype is the matching numpy dtype.
    """
    size_: int
    magic: int
    version: int
    rank: int
    n_ranks: int
    cuda_dev: int
    nvml_dev: int
    device_api_support: int
    multimem_support: int
    gin_type: int
    n_lsa_teams: int
    host_rma_support: int
    railed_gin_type: int
    comm_hash: int
    gin_min_stride: int
    gin_connection_type: int
    gin_support: memoryview
    dev_comm_runtime_version_size: int
    cft_support: int
    cft_multicast_support: int
    cft_counted_support: int

@final
class Config(_StructWrapper):
    """Communicator configuration for comm_init_rank_config, comm_split and comm_shrink.

    A wrapper of ncclConfig_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; config_dtype is the matching numpy dtype.
    """
    size_: int
    magic: int
    version: int
    blocking: int
    cga_cluster_size: int
    min_ctas: int
    max_ctas: int
    net_name: str
    split_share: int
    traffic_class: int
    comm_name: str
    collnet_enable: int
    cta_policy: int
    shrink_share: int
    nvls_ctas: int
    n_channels_per_net_peer: int
    nvlink_centric_sched: int
    graph_usage_mode: int
    num_rma_ctx: int
    max_p2p_peers: int
    graph_stream_ordering: int
    launch_order_implicit: int
    num_rma_sig: int
    rma_eager_init: int
    host_cft_mode: int
    nvls_host_mode: int

@final
class ConfigExt(_StructWrapper):
    """Extended communicator configuration (ncclConfigExt_t).

    A wrapper of ncclConfigExt_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; config_ext_dtype is the matching numpy dtype.
    """
    next: int
    key: memoryview
    val: int

@final
class DevComm(_StructWrapper):
    """A device communicator as dev_comm_create fills it (read-only on the host).

    A wrapper of ncclDevComm_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; dev_comm_dtype is the matching numpy dtype.
    """
    magic: int
    version: int
    rank: int
    n_ranks: int
    n_ranks_rcp32: int
    lsa_rank: int
    lsa_size: int
    lsa_size_rcp32: int
    window_table: int
    resource_window: int
    resource_window_inlined: ResourceWindowVidmem
    hybrid_dense_gin_barrier: GinBarrierHandle
    lsa_multimem: MultimemHandle
    lsa_barrier: LsaBarrierHandle
    rail_gin_barrier: GinBarrierHandle
    gin_connection_count: int
    backend_index: int
    gin_net_device_types: memoryview
    gin_handles: memoryview
    gin_signal_count: int
    gin_counter_count: int
    gin_signal_shadows: int
    gin_context_count: int
    gin_connection_stride: int
    gin_context_stride: int
    gin_strong_legacy_signals: int
    abort_flag: int
    hybrid_lsa_barrier: LsaBarrierHandle
    hybrid_rail_gin_barrier: GinBarrierHandle
    world_gin_barrier: GinBarrierHandle
    gin_connection_stride_rcp32: int
    cft_rank: int
    cft_size: int
    cft_multimem_rank: int
    cft_multimem_size: int
    cft_multimem_size_rcp32: int
    uc_le_id: int
    mc_le_id: int
    cft_barrier: CftBarrierHandle
    cft_multimem_barrier: CftBarrierHandle

@final
class DevCommRequirements(_StructWrapper):
    """What dev_comm_create must provide: barriers, LSA/GIN resources, teams.

    A wrapper of ncclDevCommRequirements_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; dev_comm_requirements_dtype is the matching numpy dtype.
    """
    size_: int
    magic: int
    version: int
    resource_requirements_list: int
    team_requirements_list: int
    lsa_multimem: int
    barrier_count: int
    lsa_barrier_count: int
    rail_gin_barrier_count: int
    lsa_ll_a2a_block_count: int
    lsa_ll_a2a_slot_count: int
    gin_force_enable: int
    gin_context_count: int
    gin_signal_count: int
    gin_counter_count: int
    gin_connection_type: int
    gin_exclusive_contexts: int
    gin_queue_depth: int
    gin_traffic_class: int
    world_gin_barrier_count: int
    gin_strong_signals_required: int
    gin_va_signals_required: int
    gin_custom_stride: int
    gin_type: int
    use_runtime_version: int
    cft_caps: int
    cft_barrier_count: int

@final
class DevResourceRequirements(_StructWrapper):
    """Resources a device communicator must provide (a linked list entry of DevCommRequirements).

    A wrapper of ncclDevResourceRequirements_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; dev_resource_requirements_dtype is the matching numpy dtype.
    """
    next: int
    buffer_size: int
    buffer_align: int
    out_buffer_handle: int
    gin_signal_count: int
    gin_counter_count: int
    out_gin_signal_start: int
    out_gin_counter_start: int

@final
class EncryptionConfig(_StructWrapper):
    """Traffic encryption settings for set_encryption.

    A wrapper of ncclEncryptionConfig_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; encryption_config_dtype is the matching numpy dtype.
    """
    size_: int
    magic: int
    version: int
    mode: int
    psk: str

@final
class GinBarrierHandle(_StructWrapper):
    """A GPU-initiated-networking barrier handle of a device communicator.

    A wrapper of ncclGinBarrierHandle_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; gin_barrier_handle_dtype is the matching numpy dtype.
    """
    signal0: int
    unused: int

@final
class LLA2AHandle(_StructWrapper):
    """A low-latency all-to-all handle of a device communicator.

    A wrapper of ncclLLA2AHandle_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; ll_a2a_handle_dtype is the matching numpy dtype.
    """
    buf_handle: int
    n_slots: int

@final
class LsaBarrierHandle(_StructWrapper):
    """A load/store-accessible barrier handle of a device communicator.

    A wrapper of ncclLsaBarrierHandle_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; lsa_barrier_handle_dtype is the matching numpy dtype.
    """
    buf_handle: int
    n_barriers: int

@final
class MultimemHandle(_StructWrapper):
    """A multimem (NVLS) handle of a device communicator.

    A wrapper of ncclMultimemHandle_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; multimem_handle_dtype is the matching numpy dtype.
    """
    mc_base_ptr: int

@final
class ResourceWindowVidmem(_StructWrapper):
    """A window's device-memory resource of a device communicator.

    A wrapper of ncclResourceWindowVidmem_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; resource_window_vidmem_dtype is the matching numpy dtype.
    """
    lsa_flat_base: int
    stride4g: int
    mc_offset4k: int

@final
class SimInfo(_StructWrapper):
    """What a group simulation reports (group_simulate_end): the estimated time.

    A wrapper of ncclSimInfo_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; sim_info_dtype is the matching numpy dtype.
    """
    size_: int
    magic: int
    version: int
    estimated_time: float

@final
class Team(_StructWrapper):
    """A team (a set of ranks) of a device communicator: rank, size and stride.

    A wrapper of ncclTeam_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; team_dtype is the matching numpy dtype.
    """
    n_ranks: int
    rank: int
    stride: int

@final
class TeamRequirements(_StructWrapper):
    """A team a device communicator must provide (a linked list entry of DevCommRequirements).

    A wrapper of ncclTeamRequirements_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; team_requirements_dtype is the matching numpy dtype.
    """
    next: int
    team: Team
    multimem: int
    out_multimem_handle: int

@final
class UniqueId(_StructWrapper):
    """A unique id: what every rank of a new communicator must share (get_unique_id()).

    A wrapper of ncclUniqueId, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; unique_id_dtype is the matching numpy dtype.
    """
    internal: bytes

@final
class WaitSignalDesc(_StructWrapper):
    """One peer's entry of wait_signal: the signal count to wait for from that peer.

    A wrapper of ncclWaitSignalDesc_t, zero-initialised as its NCCL initializer does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing memory; int(obj) and .ptr give the address; wait_signal_desc_dtype is the matching numpy dtype.
    """
    op_cnt: int
    peer: int
    sig_idx: int
    ctx: int

# Any struct wrapper, passed where an address is expected (it converts with __index__).
_Struct = (
    CftBarrierHandle | CollConfig | CommProperties | Config | ConfigExt | DevComm | DevCommRequirements |
    DevResourceRequirements | EncryptionConfig | GinBarrierHandle | LLA2AHandle | LsaBarrierHandle | MultimemHandle |
    ResourceWindowVidmem | SimInfo | Team | TeamRequirements | UniqueId | WaitSignalDesc
)

# 0.3.1's spellings of renamed names (the enums' come with the enums above).
ResourceWindow_vidmem = ResourceWindowVidmem
lla2a_calc_slots = ll_a2a_calc_slots

# Functions (types from tools/nccl_surface.py; @overload pairs: the two argument-count forms)
def all_gather(sendbuff: _Address, recvbuff: _Address, sendcount: int, datatype: int, comm: _CommArg,
               stream: int) -> None:
    """ncclAllGather: gather sendcount elements from every rank everywhere. Collective."""
def all_gather_config(sendbuff: _Address, recvbuff: _Address, sendcount: int, datatype: int, comm: _CommArg,
                      stream: int, config: _Address) -> None:
    """ncclAllGatherConfig: gather sendcount elements from every rank everywhere. Collective; enqueued on stream."""
def all_reduce(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, comm: _CommArg,
               stream: int) -> None:
    """ncclAllReduce: reduce over all ranks into every recvbuff. Collective; enqueued on stream."""
def all_reduce_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, comm: _CommArg,
                      stream: int, config: _Address) -> None:
    """ncclAllReduceConfig: reduce over all ranks into every recvbuff. Collective; enqueued on stream."""
def allto_all(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, comm: _CommArg,
              stream: int) -> None:
    """ncclAlltoAll (RCCL's older ncclAllToAll when that is all the library has): count elements to and
    from every rank. Collective; enqueued on stream.
    """
def allto_all_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, comm: _CommArg, stream: int,
                     config: _Address) -> None:
    """ncclAlltoAllConfig: count elements to and from every rank. Collective; enqueued on stream."""
def bcast(buff: _Address, count: int, datatype: int, root: int, comm: _CommArg, stream: int) -> None:
    """ncclBcast (deprecated, in place): broadcast from root. Collective; enqueued on stream."""
def broadcast(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
              stream: int) -> None:
    """ncclBroadcast: copy root's sendbuff to every recvbuff. Collective; enqueued on stream."""
def broadcast_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
                     stream: int, config: _Address) -> None:
    """ncclBroadcastConfig: copy root's sendbuff to every recvbuff. Collective; enqueued on stream."""
def check_status(status: int) -> None:
    """Raise NCCLError(status) unless status is Success (0) or InProgress (7)."""
def comm_abort(comm: _CommArg) -> None:
    """ncclCommAbort: abort in-flight operations and free the communicator. A null comm (0) is refused
    (ValueError).
    """
def comm_count(comm: _CommArg) -> int:
    """ncclCommCount: the number of ranks."""
def comm_cu_device(comm: _CommArg) -> int:
    """ncclCommCuDevice: the device ordinal."""
def comm_deregister(comm: _CommArg, handle: _Address) -> None:
    """ncclCommDeregister."""
def comm_destroy(comm: _CommArg) -> None:
    """ncclCommDestroy: free the communicator. A null comm (0) is refused (ValueError)."""
def comm_finalize(comm: _CommArg) -> None:
    """ncclCommFinalize: flush this rank's work. Collective. A null comm (0) is refused (ValueError)."""
def comm_get_async_error(comm: _CommArg) -> int:
    """ncclCommGetAsyncError: the communicator's asynchronous state (returned, not raised)."""
@overload
def comm_get_unique_id(comm: _CommArg) -> UniqueId:
    """ncclCommGetUniqueId: a UniqueId for growing comm. 0.2.0 form (comm, unique_id) writes to that address."""
@overload
def comm_get_unique_id(comm: _CommArg, unique_id: _Address) -> None:
    """ncclCommGetUniqueId: a UniqueId for growing comm. 0.2.0 form (comm, unique_id) writes to that address."""
@overload
def comm_grow(comm: _CommArg, n_ranks: int, unique_id: _Address, rank: int, config: _Address) -> Comm:
    """ncclCommGrow into the slot at address newcomm; returns the status. unique_id is an address or 0.
    comm is 0 (or an empty Comm) on a rank that joins. Short form (without newcomm) returns the new Comm.
    """
@overload
def comm_grow(comm: _CommArg, n_ranks: int, unique_id: _Address, rank: int, newcomm: int, config: _Address) -> int:
    """ncclCommGrow into the slot at address newcomm; returns the status. unique_id is an address or 0.
    comm is 0 (or an empty Comm) on a rank that joins. Short form (without newcomm) returns the new Comm.
    """
def comm_init_all(ndev: int, devlist: Sequence[int] | int | None) -> list[Comm]:
    """ncclCommInitAll: ndev communicators in this process; returns a list of ndev Comm.
    devlist: a sequence of ints, an int address, or None (devices 0..ndev-1).
    """
@overload
def comm_init_rank(nranks: int, comm_id: _Ids, rank: int) -> Comm:
    """ncclCommInitRank into the slot at address comm; returns the status. Collective, blocking.
    Short form comm_init_rank(nranks, comm_id, rank) returns the new Comm.
    """
@overload
def comm_init_rank(comm: int, nranks: int, comm_id: _Ids, rank: int) -> int:
    """ncclCommInitRank into the slot at address comm; returns the status. Collective, blocking.
    Short form comm_init_rank(nranks, comm_id, rank) returns the new Comm.
    """
@overload
def comm_init_rank_config(nranks: int, comm_id: _Ids, rank: int, config: _Address) -> Comm:
    """ncclCommInitRankConfig into the slot at address comm; returns the status (0, or 7 in progress).
    Short form comm_init_rank_config(nranks, comm_id, rank, config) returns the new Comm.
    """
@overload
def comm_init_rank_config(comm: int, nranks: int, comm_id: _Ids, rank: int, config: _Address) -> int:
    """ncclCommInitRankConfig into the slot at address comm; returns the status (0, or 7 in progress).
    Short form comm_init_rank_config(nranks, comm_id, rank, config) returns the new Comm.
    """
@overload
def comm_init_rank_scalable(nranks: int, myrank: int, n_id: int, comm_ids: _Ids, config: _Address) -> Comm:
    """ncclCommInitRankScalable into the slot at address newcomm; returns the status. comm_ids: an address
    or a buffer of n_id * 128 bytes. Short form (without newcomm) returns the new Comm.
    """
@overload
def comm_init_rank_scalable(newcomm: int, nranks: int, myrank: int, n_id: int, comm_ids: _Ids,
                            config: _Address) -> int:
    """ncclCommInitRankScalable into the slot at address newcomm; returns the status. comm_ids: an address
    or a buffer of n_id * 128 bytes. Short form (without newcomm) returns the new Comm.
    """
def comm_mem_stats(comm: _CommArg, stat: int) -> int:
    """ncclCommMemStats: the value of a CommMemStat."""
@overload
def comm_query_properties(comm: _CommArg) -> CommProperties:
    """ncclCommQueryProperties: a CommProperties. 0.2.0 form (comm, props) fills the struct at that address."""
@overload
def comm_query_properties(comm: _CommArg, props: _Address) -> None:
    """ncclCommQueryProperties: a CommProperties. 0.2.0 form (comm, props) fills the struct at that address."""
def comm_register(comm: _CommArg, buff: _Address, size: int) -> int:
    """ncclCommRegister: returns the handle."""
def comm_resume(comm: _CommArg) -> None:
    """ncclCommResume: resume a suspended communicator."""
def comm_revoke(comm: _CommArg, revoke_flags: int) -> None:
    """ncclCommRevoke: stop in-flight work, keep resources."""
@overload
def comm_shrink(comm: _CommArg, exclude_ranks_list: Sequence[int] | int, exclude_ranks_count: int, config: _Address,
                shrink_flags: int) -> Comm:
    """ncclCommShrink into the slot at address newcomm; returns the status. Called by the survivors.
    exclude_ranks_list: a sequence of ints (copied) or an int address. Short form (without newcomm)
    returns the new Comm.
    """
@overload
def comm_shrink(comm: _CommArg, exclude_ranks_list: Sequence[int] | int, exclude_ranks_count: int, newcomm: int,
                config: _Address, shrink_flags: int) -> int:
    """ncclCommShrink into the slot at address newcomm; returns the status. Called by the survivors.
    exclude_ranks_list: a sequence of ints (copied) or an int address. Short form (without newcomm)
    returns the new Comm.
    """
@overload
def comm_split(comm: _CommArg, color: int, key: int, config: _Address) -> Comm:
    """ncclCommSplit into the slot at address newcomm; returns the status. Collective over comm.
    Short form comm_split(comm, color, key, config) returns the new Comm (empty for NCCL_SPLIT_NOCOLOR).
    """
@overload
def comm_split(comm: _CommArg, color: int, key: int, newcomm: int, config: _Address) -> int:
    """ncclCommSplit into the slot at address newcomm; returns the status. Collective over comm.
    Short form comm_split(comm, color, key, config) returns the new Comm (empty for NCCL_SPLIT_NOCOLOR).
    """
def comm_suspend(comm: _CommArg, flags: int) -> None:
    """ncclCommSuspend: release resources (NCCL_SUSPEND_MEM)."""
def comm_user_rank(comm: _CommArg) -> int:
    """ncclCommUserRank: this rank."""
def comm_window_deregister(comm: _CommArg, win: _WindowArg) -> None:
    """ncclCommWindowDeregister."""
@overload
def comm_window_register(comm: _CommArg, buff: _Address, size: int, win_flags: int) -> Window:
    """ncclCommWindowRegister into the slot at address win; returns the status. Collective.
    Short form comm_window_register(comm, buff, size, win_flags) returns the new Window (inside a group
    the library fills it when the group ends).
    """
@overload
def comm_window_register(comm: _CommArg, buff: _Address, size: int, win: int, win_flags: int) -> int:
    """ncclCommWindowRegister into the slot at address win; returns the status. Collective.
    Short form comm_window_register(comm, buff, size, win_flags) returns the new Window (inside a group
    the library fills it when the group ends).
    """
@overload
def dev_comm_create(comm: _CommArg, reqs: _Address) -> DevComm:
    """ncclDevCommCreate: a new DevComm built from the requirements reqs (a DevCommRequirements or its
    address). The 3-argument form dev_comm_create(comm, reqs, out_dev_comm) fills the struct at
    address out_dev_comm instead and returns None.
    """
@overload
def dev_comm_create(comm: _CommArg, reqs: _Address, out_dev_comm: _Address) -> None:
    """ncclDevCommCreate: a new DevComm built from the requirements reqs (a DevCommRequirements or its
    address). The 3-argument form dev_comm_create(comm, reqs, out_dev_comm) fills the struct at
    address out_dev_comm instead and returns None.
    """
def dev_comm_destroy(comm: _CommArg, dev_comm: _Address) -> None:
    """ncclDevCommDestroy."""
def gather(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
           stream: int) -> None:
    """ncclGather: gather count elements from every rank onto root. Collective."""
def gather_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
                  stream: int, config: _Address) -> None:
    """ncclGatherConfig: gather count elements from every rank onto root. Collective; enqueued on stream."""
def get_cft_device_le_info(window: _WindowArg, offset: int, peer_cft: int, cft_team: _Address) -> tuple[int, int]:
    """ncclGetCftDeviceLeInfo: (le_id, le_offset) of CFT rank peer_cft of cft_team (a Team) at offset."""
def get_error_string(result: int) -> str:
    """ncclGetErrorString: the text of a result code."""
def get_last_error(comm: _CommArg) -> str:
    """ncclGetLastError: the last error text ('' if none). comm may be 0: the error of a call made
    without a communicator.
    """
def get_library_flavour() -> str:
    """'rccl', 'nccl' or 'host': which kind of library is loaded. Loads the library on first use."""
def get_library_path() -> str:
    """Absolute path of the library every symbol was resolved from. Loads the library on first use."""
def get_load_attempts() -> list[tuple[str, str | None]]:
    """Each candidate the loader tried, as (candidate, error), with error None for the one that loaded.
    Loads the library on first use; raises NotSupportedError if nothing loads.
    """
def get_lsa_device_pointer(window: _WindowArg, offset: int, lsa_rank: int) -> int:
    """ncclGetLsaDevicePointer: the pointer of lsa_rank's window at offset."""
def get_lsa_multimem_device_pointer(window: _WindowArg, offset: int) -> int:
    """ncclGetLsaMultimemDevicePointer: the multimem pointer at offset."""
def get_multimem_device_le_info(window: _WindowArg, offset: int) -> tuple[int, int]:
    """ncclGetMultimemDeviceLeInfo: (le_id, le_offset) of the multimem logical endpoint at offset."""
def get_multimem_device_pointer(window: _WindowArg, offset: int, multimem: _Address) -> int:
    """ncclGetMultimemDevicePointer: the multimem pointer at offset through multimem (a MultimemHandle)."""
def get_peer_device_le_info(window: _WindowArg, offset: int, peer_world: int) -> tuple[int, int]:
    """ncclGetPeerDeviceLeInfo: (le_id, le_offset) of world rank peer_world's window at offset."""
def get_peer_device_pointer(window: _WindowArg, offset: int, peer: int) -> int:
    """ncclGetPeerDevicePointer: the pointer of peer's window at offset."""
@overload
def get_unique_id() -> UniqueId:
    """ncclGetUniqueId: a new UniqueId. The 0.2.0 form get_unique_id(unique_id) writes to that address."""
@overload
def get_unique_id(unique_id: _Address) -> None:
    """ncclGetUniqueId: a new UniqueId. The 0.2.0 form get_unique_id(unique_id) writes to that address."""
def get_version() -> int:
    """ncclGetVersion: the library's version code."""
def gin_barrier_create_requirement(comm: _CommArg, team: _Address, n_barriers: int, out_handle: _Address,
                                   out_req: _Address) -> None:
    """ncclGinBarrierCreateRequirement: fill out_handle (a GinBarrierHandle) and out_req (a
    DevResourceRequirements) for n_barriers GIN barriers over team; either may be an int address.
    """
def group_end() -> None:
    """ncclGroupEnd: the outermost one executes the group."""
@overload
def group_simulate_end() -> SimInfo:
    """ncclGroupSimulateEnd: end the group without communicating; returns a SimInfo with the estimate.
    0.2.0 form group_simulate_end(sim_info) fills the struct at that address.
    """
@overload
def group_simulate_end(sim_info: _Address) -> None:
    """ncclGroupSimulateEnd: end the group without communicating; returns a SimInfo with the estimate.
    0.2.0 form group_simulate_end(sim_info) fills the struct at that address.
    """
def group_start() -> None:
    """ncclGroupStart: defer calls until the matching group_end()."""
def ll_a2a_calc_slots(max_elts: int, max_elt_size: int) -> int:
    """ncclLLA2ACalcSlots: the slot count a low-latency all-to-all of max_elts elements of
    max_elt_size bytes needs (0.3.1's spelling lla2a_calc_slots is an alias).
    """
def ll_a2a_create_requirement(n_blocks: int, n_slots: int, out_handle: _Address, out_req: _Address) -> None:
    """ncclLLA2ACreateRequirement: fill out_handle (an LLA2AHandle) and out_req (a
    DevResourceRequirements) for a low-latency all-to-all; either may be an int address.
    """
def lsa_barrier_create_requirement(team: _Address, n_barriers: int, out_handle: _Address,
                                   out_req: _Address) -> None:
    """ncclLsaBarrierCreateRequirement: fill out_handle (an LsaBarrierHandle) and out_req (a
    DevResourceRequirements) for n_barriers LSA barriers over team; either may be an int address.
    """
def mem_alloc(size: int) -> int:
    """ncclMemAlloc: allocate size bytes; returns the pointer."""
def mem_free(ptr: _Address) -> None:
    """ncclMemFree: free memory from mem_alloc."""
def param_dump_all() -> None:
    """ncclParamDumpAll: the library prints every parameter and its value (on its own stdout)."""
def param_get_all_keys() -> list[str]:
    """ncclParamGetAllParameterKeys: the keys of every library parameter (a list of str; NULL entries of
    the library's table are left out).
    """
def param_get_parameter(key: str) -> str:
    """ncclParamGetParameter: the value of the library parameter `key` (an ``NCCL_*`` name), as text."""
def put_signal(localbuff: _Address, count: int, datatype: int, peer: int, peer_win: _WindowArg, peer_win_offset: int,
               sig_idx: int, ctx: int, flags: int, comm: _CommArg, stream: int) -> None:
    """ncclPutSignal: one-sided write into peer's window (offset in bytes), then signal."""
def recv(recvbuff: _Address, count: int, datatype: int, peer: int, comm: _CommArg, stream: int) -> None:
    """ncclRecv: receive count elements from peer. Enqueued on stream."""
def red_op_create_pre_mul_sum(scalar: _Address, datatype: int, residence: int, comm: _CommArg) -> int:
    """ncclRedOpCreatePreMulSum: a new reduction op (returned as an int). scalar is an address."""
def red_op_destroy(op: int, comm: _CommArg) -> None:
    """ncclRedOpDestroy."""
def reduce(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, root: int, comm: _CommArg,
           stream: int) -> None:
    """ncclReduce: reduce onto root. Collective; enqueued on stream."""
def reduce_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, root: int, comm: _CommArg,
                  stream: int, config: _Address) -> None:
    """ncclReduceConfig: reduce onto root. Collective; enqueued on stream."""
def reduce_scatter(sendbuff: _Address, recvbuff: _Address, recvcount: int, datatype: int, op: int, comm: _CommArg,
                   stream: int) -> None:
    """ncclReduceScatter: reduce, then scatter recvcount elements per rank. Collective."""
def reduce_scatter_config(sendbuff: _Address, recvbuff: _Address, recvcount: int, datatype: int, op: int,
                          comm: _CommArg, stream: int, config: _Address) -> None:
    """ncclReduceScatterConfig: reduce, then scatter recvcount elements per rank. Collective; enqueued on stream."""
def scatter(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
            stream: int) -> None:
    """ncclScatter: scatter count elements per rank from root. Collective."""
def scatter_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
                   stream: int, config: _Address) -> None:
    """ncclScatterConfig: scatter count elements per rank from root. Collective; enqueued on stream."""
def send(sendbuff: _Address, count: int, datatype: int, peer: int, comm: _CommArg, stream: int) -> None:
    """ncclSend: send count elements to peer. Enqueued on stream; pair with recv."""
def set_encryption(config: _Address) -> None:
    """ncclSetEncryption: how the library encrypts its connections from now on; config is an
    EncryptionConfig or the int address of an ncclEncryptionConfig_t.
    """
def signal(peer: int, sig_idx: int, ctx: int, flags: int, comm: _CommArg, stream: int) -> None:
    """ncclSignal: signal peer without data."""
def team_cft(comm: _CommArg, mode: int) -> Team:
    """ncclTeamCft: the CFT team of comm in the given CftTeamMode (a Team)."""
def team_cft_multimem(comm: _CommArg) -> Team:
    """ncclTeamCftMultimem: the CFT multimem team of comm (a Team)."""
def team_lsa(comm: _CommArg) -> Team:
    """ncclTeamLsa: the team of the ranks sharing this rank's load/store-accessible memory (a Team)."""
def team_rail(comm: _CommArg) -> Team:
    """ncclTeamRail: the team of the ranks at this rank's position in every LSA team (a Team)."""
def team_rank_to_lsa(comm: _CommArg, team: _Address, rank: int) -> int:
    """ncclTeamRankToLsa: the LSA rank of team's rank `rank`."""
def team_rank_to_world(comm: _CommArg, team: _Address, rank: int) -> int:
    """ncclTeamRankToWorld: the world rank of team's rank `rank`."""
def team_world(comm: _CommArg) -> Team:
    """ncclTeamWorld: the team of every rank of comm (a Team)."""
def wait_signal(n_desc: int, signal_descs: _Address | Buffer, comm: _CommArg, stream: int) -> None:
    """ncclWaitSignal: wait for the signals described by n_desc WaitSignalDesc entries (an address or a buffer)."""
def win_get_user_ptr(comm: _CommArg, win: _WindowArg) -> int:
    """ncclWinGetUserPtr: the window's user pointer."""
