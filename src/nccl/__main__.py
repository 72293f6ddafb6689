"""python -m nccl: package and library versions, where the library came from, and whether more
than one NCCL/RCCL copy is mapped in this process.

python -m nccl doctor: the full diagnosis (nccl._doctor): mapped copies, the NCCL_* environment,
missing ABI symbols with their minimum version, GPU visibility, the cuda.core shim."""

import sys

from nccl import _ext
from nccl._show_versions import show_versions


def main():
    show_versions()
    try:
        attempts = _ext.get_load_attempts()
        flavour = _ext.get_library_flavour()
        path = _ext.get_library_path()
    except RuntimeError as exc:
        print(f"\n{exc}")
        return 1
    print(f"\nlibrary path: {path}")
    print(f"flavour     : {flavour}")
    print("load attempts:")
    for candidate, error in attempts:
        print(f"  {candidate}: {'loaded' if error is None else error}")
    mapped = sorted(set(_ext._mapped_libraries()))
    if len(mapped) > 1:
        print("WARNING: more than one NCCL/RCCL copy is mapped in this process:")
        for p in mapped:
            print(f"  {p}")
    else:
        print("one NCCL/RCCL copy mapped" if mapped else "no libnccl/librccl mapped (host backend)")
    return 0


def cli(argv):
    if not argv:
        return main()
    if argv[0] == "doctor" and len(argv) == 1:
        from nccl._doctor import main as doctor

        return doctor()
    if argv[0] in ("-h", "--help"):
        print("usage: python -m nccl [doctor]")
        return 0
    print(f"python -m nccl: error: unknown arguments {' '.join(argv)!r} (usage: python -m nccl [doctor])",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
