"""The Communicator (docs/compatibility.md#communicator), implemented in C, with the option classes it
takes and (as in nccl4py 0.6.0's module) the properties it reports and the device-communicator
requirements it accepts. ``Communicator.from_env`` is Python, below; nccl.core's import makes it a
class attribute (nccl._ext._register)."""

from nccl._ext import Communicator  # implemented in C
from nccl.core._config import NCCLCollConfig, NCCLConfig, NCCLDevCommRequirements, VendorOption, WaitSignalDesc
from nccl.core._team import (
    GinBarrierRequirement, LLA2ARequirement, LsaBarrierRequirement, NCCLCommProperties, TeamRequirement,
)



def from_env(cls, *, config=None, timeout=None, environ=None, trace_buffer=None):
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
    from nccl.core import _env  # the launchers' detection and id exchange, imported when first used

    return _env.from_env(cls, config=config, timeout=timeout, environ=environ, trace_buffer=trace_buffer)


__all__ = ["NCCLConfig", "NCCLCollConfig", "VendorOption", "NCCLCommProperties", "WaitSignalDesc",
           "TeamRequirement", "LsaBarrierRequirement", "GinBarrierRequirement", "LLA2ARequirement",
           "NCCLDevCommRequirements", "Communicator"]
