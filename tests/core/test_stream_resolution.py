"""nx_resolve_stream through nccl._ext.get_stream_ptr (docs/architecture.md#stream-resolution), in child
interpreters."""

import pytest

BAD = ("stream must be None, an int handle, a cuda.core.Stream or an object implementing __cuda_stream__, "
       "got {}")

CASES = r"""
from nccl import _ext
from nccl._errors import NcclInvalid


def outcome(*args, **kwargs):
    try:
        return ("ok", _ext.get_stream_ptr(*args, **kwargs))
    except NcclInvalid as e:
        return ("invalid", str(e))
    except Exception as e:
        return (type(e).__name__, str(e))


class Index:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


class Method:
    def __init__(self, info):
        self.info = info

    def __cuda_stream__(self):
        return self.info


class Attr:
    def __init__(self, info):
        self.__cuda_stream__ = info


class Raises:
    def __cuda_stream__(self):
        raise RuntimeError("boom")


class MyInt(int):
    pass


from nccl._hip_compat.cuda_core_shim._stream import Stream as ShimStream

cases = dict(
    omitted=(), none=(None,), zero=(0,), five=(5,), max64=(2**64 - 1,), big=(2**64,), true=(True,), false=(False,),
    neg=(-1,), index=(Index(7),), negindex=(Index(-2),), myint=(MyInt(9),), method=(Method((0, 12)),),
    attr=(Attr((0, 13)),), listattr=(Attr([0, 14]),), version1=(Method((1, 12)),), short=(Method((0,)),),
    notseq=(Method(5),), neghandle=(Method((0, -3)),), strhandle=(Method((0, "x")),), raises=(Raises(),),
    str=("x",), float=(1.5,), obj=(object(),), shim=(ShimStream.from_handle(0x1234),),
)
result = {k: outcome(*v) for k, v in cases.items()}
result["kw"] = outcome(stream=5)
result["two"] = outcome(1, 2)
result["badkw"] = outcome(strm=1)

import sys
m = Method((0, 21))
i = 123456789
before = sys.getrefcount(m), sys.getrefcount(i)
for _ in range(10_000):
    _ext.get_stream_ptr(m)
    _ext.get_stream_ptr(i)
    try:
        _ext.get_stream_ptr(-5)
    except NcclInvalid:
        pass
result["refs"] = (sys.getrefcount(m) - before[0], sys.getrefcount(i) - before[1])
"""


@pytest.fixture(scope="module")
def results(stub_python):
    return stub_python("nccl").run(CASES)


@pytest.mark.parametrize("key,value", [("omitted", 0), ("none", 0), ("zero", 0), ("five", 5), ("max64", 2**64 - 1),
                                       ("index", 7), ("myint", 9), ("method", 12), ("attr", 13), ("listattr", 14),
                                       ("shim", 0x1234), ("kw", 5)])
def test_handles(results, key, value):
    assert results[key] == ("ok", value)


@pytest.mark.parametrize("key,message", [
    ("neg", "stream must be non-negative, got -1"),
    ("negindex", "stream must be non-negative, got -2"),
    ("big", "stream does not fit in 64 bits: 18446744073709551616"),
    ("version1", "Method.__cuda_stream__ protocol version must be 0, got 1"),
    ("short", "Method.__cuda_stream__ must give a (version, handle) pair, got (0,)"),
    ("notseq", "Method.__cuda_stream__ must give a (version, handle) pair, got 5"),
    ("neghandle", "the __cuda_stream__ handle must be non-negative, got -3"),
    ("strhandle", "the __cuda_stream__ handle must be an int, got str"),
    ("str", BAD.format("str")),
    ("float", BAD.format("float")),
    ("obj", BAD.format("object")),
])
def test_invalid(results, key, message):
    assert results[key] == ("invalid", message)


@pytest.mark.parametrize("key", ["true", "false"])
def test_bool_is_a_type_error(results, key):
    """nccl4py 0.6.0: a bool stream is a TypeError with exactly this message."""
    assert results[key] == ("TypeError", "stream must not be a bool")


def test_errors_of_the_producer_propagate(results):
    assert results["raises"] == ("RuntimeError", "boom")


def test_arguments(results):
    assert results["two"][0] == "TypeError"
    assert results["badkw"][0] == "TypeError"


def test_refcounts(results):
    assert results["refs"] == (0, 0)


def test_framework_stream_fast_paths(fresh_python):
    """torch.cuda.Stream / cupy.cuda.Stream are recognised by class once their module is imported
    (stand-ins here: no CUDA), reading .cuda_stream / .ptr; cuda.core Streams read .handle."""
    result = fresh_python(r"""
import sys, types
from nccl import _ext
from nccl._errors import NcclInvalid

torch_cuda = types.ModuleType("torch.cuda")
class TorchStream:
    cuda_stream = 77
torch_cuda.Stream = TorchStream
cupy_cuda = types.ModuleType("cupy.cuda")
class CupyStream:
    ptr = 88
cupy_cuda.Stream = CupyStream
class Other:
    cuda_stream = 1
    ptr = 2
try:
    _ext.get_stream_ptr(TorchStream())
    early = "resolved"
except NcclInvalid as e:
    early = str(e)
sys.modules["torch.cuda"] = torch_cuda
sys.modules["cupy.cuda"] = cupy_cuda
result = (early, _ext.get_stream_ptr(TorchStream()), _ext.get_stream_ptr(CupyStream()), "torch" in sys.modules)
""", variant="nccl")
    assert result[0] == BAD.format("TorchStream")  # not a torch stream until torch.cuda is imported
    assert result[1:] == (77, 88, False)


def test_ncclbuffer_validates_its_stream(stub_python):
    result = stub_python("nccl").run(r"""
from nccl import _ext
from nccl._errors import NcclInvalid
try:
    _ext.NcclBuffer(object(), stream=-1)
    result = None
except NcclInvalid as e:
    result = str(e)
""")
    assert result == "stream must be non-negative, got -1"
