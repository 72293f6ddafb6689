"""The shipped type stubs (.pyi beside the C-implemented modules, py.typed): mypy checks
typing_example.py cleanly and rejects misuse."""

import inspect
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent

pytest.importorskip("mypy", reason="mypy is in the 'test' extra")


def _mypy(tmp_path, path, *flags):
    # Run from an empty directory so that mypy reads the installed package (with its stubs), not src/.
    cmd = [sys.executable, "-m", "mypy", *flags, "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
           "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}",
           "--no-error-summary", "--show-error-codes", "--config-file", os.devnull, str(path)]
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def test_stubs_are_installed():
    import nccl
    import nccl.core

    root = pathlib.Path(nccl.__file__).parent
    assert (root / "py.typed").is_file()
    for name in ("communicator.pyi", "resources.pyi", "buffer.pyi", "cuda.pyi"):
        assert (pathlib.Path(nccl.core.__file__).parent / name).is_file(), name
    for name in ("__init__.pyi", "nccl.pyi"):
        assert (root / "bindings" / name).is_file(), name


def test_example_type_checks(tmp_path):
    example = tmp_path / "typing_example.py"
    shutil.copy(HERE / "typing_example.py", example)
    r = _mypy(tmp_path, example, "--strict")
    assert r.returncode == 0, r.stdout + r.stderr


def _errors(stdout):
    """{(line, error code)} of mypy's output."""
    found = set()
    for line in stdout.splitlines():
        if ": error: " in line:
            code = line.rsplit("[", 1)[1].rstrip("]") if line.endswith("]") else ""
            found.add((int(line.split(":")[1]), code))
    return found


def test_python_layer_misuse_is_reported(tmp_path):
    """The Python-implemented parts of nccl.core are annotated: mypy --strict rejects each misuse
    below with the expected error code on its line (and nothing else)."""
    bad = tmp_path / "bad_python_layer.py"
    bad.write_text(
        "import numpy as np\n"
        "import nccl.core as nc\n"
        "x: int = nc.get_unique_id()\n"                          # 3: a UniqueId
        "nc.Communicator.from_env(confg=nc.NCCLConfig())\n"      # 4: misspelled keyword
        "nc.Communicator.from_env(timeout='5')\n"                # 5: seconds, a float
        "nc.get_unique_id(empty='yes')\n"                        # 6: a bool
        "nc.UniqueId.from_bytes(5)\n"                            # 7: a buffer of bytes
        "v: str = nc.get_lib_version()\n"                        # 8: a packaging Version
        "info: nc.GroupSimInfo = nc.group_end()\n"               # 9: None without simulate=True
        "nc.params['NCCL_DEBUG'] + 1\n"                          # 10: values are str
        "nc.NCCLTeam(1, 2, '3')\n"                               # 11: int fields
        "w = nc.NCCLTeam(1, 0, 1)\n"
        "nc.NCCLDevCommRequirements(teams=(nc.LsaBarrierRequirement(w, 1),))\n"  # 13: TeamRequirements
        "s: str = nc.NcclDataType.from_numpy_dtype(np.float32).itemsize\n"       # 14: an int
        "nc.group_start(True)\n"                                   # 15: no arguments
        "p: nc.NCCLCommProperties = nc.Communicator().properties\n"
        "g: str | None = p.available_gin_types\n"                 # 17: a tuple
        "nc.get_error_string('x')\n"                              # 18: an int
        "nc.VendorOption(1, 2, int_value='3')\n"                  # 19: int_value is an int
    )
    r = _mypy(tmp_path, bad, "--strict")
    assert r.returncode == 1, r.stdout + r.stderr
    assert _errors(r.stdout) == {
        (3, "assignment"), (4, "call-arg"), (5, "arg-type"), (6, "arg-type"), (7, "arg-type"),
        (8, "assignment"), (9, "assignment"), (10, "operator"), (11, "arg-type"), (13, "arg-type"),
        (14, "assignment"), (15, "call-arg"), (17, "assignment"), (18, "arg-type"), (19, "arg-type"),
    }, r.stdout


def test_misuse_is_reported(tmp_path):
    bad = tmp_path / "bad_usage.py"
    bad.write_text(
        "import nccl.core as nc\n"
        "comm = nc.Communicator()\n"
        "comm.allreduce(1, 2, nc.SUM, 0)\n"            # stream is keyword-only
        "n: str = comm.nranks\n"                        # an int
        "nc.NCCLConfig(True)\n"                         # keyword-only dataclass
        "nc.group_end(True)\n"                          # simulate is keyword-only
        "comm.allreduce(1, 2, nc.SUM, None, nc.NCCLCollConfig())\n"  # config is keyword-only
        "comm.allreduce(1, 2, nc.SUM, config=nc.NCCLConfig())\n"     # a communicator config
        "t: int = comm.team_world\n"                    # an NCCLTeam
    )
    r = _mypy(tmp_path, bad)
    assert r.returncode == 1
    lines = [line for line in r.stdout.splitlines() if "error:" in line]
    assert {line.split(":")[1] for line in lines} == {"3", "4", "5", "6", "7", "8", "9"}, r.stdout


def test_bindings_stub(tmp_path):
    """nccl.bindings.nccl's stub: handles, both creation conventions, functions, structs, enums."""
    good = tmp_path / "bindings_ok.py"
    good.write_text(
        "import nccl.bindings as nb\n"
        "import nccl.bindings.nccl as b\n"
        "uid = b.get_unique_id()\n"
        "comm: b.Comm = b.comm_init_rank(2, uid, 0)\n"
        "box = b.PointerBox()\n"
        "status: int = b.comm_init_rank(box.address, 2, uid, 0)\n"
        "child: b.Comm = b.comm_split(comm, 0, 0, 0)\n"
        "twin = b.Comm()\n"
        "status = b.comm_split(comm, 0, 0, twin.handle_ptr, 0)\n"
        "win: b.Window = b.comm_window_register(comm, 0x1000, 64, 0)\n"
        "comms: list[nb.Comm] = b.comm_init_all(2, None)\n"
        "address: int = comm.handle + int(win) + comm.__index__()\n"
        "text: str = f'{comm:#x}' + hex(win) + b.__version__\n"
        "b.all_reduce(1, 2, 3, b.DataType.Float32, b.RedOp.Sum, comm, 0)\n"
        "ok: bool = bool(child) and comm == address\n"
        "cfg = b.CollConfig()\n"
        "cfg.min_ctas = 2\n"
        "b.all_reduce_config(1, 2, 3, b.DataType.Float32, b.RedOp.Sum, comm, 0, cfg)\n"
        "props: b.CommProperties = b.comm_query_properties(comm)\n"
        "rank: int = props.rank + b.comm_user_rank(comm) + b.team_rank_to_world(comm, b.team_lsa(comm), 0)\n"
        "b.get_unique_id(b.UniqueId().ptr)\n"
        "sim: b.SimInfo = b.SimInfo.from_ptr(cfg.ptr, readonly=True)\n"
        "keys: list[str] = b.param_get_all_keys()\n"
        "old: b.RedOpDummy = b.RedOp_dummy.NumOps_dummy\n"
        "mode: b.HostCftMode = b.HostCftMode.Default\n"
        "flags: int = b.NCCL_WIN_COLL_SYMMETRIC | nb.NCCL_WIN_STRICT_ORDERING\n"
        "nb.all_reduce_with_bias(1, 2, 3, nb.DataType.Float32, nb.RedOp.Sum, comm, 0, 4)\n"
        "nb.all_to_all_v(1, [1, 1], [0, 1], 2, [1, 1], [0, 1], nb.DataType.Int8, comm, 0)\n"
        "try:\n    b.check_status(b.Result.Success)\nexcept b.NCCLError:\n    pass\n"
    )
    r = _mypy(tmp_path, good)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "bindings_bad.py"
    bad.write_text(
        "import nccl.bindings.nccl as b\n"
        "n: int = b.comm_init_rank(2, b'', 0)\n"         # a Comm, not an int
        "s: b.Comm = b.comm_init_rank(0, 2, b'', 0)\n"   # the 0.3.1 form returns the status
        "b.Comm('x')\n"                                  # handle: an int or a Comm
        "w: b.Window = b.comm_split(1, 0, 0, 0)\n"       # a Comm, not a Window
        "b.comm_init_all(2, None)[0].handle = 5\n"       # handle is read-only
        "b.all_reduce(1, 2, 3, 7, 0, b.Window(1), 0)\n"  # a Window where a communicator goes
        "b.all_reduce(b.Comm(1), 2, 3, 7, 0, 1, 0)\n"    # a Comm is not a buffer address
        "b.comm_count(b.Comm(1), 0)\n"                   # one argument
        "b.CollConfig().min_ctas = 'x'\n"               # an int field
        "s: str = b.comm_cu_device(1)\n"                # an int
        "b.no_such_function()\n"                        # nothing resolves as Any any more
        "import nccl.bindings as nb\n"
        "nb.no_such_function()\n"                       # nor in the package
        "nb.all_to_all_v(1, [1], [0], 2)\n"             # nine arguments
        "b.DataType.Float33\n"                          # members come from nccl._enums
        "t: str = b.NCCL_WIN_DEFAULT\n"                 # an int
        "team: b.Team = b.UniqueId.from_data(b'')\n"   # from_* returns its own class
    )
    r = _mypy(tmp_path, bad)
    assert r.returncode == 1
    lines = [line for line in r.stdout.splitlines() if "error:" in line]
    assert {line.split(":")[1] for line in lines} == {str(i) for i in range(2, 19) if i != 13}, r.stdout


def _stub_declarations(path):
    """The names a stub declares at module level, and, for each explicit re-export
    (``from m import n as n``), the module it comes from; ``*`` maps to the star-imported modules."""
    import ast

    declared, sources = set(), {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
        elif isinstance(node, ast.Assign):
            declared.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    sources.setdefault("*", []).append(node.module)
                elif alias.asname == alias.name:  # an explicit re-export
                    declared.add(alias.name)
                    sources[alias.name] = node.module
    return declared, sources


def test_bindings_stub_declares_every_public_name():
    """Every name of nccl.bindings.nccl.__all__ has its own declaration in nccl.pyi (no
    __getattr__ fallback typing the rest as Any)."""
    import nccl.bindings.nccl as b

    declared, _ = _stub_declarations(pathlib.Path(b.__file__).parent / "nccl.pyi")
    assert "__getattr__" not in declared
    assert sorted(set(b.__all__) - declared) == []


def test_bindings_stub_enums_are_the_runtime_enums():
    """The enums and constants are not copied into nccl.pyi: it re-exports nccl._enums, the module
    nccl.bindings.nccl itself exports, so a member or value cannot differ between the two."""
    import enum

    import nccl._enums
    import nccl.bindings.nccl as b

    runtime = {name for name in b.__all__
               if getattr(b, name) is getattr(nccl._enums, name, None)}
    enums = {name for name in b.__all__
             if isinstance(getattr(b, name), type) and issubclass(getattr(b, name), enum.Enum)}
    public = {name for name in vars(nccl._enums) if not name.startswith("_")} - {"IntEnum"}
    # Every enum nccl.bindings.nccl exports is nccl._enums's object, and so is every public name
    # of nccl._enums.
    assert enums <= runtime and public == runtime, (enums - runtime, public ^ runtime)
    assert "RedOp" in enums and "NCCL_API_MAGIC" in runtime
    declared, sources = _stub_declarations(pathlib.Path(b.__file__).parent / "nccl.pyi")
    assert {name: sources.get(name) for name in runtime} == dict.fromkeys(runtime, "nccl._enums")


def test_bindings_package_stub_declares_every_public_name():
    """nccl.bindings's stub declares each name of nccl.bindings.__all__: by star import of
    nccl.bindings.nccl (whose stub is checked above) or by an explicit re-export."""
    import nccl.bindings as nb
    import nccl.bindings.nccl as b

    declared, sources = _stub_declarations(pathlib.Path(nb.__file__).parent / "__init__.pyi")
    assert sources.pop("*") == ["nccl.bindings.nccl"]
    assert "__getattr__" not in declared
    assert sorted(set(nb.__all__) - declared - set(b.__all__)) == []
    assert {sources[name] for name in set(nb.__all__) - set(b.__all__)} == {"nccl.bindings.rocm_extensions"}
    ext, _ = _stub_declarations(pathlib.Path(nb.__file__).parent / "rocm_extensions.pyi")
    assert {"all_reduce_with_bias", "all_to_all_v"} <= ext


# The stubs beside C-implemented modules, checked against the runtime: every name, parameter
# name, kind and default comes from the C text signatures (__text_signature__), read by mypy's
# stubtest, so a stub cannot drift from the C method tables.
_STUBBED_MODULES = ["nccl.core.communicator", "nccl.core.resources", "nccl.core.buffer", "nccl.core.cuda",
                    "nccl.bindings.nccl", "nccl.bindings.rocm_extensions"]


def _overloaded_functions(stub):
    """{name: [parameter names of each overload]} of the module-level @overload functions of a stub."""
    import ast

    out = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list):
            out.setdefault(node.name, []).append([a.arg for a in node.args.args])
    return out


def test_stubs_match_the_c_signatures(tmp_path):
    import nccl.bindings.nccl as b

    pytest.importorskip("mypy.stubtest")
    stub = pathlib.Path(b.__file__).parent / "nccl.pyi"
    overloaded = _overloaded_functions(stub)
    # The binding functions with both calling conventions (nccl4py 0.6.0 returns the new object,
    # 0.3.1 takes an out-pointer first or last) are @overload pairs in the stub; their C text
    # signature is the out-pointer form, which must be one of the overloads.
    for name, forms in overloaded.items():
        params = list(inspect.signature(getattr(b, name)).parameters)
        assert params in forms, (name, params, forms)
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text("".join(f"nccl.bindings.nccl.{name}\n" for name in overloaded)
                         # declared name by name instead (test_bindings_stub_declares_every_public_name)
                         + "nccl.bindings.nccl.__all__\n")
    cmd = [sys.executable, "-m", "mypy.stubtest", "--concise", "--ignore-disjoint-bases",
           "--allowlist", str(allowlist), *_STUBBED_MODULES]
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr


def test_stubs_are_what_the_generator_writes(tmp_path):
    """The stubs carry the runtime objects' docstrings (editors read a stub's, not the C tables'), and
    the bindings' stubs below their hand-written head are generated from the runtime (signatures,
    struct fields, docstrings): tools/gen_stubs.py writes them; --check finds no installed stub
    that differs from what it writes (its message names the command that regenerates them)."""
    import nccl

    tool = HERE.parents[1] / "tools" / "gen_stubs.py"
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    r = subprocess.run([sys.executable, str(tool), "--check", "--root", str(pathlib.Path(nccl.__file__).parent)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    import ast

    import nccl.core as nc

    stub = ast.parse((pathlib.Path(nccl.__file__).parent / "core" / "communicator.pyi").read_text())
    cls = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Communicator")
    from_env = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "from_env")
    assert ast.get_docstring(from_env) == inspect.cleandoc(nc.Communicator.from_env.__doc__)
    assert ast.get_docstring(cls) == inspect.cleandoc(nc.Communicator.__doc__)



def test_stub_check_reports_a_hand_edit(tmp_path):
    """A generated stub edited by hand below its marker (here: a binding's return type) is reported
    by --check, with the command that regenerates it; nothing is written."""
    import nccl

    tool = HERE.parents[1] / "tools" / "gen_stubs.py"
    installed = pathlib.Path(nccl.__file__).parent
    root = tmp_path / "nccl"
    for stub in installed.rglob("*.pyi"):
        (root / stub.relative_to(installed)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(stub, root / stub.relative_to(installed))
    edited = root / "bindings" / "nccl.pyi"
    text = edited.read_text()
    assert "def comm_count(comm: _CommArg) -> int:" in text
    edited.write_text(text.replace("def comm_count(comm: _CommArg) -> int:", "def comm_count(comm: _CommArg) -> str:"))
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    r = subprocess.run([sys.executable, str(tool), "--check", "--root", str(root)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "python tools/gen_stubs.py" in r.stdout and str(edited) in r.stdout, r.stdout
    assert "-> str:" in edited.read_text()

# pyright's report on the public types: share of exported symbols whose type is fully known.
# nccl.core.typing spells its aliases with protocols for checkers (cuda.core is not resolvable
# without cuda.core installed; the shim exists only at run time).
_COMPLETENESS_MODULES = ("nccl.bindings.nccl", "nccl.core")


@pytest.mark.parametrize("module", _COMPLETENESS_MODULES)
def test_type_completeness(tmp_path, module):
    """basedpyright --verifytypes (pyright's check, from PyPI without npm) rates at least 95% of
    the module's public symbols as fully typed."""
    import json

    try:
        import basedpyright  # noqa: F401
    except ImportError:
        pytest.skip("basedpyright is in the 'test' extra")
    # pyright finds the installed package through the python on PATH.
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "basedpyright", "--verifytypes", module, "--ignoreexternal", "--outputjson"]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    report = json.loads(r.stdout)["typeCompleteness"]
    gaps = sorted({(d.get("file", "").rsplit("/", 1)[-1], s["name"]) for s in report["symbols"]
                   for d in s["diagnostics"] if d["severity"] == "error"})
    assert report["completenessScore"] >= 0.95, (report["completenessScore"], gaps)
