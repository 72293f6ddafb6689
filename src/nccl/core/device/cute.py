"""nccl4py 0.6.0's ``nccl.core.device.cute`` (NVIDIA's CuTe DSL bindings of the NCCL device API) is not
provided by this package: importing it, or any of its submodules, raises ImportError saying why
(docs/compatibility.md#the-module-tree)."""

raise ImportError(
    "nccl.core.device.cute is not provided by this nccl4py: NVIDIA's CuTe DSL device API compiles "
    "kernels with the nvidia-cutlass-dsl package, links them against NVIDIA's libnccl_device.bc and runs "
    "them on an NVIDIA GPU, none of which RCCL or the host backend has. Use NVIDIA's nccl4py "
    "('pip install nccl4py[cu12]' from NVIDIA) for device-side kernels.",
    name=__name__,
)
