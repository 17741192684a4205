"""The arch-specific NVRTC targets (`migrate.options.arch_targets`) read from the library's CMake,
where its static build decides them (`options.arch_targets_from: NVTE_SPECIFIC_ARCHS`): TE's
CMakeLists appends `100a`, `103a`, `110f`, `120f`, ... to that list under toolkit-version branches.
Every literal entry `NNN[a|f]` is taken (the union over the branches: NVRTC, not the build's
toolkit, decides at run time whether it knows a target, and says so by name); a number with both
an `a` and an `f` entry takes `f` (TE: `120a` before CUDA 12.9, `120f` from it). The stubs give a
family (`f`) target to the later minors of its family too (sm_120f on a 12.1 device)."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import ApplyError
from ..base import cmake_lists

_ENTRY = re.compile(r"([0-9]{2,3})([af])")


def from_cmake(root: Path, cmake_file: str, variable: str) -> dict[int, str]:
    """Compute capability -> `sm_NNN[a|f]` from the literal entries of `variable` in `cmake_file`."""
    path = root / cmake_file
    if not path.is_file():
        raise ApplyError(f"options.arch_targets_from: no CMake file {cmake_file}", where=cmake_file)
    entries = cmake_lists.list_entries(cmake_lists.commands(path.read_bytes()), variable)
    out: dict[int, str] = {}
    for text in entries:
        m = _ENTRY.fullmatch(text)
        if m is None:
            continue
        cc = int(m.group(1))
        if cc not in out or m.group(2) == "f":
            out[cc] = f"sm_{text}"
    if not out:
        raise ApplyError(f"options.arch_targets_from: {cmake_file} appends no arch-specific target (NNNa or NNNf) "
                         f"to {variable}", where=cmake_file,
                         hint="name the list the CMake file builds its arch-specific targets in, or give "
                              "options.arch_targets as a table")
    return dict(sorted(out.items()))


def resolve(root: Path, spec) -> None:
    """spec.options["arch_targets"] from the CMake list the rule names, when it names one."""
    variable = spec.raw.get("options", {}).get("arch_targets_from")
    if variable and spec.raw.get("options", {}).get("arch_targets"):
        raise ApplyError("options.arch_targets and options.arch_targets_from both given", where=spec.rule_id,
                         hint="keep one: the CMake list the targets are read from, or the table")
    if variable:
        spec.options["arch_targets"] = from_cmake(root, spec.cmake["file"], variable)
