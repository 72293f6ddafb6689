# Stub of nccl.bindings: everything of nccl.bindings.nccl plus the two RCCL-only collectives.
from typing import Any

from nccl.bindings.nccl import *  # noqa: F403
from nccl.bindings.nccl import Comm as Comm
from nccl.bindings.nccl import PointerBox as PointerBox
from nccl.bindings.nccl import Window as Window

def __getattr__(name: str) -> Any: ...
