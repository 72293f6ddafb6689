"""Every public callable of the user-facing modules has a signature inspect can read and a
docstring help() shows (docs/developing.md#documentation).

Walked in a fresh interpreter: importing the modules loads no library, and the walk reads only
attributes. The modules' own public lists (``__all__``, or the names without a leading
underscore) are the source of what is public, so a name added later is checked too.
"""

import textwrap

import pytest

import children

pytestmark = pytest.mark.timeout(120)

# The modules a user imports, and how their public names are listed.
_WALK = textwrap.dedent(
    """
    import importlib, inspect, json, types, typing
    import nccl  # registers the cuda.core shim where no real cuda.core is installed

    MODULES = ["nccl", "nccl.core", "nccl.bindings.nccl", "nccl.bindings.rocm_extensions",
               "nccl._hip_compat.cuda_core_shim"]

    def public_names(mod):
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n in dir(mod) if not n.startswith("_")]
        return sorted(names)

    def members(cls):
        for name, raw in vars(cls).items():
            if name.startswith("_"):
                continue
            yield name, raw, getattr(cls, name)

    problems, checked = [], 0

    def check(where, obj, signature=True):
        global checked
        checked += 1
        if signature:
            try:
                inspect.signature(obj)
            except (TypeError, ValueError) as e:
                problems.append(f"{where}: no signature ({e})")
        if not inspect.getdoc(obj):
            problems.append(f"{where}: no docstring")

    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in public_names(mod):
            obj = getattr(mod, name)
            where = f"{modname}.{name}"
            if isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if isinstance(obj, type):
                # enum classes are documented by their members; their call is Enum's lookup
                import enum
                check(where, obj, signature=not issubclass(obj, enum.Enum))
                if issubclass(obj, enum.Enum):
                    continue
                for mname, raw, value in members(obj):
                    if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
                        check(f"{where}.{mname}", raw, signature=False)
                    elif callable(value):
                        check(f"{where}.{mname}", value)
            elif typing.get_origin(obj) is None:  # type aliases (Union[...]) are data, not calls
                check(where, obj)
    print(json.dumps({"problems": problems, "checked": checked}))
    """
)


def test_every_public_callable_has_a_signature_and_a_docstring():
    report = children.last_json(children.run_python(_WALK, timeout=100))
    assert report["checked"] > 300, report  # the walk reached every module
    assert report["problems"] == []


def test_classmethods_keep_their_docstring_once_bound():
    # CPython 3.10-3.13 lose a METH_METHOD classmethod's __doc__ when it is bound; help() then
    # showed nothing for Communicator.init, init_all and from_env.
    code = textwrap.dedent(
        """
        import inspect, nccl.core as nc
        C = nc.Communicator
        print(bool(C.init.__doc__), bool(C.init_all.__doc__), bool(C.from_env.__doc__))
        print(inspect.signature(C.from_env))
        print(inspect.signature(C().shrink))  # a null communicator: nothing is loaded
        """
    )
    out = children.run_python(code, check_exit=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "True True True"
    assert lines[1] == "(*, config=None, timeout=None, environ=None, trace_buffer=None)"
    assert lines[2] == "(exclude_ranks=None, config=None, flag=<CommShrinkFlag.DEFAULT: 0>, *, trace_buffer=None)"


def test_struct_classes_document_the_c_struct_and_its_members():
    code = textwrap.dedent(
        """
        import inspect
        from nccl.bindings import nccl as nb
        print(inspect.signature(nb.Config))
        print(nb.Config.__doc__.splitlines()[0])
        print(nb.Config.cga_cluster_size.__doc__)
        print(nb.UniqueId.internal.__doc__)
        """
    )
    out = children.run_python(code, check_exit=True)
    assert out.stdout.splitlines() == [
        "()",
        "Communicator configuration for comm_init_rank_config, comm_split and comm_shrink.",
        "ncclConfig_t.cgaClusterSize",
        "ncclUniqueId.internal (the id's opaque bytes)",
    ]
