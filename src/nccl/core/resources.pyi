# Stub of nccl.core.resources: the resource classes are C (nccl._ext); docs/compatibility.md#resources.
from types import TracebackType
from typing import final

from typing_extensions import Self

from nccl.bindings.nccl import DevComm
from nccl.core._team import CftLeInfo as CftLeInfo
from nccl.core._team import GinBarrierHandle as GinBarrierHandle
from nccl.core._team import LLA2AHandle as LLA2AHandle
from nccl.core._team import LsaBarrierHandle as LsaBarrierHandle
from nccl.core._team import MultimemHandle as MultimemHandle
from nccl.core._team import NCCLTeam
from nccl.core._types import NcclDataType, WindowFlag
from nccl.core.communicator import Communicator

__all__ = ["MultimemHandle", "LsaBarrierHandle", "GinBarrierHandle", "LLA2AHandle", "RegisteredBufferHandle",
           "RegisteredWindowHandle", "CftLeInfo", "CustomRedOp", "DevCommResource", "CommResource"]

class CommResource:
    """Base of the resources a Communicator owns. Released by close() or by the communicator's
    destroy(), abort() or close_all_resources(); never by garbage collection.
    """
    def __new__(cls, comm: Communicator) -> Self: ...
    @property
    def comm(self) -> Communicator:
        """The owning Communicator."""
    @property
    def is_valid(self) -> bool:
        """True while open."""
    def close(self) -> None:
        """Release the resource (ncclCommDeregister, ncclCommWindowDeregister or ncclRedOpDestroy) and
        stop tracking it. Idempotent. Skipped when the communicator is already gone.
        """
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None: ...

@final
class RegisteredBufferHandle(CommResource):
    """A buffer registered with ncclCommRegister (Communicator.register_buffer)."""
    @property
    def handle(self) -> int:
        """The registration handle (RuntimeError once closed)."""
    @property
    def size(self) -> int:
        """Registered bytes."""

@final
class RegisteredWindowHandle(CommResource):
    """A window registered with ncclCommWindowRegister (Communicator.register_window)."""
    @property
    def handle(self) -> int:
        """The ncclWindow_t; 0 while pending (never raises)."""
    @property
    def size(self) -> int:
        """Registered bytes."""
    @property
    def user_ptr(self) -> int:
        """The registered pointer (RuntimeError once closed)."""
    @property
    def flags(self) -> WindowFlag:
        """The window flags it was registered with."""
    def get_lsa_multimem_device_pointer(self, offset: int = 0) -> int | None:
        """ncclGetLsaMultimemDevicePointer at a byte offset; None when NCCL returns NULL."""
    def get_lsa_device_pointer(self, lsa_rank: int, offset: int = 0) -> int:
        """ncclGetLsaDevicePointer of lsa_rank's window at a byte offset."""
    def get_peer_device_pointer(self, peer: int, offset: int = 0) -> int | None:
        """ncclGetPeerDevicePointer of peer's window at a byte offset; None when NCCL returns NULL."""
    def get_multimem_device_pointer(self, multimem: MultimemHandle, offset: int = 0) -> int | None:
        """ncclGetMultimemDevicePointer: the multicast address of this window at a byte offset, for a
        MultimemHandle (DevCommResource.multimem_handle(team)); None when NCCL returns NULL.
        """
    def get_multimem_le_info(self, offset: int = 0) -> CftLeInfo:
        """ncclGetMultimemDeviceLeInfo: the CftLeInfo of this window's multicast mapping at a byte offset."""
    def get_peer_le_info(self, peer: int, offset: int = 0) -> CftLeInfo:
        """ncclGetPeerDeviceLeInfo: the CftLeInfo of world rank peer's window at a byte offset."""
    def get_cft_le_info(self, peer_cft: int, cft_team: NCCLTeam, offset: int = 0) -> CftLeInfo:
        """ncclGetCftDeviceLeInfo: the CftLeInfo of member peer_cft of cft_team (Communicator.team_cft) at a
        byte offset of this window.
        """

@final
class CustomRedOp(CommResource):
    """A PreMulSum reduction operator (Communicator.create_pre_mul_sum); int(op) is the ncclRedOp_t."""
    @property
    def op(self) -> int:
        """The dynamic ncclRedOp_t (RuntimeError once closed)."""
    @property
    def dtype(self) -> NcclDataType:
        """The NcclDataType the operator was created for."""
    def __int__(self) -> int: ...

@final
class DevCommResource(CommResource):
    """A device communicator (ncclDevCommCreate) owned by a Communicator (Communicator.create_dev_comm)."""
    # Made by Communicator.create_dev_comm (ncclDevCommCreate); not constructible directly.
    @property
    def dev_comm(self) -> DevComm:
        """The nccl.bindings.nccl.DevComm (ncclDevComm_t) the library filled."""
    @property
    def ptr(self) -> int:
        """Address of the ncclDevComm_t (for a kernel launch)."""
    @property
    def resource_handles(self) -> tuple[LsaBarrierHandle | GinBarrierHandle | LLA2AHandle, ...]:
        """The handle views of the resource requirements, in their order."""
    def multimem_handle(self, team: NCCLTeam) -> MultimemHandle:
        """The MultimemHandle of a team that the requirements asked for with multimem=True."""
