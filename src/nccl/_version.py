# The version is the upstream nccl4py release whose API nccl.core and nccl.bindings implement
# (0.6.0), so version gates written for upstream nccl4py keep working; the 0.2.0/0.3.1 and RCCL-fork
# forms stay available beside it (docs/compatibility.md).
__version__ = "0.6.0"
