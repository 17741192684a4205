"""Options the static build gives some sources only (`migrate.options.conditional[].sources`, e.g.
TE's --use_fast_math for activation/*.cu): which variants of a kernel get them under NVRTC. A
variant gets the option when every entry point reaching it is defined in one of those sources, as
the static build compiled it only there. One the static build also compiled in another unit (TE:
an NVFP4 quantize both nvte_gelu and nvte_quantize reach; two instantiations, of which the program
runs one) does not: an entry point outside the sources (nvte_quantize) never gets the option."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

from ...errors import ApplyError

# Template parameter kinds whose runtime spelling (rtc_stubs.h's AxisValue text) is the plan's:
# types and functions as kernels.h spells them; values only when bools (true/false; numbers and
# enumerators are spelled from their value at run time).
_SPELLED_KINDS = ("type", "function_pointer")


def _matches(path: str, sources: list[str]) -> bool:
    return any(fnmatchcase(path, glob) for glob in sources)


def scope(kp, sources: list[str], entry_files: dict[str, str]) -> dict | None:
    """How the option reaches `kp`'s variants: None (none of them), {"axis": -1} (all), {"axis": k,
    "values": [...]} (those whose k-th template argument is one of the values), or {"axis": -1,
    "names": [...]} (those name expressions) when no one argument tells them apart."""
    scoped = [v for v in kp.variants
              if v.entry_points and all(_matches(entry_files.get(e, ""), sources) for e in v.entry_points)]
    if not scoped:
        return None
    if len(scoped) == len(kp.variants):
        return {"axis": -1}
    others = [v for v in kp.variants if v not in scoped]
    for k, p in enumerate(kp.kernel.params):
        values = {v.axes[p.name] for v in scoped}
        if p.kind not in _SPELLED_KINDS and not {v.axes[p.name] for v in kp.variants} <= {"true", "false"}:
            continue
        if values.isdisjoint(v.axes[p.name] for v in others):
            return {"axis": k, "values": sorted(values)}
    return {"axis": -1, "names": sorted(v.name_expression(kp.kernel.id) for v in scoped)}


def scoped_options(kp, conditional: list[dict], entry_files: dict[str, str]) -> list[dict]:
    """The rule's conditional options with `sources` that reach some of `kp`'s variants: each
    {"index": position in the rule's list, "axis", "values", "names"} for kernels.cpp."""
    out = []
    for i, c in enumerate(conditional):
        if "sources" not in c:
            continue
        s = scope(kp, c["sources"], entry_files)
        if s is not None:
            out.append({"index": i, "axis": s["axis"], "values": s.get("values", []), "names": s.get("names", [])})
    return out


# nvcc options that change the code a kernel compiles to, and NVRTC's spelling of each
_CODEGEN = {"--use_fast_math": "--use_fast_math", "-use_fast_math": "--use_fast_math",
            "--ftz=true": "--ftz=true", "--prec-div=false": "--prec-div=false",
            "--prec-sqrt=false": "--prec-sqrt=false", "--fmad=false": "--fmad=false"}
_CUDA_FLAGS = re.compile(r"(?m)^[ \t]*(?:string\s*\(\s*APPEND\s+CMAKE_CUDA_FLAGS|set\s*\(\s*CMAKE_CUDA_FLAGS)\b([^)]*)\)")


def global_codegen_flags(cmake_text: str) -> list[tuple[str, int]]:
    """(NVRTC option, line) for each code-generation option the library's CMake gives every CUDA
    source (`string(APPEND CMAKE_CUDA_FLAGS " --use_fast_math")`, `set(CMAKE_CUDA_FLAGS ...)`)."""
    out = []
    for m in _CUDA_FLAGS.finditer(cmake_text):
        for word in re.findall(r"[^\s\"]+", m.group(1)):
            if word in _CODEGEN:
                out.append((_CODEGEN[word], cmake_text.count("\n", 0, m.start()) + 1))
    return out


def check_global_flags(cmake_path: str, cmake_text: str, options: dict) -> None:
    """Refuse a rule whose NVRTC options lack a code-generation option the static build gives every
    CUDA source: the kernels would compile to other numerics (bitsandbytes' CMake appends
    --use_fast_math to CMAKE_CUDA_FLAGS; without it in the rule, its migrated kernels' outputs
    differed from the original's on the H200)."""
    given = set(options.get("always", [])) | {c.get("option") for c in options.get("conditional", [])}
    for option, line in global_codegen_flags(cmake_text):
        if option not in given:
            raise ApplyError(f"the library's CMake compiles every CUDA source with {option} ({cmake_path}:{line}); "
                             "NVRTC would compile the migrated kernels without it", where=cmake_path,
                             hint=f"add {option} to migrate/options/always in the rule (or to options.conditional "
                                  "with the CMake option that sets it)")
