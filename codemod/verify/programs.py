"""NVRTC programs to verify: one per kernel x arch x option set, holding the chosen variants'
name expressions, run in worker processes; a failing program is bisected to name its variants.
"""

from __future__ import annotations

import itertools
import multiprocessing
import posixpath
import re
import time
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import dataclass, field

from ..workers import process_pool
from .cover import greedy_cover
from .manifest import KernelEntry, Manifest

MAX_ISOLATED = 3  # failing variants named per program; the rest are counted


@dataclass
class Program:
    """One NVRTC program: a kernel string with the name expressions of the chosen variants."""

    kernel: str
    arch: str
    config: str                 # "default", or the CMake options turned ON ("FAST_MATH=ON")
    name: str                   # program name: the kernel string's path in the library
    source: str
    headers: dict[str, str]
    options: list[str]
    include_cuda: bool
    include_cccl: bool
    variants: list[str]
    variants_total: int
    keep_cubin: bool = False    # verify --sass: the result carries the cubin and the lowered names
    target: str = ""            # the arch compiled for: `arch` mapped by the kernel's arch_targets

    def __post_init__(self) -> None:
        self.target = self.target or self.arch

    @property
    def label(self) -> str:
        config = "" if self.config == "default" else f" {self.config}"
        target = f" as {self.target}" if self.target != self.arch else ""
        return f"{self.kernel} [{self.arch}{target}{config}]"


_ARCH = re.compile(r"^sm_(\d{2,3})[af]?$")


def target_arch(arch: str, arch_targets: dict[int, str]) -> str:
    """The NVRTC target the generated stubs choose on a device of `arch`'s compute capability: the
    rule's arch_targets entry for it (TE: sm_100 and sm_100a -> sm_100a, sm_120 -> sm_120f), else
    `arch` itself."""
    m = _ARCH.match(arch)
    return arch_targets.get(int(m.group(1)), arch) if m and arch_targets else arch


@dataclass
class Failure:
    variant: str | None         # None: the kernel string fails without any name expression
    reason: str                 # "compile", "variant", "lowered_name"
    log_head: str


_CANNOT_OPEN = re.compile(
    r'^(?P<file>.+?)\((?P<line>\d+)\): catastrophic error: cannot open source file "(?P<name>[^"]+)"', re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)


def include_chain(log: str, program: Program) -> str:
    """For a header NVRTC could not open: the path from the kernel string to the file that wants
    it, through the bundled headers (NVRTC's log names only that file), as extra log lines."""
    match = _CANNOT_OPEN.search(log)
    if match is None:
        return ""
    texts = {program.name: program.source, **program.headers}
    wanted = match["file"]
    if wanted not in texts:                  # a toolkit header: named by its path in the log
        wanted = next((n for n in program.headers if wanted.endswith("/" + n)), posixpath.basename(wanted))
    # breadth-first from the kernel string: the first bundled file including `wanted`, and how it got there
    parents: dict[str, tuple[str, int] | None] = {program.name: None}
    queue = [program.name]
    while queue:
        current = queue.pop(0)
        for line_no, line in enumerate(texts[current].splitlines(), 1):
            inc = _INCLUDE.match(line)
            if inc is None:
                continue
            name = inc.group(1)
            if name == wanted or posixpath.basename(name) == wanted:
                chain = [f"{current}:{line_no} includes {name}"]
                while parents[current] is not None:
                    parent, parent_line = parents[current]
                    chain.append(f"{parent}:{parent_line} includes {current}")
                    current = parent
                kind = "a bundled header" if wanted in program.headers else "not bundled: from the CUDA include dirs"
                return (f"\n{match['file']} ({kind}) wants \"{match['name']}\"; the kernel string reaches it "
                        "through:\n  " + "\n  ".join(reversed(chain)))
            if name in texts and name not in parents:
                parents[name] = (current, line_no)
                queue.append(name)
    return ""


@dataclass
class ProgramResult:
    kernel: str
    arch: str
    config: str
    variants: int
    variants_total: int
    ok: bool
    seconds: float              # the batched compile, wall
    cpu_seconds: float = 0.0    # the batched compile, CPU of the worker process
    isolate_seconds: float = 0.0
    cubin_size: int = 0
    failures: list[Failure] = field(default_factory=list)
    unisolated: int = 0         # variants in failing halves left unexamined after MAX_ISOLATED
    cubin: bytes | None = None  # with Program.keep_cubin (not in the JSON), and its PTX
    ptx: str | None = None
    lowered: dict[str, str] = field(default_factory=dict)
    target: str = ""            # Program.target, when it differs from arch

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "arch": self.arch, **({"target": self.target} if self.target else {}),
                "config": self.config, "ok": self.ok,
                "variants": self.variants, "variants_total": self.variants_total,
                "seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                "isolate_seconds": round(self.isolate_seconds, 3),
                "cubin_size": self.cubin_size, "unisolated": self.unisolated,
                "failures": [{"variant": f.variant, "reason": f.reason, "log": f.log_head} for f in self.failures]}


def option_sets(kernel: KernelEntry) -> list[tuple[str, list[str]]]:
    """Every combination of the kernel's conditional options: [("default", []), ("X=ON", [...]), ...]."""
    sets = []
    conds = kernel.conditional_options
    for n in range(len(conds) + 1):
        for chosen in itertools.combinations(conds, n):
            label = ",".join(f"{c.cmake_option}=ON" for c in chosen) or "default"
            sets.append((label, [c.option for c in chosen]))
    return sets


_CUDA_VERSION = re.compile(r"^#define CUDA_VERSION (\d+)", re.M)


def cuda_version_options() -> list[str]:
    """`-DCUDA_VERSION=N` as the generated stubs pass it (NVRTC does not define cuda.h's macro; the
    stubs pass the toolkit's): N from the cuda.h beside the NVRTC headers, else NVRTC's version.
    [] without NVRTC (the compile reports that)."""
    from . import nvrtc

    try:
        lib = nvrtc.load()
    except nvrtc.NvrtcNotFound:
        return []
    for folder in lib.include_dirs:
        header = folder / "cuda.h"
        if header.is_file():
            match = _CUDA_VERSION.search(header.read_text(errors="replace"))
            if match:
                return [f"-DCUDA_VERSION={match.group(1)}"]
    major, minor = lib.version
    return [f"-DCUDA_VERSION={major * 1000 + minor * 10}"]


def program_options(kernel, extra: list[str] = (), build_values: dict[str, str] | None = None,
                    cuda_version: list[str] | None = None) -> list[str]:
    """A kernel's NVRTC options as the generated stubs pass them: the manifest's, an option set's
    `extra`, `-DCUDA_VERSION`, the build's macros (`build_values` over the manifest's defaults).
    What verify compiles with, and what a benchmark must compile with."""
    return (list(kernel.nvrtc_options) + list(extra)
            + (cuda_version_options() if cuda_version is None else list(cuda_version))
            + kernel.define_options(build_values))


def plan(manifests: list[Manifest], archs: list[str], all_variants: bool = False,
         only: list[str] | None = None, build_values: dict[str, str] | None = None) -> list[Program]:
    """The programs to compile, in manifest, kernel, option-set, arch order. `build_values`: the
    build's macros (`verify --define`) over the manifest's defaults."""
    programs = []
    defines = cuda_version_options()
    for manifest in manifests:
        for kernel in manifest.kernels:
            if only and kernel.id not in only:
                continue
            chosen = range(len(kernel.variants)) if all_variants else greedy_cover(
                [v.axes for v in kernel.variants], [i for i, v in enumerate(kernel.variants) if v.outside])
            names = [kernel.variants[i].name_expression for i in chosen]
            source = manifest.read(kernel.program_path)
            headers = {include: manifest.read(path) for include, path in kernel.headers.items()}
            for config, extra in option_sets(kernel):
                for arch in archs:
                    programs.append(Program(kernel=kernel.id, arch=arch, config=config, name=kernel.program_path,
                                            target=target_arch(arch, kernel.arch_targets),
                                            source=source, headers=headers, options=program_options(kernel, extra, build_values, defines),
                                            include_cuda=kernel.include_cuda_toolkit,
                                            include_cccl=kernel.include_cuda_cccl, variants=names,
                                            variants_total=len(kernel.variants)))
    return programs


def run_program(program: Program) -> ProgramResult:
    """Compile one program (in a worker process); on failure, find which variants fail."""
    from . import nvrtc

    def compile_with(names: list[str], keep_cubin: bool = False):
        return nvrtc.compile(program.source, program.name, program.headers, program.options, names,
                             arch=program.target, include_cuda=program.include_cuda,
                             include_cccl=program.include_cccl, keep_cubin=keep_cubin)

    first = compile_with(program.variants, program.keep_cubin)
    result = ProgramResult(kernel=program.kernel, arch=program.arch, config=program.config,
                           target=program.target if program.target != program.arch else "",
                           variants=len(program.variants), variants_total=program.variants_total,
                           ok=first.ok, seconds=first.seconds, cpu_seconds=first.cpu_seconds, cubin_size=first.cubin_size,
                           cubin=first.cubin, ptx=first.ptx, lowered=dict(first.lowered))
    if first.ok:
        return result
    start = time.perf_counter()
    if first.compiled:
        result.failures = [Failure(v, "lowered_name", "nvrtcGetLoweredName failed") for v in first.unlowered]
    else:
        bare = compile_with([]) if program.variants else first
        if not bare.compiled:
            result.failures = [Failure(None, "compile", bare.log_head() + include_chain(bare.log, program))]
        else:
            result.failures, result.unisolated = _bisect(program.variants, compile_with)
            if not result.failures:  # each half compiles alone: report the batch's log as is
                result.failures = [Failure(None, "compile", first.log_head())]
    result.isolate_seconds = time.perf_counter() - start
    return result


def _bisect(names: list[str], compile_with: Callable) -> tuple[list[Failure], int]:
    """Halve failing groups of name expressions down to single variants, naming at most MAX_ISOLATED."""
    failures: list[Failure] = []
    unisolated = 0
    pending = [names[: len(names) // 2], names[len(names) // 2:]]
    while pending:
        group = pending.pop(0)
        if not group:
            continue
        if len(failures) >= MAX_ISOLATED:
            unisolated += len(group)  # NOTE: counted as suspect, not known to fail
            continue
        result = compile_with(group)
        if result.ok:
            continue
        if len(group) == 1:
            reason = "variant" if not result.compiled else "lowered_name"
            failures.append(Failure(group[0], reason, result.log_head()))
        else:
            pending[:0] = [group[: len(group) // 2], group[len(group) // 2:]]
    return failures, unisolated


def run_all(programs: list[Program], jobs: int, progress: Callable[[str], None] | None = None) -> list[ProgramResult]:
    """Run every program on `jobs` worker processes; results in the order of `programs`."""
    results: list[ProgramResult | None] = [None] * len(programs)
    # Largest programs first, so the slowest one does not start last.
    order = sorted(range(len(programs)), key=lambda i: -len(programs[i].variants))
    done = 0

    def report(index: int, result: ProgramResult) -> None:
        nonlocal done
        done += 1
        results[index] = result
        if progress:
            status = "ok" if result.ok else f"FAILED ({len(result.failures)} failure(s))"
            progress(f"verify: [{done}/{len(programs)}] {programs[index].label}: "
                     f"{result.variants} variant(s) {status} in {result.seconds:.2f} s")

    if jobs <= 1 or len(programs) <= 1:
        for index in order:
            report(index, run_program(programs[index]))
        return results  # type: ignore[return-value]
    # NOTE: spawn, not fork: each worker loads its own libnvrtc; forking a loaded NVRTC is not safe.
    context = multiprocessing.get_context("spawn")
    with process_pool(min(jobs, len(programs)), mp_context=context) as pool:
        futures = {pool.submit(run_program, programs[i]): i for i in order}
        for future in as_completed(futures):
            index = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - a crashed worker fails its program, not the run
                program = programs[index]
                result = ProgramResult(kernel=program.kernel, arch=program.arch, config=program.config,
                                       variants=len(program.variants), variants_total=program.variants_total,
                                       ok=False, seconds=0.0,
                                       failures=[Failure(None, "compile", f"worker process failed: {exc!r}")])
            report(index, result)
    return results  # type: ignore[return-value]
