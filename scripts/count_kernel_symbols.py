"""Count the `__global__` kernels nvcc emitted into compiled objects: the independent number that
`codemod analyze`'s instantiation count is checked against.

    python scripts/count_kernel_symbols.py [--json OUT.json] OBJECT...
    python scripts/count_kernel_symbols.py --analysis ANALYSIS.json [--same at::=c10:: ...] [--ignore cub::] OBJECT...

OBJECT is a `.cubin` or an object with embedded device code (`nvcc -c`). `cuobjdump -elf` lists
each device ELF's symbol table; a kernel is a `FUNC GLOBAL ... ENTRY` symbol (a `__global__`
function; device functions are not entries). Kernels are counted per object by mangled name and
per architecture (an object built for several archs holds one ELF each, and each arch's count is
the same kernels). cuobjdump comes from PATH or the `nvidia-cuda-cuobjdump` wheel.

With `--analysis` (a `codemod analyze --json` document), each object's kernels, demangled by
`c++filt` and spelled without blanks, are compared with the variants the analysis charges to the
TU of the same stem (`foo.o` <-> `.../foo.cu`): exit 1 when a set differs. `--same A=B` makes two
spellings of one name equal (`at::=c10::`: PyTorch's `at::Half` is `c10::Half`; an enumerator and
the value the demangler prints, `General8bit=0`). `--ignore PREFIX` leaves out kernels of other
libraries that including their headers instantiates (`cub::`: CUB's `EmptyKernel`).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

_ENTRY = re.compile(r"\bFUNC\s+GLOBAL\s+\S+\s+ENTRY\s+\S+\s+(\S+)\s*$")


def cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import nvidia.cu13  # the CUDA 13 wheels' namespace package

        for base in nvidia.cu13.__path__:
            cand = Path(base) / "bin" / "cuobjdump"
            if cand.is_file():
                return str(cand)
    except ImportError:
        pass
    return None


def entries_by_arch(elf_dump: str) -> dict[str, set[str]]:
    """`cuobjdump -elf` text -> arch -> mangled kernel names (arch `?` when the dump names none,
    as for a bare .cubin)."""
    out: dict[str, set[str]] = {}
    arch = "?"
    for line in elf_dump.splitlines():
        m = re.match(r"^arch = (sm_\w+)", line.strip())
        if m:
            arch = m.group(1)
            continue
        m = _ENTRY.search(line)
        if m:
            out.setdefault(arch, set()).add(m.group(1))
    return out


def count(objects: list[Path], tool: str) -> dict:
    per_object = {}
    for obj in objects:
        dump = subprocess.run([tool, "-elf", str(obj)], capture_output=True, text=True, check=True).stdout
        archs = entries_by_arch(dump)
        per_object[obj.name] = {"per_arch": {a: len(v) for a, v in sorted(archs.items())},
                                "kernels": max((len(v) for v in archs.values()), default=0),
                                "names": sorted(set().union(*archs.values())) if archs else []}
    names = set().union(*(set(o["names"]) for o in per_object.values())) if per_object else set()
    return {"tool": "cuobjdump -elf: FUNC GLOBAL ENTRY symbols", "objects": per_object,
            "total_per_object_sum": sum(o["kernels"] for o in per_object.values()),
            "distinct_kernels": len(names)}


def _spelled(text: str, same: list[tuple[str, str]]) -> str:
    text = re.sub(r"\s+", "", text)
    for a, b in same:
        # an identifier is replaced as a whole word (`General8bit=0`, `half=__half`), anything else
        # as text (`at::=c10::`)
        text = re.sub(rf"\b{re.escape(a)}\b", b, text) if re.fullmatch(r"\w+", a) else text.replace(a, b)
    return text


def compare(objects: list[Path], tool: str, analysis: dict, same: list[tuple[str, str]],
            ignore: tuple[str, ...] = ()) -> dict:
    """Per object: the kernels nvcc emitted and the analysis's variants of the same TU, by name."""
    tu_of = {e["name"]: e["file"] for e in analysis["entry_points"]}
    want: dict[str, set[str]] = {}
    for site in analysis["sites"]:
        for v in site.get("variants", []):
            name = _spelled(f"{v['kernel'].split('::')[-1]}<{','.join(v['args'])}>", same)
            for e in v["entry_points"]:
                want.setdefault(Path(tu_of.get(e, "")).stem, set()).add(name)
    out = {}
    for obj in objects:
        dump = subprocess.run([tool, "-elf", str(obj)], capture_output=True, text=True, check=True).stdout
        mangled = sorted(set().union(*entries_by_arch(dump).values()) or set())
        demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True,
                                   check=True).stdout.split("\n")
        got = {_spelled(re.sub(r"^void ", "", d).rsplit("(", 1)[0], same) for d in demangled if d.strip()}
        got = {g for g in got if not any(g.startswith(p) for p in ignore)}
        exp = want.get(obj.stem, set())
        out[obj.name] = {"nvcc": len(got), "analysis": len(exp), "only_nvcc": sorted(got - exp)[:5],
                         "only_analysis": sorted(exp - got)[:5]}
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("objects", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--analysis", type=Path, help="codemod analyze --json document to compare with")
    ap.add_argument("--same", action="append", default=[], metavar="A=B", help="spellings of one name")
    ap.add_argument("--ignore", action="append", default=[], metavar="PREFIX",
                    help="leave out kernels whose demangled name starts so (other libraries' kernels)")
    args = ap.parse_args(argv)
    tool = cuobjdump()
    if tool is None:
        print("cuobjdump not found: put the CUDA toolkit's bin on PATH or install nvidia-cuda-cuobjdump", file=sys.stderr)
        return 2
    if args.analysis:
        same = [tuple(x.split("=", 1)) for x in args.same]
        cmp = compare(args.objects, tool, json.loads(args.analysis.read_text()), same, tuple(args.ignore))
        bad = 0
        for name, c in cmp.items():
            ok = not c["only_nvcc"] and not c["only_analysis"]
            bad += not ok
            print(f"{name}: nvcc {c['nvcc']}, analysis {c['analysis']}: {'same set' if ok else 'DIFFERENT'}"
                  + ("" if ok else f" (only nvcc: {c['only_nvcc']}; only analysis: {c['only_analysis']})"))
        if args.json:
            args.json.write_text(json.dumps(cmp, indent=1, sort_keys=True) + "\n")
        return 1 if bad else 0
    got = count(args.objects, tool)
    for name, o in got["objects"].items():
        print(f"{name}: {o['kernels']} kernels {o['per_arch']}")
    print(f"total {got['total_per_object_sum']} (distinct mangled names {got['distinct_kernels']})")
    if args.json:
        slim = {**got, "objects": {k: {kk: vv for kk, vv in v.items() if kk != "names"} for k, v in got["objects"].items()}}
        args.json.write_text(json.dumps(slim, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
