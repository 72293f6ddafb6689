"""nccl4py 0.6.0's ``nccl.bindings.cynccl`` (the Cython ``cimport`` interface of NVIDIA's generated
loader, cynccl.pxd) is not provided by this package: importing it raises ImportError saying why
(docs/compatibility.md#the-module-tree)."""

raise ImportError(
    "nccl.bindings.cynccl is not provided by this nccl4py: it is the Cython cimport interface "
    "(cynccl.pxd) of NVIDIA's generated loader, and these bindings are C with no .pxd to cimport. "
    "Call nccl.bindings.nccl from Python, or NCCL's C API (nccl.h / rccl.h) from C or Cython.",
    name=__name__,
)
