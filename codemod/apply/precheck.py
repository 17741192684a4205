"""Before a migration is written: every generated kernel string must compile under NVRTC (no name
expression, sm_90, the rule's options and include folders), so that a rule reaching host-only code
is refused instead of shipping a kernel that fails on first use. `codemod verify` does the full
check (every axis value, every arch and option set, the host code) after the build."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..verify.manifest import parse_manifest
from ..verify.programs import plan, run_program

ARCH = "sm_90"
BLACKWELL_ARCH = "sm_100a"
BLACKWELL_MIN = 1000            # __CUDA_ARCH__ of sm_100


def precheck(root: Path, files: dict[str, tuple[str | None, str]],
             manifests: list[tuple[Path, str]], blackwell: set[str] = frozenset()) -> tuple[list[str], str | None]:
    """(problems, note) for the files `apply` would write (path -> (old, new)) and the manifests
    (where each will be kept, its text), the tree's other files as they are. A problem names the
    kernel and gives the head of NVRTC's log with the include path to a header it could not open;
    the note says why the check was skipped (no NVRTC). `blackwell`: kernels whose body is live only
    from sm_100 on (`#if __CUDA_ARCH__ >= 1000`, analysis body_arch_min): compiled for sm_100a too
    (mapped by the rule's arch_targets), since for sm_90 NVRTC sees an empty body."""
    from ..errors import CodemodError
    from ..verify import nvrtc
    from ..verify.report import hint_for

    if not manifests:
        return [], None
    try:
        nvrtc.load()
    except CodemodError as exc:
        return [], f"kernel strings not compiled before writing: {exc.render()}"
    overlay = {path: new for path, (_, new) in files.items()}
    parsed = [parse_manifest(text, path, root, overlay) for path, text in manifests]
    # verify's programs, default options only, with the name expressions of verify's cover of the
    # variants: a program that compiles only because `#if CUDA_VERSION >= N` (or any other guard)
    # emptied it fails here, not on first use
    programs = [p for p in plan(parsed, [ARCH]) if p.config == "default"]
    if blackwell:
        programs += [p for p in plan(parsed, [BLACKWELL_ARCH], only=sorted(blackwell)) if p.config == "default"]
    # NOTE: NVRTC compiles distinct programs concurrently (thread-safe API) and ctypes releases
    # the GIL during the call, so threads use every core.
    with ThreadPoolExecutor(max_workers=max(1, min(len(programs), os.cpu_count() or 1))) as pool:
        results = list(pool.map(run_program, programs))
    problems = []
    for result in results:
        for failure in result.failures:
            hint = hint_for(failure.log_head)
            problems.append(f"{result.kernel}: its kernel string does not compile under NVRTC "
                            f"({result.target or result.arch}):\n"
                            + "\n".join("    " + line for line in failure.log_head.splitlines())
                            + (f"\n    hint: {hint}" if hint else ""))
    return problems, None
