"""The Communicator (docs/compatibility.md#communicator), implemented in C, with the option classes it
takes and (as in nccl4py 0.6.0's module) the properties it reports and the device-communicator
requirements it accepts."""

from nccl._ext import Communicator  # implemented in C
from nccl.core._config import NCCLCollConfig, NCCLConfig, NCCLDevCommRequirements, VendorOption, WaitSignalDesc
from nccl.core._team import (
    GinBarrierRequirement, LLA2ARequirement, LsaBarrierRequirement, NCCLCommProperties, TeamRequirement,
)

__all__ = ["NCCLConfig", "NCCLCollConfig", "VendorOption", "NCCLCommProperties", "WaitSignalDesc",
           "TeamRequirement", "LsaBarrierRequirement", "GinBarrierRequirement", "LLA2ARequirement",
           "NCCLDevCommRequirements", "Communicator"]
