"""The surface the hostile test covers, read from the installed package, never listed by hand:

* every function of nccl.bindings.nccl and nccl.bindings.rocm_extensions (nccl._ext's
  _NCCL_BINDINGS and _RCCL_BINDINGS, the names those modules export);
* every C type of nccl._ext (the bindings' struct wrappers, PointerBox, Comm and Window, and
  nccl.core's Communicator, NcclBuffer and resource types): its constructor, its C methods
  (method and classmethod descriptors; the Python attributes nccl.core registers are left out)
  and the setter of each writable field;

and each one's parameters, from its __text_signature__ (inspect.signature) or, for the few C
methods without one, from the package's .pyi stub of its class.
"""

import ast
import inspect
from dataclasses import dataclass
from pathlib import Path

import nccl
import nccl._ext as ext
import nccl.bindings.nccl as b
import nccl.bindings.rocm_extensions as rx
import nccl.core  # noqa: F401  (text signatures name its enums as defaults)

C_METHODS = ("method_descriptor", "classmethod_descriptor")


@dataclass(frozen=True)
class Param:
    name: str
    keyword_only: bool
    required: bool


@dataclass(frozen=True)
class Callable:
    id: str          # "bindings.all_reduce", "core.Communicator.allreduce", "bindings.Team.rank="
    layer: str       # "bindings" (raw values: the caller's responsibility) or "core"
    owner: str       # the type's name, or "" for a module function
    name: str        # the function, method or field name ("__init__" for a constructor)
    kind: str        # "function", "constructor", "method", "classmethod" or "setter"
    params: tuple    # of Param, the receiver left out


def _params(sig):
    out = []
    for i, p in enumerate(sig.parameters.values()):
        if i == 0 and p.name in ("self", "cls", "$self"):
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append(Param(p.name, p.kind == p.KEYWORD_ONLY, p.default is p.empty))
    return tuple(out)


def _stub_classes():
    """Every class of the package's .pyi stubs, by name."""
    classes = {}
    for stub in sorted(Path(nccl.__file__).parent.rglob("*.pyi")):
        for n in ast.walk(ast.parse(stub.read_text())):
            if isinstance(n, ast.ClassDef):
                classes.setdefault(n.name, n)
    return classes


# C methods with neither a text signature nor a stub entry (METH_NOARGS dunders such as
# __reduce__): taken as parameterless, and named in the test's report.
UNSIGNED = []


def _stub_params(tp, name):
    """The parameters of tp.name in the stub beside the module that exports tp (the method may be
    declared on a base class of the stub)."""
    classes = _stub_classes()
    todo = [tp.__name__]
    while todo:
        node = classes.get(todo.pop(0))
        if node is None:
            continue
        for fn in node.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == name:
                a = fn.args
                pos = [Param(x.arg, False, True) for x in (a.posonlyargs + a.args)[1:]]
                ndef = len(a.defaults)
                if ndef:
                    pos[-ndef:] = [Param(p.name, False, False) for p in pos[-ndef:]]
                kw = [Param(x.arg, True, d is None) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
                return tuple(pos + kw)
        todo += [base.id for base in node.bases if isinstance(base, ast.Name)]
    UNSIGNED.append(f"{tp.__name__}.{name}")
    return ()


def _signature_params(obj, tp=None, name=None):
    try:
        return _params(inspect.signature(obj))
    except (ValueError, TypeError):
        return _stub_params(tp, name)


def _types():
    """nccl._ext's C types (exceptions aside), in a stable order."""
    return [v for k, v in sorted(vars(ext).items()) if isinstance(v, type) and not issubclass(v, BaseException)]


def callables():
    UNSIGNED.clear()
    out = []
    for module, names, prefix in ((b, ext._NCCL_BINDINGS, "bindings"), (rx, ext._RCCL_BINDINGS, "rocm_extensions")):
        for n in names:
            params = _params(inspect.signature(getattr(module, n)))
            out.append(Callable(f"{prefix}.{n}", "bindings", "", n, "function", params))
    for tp in _types():
        layer = "core" if tp.__module__.startswith("nccl.core") else "bindings"
        base = f"{layer}.{tp.__name__}"
        try:
            ctor = _params(inspect.signature(tp))
        except (ValueError, TypeError):
            ctor = ()
        if tp.__dict__.get("__new__") is not None or ctor:
            out.append(Callable(f"{base}()", layer, tp.__name__, "__init__", "constructor", ctor))
        for name, member in vars(tp).items():
            kind = type(member).__name__
            if kind in C_METHODS:
                out.append(Callable(f"{base}.{name}", layer, tp.__name__, name,
                                    "classmethod" if kind == "classmethod_descriptor" else "method",
                                    _signature_params(getattr(tp, name), tp, name)))
            elif kind == "getset_descriptor" and not name.startswith("__") and _writable(tp, name):
                out.append(Callable(f"{base}.{name}=", layer, tp.__name__, name, "setter",
                                    (Param("value", False, True),)))
    return out


def _writable(tp, name):
    """Whether the field has a C setter: deleting it from a fresh instance says (a read-only
    field raises AttributeError "... is not writable", a writable one its own refusal)."""
    try:
        obj = tp()
    except Exception:
        return False
    try:
        delattr(obj, name)
    except AttributeError as exc:
        return "not writable" not in str(exc) and "readonly" not in str(exc)
    except Exception:
        return True
    return True


@dataclass(frozen=True)
class Case:
    index: int
    callable: Callable
    param: Param
    entry: str

    @property
    def id(self):
        return f"{self.callable.id}[{self.param.name}]<{self.entry}>"


PER_RANK = {"sendcounts", "sdispls", "recvcounts", "rdispls"}


def cases(entries, pair=False):
    """Every (callable, parameter, entry), in a stable order. pair: only the callables that walk
    per-rank sequences (their walk needs two ranks to have a second entry), for the 2-rank run."""
    out = []
    for c in callables():
        if pair and not PER_RANK & {p.name for p in c.params}:
            continue
        for p in c.params:
            for e in entries:
                out.append(Case(len(out), c, p, e.name))
    return out
