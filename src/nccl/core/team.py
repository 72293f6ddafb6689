"""Teams (nccl4py 0.4.1's ``nccl.core.team`` module path): ``NCCLTeam``, defined in nccl.core._team."""

from nccl.core._team import NCCLTeam

__all__ = ["NCCLTeam"]
