"""Constants and enums of nccl.core (upstream's ``nccl.core.constants`` module path)."""

from nccl.core._types import *  # noqa: F401,F403
from nccl.core._types import __all__  # noqa: F401
