"""Device-side APIs (nccl4py 0.6.0's ``nccl.core.device``, which holds nothing itself; its subpackages
are opt-in). Its one subpackage upstream, the CuTe DSL device API ``nccl.core.device.cute``, is not
provided here: importing it raises ImportError saying why (docs/compatibility.md#the-module-tree)."""
