"""The Communicator (API.md section 5.9), implemented in C, with the option classes it takes."""

from nccl.core._c import c_name as _c_name
from nccl.core._config import NCCLConfig, NCCLDevCommRequirements, WaitSignalDesc

Communicator = _c_name("Communicator")

__all__ = ["Communicator", "NCCLConfig", "NCCLDevCommRequirements", "WaitSignalDesc"]
