"""Before a migration is written: every generated kernel string must compile under NVRTC (no name
expression, sm_90, the rule's options and include folders), so that a rule reaching host-only code
is refused instead of shipping a kernel that fails on first use. `codemod verify` does the full
check (every axis value, every arch and option set, the host code) after the build."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ...verify.manifest import parse_manifest
from ...verify.programs import plan, run_program

ARCH = "sm_90"
BLACKWELL_ARCH = "sm_100a"
BLACKWELL_MIN = 1000            # __CUDA_ARCH__ of sm_100
CACHE_KIND = "precheck"         # check_cache folder


def precheck(root: Path, files: dict[str, tuple[str | None, str]],
             manifests: list[tuple[Path, str]], blackwell: set[str] = frozenset(),
             progress=None) -> tuple[list[str], str | None]:
    """(problems, note) for the files `apply` would write (path -> (old, new)) and the manifests
    (where each will be kept, its text), the tree's other files as they are. A problem names the
    kernel and gives the head of NVRTC's log with the include path to a header it could not open;
    the note says why the check was skipped (no NVRTC). `blackwell`: kernels whose body is live only
    from sm_100 on (`#if __CUDA_ARCH__ >= 1000`, analysis body_arch_min): compiled for sm_100a too
    (mapped by the rule's arch_targets), since for sm_90 NVRTC sees an empty body. A program that
    compiled before with the same inputs is not compiled again (`program_key`, check_cache.py);
    `progress(message)` gets how many programs the cache holds and a line per program compiled."""
    from ...errors import CodemodError
    from ...verify import nvrtc
    from ...verify.report import hint_for

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
    results = _compile_all(programs, progress)
    problems = []
    for result in results:
        for failure in result.failures:
            hint = hint_for(failure.log_head)
            problems.append(f"{result.kernel}: its kernel string does not compile under NVRTC "
                            f"({result.target or result.arch}):\n"
                            + "\n".join("    " + line for line in failure.log_head.splitlines())
                            + (f"\n    hint: {hint}" if hint else ""))
    return problems, None


def program_key(program, lib) -> str:
    """Everything that decides whether `program` compiles: its name, source and in-memory headers,
    every option NVRTC gets (codemod's defaults with the CUDA include folders, the arch's, the
    rule's, -DCUDA_VERSION, the defines), the name expressions, the target arch, and NVRTC's
    identity (version, library file, the CUDA headers' files under its include folders). A rule's
    own include folder (`-I`, `--include-path=`) adds its files' paths, sizes and mtimes."""
    from ...verify.nvrtc import arch_options
    from .check_cache import folder_id, key, nvrtc_identity

    options = (lib.default_options(program.options, program.include_cuda, program.include_cccl)
               + arch_options(program.target) + list(program.options))
    return key("nvrtc-precheck", program.name, program.source, sorted(program.headers.items()), options,
               program.variants, program.target,
               [folder_id(d) for o in program.options if (d := _include_folder(o))],
               nvrtc_identity(str(lib.path), tuple(lib.version), tuple(str(d) for d in lib.include_dirs)))


def _compile_all(programs: list, progress) -> list:
    """Each program's result, in order: from the cache when it passed before with the same key,
    else compiled (and cached when it passes)."""
    from ...verify import nvrtc
    from ...verify.programs import ProgramResult
    from . import check_cache

    lib = nvrtc.load()
    keys = [program_key(p, lib) for p in programs]
    results: list = [None] * len(programs)
    for i, (p, k) in enumerate(zip(programs, keys)):
        if check_cache.get(CACHE_KIND, k) is not None:
            results[i] = ProgramResult(kernel=p.kernel, arch=p.arch, config=p.config, variants=len(p.variants),
                                       variants_total=p.variants_total, ok=True, seconds=0.0,
                                       target=p.target if p.target != p.arch else "")
    todo = [i for i, r in enumerate(results) if r is None]
    cached = len(programs) - len(todo)
    if progress:
        progress(f"apply: precheck: {len(programs)} NVRTC program(s), {cached} passed before with the same "
                 f"inputs (cache), {len(todo)} to compile")
    if not todo:
        return results
    # NOTE: NVRTC compiles distinct programs concurrently (thread-safe API) and ctypes releases
    # the GIL during the call, so threads use every core.
    with ThreadPoolExecutor(max_workers=max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        futures = {pool.submit(run_program, programs[i]): i for i in todo}
        for n, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            result = results[i] = fut.result()
            if result.ok:
                check_cache.put(CACHE_KIND, keys[i], {"kernel": result.kernel, "target": programs[i].target,
                                                      "seconds": round(result.seconds, 3)})
            if progress:
                # verify's words (verify/programs.py), under apply's prefix
                status = "ok" if result.ok else f"FAILED ({len(result.failures)} failure(s))"
                progress(f"apply: precheck [{n}/{len(todo)}] {programs[i].label}: "
                         f"{result.variants} variant(s) {status} in {result.seconds:.2f} s")
    return results


def _include_folder(option: str) -> str | None:
    for flag in ("-I", "--include-path="):
        if option.startswith(flag) and len(option) > len(flag):
            return option[len(flag):]
    return None
