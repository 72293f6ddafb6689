"""Our ABI declarations (src/include/abi.h, nccl_abi.h) against RCCL's own header: rccl.h from
Debian's librccl-dev (experimental, RCCL 2.27.7), compiled with gcc. rccl.h includes the HIP
headers only for hipStream_t, so two small stand-ins take their place.

* Every entry point rccl.h declares that abi.h has a row for has a compatible C type
  (__builtin_types_compatible_p on the function pointer types), and the same parameters in the
  same order by name (RCCL calls Gather's and Scatter's count sendcount and recvcount; NCCL, and
  abi.h, count).
* Every enumerator and integer constant both headers define has the same value.
* ncclConfig_t is laid out as ours up to RCCL's last field, ncclSimInfo_t and ncclUniqueId alike,
  and the magic numbers RCCL's initializers stamp are ours.
Where RCCL differs on purpose it is listed below (DIFFERENCES); anything else fails.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "src" / "include"
# RCCL's parameter names where they differ from NCCL's (and ours) for the same argument.
PARAMETER_SYNONYMS = {("ncclGather", "sendcount"): "count", ("ncclScatter", "recvcount"): "count"}
# What RCCL 2.27.7 has differently, on purpose: NCCL's ncclTimeout (8) came after RCCL forked, so
# RCCL has 8 results; RCCL's ncclConfig_t stops at nvlsCTAs (libraries read the struct by its size
# and version fields, so ours, longer, is accepted: tested in test_rccl_library's Communicator.init).
DIFFERENCES = {
    # rccl.h's helper for sizing ncclMaxRedOp, not a value of any API type
    "enumerators only in rccl.h": {"ncclNumOps_dummy"},
    "enumerator values": {"ncclNumResults": (8, 9)},
    # members NCCL added after RCCL forked to enums both have; enums RCCL lacks entirely (memory
    # stats, the 2.28+ device API's) are not compared
    "members only ours adds": {"ncclTimeout"},
}
# Types abi.h's newer rows use that rccl.h has no declaration of; stand-ins, used only by rows
# rccl.h does not declare (the compatibility check covers the rows both have).
NCCL_ONLY_TYPES = ("ncclCftLeId_t", "ncclCollConfig_t", "ncclDevResourceRequirements_t", "ncclEncryptionConfig_t",
                   "ncclGinBarrierHandle_t", "ncclLLA2AHandle_t", "ncclLsaBarrierHandle_t", "ncclMultimemHandle_t",
                   "ncclParamHandle_t", "ncclTeam_t", "ncclCftTeamMode_t")


HIP_STANDINS = {
    "hip/hip_runtime.h": "#include <stddef.h>\n#include <stdint.h>\ntypedef struct ihipStream_t *hipStream_t;\n",
    "hip/hip_fp16.h": "",
}


def _enums(text):
    """{enumerator: enum type} of every typedef'd enum in a header."""
    out = {}
    for body, name in re.findall(r"typedef\s+enum\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        body = re.sub(r"/\*.*?\*/|//[^\n]*", "", body, flags=re.S)
        for enumerator in re.findall(r"(\w+)\s*=", body):
            out[enumerator] = name
    return out


def _constants(text):
    """Object-like NCCL_* macros with a numeric value (not strings, not NULL; a function-like macro
    has no blank between its name and its parameters, so the pattern skips it)."""
    out = set()
    for name, value in re.findall(r"^#define\s+(NCCL_\w+)[ \t]+([^\n]+)", text, re.M):
        value = re.sub(r"/\*.*?\*/|//.*", "", value).strip()
        if value and not value.startswith('"') and value != "NULL":
            out.add(name)
    return out


def _struct_fields(text, typedef):
    m = re.search(r"typedef\s+struct\s*\w*\s*\{([^{}]*)\}\s*" + typedef + r"\s*;", text)
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1), flags=re.S)
    return [re.findall(r"(\w+)\s*(?:\[[^\]]*\])?$", decl.strip())[0] for decl in body.split(";") if decl.strip()]


def _prototypes(text):
    """{function: [parameter names]} of the nccl* functions a header declares."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    out = {}
    for name, params in re.findall(r"(?:ncclResult_t|const\s+char\s*\*)\s*\b(nccl\w+)\s*\(([^;{]*?)\)\s*;", text):
        params = params.strip()
        if params in ("", "void"):
            out[name] = []
        else:
            out[name] = [re.findall(r"(\w+)\s*(?:\[\s*\])?$", p.strip())[0] for p in params.split(",")]
    return out


def _compile_and_run(tmp, name, source, includes):
    gcc = shutil.which("gcc")
    src, exe = tmp / f"{name}.c", tmp / name
    src.write_text(source)
    proc = subprocess.run([gcc, "-std=gnu11", "-w", *[f"-I{i}" for i in includes], "-o", str(exe), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"{name} did not compile:\n{proc.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def _printer(enums, constants, structs, extra=""):
    """C that prints {"enum": {...}, "const": {...}, "struct": {T: {"(sizeof)": n, field: offset}}} as JSON."""
    lines = ['#include <stdio.h>', '#include <stddef.h>', 'int main(void) {', 'printf("{\\"enum\\": {");']
    lines += [f'printf("{"," if i else ""}\\"{e}\\": %lld", (long long){e});' for i, e in enumerate(sorted(enums))]
    lines.append('printf("}, \\"const\\": {");')
    lines += [f'printf("{"," if i else ""}\\"{c}\\": %.17g", (double)({c}));' for i, c in enumerate(sorted(constants))]
    lines.append('printf("}, \\"struct\\": {");')
    for j, (typedef, fields) in enumerate(sorted(structs.items())):
        lines.append(f'printf("{"," if j else ""}\\"{typedef}\\": {{\\"(sizeof)\\": %zu", sizeof({typedef}));')
        lines += [f'printf(", \\"{f}\\": %zu", offsetof({typedef}, {f}));' for f in fields]
        lines.append('printf("}");')
    lines.append('printf("}");')
    lines.append(extra)
    lines += ['printf("}\\n");', "return 0;", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def headers(experimental, tmp_path_factory):
    if experimental.rccl_h is None:
        pytest.skip("the experimental prefix has no rccl.h (librccl-dev)")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to compile the headers")
    tmp = tmp_path_factory.mktemp("rccl_header")
    for rel, text in HIP_STANDINS.items():
        (tmp / "include" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "include" / rel).write_text(text)
    rccl_h = Path(experimental.rccl_h)
    return {"tmp": tmp, "rccl_h": rccl_h, "rccl": rccl_h.read_text(),
            "ours": (INCLUDE / "nccl_abi.h").read_text(), "includes": [tmp / "include", rccl_h.parent.parent]}


def test_enumerators_constants_and_layouts_match(headers):
    rccl_enums, our_enums = _enums(headers["rccl"]), _enums(headers["ours"])
    common_consts = _constants(headers["rccl"]) & _constants(headers["ours"])
    rccl_config = _struct_fields(headers["rccl"], "ncclConfig_t")
    structs = {"ncclConfig_t": rccl_config, "ncclSimInfo_t": _struct_fields(headers["rccl"], "ncclSimInfo_t"),
               "ncclUniqueId": ["internal"]}
    def magic(config, sim, size):
        return ('printf(", \\"magic\\": {\\"config\\": %u, \\"sim\\": %u, \\"config_size\\": %zu}", '
                f'(unsigned)({config}), (unsigned)({sim}), (size_t)({size}));')

    theirs = _compile_and_run(
        headers["tmp"], "rccl_side",
        "#include <rccl/rccl.h>\n"
        + _printer(rccl_enums, common_consts, structs,
                   "ncclConfig_t c = NCCL_CONFIG_INITIALIZER; ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;\n"
                   + magic("c.magic", "s.magic", "c.size")),
        headers["includes"])
    ours = _compile_and_run(
        headers["tmp"], "our_side",
        '#include "nccl_abi.h"\n'
        + _printer(our_enums, common_consts, structs,
                   magic("NCCL_API_MAGIC", "NCCL_SIM_INFO_MAGIC", "sizeof(ncclConfig_t)")),
        [INCLUDE])

    # Enumerators: the same names in the same enums, the same values, but for the listed ones.
    assert set(rccl_enums) - set(our_enums) == DIFFERENCES["enumerators only in rccl.h"]
    shared_types = set(rccl_enums.values())
    added = {e for e in set(our_enums) - set(rccl_enums) if our_enums[e] in shared_types}
    assert added == DIFFERENCES["members only ours adds"]
    for e in set(rccl_enums) & set(our_enums):
        assert rccl_enums[e] == our_enums[e], f"{e} is a {rccl_enums[e]} in rccl.h, a {our_enums[e]} in ours"
        pair = (theirs["enum"][e], ours["enum"][e])
        assert pair[0] == pair[1] or DIFFERENCES["enumerator values"].get(e) == pair, (e, pair)
    # Constants both define.
    assert {"NCCL_CONFIG_UNDEF_INT", "NCCL_SPLIT_NOCOLOR", "NCCL_UNIQUE_ID_BYTES", "NCCL_WIN_COLL_SYMMETRIC",
            "NCCL_SHRINK_ABORT", "NCCL_CTA_POLICY_EFFICIENCY"} <= common_consts
    assert theirs["const"] == ours["const"]
    # Layouts: RCCL's ncclConfig_t is the first part of ours, the others are the same.
    for typedef in ("ncclSimInfo_t", "ncclUniqueId"):
        assert theirs["struct"][typedef] == ours["struct"][typedef], typedef
    for field in rccl_config:
        assert theirs["struct"]["ncclConfig_t"][field] == ours["struct"]["ncclConfig_t"][field], field
    assert theirs["struct"]["ncclConfig_t"]["(sizeof)"] <= ours["struct"]["ncclConfig_t"]["(sizeof)"]
    assert theirs["magic"]["config"] == ours["magic"]["config"] and theirs["magic"]["sim"] == ours["magic"]["sim"]
    assert theirs["magic"]["config_size"] == theirs["struct"]["ncclConfig_t"]["(sizeof)"]


def test_every_declared_entry_point_has_our_signature(headers):
    declared = _prototypes(headers["rccl"])
    names = _compile_and_run(
        headers["tmp"], "abi_rows",
        '#include <stdio.h>\n#include "abi.h"\n'
        '#define ROW(name, ret, params, args, since) printf("%s\\"%s\\": \\"%s\\"", first ? "" : ",", #name, #args); '
        "first = 0;\n"
        'int main(void) { int first = 1; printf("{"); NCCL_ABI(ROW) printf("}\\n"); return 0; }\n',
        [INCLUDE])
    rows = {name: [a.strip() for a in args.strip("()").split(",") if a.strip()] for name, args in names.items()}
    both = sorted(set(rows) & set(declared))
    assert {"ncclAllReduce", "ncclAllToAllv", "ncclAllToAll", "ncclAllReduceWithBias", "ncclCommInitRankScalable",
            "ncclGather", "ncclGroupStart"} <= set(both)

    # Parameter order, by name.
    for name in both:
        theirs = [PARAMETER_SYNONYMS.get((name, p), p) for p in declared[name]]
        assert theirs == rows[name], f"{name}: rccl.h has ({', '.join(declared[name])}), abi.h ({', '.join(rows[name])})"

    # C types: our row's function pointer type against RCCL's declaration. abi.h is read with
    # rccl.h's types (its own nccl_abi.h kept out); the types only NCCL 2.28+ has are stand-ins,
    # used by rows rccl.h does not declare.
    newer_types = "\n".join(f"typedef struct {{ int unused; }} {t};" for t in NCCL_ONLY_TYPES)
    checks = "\n".join(f'_Static_assert(__builtin_types_compatible_p(__typeof__(&{n}), nx_sig_{n}), "{n}");'
                       for n in both)
    source = f"""
#include <rccl/rccl.h>
#define NCCL4PY_NCCL_ABI_H
#define NCCL_ABI_VERSION_CODE(X, Y, Z) NCCL_VERSION(X, Y, Z)
typedef hipStream_t cudaStream_t;
typedef int ncclCommMemStat_t;
typedef struct {{ int unused; }} ncclWaitSignalDesc_t, ncclCommProperties_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevComm ncclDevComm_t;
{newer_types}
#include "abi.h"
#define SIG(name, ret, params, args, since) typedef ret(*nx_sig_##name) params;
NCCL_ABI(SIG)
{checks}
int main(void) {{ puts("{{}}"); return 0; }}
"""
    _compile_and_run(headers["tmp"], "signatures", source, [*headers["includes"], INCLUDE])
