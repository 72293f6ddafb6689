"""Writes tests/upstream_modules_0_6.py: every public module of an NVIDIA nccl4py wheel and the
public names each one has (its ``__all__``, or its public top-level definitions where it has none).

    pip download --no-deps nccl4py==0.6.0 -d /tmp/up06
    python tools/upstream_modules.py /tmp/up06/nccl4py-0.6.0-*.whl > tests/upstream_modules_0_6.py

The wheel's Python sources are read with ``ast`` (nothing of it is imported or run, so no
cuda-core or GPU is needed). A module is public when no part of its dotted name starts with an
underscore. Compiled modules (Cython ``.so``) have no source to read: they are listed by name only,
and their names come from elsewhere (nccl.bindings.nccl: tests/upstream_names_0_6.py). A package
directory without ``__init__.py`` is a namespace package and is listed as one.
"""

import ast
import pathlib
import pprint
import sys
import zipfile

_SUFFIXES = (".py", ".so", ".pyd")


def _module_name(path):
    """``nccl.core.typing`` for ``nccl/core/typing.py``; the package for an ``__init__.py``; None
    for a file that is no module."""
    parts = pathlib.PurePosixPath(path).parts
    if not parts or parts[0].endswith((".dist-info", ".data")):
        return None
    stem = parts[-1]
    if not stem.endswith(_SUFFIXES):
        return None
    stem = stem.split(".", 1)[0]  # "nccl.cpython-311-x86_64-linux-gnu.so" -> "nccl"
    parts = parts[:-1] if stem == "__init__" else parts[:-1] + (stem,)
    return ".".join(parts)


def _is_public(module):
    return not any(part.startswith("_") for part in module.split("."))


def _literal_all(tree):
    """The ``__all__`` assignment's value node, or None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            return node.value
    return None


def _definitions(tree):
    """Public names a module defines itself (functions, classes, assignments), not imports."""
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def _all_names(module, value, trees):
    """The strings of an ``__all__`` list, with ``*sub.__all__`` of a sibling submodule expanded."""
    names = []
    for item in value.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            names.append(item.value)
        elif (isinstance(item, ast.Starred) and isinstance(item.value, ast.Attribute)
              and item.value.attr == "__all__" and isinstance(item.value.value, ast.Name)):
            sub = f"{module}.{item.value.value.id}"
            names.extend(_all_names(sub, _literal_all(trees[sub]), trees))
        else:
            raise ValueError(f"{module}: cannot read __all__ item {ast.dump(item)}")
    return names


def read_wheel(path):
    """(modules, compiled, namespace_packages) of a wheel (a .whl file or an unpacked directory)."""
    path = pathlib.Path(path)
    if path.is_dir():
        files = {str(p.relative_to(path)): p.read_bytes for p in path.rglob("*") if p.is_file()}
    else:
        archive = zipfile.ZipFile(path)
        files = {name: (lambda n=name: archive.read(n)) for name in archive.namelist() if not name.endswith("/")}
    trees, compiled, package_dirs, init_dirs = {}, set(), set(), set()
    for name, read in files.items():
        module = _module_name(name)
        if module is None:
            continue
        parent = pathlib.PurePosixPath(name).parent
        for i in range(1, len(parent.parts) + 1):
            package_dirs.add(".".join(parent.parts[:i]))
        if name.endswith("/__init__.py") or name == "__init__.py":
            init_dirs.add(module)
        if name.endswith(".py"):
            trees[module] = ast.parse(read(), filename=name)
        else:
            compiled.add(module)
    modules = {}
    for module, tree in trees.items():
        if not _is_public(module):
            continue
        value = _literal_all(tree)
        modules[module] = ("__all__", tuple(_all_names(module, value, trees))) if value is not None else (
            "definitions", tuple(_definitions(tree)))
    namespace = sorted(p for p in package_dirs - init_dirs if _is_public(p))
    for package in namespace:
        modules[package] = ("namespace", ())
    return modules, sorted(m for m in compiled if _is_public(m)), namespace


def render(source, modules, compiled, namespace):
    lines = [
        '"""Every public module of NVIDIA nccl4py 0.6.0 and its public names, read from its wheel',
        f"{source}",
        "by tools/upstream_modules.py, which writes this file: do not edit by hand.",
        "",
        "MODULES: module -> (how the names were found, names). ``__all__``: the module's __all__;",
        "``definitions``: it has none, so its public top-level functions, classes and assignments;",
        "``namespace``: a package directory without __init__.py. COMPILED: Cython modules, no source",
        '(nccl.bindings.nccl\'s names are in upstream_names_0_6.py)."""',
        "",
        f"MODULES = {pprint.pformat(dict(sorted(modules.items())), width=110, compact=True)}",
        "",
        f"COMPILED = {tuple(compiled)!r}",
        "",
        f"NAMESPACE_PACKAGES = {tuple(namespace)!r}",
        "",
    ]
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} WHEEL_OR_UNPACKED_DIR > tests/upstream_modules_0_6.py")
    modules, compiled, namespace = read_wheel(argv[1])
    sys.stdout.write(render(pathlib.Path(argv[1]).name, modules, compiled, namespace))


if __name__ == "__main__":
    main(sys.argv)
