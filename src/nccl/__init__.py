"""nccl4py: Python bindings for RCCL and NCCL, with a host (CPU) backend for machines without a GPU.

Importing this package loads no library. Low-level bindings are in nccl.bindings.
"""

from nccl._hip_compat import register_cuda_core_shim as _register_cuda_core_shim
from nccl._show_versions import LibraryInfo, VersionInfo, get_version, show_versions
from nccl._version import __version__

__all__ = ["__version__", "LibraryInfo", "VersionInfo", "get_version", "show_versions"]

# Before anything imports cuda.core: on hosts without a usable real cuda.core, the HIP-backed shim
# is registered under that name in sys.modules (nothing is opened here).
_register_cuda_core_shim()
