"""nccl4py 0.6.0's ``nccl.core.device.cute`` (NVIDIA's CuTe DSL bindings of the NCCL device API) is not
provided by this package: importing it, or any of its submodules, raises ImportError saying why
(docs/compatibility.md#the-module-tree)."""

from nccl._version import __version__

raise ImportError(
    "nccl.core.device.cute is not provided by this nccl4py: NVIDIA's CuTe DSL device API compiles "
    "kernels with the nvidia-cutlass-dsl package, links them against NVIDIA's libnccl_device.bc and runs "
    "them on an NVIDIA GPU, none of which RCCL or the host backend has. For device-side kernels use "
    "NVIDIA's nccl4py, the package PyPI serves under the same name, in an environment of its own "
    "(pip install 'nccl4py[cu12]==0.6.0' there); this environment has nccl4py " + __version__ + ", "
    "installed from its own wheels (docs/install.md#which-package-is-installed).",
    name=__name__,
)
