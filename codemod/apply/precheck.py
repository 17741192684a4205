"""Before a migration is written: every generated kernel string must compile under NVRTC (no name
expression, sm_90, the rule's options and include folders), so that a rule reaching host-only code
is refused instead of shipping a kernel that fails on first use. `codemod verify` does the full
check (every axis value, every arch and option set, the host code) after the build."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..verify.manifest import MANIFEST_NAME, parse_manifest
from ..verify.programs import Program, include_chain

ARCH = "sm_90"


def precheck(root: Path, files: dict[str, tuple[str | None, str]]) -> tuple[list[str], str | None]:
    """(problems, note) for the files `apply` would write (path -> (old, new)). A problem names the
    kernel and gives the head of NVRTC's log with the include path to a header it could not open;
    the note says why the check was skipped (no NVRTC)."""
    from ..errors import CodemodError
    from ..verify import nvrtc
    from ..verify.report import hint_for

    manifests = [p for p in files if p.endswith("/" + MANIFEST_NAME) or p == MANIFEST_NAME]
    if not manifests:
        return [], None
    try:
        lib = nvrtc.load()
    except CodemodError as exc:
        return [], f"kernel strings not compiled before writing: {exc.render()}"
    overlay = {path: new for path, (_, new) in files.items()}
    programs = []
    for path in manifests:
        manifest = parse_manifest(overlay[path], root / path, root, overlay)
        for kernel in manifest.kernels:
            programs.append(Program(kernel=kernel.id, arch=ARCH, config="default", name=kernel.program_path,
                                    source=manifest.read(kernel.program_path),
                                    headers={name: manifest.read(p) for name, p in kernel.headers.items()},
                                    options=list(kernel.nvrtc_options), include_cuda=kernel.include_cuda_toolkit,
                                    include_cccl=kernel.include_cuda_cccl, variants=[],
                                    variants_total=len(kernel.variants)))

    def compile_one(program: Program):
        return lib.compile(program.source, program.name, program.headers, program.options, [], arch=ARCH,
                           include_cuda=program.include_cuda, include_cccl=program.include_cccl)

    # NOTE: NVRTC compiles distinct programs concurrently (thread-safe API) and ctypes releases
    # the GIL during the call, so threads use every core.
    with ThreadPoolExecutor(max_workers=max(1, min(len(programs), os.cpu_count() or 1))) as pool:
        results = list(pool.map(compile_one, programs))
    problems = []
    for program, result in zip(programs, results):
        if result.compiled:
            continue
        log = result.log_head() + include_chain(result.log, program)
        hint = hint_for(log)
        problems.append(f"{program.kernel}: its kernel string does not compile under NVRTC ({ARCH}):\n"
                        + "\n".join("    " + line for line in log.splitlines())
                        + (f"\n    hint: {hint}" if hint else ""))
    return problems, None
