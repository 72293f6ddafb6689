# Stub of nccl.bindings.nccl (C functions of nccl._ext, set into the module by nccl.py).
# Every public name is declared (tests/core/test_typing.py checks it against __all__).
from typing import Any, SupportsIndex, final, overload, type_check_only

from typing_extensions import Self

import numpy

__version__: str

@final
class Comm:
    def __new__(cls, handle: SupportsIndex | Comm = 0) -> Self: ...
    @property
    def handle(self) -> int: ...
    @property
    def handle_ptr(self) -> int: ...
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
    def __new__(cls, handle: SupportsIndex | Window = 0) -> Self: ...
    @property
    def handle(self) -> int: ...
    @property
    def handle_ptr(self) -> int: ...
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
    def __new__(cls, ptr: int = 0) -> Self: ...
    ptr: int
    @property
    def address(self) -> int: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __bool__(self) -> bool: ...

# A communicator or window parameter: the handle object, or its address as an int (0.3.1).
_CommArg = Comm | int
_WindowArg = Window | int
# An address: an int, or an object with __index__ (PointerBox, struct wrappers); never a handle.
_Address = int | PointerBox | _Struct
# A unique id: its address, or a buffer of exactly its size (bytes, UniqueId, numpy ...).
_Ids = Any

# Creation: the short form (0.2.0 / 0.5+ argument counts) returns the handle; the 0.3.1 form
# takes the address of the slot to fill first (PointerBox().address, Comm().handle_ptr) and
# returns the status (0, or 7 while a nonblocking creation is in progress).
@overload
def comm_init_rank(nranks: int, comm_id: _Ids, rank: int) -> Comm: ...
@overload
def comm_init_rank(comm: int, nranks: int, comm_id: _Ids, rank: int) -> int: ...
@overload
def comm_init_rank_config(nranks: int, comm_id: _Ids, rank: int, config: _Address) -> Comm: ...
@overload
def comm_init_rank_config(comm: int, nranks: int, comm_id: _Ids, rank: int, config: _Address) -> int: ...
@overload
def comm_init_rank_scalable(nranks: int, myrank: int, n_id: int, comm_ids: _Ids, config: _Address) -> Comm: ...
@overload
def comm_init_rank_scalable(newcomm: int, nranks: int, myrank: int, n_id: int, comm_ids: _Ids,
                            config: _Address) -> int: ...
def comm_init_all(ndev: int, devlist: Any) -> list[Comm]: ...
@overload
def comm_split(comm: _CommArg, color: int, key: int, config: _Address) -> Comm: ...
@overload
def comm_split(comm: _CommArg, color: int, key: int, newcomm: int, config: _Address) -> int: ...
@overload
def comm_shrink(comm: _CommArg, exclude_ranks_list: Any, exclude_ranks_count: int, config: _Address,
                shrink_flags: int) -> Comm: ...
@overload
def comm_shrink(comm: _CommArg, exclude_ranks_list: Any, exclude_ranks_count: int, newcomm: int,
                config: _Address, shrink_flags: int) -> int: ...
@overload
def comm_grow(comm: _CommArg, n_ranks: int, unique_id: _Address, rank: int, config: _Address) -> Comm: ...
@overload
def comm_grow(comm: _CommArg, n_ranks: int, unique_id: _Address, rank: int, newcomm: int,
              config: _Address) -> int: ...
@overload
def comm_window_register(comm: _CommArg, buff: _Address, size: int, win_flags: int) -> Window: ...
@overload
def comm_window_register(comm: _CommArg, buff: _Address, size: int, win: int, win_flags: int) -> int: ...


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
    RedOp_dummy as RedOp_dummy,
    RedOpDummy as RedOpDummy,
    Result as Result,
    ScalarResidence as ScalarResidence,
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

# Errors (nccl._errors)
from nccl._errors import (
    FunctionNotFoundError as FunctionNotFoundError,
    HostBackendWarning as HostBackendWarning,
    NCCLError as NCCLError,
    NCCLInternalError as NCCLInternalError,
    NCCLInvalidArgument as NCCLInvalidArgument,
    NCCLInvalidUsage as NCCLInvalidUsage,
    NCCLRemoteError as NCCLRemoteError,
    NCCLSystemError as NCCLSystemError,
    NCCLTimeout as NCCLTimeout,
    NCCLUnhandledCudaError as NCCLUnhandledCudaError,
    NotSupportedError as NotSupportedError,
)

# Struct wrappers: attribute access to one C struct, in memory of their own or at an address.
# Each is its own C type at run time; _StructWrapper exists only here, to declare once the
# methods they all have.

@type_check_only
class _StructWrapper:
    def __init__(self) -> None: ...
    @classmethod
    def from_buffer(cls, buffer: Any) -> Self: ...
    @classmethod
    def from_data(cls, data: Any) -> Self: ...
    @classmethod
    def from_ptr(cls, ptr: int, readonly: bool = False, owner: object = None) -> Self: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __bytes__(self) -> bytes: ...
    @property
    def ptr(self) -> int: ...

@final
class CftBarrierHandle(_StructWrapper):
    buf_handle: int
    n_barriers: int

@final
class CollConfig(_StructWrapper):
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
    next: int
    key: memoryview
    val: int

@final
class DevComm(_StructWrapper):
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
    size_: int
    magic: int
    version: int
    mode: int
    psk: str

@final
class GinBarrierHandle(_StructWrapper):
    signal0: int
    unused: int

@final
class LLA2AHandle(_StructWrapper):
    buf_handle: int
    n_slots: int

@final
class LsaBarrierHandle(_StructWrapper):
    buf_handle: int
    n_barriers: int

@final
class MultimemHandle(_StructWrapper):
    mc_base_ptr: int

@final
class ResourceWindowVidmem(_StructWrapper):
    lsa_flat_base: int
    stride4g: int
    mc_offset4k: int

@final
class SimInfo(_StructWrapper):
    size_: int
    magic: int
    version: int
    estimated_time: float

@final
class Team(_StructWrapper):
    n_ranks: int
    rank: int
    stride: int

@final
class TeamRequirements(_StructWrapper):
    next: int
    team: Team
    multimem: int
    out_multimem_handle: int

@final
class UniqueId(_StructWrapper):
    internal: bytes

@final
class WaitSignalDesc(_StructWrapper):
    op_cnt: int
    peer: int
    sig_idx: int
    ctx: int

# 0.3.1's spellings of renamed names (RedOp_dummy comes with the enums above).
ResourceWindow_vidmem = ResourceWindowVidmem
lla2a_calc_slots = ll_a2a_calc_slots

# Any struct wrapper, passed where an address is expected (it converts with __index__).
_Struct = (
    CftBarrierHandle | CollConfig | CommProperties | Config | ConfigExt | DevComm |
    DevCommRequirements | DevResourceRequirements | EncryptionConfig | GinBarrierHandle |
    LLA2AHandle | LsaBarrierHandle | MultimemHandle | ResourceWindowVidmem | SimInfo | Team |
    TeamRequirements | UniqueId | WaitSignalDesc
)

# Functions (the creation functions are above)

def all_gather(sendbuff: _Address, recvbuff: _Address, sendcount: int, datatype: int, comm: _CommArg,
               stream: int) -> None: ...
def all_gather_config(sendbuff: _Address, recvbuff: _Address, sendcount: int, datatype: int,
                      comm: _CommArg, stream: int, config: _Address) -> None: ...
def all_reduce(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, comm: _CommArg,
               stream: int) -> None: ...
def all_reduce_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int,
                      comm: _CommArg, stream: int, config: _Address) -> None: ...
def allto_all(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, comm: _CommArg, stream: int) -> None: ...
def allto_all_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, comm: _CommArg,
                     stream: int, config: _Address) -> None: ...
def bcast(buff: _Address, count: int, datatype: int, root: int, comm: _CommArg, stream: int) -> None: ...
def broadcast(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
              stream: int) -> None: ...
def broadcast_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int,
                     comm: _CommArg, stream: int, config: _Address) -> None: ...
def check_status(status: int) -> None: ...
def comm_abort(comm: _CommArg) -> None: ...
def comm_count(comm: _CommArg) -> int: ...
def comm_cu_device(comm: _CommArg) -> int: ...
def comm_deregister(comm: _CommArg, handle: _Address) -> None: ...
def comm_destroy(comm: _CommArg) -> None: ...
def comm_finalize(comm: _CommArg) -> None: ...
def comm_get_async_error(comm: _CommArg) -> int: ...
# The 0.2.0 forms with one more argument write to the address given and return None.
@overload
def comm_get_unique_id(comm: _CommArg) -> UniqueId: ...
@overload
def comm_get_unique_id(comm: _CommArg, unique_id: _Address) -> None: ...
def comm_mem_stats(comm: _CommArg, stat: int) -> int: ...
@overload
def comm_query_properties(comm: _CommArg) -> CommProperties: ...
@overload
def comm_query_properties(comm: _CommArg, props: _Address) -> None: ...
def comm_register(comm: _CommArg, buff: _Address, size: int) -> int: ...
def comm_resume(comm: _CommArg) -> None: ...
def comm_revoke(comm: _CommArg, revoke_flags: int) -> None: ...
def comm_suspend(comm: _CommArg, flags: int) -> None: ...
def comm_user_rank(comm: _CommArg) -> int: ...
def comm_window_deregister(comm: _CommArg, win: _WindowArg) -> None: ...
@overload
def dev_comm_create(comm: _CommArg, reqs: _Address) -> DevComm: ...
@overload
def dev_comm_create(comm: _CommArg, reqs: _Address, out_dev_comm: _Address) -> None: ...
def dev_comm_destroy(comm: _CommArg, dev_comm: _Address) -> None: ...
def gather(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
           stream: int) -> None: ...
def gather_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int,
                  comm: _CommArg, stream: int, config: _Address) -> None: ...
def get_cft_device_le_info(window: _WindowArg, offset: int, peer_cft: int, cft_team: _Address) -> tuple[int, int]: ...
def get_error_string(result: int) -> str: ...
def get_last_error(comm: _CommArg) -> str: ...
def get_library_flavour() -> str: ...
def get_library_path() -> str: ...
def get_load_attempts() -> list[tuple[str, str | None]]: ...
def get_lsa_device_pointer(window: _WindowArg, offset: int, lsa_rank: int) -> int: ...
def get_lsa_multimem_device_pointer(window: _WindowArg, offset: int) -> int: ...
def get_multimem_device_le_info(window: _WindowArg, offset: int) -> tuple[int, int]: ...
def get_multimem_device_pointer(window: _WindowArg, offset: int, multimem: _Address) -> int: ...
def get_peer_device_le_info(window: _WindowArg, offset: int, peer_world: int) -> tuple[int, int]: ...
def get_peer_device_pointer(window: _WindowArg, offset: int, peer: int) -> int: ...
@overload
def get_unique_id() -> UniqueId: ...
@overload
def get_unique_id(unique_id: _Address) -> None: ...
def get_version() -> int: ...
def gin_barrier_create_requirement(comm: _CommArg, team: _Address, n_barriers: int, out_handle: _Address,
                                   out_req: _Address) -> None: ...
def group_end() -> None: ...
@overload
def group_simulate_end() -> SimInfo: ...
@overload
def group_simulate_end(sim_info: _Address) -> None: ...
def group_start() -> None: ...
def ll_a2a_calc_slots(max_elts: int, max_elt_size: int) -> int: ...
def ll_a2a_create_requirement(n_blocks: int, n_slots: int, out_handle: _Address, out_req: _Address) -> None: ...
def lsa_barrier_create_requirement(team: _Address, n_barriers: int, out_handle: _Address, out_req: _Address) -> None: ...
def mem_alloc(size: int) -> int: ...
def mem_free(ptr: _Address) -> None: ...
def param_dump_all() -> None: ...
def param_get_all_keys() -> list[str]: ...
def param_get_parameter(key: str) -> str: ...
def put_signal(localbuff: _Address, count: int, datatype: int, peer: int, peer_win: _WindowArg,
               peer_win_offset: int, sig_idx: int, ctx: int, flags: int, comm: _CommArg, stream: int) -> None: ...
def recv(recvbuff: _Address, count: int, datatype: int, peer: int, comm: _CommArg, stream: int) -> None: ...
def red_op_create_pre_mul_sum(scalar: _Address, datatype: int, residence: int, comm: _CommArg) -> int: ...
def red_op_destroy(op: int, comm: _CommArg) -> None: ...
def reduce(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, root: int,
           comm: _CommArg, stream: int) -> None: ...
def reduce_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, op: int, root: int,
                  comm: _CommArg, stream: int, config: _Address) -> None: ...
def reduce_scatter(sendbuff: _Address, recvbuff: _Address, recvcount: int, datatype: int, op: int,
                   comm: _CommArg, stream: int) -> None: ...
def reduce_scatter_config(sendbuff: _Address, recvbuff: _Address, recvcount: int, datatype: int, op: int,
                          comm: _CommArg, stream: int, config: _Address) -> None: ...
def scatter(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int, comm: _CommArg,
            stream: int) -> None: ...
def scatter_config(sendbuff: _Address, recvbuff: _Address, count: int, datatype: int, root: int,
                   comm: _CommArg, stream: int, config: _Address) -> None: ...
def send(sendbuff: _Address, count: int, datatype: int, peer: int, comm: _CommArg, stream: int) -> None: ...
def set_encryption(config: _Address) -> None: ...
def signal(peer: int, sig_idx: int, ctx: int, flags: int, comm: _CommArg, stream: int) -> None: ...
def team_cft(comm: _CommArg, mode: int) -> Team: ...
def team_cft_multimem(comm: _CommArg) -> Team: ...
def team_lsa(comm: _CommArg) -> Team: ...
def team_rail(comm: _CommArg) -> Team: ...
def team_rank_to_lsa(comm: _CommArg, team: _Address, rank: int) -> int: ...
def team_rank_to_world(comm: _CommArg, team: _Address, rank: int) -> int: ...
def team_world(comm: _CommArg) -> Team: ...
def wait_signal(n_desc: int, signal_descs: Any, comm: _CommArg, stream: int) -> None: ...
def win_get_user_ptr(comm: _CommArg, win: _WindowArg) -> int: ...
