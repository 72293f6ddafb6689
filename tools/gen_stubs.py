"""Writes the shipped .pyi stubs from the runtime (the installed package), where editors and type checkers read them.

The C types and functions carry their names, parameters (the ``__text_signature__`` that
NX_BINDING spells in src/ext/bindings*.c and rocm_extensions.c) and docstrings in the C tables,
and the struct wrappers' fields come from the layout tables (``_ext._struct_layouts()``); a
stub beside them would otherwise repeat all of it by hand. This tool writes it from the runtime:

* nccl.bindings.nccl and nccl.bindings.rocm_extensions: everything below the ``GENERATED`` marker
  line of their stub (every binding function's ``def``, the creation functions' ``@overload``
  pairs, the struct wrapper classes with their fields, the numpy dtypes, the re-exported enums
  and errors, the 0.3.1 aliases). Above the marker is the stub's hand-written head: the handle
  classes, the type aliases and the struct wrappers' common base. The typing facts the runtime
  does not have are the tables below: a parameter's type by its name (``PARAM_TYPES``, with
  per-function ``PARAM_OVERRIDES``), each function's return type (``RETURNS``) and the
  short-form/long-form overloads (``OVERLOADS``).
* every stub of ``STUBS``: each module-level class and function, and every method and property
  of its classes, gets the docstring of the runtime object of that name; dunder methods and names
  the runtime lacks keep none.

``python tools/gen_stubs.py`` rewrites the stubs of the source tree (src/nccl) from the
installed package; ``--check`` only reports the stubs that differ from what it would write
(tests/core/test_typing.py runs it against the installed package).
"""

import argparse
import ast
import importlib
import inspect
import pathlib
import sys

# module -> its stub, relative to the package root (src/nccl or the installed nccl)
STUBS = {
    "nccl.core.communicator": "core/communicator.pyi",
    "nccl.core.resources": "core/resources.pyi",
    "nccl.core.buffer": "core/buffer.pyi",
    "nccl.core.cuda": "core/cuda.pyi",
    "nccl.bindings.nccl": "bindings/nccl.pyi",
    "nccl.bindings.rocm_extensions": "bindings/rocm_extensions.pyi",
}

# The line that ends a generated stub's hand-written head; the rest is written by this tool.
GENERATED = "# ---- Generated below by tools/gen_stubs.py from the runtime: do not edit below this line. ----"

COMMAND = "python tools/gen_stubs.py"

# ---- The typing facts the runtime does not have (the only hand-written ones of the bindings) ----

# A binding parameter's type, by its name (the C text signature's).
PARAM_TYPES = {
    # handles: the object or its address (0.3.1)
    "comm": "_CommArg", "window": "_WindowArg", "win": "_WindowArg", "peer_win": "_WindowArg",
    # the address of a creation call's slot to fill (0.3.1 form)
    "newcomm": "int",
    # addresses (an int or an object with __index__)
    "sendbuff": "_Address", "recvbuff": "_Address", "buff": "_Address", "localbuff": "_Address",
    "acc": "_Address", "ptr": "_Address", "handle": "_Address", "scalar": "_Address",
    "config": "_Address", "props": "_Address", "sim_info": "_Address", "reqs": "_Address",
    "out_dev_comm": "_Address", "dev_comm": "_Address", "team": "_Address", "cft_team": "_Address",
    "multimem": "_Address", "out_handle": "_Address", "out_req": "_Address", "unique_id": "_Address",
    # unique ids: an address or a buffer
    "comm_id": "_Ids", "comm_ids": "_Ids",
    "signal_descs": "_Address | Buffer",
    "devlist": "Sequence[int] | int | None",
    "exclude_ranks_list": "Sequence[int] | int",
    # host size_t[nranks] arrays (rocm_extensions)
    "sendcounts": "_SizeArray", "sdispls": "_SizeArray", "recvcounts": "_SizeArray", "rdispls": "_SizeArray",
    # plain ints: counts, ranks, enums, flags, streams
    **dict.fromkeys((
        "count", "sendcount", "recvcount", "datatype", "op", "root", "peer", "stream", "size", "rank",
        "nranks", "n_ranks", "myrank", "n_id", "ndev", "color", "key", "exclude_ranks_count", "shrink_flags",
        "win_flags", "flags", "revoke_flags", "stat", "result", "status", "residence", "offset", "lsa_rank",
        "peer_cft", "peer_world", "mode", "n_barriers", "n_blocks", "n_slots", "max_elts", "max_elt_size",
        "n_desc", "peer_win_offset", "sig_idx", "ctx",
    ), "int"),
}
# (function, parameter) -> type, where a name means something else in one function.
PARAM_OVERRIDES = {
    ("comm_init_rank", "comm"): "int",          # the slot to fill, not a communicator
    ("comm_init_rank_config", "comm"): "int",
    ("comm_window_register", "win"): "int",
    ("param_get_parameter", "key"): "str",
}
# Each function's return type (of its text-signature form, where it has two: see OVERLOADS).
RETURNS = {
    **dict.fromkeys((
        "comm_count", "comm_cu_device", "comm_get_async_error", "comm_mem_stats", "comm_register",
        "comm_user_rank", "get_lsa_device_pointer", "get_lsa_multimem_device_pointer",
        "get_multimem_device_pointer", "get_peer_device_pointer", "get_version", "ll_a2a_calc_slots",
        "mem_alloc", "red_op_create_pre_mul_sum", "team_rank_to_lsa", "team_rank_to_world", "win_get_user_ptr",
        # creation functions, 0.3.1 form: the status
        "comm_init_rank", "comm_init_rank_config", "comm_init_rank_scalable", "comm_split", "comm_shrink",
        "comm_grow", "comm_window_register",
    ), "int"),
    **dict.fromkeys(("get_error_string", "get_last_error", "get_library_flavour", "get_library_path",
                     "param_get_parameter"), "str"),
    **dict.fromkeys(("get_cft_device_le_info", "get_multimem_device_le_info", "get_peer_device_le_info"),
                    "tuple[int, int]"),
    **dict.fromkeys(("team_cft", "team_cft_multimem", "team_lsa", "team_rail", "team_world"), "Team"),
    **dict.fromkeys(("comm_get_unique_id", "get_unique_id"), "UniqueId"),
    "comm_query_properties": "CommProperties",
    "dev_comm_create": "DevComm",
    "group_simulate_end": "SimInfo",
    "comm_init_all": "list[Comm]",
    "get_load_attempts": "list[tuple[str, str | None]]",
    "param_get_all_keys": "list[str]",
    **dict.fromkeys((
        "all_gather", "all_gather_config", "all_reduce", "all_reduce_config", "allto_all", "allto_all_config",
        "bcast", "broadcast", "broadcast_config", "check_status", "comm_abort", "comm_deregister",
        "comm_destroy", "comm_finalize", "comm_resume",
        "comm_revoke", "comm_suspend", "comm_window_deregister", "dev_comm_destroy", "gather",
        "gather_config", "gin_barrier_create_requirement", "group_end",
        "group_start", "ll_a2a_create_requirement", "lsa_barrier_create_requirement", "mem_free",
        "param_dump_all", "put_signal", "recv", "red_op_destroy", "reduce", "reduce_config", "reduce_scatter",
        "reduce_scatter_config", "scatter", "scatter_config", "send", "set_encryption", "signal",
        "wait_signal", "all_reduce_with_bias", "all_to_all_v",
    ), "None"),
}
# Functions with two calling conventions, chosen by argument count, written as @overload pairs
# (the short form first). Where the C text signature has `parameter`, it is the long form and the
# short form leaves `parameter` out; where it lacks it, it is the short form and the long form
# adds `parameter` last. RETURNS has the text signature's return type, this table the other's.
#   creation (the signature is the 0.3.1 form): the short form (0.2.0 / 0.5+ argument counts)
#     returns the handle; the 0.3.1 form takes the address of the slot to fill (PointerBox().address,
#     Comm().handle_ptr) and returns the status (0, or 7 while a nonblocking creation is in progress).
#   queries (the signature is the short form): the 0.2.0 form with one more argument writes to the
#     address given and returns None.
OVERLOADS = {  # function: (parameter, the other form's return type)
    "comm_init_rank": ("comm", "Comm"),
    "comm_init_rank_config": ("comm", "Comm"),
    "comm_init_rank_scalable": ("newcomm", "Comm"),
    "comm_split": ("newcomm", "Comm"),
    "comm_shrink": ("newcomm", "Comm"),
    "comm_grow": ("newcomm", "Comm"),
    "comm_window_register": ("win", "Window"),
    "comm_get_unique_id": ("unique_id", "None"),
    "comm_query_properties": ("props", "None"),
    "dev_comm_create": ("out_dev_comm", "None"),
    "get_unique_id": ("unique_id", "None"),
    "group_simulate_end": ("sim_info", "None"),
}

WIDTH = 120  # the repository's line length


class StubError(Exception):
    """A fact the generator needs is missing from its tables (the message says which)."""


# ---- Generating the bindings' stubs ----

def _wrap(head, items, tail):
    """``head + ", ".join(items) + tail``, broken after commas to stay within WIDTH, continuation
    lines aligned under the first item."""
    pad = " " * len(head)
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else tail)
        if len((line + piece).rstrip()) > WIDTH and line not in (head, pad):
            lines.append(line.rstrip())
            line = pad
        line += piece
    if not items:
        line += tail
    lines.append(line)
    return "\n".join(lines)


def _union(name, members):
    """``name = (A | B | ...)``, the members on indented lines within WIDTH."""
    lines, line = [], "   "
    for i, member in enumerate(members):
        piece = f" {member}" + (" |" if i < len(members) - 1 else "")
        if len(line + piece) > WIDTH and line.strip():
            lines.append(line)
            line = "   "
        line += piece
    lines.append(line)
    return f"{name} = (\n" + "\n".join(lines) + "\n)"


def _param_type(func, name):
    key = (func, name)
    if key in PARAM_OVERRIDES:
        return PARAM_OVERRIDES[key]
    if name not in PARAM_TYPES:
        raise StubError(f"{func}({name}): no type for parameter {name!r}; add it to PARAM_TYPES (or "
                        f"PARAM_OVERRIDES) in tools/gen_stubs.py")
    return PARAM_TYPES[name]


def _def(func, params, returns):
    """The ``def`` line(s) of ``func`` with ``params`` (inspect.Parameter: the text signature's names,
    defaults and a ``/``) and a ``...`` body."""
    items = []
    for i, p in enumerate(params):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise StubError(f"{func}({p.name}): a {p.kind.description} parameter, which no text signature "
                            f"has had yet; teach tools/gen_stubs.py to write one")
        default = "" if p.default is p.empty else f" = {p.default!r}"
        items.append(f"{p.name}: {_param_type(func, p.name)}{default}")
        if p.kind is p.POSITIONAL_ONLY and (i == len(params) - 1 or params[i + 1].kind is not p.POSITIONAL_ONLY):
            items.append("/")
    return _wrap(f"def {func}(", items, f") -> {returns}: ...")


def _function(module, name):
    """The stub of one binding function: its def, or its @overload pair."""
    params = list(inspect.signature(getattr(module, name)).parameters.values())
    if name not in RETURNS:
        raise StubError(f"{name}: no return type; add it to RETURNS in tools/gen_stubs.py")
    if name not in OVERLOADS:
        return _def(name, params, RETURNS[name])
    other, other_returns = OVERLOADS[name]
    if other in [p.name for p in params]:
        short = _def(name, [p for p in params if p.name != other], other_returns)
        long = _def(name, params, RETURNS[name])
    else:
        short = _def(name, params, RETURNS[name])
        long = _def(name, params + [inspect.Parameter(other, inspect.Parameter.POSITIONAL_OR_KEYWORD)], other_returns)
    return "\n".join(["@overload", short, "@overload", long])


def _reexports(module, source, names):
    """``from source import (name as name, ...)`` for the names of ``module`` that are source's."""
    src = importlib.import_module(source)
    mine = sorted(n for n in names if n in vars(src) and getattr(src, n) is getattr(module, n))
    lines = [f"from {source} import ("] + [f"    {n} as {n}," for n in mine] + [")"]
    return "\n".join(lines), set(mine)


def _struct_class(module, name):
    """A struct wrapper class: its fields (from the layout table) typed as a fresh instance's values."""
    cls = getattr(module, name)
    sample = cls()
    lines = [] if cls.__flags__ & (1 << 10) else ["@final"]  # Py_TPFLAGS_BASETYPE
    lines.append(f"class {name}(_StructWrapper):")
    for field, *_ in module._ext._struct_layouts()[name][2]:
        kind = type(getattr(sample, field))
        lines.append(f"    {field}: {kind.__name__}")
    return "\n".join(lines)


def _declared(source):
    """The names a stub's top level declares."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname)
    return names


def _nccl_body(module, head):
    layouts = module._ext._struct_layouts()
    structs = sorted(layouts)
    public = set(module.__all__)
    enums, enum_names = _reexports(module, "nccl._enums", public)
    errors, error_names = _reexports(module, "nccl._errors", public - enum_names)
    covered = _declared(head) | enum_names | error_names | set(structs) | set(module._FUNCTIONS)
    # The 0.3.1 aliases: public names bound to an object that is declared under its own __name__.
    aliases = sorted(n for n in public - covered
                     if getattr(getattr(module, n), "__name__", n) in covered and
                     getattr(module, getattr(module, n).__name__) is getattr(module, n))
    parts = [
        "# Enums and constants: the runtime module itself (nccl._enums, plain typed Python), so that\n"
        "# their members and values have one source.\n" + enums,
        "# Errors (nccl._errors)\n" + errors,
        "# The numpy structured dtype of each struct wrapper\n" +
        "\n".join(f"{layouts[s][0]}: numpy.dtype[numpy.void]" for s in sorted(layouts, key=lambda s: layouts[s][0])),
        "# Struct wrappers: attribute access to one C struct, in memory of their own or at an address\n"
        "# (fields from the layout tables, src/ext/structs/struct_layouts.c).",
        *(_struct_class(module, s) for s in structs),
        "# Any struct wrapper, passed where an address is expected (it converts with __index__).\n" +
        _union("_Struct", structs),
        "# 0.3.1's spellings of renamed names (the enums' come with the enums above).\n" +
        "\n".join(f"{a} = {getattr(module, a).__name__}" for a in aliases),
        "# Functions (the @overload pairs: the two calling conventions of OVERLOADS in tools/gen_stubs.py)\n" +
        "\n".join(_function(module, f) for f in sorted(module._FUNCTIONS)),
    ]
    missing = sorted(public - covered - set(aliases) - {layouts[s][0] for s in structs})
    if missing:
        raise StubError(f"nccl.bindings.nccl: {', '.join(missing)} declared nowhere; declare them in the "
                        f"stub's hand-written head or teach tools/gen_stubs.py to generate them")
    return "\n\n".join(parts)


def _rocm_body(module, head):
    names = list(module._ext._RCCL_BINDINGS)
    listed = ", ".join(f'"{n}"' for n in names)
    return "\n".join(_function(module, f) for f in names) + f"\n\n__all__ = [{listed}]"


BODIES = {"nccl.bindings.nccl": _nccl_body, "nccl.bindings.rocm_extensions": _rocm_body}


def generate(source, module_name):
    """The stub ``source`` of ``module_name`` with its generated part rewritten from the runtime."""
    if module_name not in BODIES:
        return source
    if GENERATED not in source:
        raise StubError(f"{module_name}'s stub lacks the line {GENERATED!r}")
    head = source[: source.index(GENERATED)] + GENERATED + "\n"
    return head + "\n" + BODIES[module_name](importlib.import_module(module_name), head) + "\n"


# ---- Docstrings ----

def _runtime_doc(owner, name):
    """The docstring of ``owner.name`` as its own (not inherited from object/type), or None."""
    if name.startswith("__") and name.endswith("__"):
        return None
    if inspect.isclass(owner):
        for klass in inspect.getmro(owner):
            if name in vars(klass):
                obj = vars(klass)[name]
                break
        else:
            return None
    else:
        obj = getattr(owner, name, None)
        if obj is None:
            return None
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    if inspect.isclass(obj) and doc == (getattr(obj.__mro__[1], "__doc__", None) if len(obj.__mro__) > 1 else None):
        return None
    return inspect.cleandoc(doc)


def _literal(doc, indent):
    """``doc`` as a triple-quoted string literal indented by ``indent``."""
    text = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.splitlines()
    if text.endswith('"'):
        lines[-1] += " "
    body = ("\n" + indent).join(lines) if len(lines) == 1 else \
        ("\n".join([lines[0]] + [(indent + line) if line else "" for line in lines[1:]]) + "\n" + indent)
    return f'{indent}"""{body}"""'


def _strip(source):
    """The stub without docstrings: a def whose body was only its docstring gets ``...`` back."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop, ellipsis_after = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and \
                isinstance(node.body[0].value.value, str):
            doc = node.body[0]
            drop.update(range(doc.lineno - 1, doc.end_lineno))
            if len(node.body) == 1:
                ellipsis_after.add(doc.lineno - 2)
    out = []
    for i, line in enumerate(lines):
        if i in drop:
            continue
        out.append(line + " ..." if i in ellipsis_after else line)
    return "\n".join(out) + "\n"


def render(source, module):
    """The stub ``source`` of ``module`` with the runtime docstrings written in."""
    source = _strip(source)
    tree = ast.parse(source)
    lines = source.splitlines()
    inserts = {}  # line index -> (replace the trailing "...", literal)

    def visit(body, owner, indent):
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            doc = _runtime_doc(owner, node.name) if owner is not None else None
            if isinstance(node, ast.ClassDef):
                if doc is not None:
                    inserts[_header_last(lines, node)] = (False, _literal(doc, indent + "    "))
                visit(node.body, getattr(owner, node.name, None) if owner is not None else None, indent + "    ")
            elif doc is not None and len(node.body) == 1 and isinstance(node.body[0], ast.Expr) and \
                    node.body[0].value.value is Ellipsis:  # "def f(...) -> T: ..."
                inserts[node.body[0].lineno - 1] = (True, _literal(doc, indent + "    "))

    visit(tree.body, importlib.import_module(module), "")
    out = []
    for i, line in enumerate(lines):
        if i in inserts:
            replace, literal = inserts[i]
            if replace:
                line = line[: line.rstrip().rfind("...")].rstrip()
            out.append(line)
            out.append(literal)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _header_last(lines, node):
    """Index of the line that ends a class header (its ``:``)."""
    i = node.lineno - 1
    while not lines[i].split("#", 1)[0].rstrip().endswith(":"):
        i += 1
    return i


def stub(source, module):
    """What this tool writes for the stub ``source`` of ``module``."""
    return render(generate(source, module), module)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stubs that differ; write nothing")
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[1] / "src" / "nccl",
                        help="the package directory whose stubs are read (default: src/nccl)")
    args = parser.parse_args(argv)
    stale = []
    for module, rel in STUBS.items():
        path = args.root / rel
        text = path.read_text()
        try:
            new = stub(text, module)
        except StubError as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 2
        if new != text:
            stale.append(str(path))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"stubs that differ from what the runtime gives (regenerate with `{COMMAND}`, the package installed):",
              *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
