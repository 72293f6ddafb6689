"""Cheap checks on the C sources, written as tests (docs/developing.md#how-we-test), over every C part:
src/ext (nccl._ext), src/hip (the cuda.core shim's nccl._hip_compat._hip), src/common (compiled
into both) and src/host (libnccl-host, plain C without Python).

Rules, each with a test proving that a planted violation is caught:
* Nothing but the library call inside a GIL-released block: no Python API, no return or goto, no
  object access (src/ext, src/hip).
* Every library call (nx_api.*, gpu_hip.*, gpu_cuda.*) is made with the GIL released, or from a
  helper that only runs inside a released block, or is a string lookup made while building an
  exception (errors.c and hip_errors.c say why that one is allowed). Functions that wait on a C
  mutex (the loaders) are called with the GIL released too.
* No macro hides a return or a goto: a #define whose body contains either is refused (everywhere).
* Python.h is included before any system header (CPython's rule; its feature macros must win).
* Each part builds with -Werror (and -Wshadow, -Wstrict-prototypes) under the flags meson uses.
* The meson list of nccl._ext's sources is the directory; no C file is longer than 1,000 lines (but the
  ones tools/gen_surface.py writes, which say so first: their source is the description).
* Each header of src/ext includes what it uses: it compiles alone, as the first line of a file.
* Memory order is written out (docs/host-backend.md#memory-order): every C11 atomic operation names
  its order (no atomic_load(), atomic_store(), ... without _explicit), no _Atomic object is read or
  written as a plain value (clang's -Watomic-implicit-seq-cst, as an error), and no word of the shared
  segment's structures is volatile.
"""

import re
import shutil
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
EXT, HIP, HOST, COMMON, INCLUDE = (SRC / d for d in ("ext", "hip", "host", "common", "include"))
PYTHON_PARTS = (EXT, HIP, COMMON)  # C that includes Python.h or runs inside an extension module
ALL_PARTS = (EXT, HIP, HOST, COMMON, INCLUDE)

# The library tables whose entry points are called (src/include/abi.h, src/include/gpu_loader.h).
LIBRARY_TABLES = ("nx_api", "gpu_hip", "gpu_cuda")
# String lookups: they do not block, and are made with the GIL held while an exception is built.
STRING_LOOKUPS = {"ncclGetErrorString", "ncclGetLastError", "hipGetErrorString", "hipGetErrorName"}
# Helpers documented to run only with the GIL released (their callers are checked).
GIL_FREE_HELPERS = {"enter_device", "leave_device"}
# C functions that wait on a mutex (the loaders'): callers must have released the GIL.
BLOCKING_FUNCTIONS = {"nx_loader_load", "gpu_hip_load", "gpu_hip_attempts", "gpu_cuda_load"}
MAX_LINES = 1000
HOST_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-D_GNU_SOURCE", "-ffp-contract=off", "-Wno-missing-field-initializers",
              "-fvisibility=hidden"]
EXT_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-D_GNU_SOURCE", "-fvisibility=hidden", "-Wno-missing-field-initializers"]
STRICT = ["-O2", "-Werror", "-Wshadow", "-Wstrict-prototypes"]


def c_files(*parts, suffixes=(".c",)):
    """The C files of each part, its folders included (src/ext keeps its files in folders by concern)."""
    return sorted(p for part in parts for p in part.rglob("*") if p.suffix in suffixes)


def blank_comments_and_strings(text):
    """The text with comments and the contents of string and character literals replaced by
    blanks (newlines kept, so offsets and line numbers still match)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(quote + re.sub(r"[^\n]", " ", text[i + 1:j]) + quote)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def released_regions(text):
    """(start, end) offsets of the code that runs with the GIL released: Py_BEGIN_ALLOW_THREADS
    blocks, and the call inside NX_RUN(rc, call)."""
    regions = [(m.start(), m.end()) for m in re.finditer(r"Py_BEGIN_ALLOW_THREADS.*?Py_END_ALLOW_THREADS", text, re.S)]
    for m in re.finditer(r"\bNX_RUN\(", text):
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        regions.append((m.start(), j))
    return regions


def gil_block_problems(source):
    """Python API, return, goto or object access inside a GIL-released region."""
    text = blank_comments_and_strings(source)
    problems = []
    for start, end in released_regions(text):
        block = text[start:end]
        block = re.sub(r"^(Py_BEGIN_ALLOW_THREADS|NX_RUN\()|Py_END_ALLOW_THREADS$", "", block)
        for token in (r"\bPy\w*", r"\breturn\b", r"\bgoto\b", r"self->"):
            for m in re.finditer(token, block):
                problems.append(f"{m.group(0)!r} at line {text[:start].count(chr(10)) + 1}")
    return problems


def function_spans(text):
    """(start, name) of each function definition, in order."""
    return [(m.start(), m.group(1)) for m in
            re.finditer(r"^[a-zA-Z][^\n;]*?\b(\w+)\([^;{]*\)\s*\{", text, re.M)]


def owner(functions, offset):
    return max((f for f in functions if f[0] < offset), default=(0, "?"))[1]


def unreleased_calls(source):
    """Library calls, and calls of GIL-free helpers and blocking functions, made with the GIL
    held: [(function, callee)]."""
    text = blank_comments_and_strings(source)
    released = released_regions(text)
    functions = function_spans(text)

    def inside(offset):
        return any(a <= offset < b for a, b in released)

    problems = []
    pattern = r"\b(?:%s)\.(\w+)\s*\(" % "|".join(LIBRARY_TABLES)
    for call in re.finditer(pattern, text):
        where = owner(functions, call.start())
        if not inside(call.start()) and call.group(1) not in STRING_LOOKUPS and where not in GIL_FREE_HELPERS:
            problems.append((where, call.group(1)))
    for call in re.finditer(r"\b(%s)\s*\(" % "|".join(GIL_FREE_HELPERS | BLOCKING_FUNCTIONS), text):
        # a definition or prototype: a type and the name open the line
        prefix = text[text.rfind("\n", 0, call.start()) + 1:call.start()]
        is_declaration = re.fullmatch(r"[A-Za-z_][\w \t*]*", prefix) is not None
        if not inside(call.start()) and not is_declaration:
            problems.append((owner(functions, call.start()), call.group(1)))
    return problems


def return_hiding_macros(source):
    """Names of the macros whose body contains a return or a goto."""
    text = blank_comments_and_strings(source)
    found = []
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
        if re.search(r"\b(return|goto)\b", m.group(2)):
            found.append(m.group(1))
    return found


def headers_before_python(path, include_dirs):
    """The headers from outside the repository that a translation unit includes before Python.h
    (none when it does not include Python.h at all)."""
    cmd = ["gcc", "-std=c11", "-D_GNU_SOURCE", "-H", "-fsyntax-only", *[f"-I{d}" for d in include_dirs], str(path)]
    trace = subprocess.run(cmd, capture_output=True, text=True)
    assert trace.returncode == 0, trace.stderr
    headers = [line.split(" ", 1)[1] for line in trace.stderr.splitlines() if re.match(r"^\.+ ", line)]
    python = [i for i, h in enumerate(headers) if h.endswith("/Python.h")]
    if not python:
        return []
    return [h for h in headers[:python[0]] if not Path(h).resolve().is_relative_to(ROOT)]


def build_with_werror(sources, flags, include_dirs, workdir):
    """Compiles each source to an object in workdir with -Werror; returns gcc's diagnostics
    ('' when the build is clean)."""
    cmd = ["gcc", *flags, *STRICT, *[f"-I{d}" for d in include_dirs], "-c", *map(str, sources)]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    return "" if result.returncode == 0 else result.stderr


# The C11 generic functions that default to seq_cst; each has an _explicit twin naming its order.
IMPLICIT_ORDER_CALL = re.compile(r"\batomic_(load|store|exchange|fetch_(?:add|sub|or|xor|and)|compare_exchange_(?:strong|weak)|flag_test_and_set|flag_clear)\s*\(")
# The structures that live in the shared segment: those declared under nccl_host.h's banner.
SHARED_SECTION = re.compile(r"/\* The shared segment .*?-{20,} \*/\n(.*?)/\* -{20,}", re.S)


def implicit_order_calls(source):
    """Line numbers of atomic calls that leave their memory order implicit."""
    text = blank_comments_and_strings(source)
    return [text.count("\n", 0, m.start()) + 1 for m in IMPLICIT_ORDER_CALL.finditer(text)]


def volatile_shared_fields(header):
    """The volatile declarations among the shared segment's structures."""
    section = SHARED_SECTION.search(header)
    assert section, "nccl_host.h's shared-segment banner moved"
    return [line.strip() for line in blank_comments_and_strings(section.group(1)).splitlines()
            if re.search(r"\bvolatile\b", line)]


def plain_atomic_accesses(sources, include_dirs, workdir):
    """clang's diagnostics for _Atomic objects used as plain values ('' when there are none)."""
    cmd = [CLANG, "-std=c11", "-D_GNU_SOURCE", "-fsyntax-only", "-Werror=atomic-implicit-seq-cst",
           *[f"-I{d}" for d in include_dirs], *map(str, sources)]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    return "" if result.returncode == 0 else result.stderr


def too_long(source):
    return source.count("\n") > MAX_LINES


def generated(path):
    """A file tools/gen_surface.py writes (it says so in its first line): read through its
    description (tools/nccl_surface.py), never edited, so the length rule is the description's."""
    return ".gen." in path.name and "Generated by python tools/gen_surface.py" in path.read_text().split("\n", 1)[0]


PYTHON_INCLUDE = sysconfig.get_paths()["include"]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
CLANG = next((c for c in ("clang", "clang-14", "clang-16", "clang-19") if shutil.which(c)), None)
needs_clang = pytest.mark.skipif(CLANG is None, reason="needs clang (apt-get install clang; .ci/run does)")


# ---- the sources ----

@pytest.mark.parametrize("path", c_files(*PYTHON_PARTS), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nothing_but_the_call_inside_gil_released_blocks(path):
    assert gil_block_problems(path.read_text()) == []


@pytest.mark.parametrize("path", c_files(*PYTHON_PARTS), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_library_call_releases_the_gil(path):
    assert unreleased_calls(path.read_text()) == []


@pytest.mark.parametrize("path", c_files(*ALL_PARTS, suffixes=(".c", ".h")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_macro_hides_a_return_or_goto(path):
    assert return_hiding_macros(path.read_text()) == []


@needs_gcc
@pytest.mark.parametrize("path", c_files(EXT, HIP), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_python_h_comes_first(path):
    assert headers_before_python(path, [INCLUDE, EXT, PYTHON_INCLUDE]) == []


@needs_gcc
def test_ext_builds_without_warnings(tmp_path):
    assert build_with_werror(c_files(EXT, COMMON), EXT_FLAGS, [INCLUDE, EXT, PYTHON_INCLUDE], tmp_path) == ""


@needs_gcc
def test_host_builds_without_warnings(tmp_path):
    assert build_with_werror(c_files(HOST), HOST_FLAGS, [INCLUDE], tmp_path) == ""


@pytest.mark.parametrize("path", c_files(HOST, COMMON, suffixes=(".c", ".h")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_atomic_operation_names_its_order(path):
    assert implicit_order_calls(path.read_text()) == []


def test_no_shared_word_is_volatile():
    assert volatile_shared_fields((HOST / "nccl_host.h").read_text()) == []


@needs_clang
def test_no_atomic_is_used_as_a_plain_value(tmp_path):
    assert plain_atomic_accesses(c_files(HOST, COMMON), [HOST, INCLUDE], tmp_path) == ""


def header_alone_problems(header, include_dirs, workdir):
    """gcc's diagnostics for a file whose only line includes `header` ('' when it compiles)."""
    unit = workdir / "alone.c"
    unit.write_text(f'#include "{header}"\n')
    cmd = ["gcc", *EXT_FLAGS, "-Werror", "-fsyntax-only", *[f"-I{d}" for d in include_dirs], str(unit)]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    return "" if result.returncode == 0 else result.stderr


@needs_gcc
@pytest.mark.parametrize("path", c_files(EXT, suffixes=(".h",)), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_ext_header_includes_what_it_uses(path, tmp_path):
    if generated(path) and "#ifndef" not in path.read_text():
        pytest.skip("a generated part of the one file that includes it (core/collectives.c)")
    assert header_alone_problems(path.relative_to(EXT).as_posix(), [INCLUDE, EXT, PYTHON_INCLUDE], tmp_path) == ""


def test_ext_meson_lists_every_source():
    listed = re.findall(r"'([\w/.]+\.c)'", (EXT / "meson.build").read_text())
    assert sorted(listed) == [p.relative_to(EXT).as_posix() for p in c_files(EXT)]


@pytest.mark.parametrize("path", c_files(*ALL_PARTS, suffixes=(".c", ".h")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_c_file_is_too_long(path):
    if generated(path):
        pytest.skip("generated from tools/nccl_surface.py")
    assert not too_long(path.read_text()), f"{path.name}: {path.read_text().count(chr(10))} lines"


# ---- each rule catches a planted violation ----

def test_planted_python_call_in_a_released_block_is_caught():
    snippet = """
    static PyObject *f(PyObject *self)
    {
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = nx_api.ncclGroupStart();
        Py_DECREF(self);
        Py_END_ALLOW_THREADS
        return PyLong_FromLong(rc);
    }
    """
    assert gil_block_problems(snippet) == ["'Py_DECREF' at line 5"]


def test_planted_return_and_goto_in_a_released_block_are_caught():
    snippet = """
        Py_BEGIN_ALLOW_THREADS
        if (x) return NULL;
        Py_END_ALLOW_THREADS
        NX_RUN(rc, x ? nx_api.ncclGroupEnd() : (goto_fail(), 0));
        NX_RUN(rc, helper(self->comm));
    """
    problems = gil_block_problems(snippet)
    assert problems == ["'return' at line 2", "'self->' at line 6"]
    # comments and strings inside a block are not code
    assert gil_block_problems("Py_BEGIN_ALLOW_THREADS /* return Py_None */ f(\"goto\"); Py_END_ALLOW_THREADS") == []


def test_planted_call_with_the_gil_held_is_caught():
    snippet = """
    static PyObject *held(PyObject *m)
    {
        ncclResult_t rc = nx_api.ncclGroupStart();
        const char *s = nx_api.ncclGetErrorString(rc); /* a string lookup: allowed */
        NX_RUN(rc, nx_api.ncclGroupEnd());
        gpu_hip.hipDeviceSynchronize();
        return NULL;
    }

    static int waits(void)
    {
        int rc;
        rc = gpu_hip_load(NULL, NULL);
        Py_BEGIN_ALLOW_THREADS
        rc = gpu_cuda_load(why, sizeof why);
        Py_END_ALLOW_THREADS
        enter_device(&c, 0);
        return rc;
    }
    """
    assert unreleased_calls(textwrap.dedent(snippet)) == [("held", "ncclGroupStart"), ("held", "hipDeviceSynchronize"),
                                                          ("waits", "gpu_hip_load"), ("waits", "enter_device")]


def test_planted_return_hiding_macro_is_caught():
    snippet = """
    #define NX_OK(x) ((x) == 0)
    #define NX_REQUIRE(st, fn)                      \\
        do {                                        \\
            if (nx_require((st), &nx_api.fn) < 0)  \\
                return NULL;                        \\
        } while (0)
    #define CHECKGOTO(call, label) if ((call) != 0) goto label
    #define GETTER(name) static int get_##name(void) { return name; }
    #define TEXT "return nothing"  /* a return in a string or comment is no return */
    """
    assert return_hiding_macros(snippet) == ["NX_REQUIRE", "CHECKGOTO", "GETTER"]


@needs_gcc
def test_planted_system_header_before_python_is_caught(tmp_path):
    bad, good = tmp_path / "bad.c", tmp_path / "good.c"
    bad.write_text('#include <string.h>\n#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n')
    good.write_text('#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n#include <string.h>\n')
    assert headers_before_python(bad, [PYTHON_INCLUDE])[0] == "/usr/include/string.h"
    assert headers_before_python(good, [PYTHON_INCLUDE]) == []


@needs_gcc
def test_planted_warning_fails_the_build(tmp_path):
    src = tmp_path / "warn.c"
    src.write_text("int f(int x);\nint f(int x) { int unused; return x; }\n")
    assert "unused variable" in build_with_werror([src], EXT_FLAGS, [], tmp_path)


@needs_gcc
def test_planted_header_that_leans_on_its_includer_is_caught(tmp_path):
    (tmp_path / "leans.h").write_text("static inline size_t f(void) { return 0; }\n")
    assert "size_t" in header_alone_problems("leans.h", [tmp_path], tmp_path)
    (tmp_path / "stands.h").write_text("#include <stddef.h>\nstatic inline size_t f(void) { return 0; }\n")
    assert header_alone_problems("stands.h", [tmp_path], tmp_path) == ""


def test_planted_long_file_is_caught():
    assert too_long("x\n" * (MAX_LINES + 1)) and not too_long("x\n" * MAX_LINES)


def test_planted_implicit_order_call_is_caught():
    source = "void f(_Atomic int *x)\n{\n    /* atomic_load(x) in a comment is fine */\n    (void)atomic_load(x);\n}\n"
    assert implicit_order_calls(source) == [4]
    assert implicit_order_calls(source.replace("atomic_load(x)", "atomic_load_explicit(x, memory_order_acquire)")) == []


def test_planted_volatile_shared_word_is_caught():
    header = (HOST / "nccl_host.h").read_text()
    planted = header.replace("    uint32_t pid;\n", "    volatile uint32_t pid;\n", 1)
    assert planted != header
    assert volatile_shared_fields(planted) == ["volatile uint32_t pid;"]


@needs_clang
def test_planted_plain_access_to_a_shared_word_is_caught(tmp_path):
    """A real source with one release store of a rank's state turned into a plain assignment."""
    real = (HOST / "comm.c").read_text()
    store = "atomic_store_explicit(&me->state, want, memory_order_release);"
    assert store in real
    planted = tmp_path / "comm.c"
    planted.write_text(real.replace(store, "me->state = want;"))
    line = real[:real.index(store)].count("\n") + 1
    report = plain_atomic_accesses([planted], [HOST, INCLUDE], tmp_path)
    assert f"comm.c:{line}:" in report and "atomic-implicit-seq-cst" in report
