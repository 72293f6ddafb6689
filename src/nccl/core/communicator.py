"""The Communicator (docs/compatibility.md#communicator), implemented in C, with the option classes it takes."""

from nccl._ext import Communicator  # implemented in C
from nccl.core._config import NCCLCollConfig, NCCLConfig, NCCLDevCommRequirements, VendorOption, WaitSignalDesc


__all__ = ["Communicator", "NCCLConfig", "NCCLCollConfig", "VendorOption", "NCCLDevCommRequirements",
           "WaitSignalDesc"]
