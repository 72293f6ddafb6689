"""The C-implemented names of nccl.core, taken from the extension module ``nccl._ext``.

While a name is missing from the built extension (the C core is landing piece by piece), a
stand-in of the same name takes its place; using it raises NotImplementedError saying so. Nothing
pretends to work.
"""

from nccl import _ext

__all__ = ["c_name"]


def _missing_message(name):
    return f"nccl.core: {name} is not implemented by this build of the extension module nccl._ext"


def _stand_in_function(name):
    def missing(*args, **kwargs):
        raise NotImplementedError(_missing_message(name))

    missing.__name__ = missing.__qualname__ = name
    missing.__doc__ = _missing_message(name)
    return missing


def _stand_in_class(name):
    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(_missing_message(name))

    def _classmethod(cls, *args, **kwargs):
        raise NotImplementedError(_missing_message(name))

    return type(name, (), {"__new__": __new__, "__doc__": _missing_message(name),
                           "__module__": "nccl.core", "init": classmethod(_classmethod),
                           "init_all": classmethod(_classmethod)})


def c_name(name, kind="class"):
    """``nccl._ext.<name>``, or a stand-in that raises NotImplementedError when used."""
    obj = getattr(_ext, name, None)
    if obj is not None:
        return obj
    return _stand_in_class(name) if kind == "class" else _stand_in_function(name)
