"""Buffer resolution (docs/architecture.md#buffer-resolution): ``NcclBuffer(buffer, stream=None)`` gives ``ptr``,
``count``, ``dtype`` and ``device_id`` of any supported array object. Implemented in C."""

from nccl._ext import NcclBuffer  # implemented in C


__all__ = ["NcclBuffer"]
