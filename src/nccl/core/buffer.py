"""Buffer resolution (API.md section 5.5): ``NcclBuffer(buffer, stream=None)`` gives ``ptr``,
``count``, ``dtype`` and ``device_id`` of any supported array object. Implemented in C."""

from nccl.core._c import c_name as _c_name

NcclBuffer = _c_name("NcclBuffer")

__all__ = ["NcclBuffer"]
