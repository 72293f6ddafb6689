# Stub of nccl.bindings: everything of nccl.bindings.nccl plus the two RCCL-only collectives, each
# declared (tests/core/test_typing.py checks every name of __all__).
from nccl.bindings.nccl import *  # noqa: F403
from nccl.bindings.rocm_extensions import (
    all_reduce_with_bias as all_reduce_with_bias,
    all_to_all_v as all_to_all_v,
)
