"""Drop-in where clients look: every public module of NVIDIA nccl4py 0.6.0 (upstream_modules_0_6.py,
written from its wheel by tools/upstream_modules.py) imports here with every public name it has
upstream, each the same object as nccl.core's where upstream's nccl.core exports that name; the two
modules we do not provide refuse with an ImportError naming the module and why; and ``nccl``
merges with ``nccl.*`` portions on other path entries, as upstream's namespace package does
(docs/compatibility.md#the-module-tree)."""

import importlib
import json
import os
import sys

import pytest

import children
from upstream_modules_0_6 import COMPILED, MODULES, NAMESPACE_PACKAGES
from upstream_names_0_6 import CLASSES, ENUMS, FUNCTIONS, VALUES

import nccl
import nccl.core

# Refused modules and a word each refusal must say (the reason), besides the module's name.
REFUSED = {"nccl.core.device.cute": "nvidia-cutlass-dsl", "nccl.bindings.cynccl": "cimport"}

# The compiled module's names come from the name table of test_upstream_names.py.
NAMES = {module: names for module, (_how, names) in MODULES.items()}
NAMES["nccl.bindings.nccl"] = tuple(sorted(set(FUNCTIONS) | set(ENUMS) | set(CLASSES) | set(VALUES)))


def _refusal(module):
    return next((r for r in REFUSED if module == r or module.startswith(r + ".")), None)


PROVIDED = sorted(m for m in set(NAMES) | set(COMPILED) if _refusal(m) is None)
REFUSED_MODULES = sorted(m for m in set(NAMES) | set(COMPILED) if _refusal(m) is not None)
CORE_NAMES = set(NAMES["nccl.core"])


def test_the_listing():
    # The wheel's shape, so that a regenerated listing that lost modules cannot pass quietly.
    assert len(MODULES) == 28 and COMPILED == ("nccl.bindings.cynccl", "nccl.bindings.nccl")
    assert len(NAMES["nccl.core.typing"]) == 37 and len(NAMES["nccl.core"]) == 80
    assert sum(len(NAMES[m]) for m in PROVIDED) == 308
    assert len(PROVIDED) == 19 and len(REFUSED_MODULES) == 11


@pytest.mark.parametrize("module", PROVIDED)
def test_module_has_every_upstream_name(module):
    mod = importlib.import_module(module)
    missing = [name for name in NAMES[module] if not hasattr(mod, name)]
    assert missing == [], f"{module} lacks nccl4py 0.6.0's {missing}"
    if MODULES.get(module, ("",))[0] == "__all__":
        assert [name for name in NAMES[module] if name not in mod.__all__] == []


@pytest.mark.parametrize("module", [m for m in PROVIDED if m.startswith("nccl.core.")])
def test_names_are_nccl_core_objects(module):
    # Upstream's nccl.core star-imports its submodules, so a name both have is one object there.
    mod = importlib.import_module(module)
    shared = sorted(CORE_NAMES.intersection(NAMES[module]))
    assert [n for n in shared if getattr(mod, n) is not getattr(nccl.core, n)] == []


def test_star_import_of_typing():
    # sglang-style clients: `from nccl.core.typing import NcclRedOp` and friends.
    ns = {}
    exec("from nccl.core.typing import *", ns)
    assert set(NAMES["nccl.core.typing"]) <= set(ns)
    assert ns["NcclRedOp"] is nccl.core.NcclRedOp and ns["FLOAT8E5M2"] is nccl.core.FLOAT8E5M2


@pytest.mark.parametrize("module", REFUSED_MODULES)
def test_refused_module_says_why(module):
    refused = _refusal(module)
    sys.modules.pop(refused, None)
    with pytest.raises(ImportError) as ei:
        importlib.import_module(module)
    assert not isinstance(ei.value, ModuleNotFoundError)
    assert ei.value.name == refused
    assert str(ei.value).startswith(f"{refused} is not provided by this nccl4py: ")
    assert REFUSED[refused] in str(ei.value)
    assert refused not in sys.modules
    # the way to NVIDIA's package says it is another package, and which one this is
    if refused == "nccl.core.device.cute":
        assert f"this environment has nccl4py {nccl.__version__}, installed from its own wheels" in str(ei.value)


def test_device_package_is_empty_as_upstream():
    device = importlib.import_module("nccl.core.device")
    assert [n for n in vars(device) if not n.startswith("_")] == []


def test_subpackages_are_regular_as_upstream():
    # Upstream: only `nccl` is a namespace package; nccl.core, nccl.bindings, interop are regular.
    assert NAMESPACE_PACKAGES == ("nccl",)
    for package in ("nccl.core", "nccl.bindings", "nccl.core.interop", "nccl.core.device"):
        assert importlib.import_module(package).__file__.endswith("__init__.py")


def _run(code, pythonpath):
    return children.run_python(code, env=children.environment(drop=(), PYTHONPATH=os.pathsep.join(pythonpath)),
                               timeout=120)


def test_namespace_portion_on_pythonpath_merges(tmp_path):
    portion = tmp_path / "nccl" / "_extensions"
    portion.mkdir(parents=True)
    (portion / "__init__.py").write_text("WHERE = 'portion'\n")
    # A portion's nccl/core must not shadow ours: ours comes first on nccl.__path__.
    (tmp_path / "nccl" / "core").mkdir()
    (tmp_path / "nccl" / "core" / "__init__.py").write_text("raise AssertionError('shadowed')\n")
    r = _run("import nccl, nccl._extensions, nccl.core, nccl.core.typing\n"
             "print(nccl._extensions.WHERE, nccl._extensions.__file__)\n"
             "print(nccl.__path__[0] == nccl.core.__path__[0].rsplit('/', 1)[0])\n",
             [str(tmp_path)])
    assert r.returncode == 0, r.stderr
    where, path, ours_first = r.stdout.split()
    assert where == "portion" and path == str(portion / "__init__.py") and ours_first == "True"


def test_without_the_portion_the_name_is_missing(tmp_path):
    r = _run("import nccl._extensions", [str(tmp_path)])
    assert r.returncode == 1 and "ModuleNotFoundError: No module named 'nccl._extensions'" in r.stderr


def test_core_submodules_are_attributes_after_import():
    """Upstream 0.6.0's nccl.core has buffer, communicator, constants, cuda, memory, resources, team,
    typing and utils as attributes once imported (cupy and torch on first access): code written for
    it reads nccl.core.constants.X without importing the submodule."""
    r = children.run_python("""
        import json
        import nccl.core
        names = ["buffer", "communicator", "constants", "cuda", "memory", "resources", "team", "typing", "utils"]
        print(json.dumps({n: type(getattr(nccl.core, n, None)).__name__ for n in names}))
    """, env=children.environment(), check_exit=True)
    assert set(json.loads(r.stdout.splitlines()[-1]).values()) == {"module"}
