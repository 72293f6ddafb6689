"""The ``torch.backends`` entry point of the distribution (pyproject.toml): torch runs ``autoload``
while ``import torch`` executes, unless TORCH_DEVICE_BACKEND_AUTOLOAD=0 (docs/api/torch.md#registering).

It lives outside nccl.torch so that a failure there can be caught: importing nccl.torch
registers the backend, and an error escaping an entry point would make every ``import torch``
fail. Here it becomes a warning, and ``import nccl.torch`` remains the way to register.
"""

__all__ = ["autoload"]


def autoload() -> None:
    """Registers the "nccl4py" torch.distributed backend (import nccl.torch); never raises."""
    try:
        import torch.distributed

        if torch.distributed.is_available():
            import nccl.torch  # noqa: F401 - registers the backend
    except Exception as exc:  # noqa: BLE001 - see the module documentation
        import warnings

        warnings.warn(f"nccl4py: the torch.distributed backend was not registered at import torch "
                      f"({type(exc).__name__}: {exc}); import nccl.torch to register it", RuntimeWarning,
                      stacklevel=2)
