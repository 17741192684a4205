"""Host-side check: compile the generated stubs and the rewritten launchers with the library's
own flags (its compile database; a CMake library is configured into a scratch build to get one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..frontend.compile_db import load as load_compile_db
from .manifest import Manifest

LOG_HEAD_LINES = 12
# Flags that write outside our scratch object (dependency files): dropped, with their argument.
_DEP_FLAGS_WITH_ARG = {"-MF", "-MT", "-MQ"}
_DEP_FLAGS = {"-MD", "-MMD"}


@dataclass
class HostUnit:
    file: str                   # relative to the library root when inside it
    arguments: list[str]
    directory: str


@dataclass
class HostResult:
    file: str
    ok: bool
    seconds: float
    log_head: str = ""

    def to_json(self) -> dict:
        return {"file": self.file, "ok": self.ok, "seconds": round(self.seconds, 3), "log": self.log_head}


@dataclass
class HostReport:
    # "passed", "failed" (the generated or rewritten code), "skipped", or "environment": the build
    # environment stopped the check (a library header or package missing, a CMake configure failing
    # outside what the migration edited); `missing` names what it lacks, `remedy` the next step.
    status: str
    reason: str = ""
    compiler: str = ""
    configure_seconds: float = 0.0
    results: list[HostResult] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    remedy: str = ""

    @property
    def ok(self) -> bool:
        return self.status not in ("failed", "environment")

    def to_json(self) -> dict:
        return {"status": self.status, "reason": self.reason, "compiler": Path(self.compiler).name if self.compiler else "",
                "configure_seconds": round(self.configure_seconds, 3), "units": [r.to_json() for r in self.results],
                "missing": self.missing, "remedy": self.remedy}


# What a compiler or CMake says when the environment lacks a header or a package.
_MISSING_HEADER = (re.compile(r"fatal error: ([^\s:]+\.[A-Za-z+]+): No such file or directory"),
                   re.compile(r'cannot open source file "([^"]+)"'),
                   # NOTE: the header right next to the words, so that "a.h:3: error: member 'x' not found"
                   # (an error inside a header) is not read as a.h missing
                   re.compile(r"(?i)(?:could not find|cannot find|cannot open|missing)(?: header| file| include)?"
                              r"[:\s]+['\"<]?([\w./+-]+\.(?:h|hh|hpp|hxx|cuh))\b"),
                   re.compile(r"(?i)\b([\w./+-]+\.(?:h|hh|hpp|hxx|cuh))['\">]?:?\s+(?:file\s+)?(?:was\s+)?"
                              r"(?:not found|could not be found|no such file|is missing|missing)"))
_MISSING_PACKAGE = (re.compile(r"Could NOT find (\w[\w-]*)"),
                    re.compile(r'Could not find a package configuration file provided by "([^"]+)"'))
_CMAKE_ERROR_AT = re.compile(r"CMake Error at ([^:\n]+):\d+")


def missing_from_log(log: str) -> tuple[list[str], list[str]]:
    """(headers, packages) a compile or configure log says are missing, in order of first mention."""
    headers = [m.group(1) for rx in _MISSING_HEADER for m in rx.finditer(log)]
    packages = [m.group(1) for rx in _MISSING_PACKAGE for m in rx.finditer(log)]
    return list(dict.fromkeys(headers)), list(dict.fromkeys(packages))


def _generated_names(manifests: list[Manifest]) -> set[str]:
    """Paths (and their last parts) that the migration wrote or edited: a header missing among them is
    the generated code's fault, not the environment's."""
    names = set()
    for m in manifests:
        out = m.root / m.output_dir
        files = [p.relative_to(m.root).as_posix() for p in out.rglob("*") if p.is_file()] if out.is_dir() else []
        for rel in files + list(m.edited):
            parts = rel.split("/")
            names.update("/".join(parts[i:]) for i in range(len(parts)))
    return names


def environment_failure(log: str, manifests: list[Manifest]) -> tuple[list[str], str] | None:
    """(what is missing, remedy) when a failed compile or configure is the environment's: headers or
    packages the log names as missing, none of them part of what the migration wrote or edited."""
    headers, packages = missing_from_log(log)
    generated = _generated_names(manifests)
    if any(h in generated or h.lstrip("./") in generated for h in headers):
        return None
    if headers or packages:
        what = headers + [f"package {p}" for p in packages]
        remedy = ("install the package that provides " + ", ".join(what) + ", or point the build at it "
                  "(--cmake-arg=-D<PKG>_ROOT=DIR or --cmake-arg=-DCMAKE_CUDA_FLAGS=-I<dir> or --cmake-arg=-DCMAKE_CXX_FLAGS=-I<dir>; "
                  "or --compile-db FILE of a build that has it); --no-host checks the kernel strings only")
        return what, remedy
    return None


def find_nvcc(explicit: str | None = None) -> str | None:
    """--nvcc, $CUDACXX, nvcc on PATH, a CUDA toolkit, then the nvidia-cuda-nvcc wheel."""
    candidates = [explicit, os.environ.get("CUDACXX"), shutil.which("nvcc")]
    candidates += [str(Path(r) / "bin" / "nvcc") for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                                                             "/usr/local/cuda") if r]
    candidates += [str(Path(p) / "nvidia" / flavour / "bin" / "nvcc") for p in sys.path
                   for flavour in ("cu13", "cuda_nvcc")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _head(text: str, lines: int = LOG_HEAD_LINES) -> str:
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[:lines]) + (f"\n... ({len(kept) - lines} more lines)" if len(kept) > lines else "")


def configure(root: Path, build: Path, nvcc: str, manifests: list[Manifest], cmake_args: list[str]) -> tuple[bool, str]:
    """Configure the patched library with CMake (legacy static kernels OFF) to get its compile database."""
    cmd = ["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
           f"-DCMAKE_CUDA_COMPILER={nvcc}", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    cmd += [f"-D{m.legacy_option}=OFF" for m in manifests if m.legacy_option]
    cmd += list(cmake_args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout + proc.stderr


def load_units(compile_db: Path) -> list[HostUnit]:
    return [HostUnit(file=e.file, arguments=e.argv(str(compile_db)), directory=e.directory)
            for e in load_compile_db(compile_db)]


def _include_dirs(unit: HostUnit) -> list[Path]:
    dirs, args = [], unit.arguments
    for i, arg in enumerate(args):
        if arg in ("-I", "-isystem", "--include-path") and i + 1 < len(args):
            dirs.append(args[i + 1])
        elif arg.startswith("-I") and len(arg) > 2:
            dirs.append(arg[2:])
        elif arg.startswith("--include-path="):
            dirs.append(arg.split("=", 1)[1])
    return [Path(unit.directory, d).resolve() for d in dirs]


def select_units(units: list[HostUnit], manifests: list[Manifest]) -> list[HostUnit]:
    """Units that are generated (inside an output_dir), that the patch edited, or that include a
    rewritten launch site or an edited file (the NVRTC layer's header, a kernel header), directly
    or through other headers of the tree (the frontend's include graph, with the unit's own
    include dirs)."""
    from ..frontend.parse import IncludeGraph

    out_dirs = [(m.root / m.output_dir).resolve() for m in manifests]
    targets = {(m.root / site.split(":")[0]).resolve() for m in manifests for k in m.kernels for site in k.sites}
    targets |= {(m.root / f).resolve() for m in manifests for f in m.edited}
    graphs = {root: IncludeGraph(root) for root in {m.root.resolve() for m in manifests}}
    chosen = []
    for unit in units:
        path = Path(unit.directory, unit.file).resolve()
        if any(path.is_relative_to(d) for d in out_dirs) or path in targets:
            chosen.append(unit)
            continue
        dirs = tuple(_include_dirs(unit))
        if any(graph.closure(path, dirs)[0] & targets for root, graph in graphs.items() if path.is_relative_to(root)):
            chosen.append(unit)
    return chosen


def _scratch_command(unit: HostUnit, obj: Path) -> list[str]:
    """The unit's command writing only `obj`: its output and dependency-file flags replaced."""
    args, it = [], iter(unit.arguments)
    for arg in it:
        if arg in ("-o", "--output-file") or arg in _DEP_FLAGS_WITH_ARG:
            next(it, None)
        elif arg in _DEP_FLAGS or arg.startswith("--output-file=") or (len(arg) > 3 and arg[:3] in _DEP_FLAGS_WITH_ARG):
            continue
        else:
            args.append(arg)
    return args + ["-o", str(obj)]


def compile_units(units: list[HostUnit], root: Path, jobs: int, scratch: Path,
                  progress: Callable[[str], None] | None = None) -> list[HostResult]:
    def one(index: int) -> HostResult:
        unit = units[index]
        cmd = _scratch_command(unit, scratch / f"unit{index}.o")
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=unit.directory, capture_output=True, text=True)
        path = Path(unit.directory, unit.file).resolve()
        name = str(path.relative_to(root.resolve())) if path.is_relative_to(root.resolve()) else unit.file
        result = HostResult(file=name, ok=proc.returncode == 0, seconds=time.perf_counter() - start,
                            log_head="" if proc.returncode == 0 else _head(proc.stderr + proc.stdout))
        if progress:
            progress(f"verify: host {name}: {'ok' if result.ok else 'FAILED'} in {result.seconds:.1f} s")
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, range(len(units))))


def verify_host(manifests: list[Manifest], root: Path, jobs: int, compile_db: Path | None = None,
                nvcc: str | None = None, cmake_args: list[str] | None = None, all_units: bool = False,
                progress: Callable[[str], None] | None = None) -> HostReport:
    """Compile the generated host code; skipped (not failed) when no nvcc or no flags source exists."""
    compiler = find_nvcc(nvcc)
    if compiler is None:
        return HostReport("skipped", reason="no nvcc found (looked at --nvcc, $CUDACXX, PATH, CUDA_HOME, "
                                            "/usr/local/cuda and the nvidia-cuda-nvcc wheel)")
    with tempfile.TemporaryDirectory(prefix="codemod-verify-") as tmp:
        scratch = Path(tmp)
        configure_seconds = 0.0
        if compile_db is None:
            if not (root / "CMakeLists.txt").is_file():
                return HostReport("skipped", compiler=compiler,
                                  reason="no compile database: pass --compile-db FILE (or verify a CMake library root)")
            if shutil.which("cmake") is None:
                return HostReport("skipped", compiler=compiler, reason="cmake not found; pass --compile-db FILE")
            if progress:
                progress("verify: host: configuring the patched library with CMake")
            start = time.perf_counter()
            ok, log = configure(root, scratch / "build", compiler, manifests, cmake_args or [])
            configure_seconds = time.perf_counter() - start
            if not ok:
                errors = log[log.find("CMake Error"):] if "CMake Error" in log else log
                return _configure_failure(errors, manifests, root, compiler, configure_seconds)
            compile_db = scratch / "build" / "compile_commands.json"
        units = load_units(compile_db)
        if not all_units:
            units = select_units(units, manifests)
        if not units:
            return HostReport("skipped", compiler=compiler, configure_seconds=configure_seconds,
                              reason="no translation unit in the compile database is generated or includes a rewritten site")
        (scratch / "obj").mkdir()
        if progress:
            progress(f"verify: host: compiling {len(units)} unit(s) with the library's flags")
        results = compile_units(units, root, jobs, scratch / "obj", progress)
    failed = [r for r in results if not r.ok]
    if not failed:
        return HostReport("passed", compiler=compiler, configure_seconds=configure_seconds, results=results)
    # every failed unit stopped at a header the environment lacks: not the generated code
    found = [environment_failure(r.log_head, manifests) for r in failed]
    if all(found):
        missing = list(dict.fromkeys(m for what, _ in found for m in what))
        return HostReport("environment", compiler=compiler, configure_seconds=configure_seconds, results=results,
                          reason=f"{len(failed)} host unit(s) stopped at a missing library header: "
                                 + ", ".join(missing), missing=missing, remedy=found[0][1])
    return HostReport("failed", compiler=compiler, configure_seconds=configure_seconds, results=results)


def _configure_failure(errors: str, manifests: list[Manifest], root: Path, compiler: str,
                       seconds: float) -> HostReport:
    """A failed CMake configure: the environment's (a header or package it names as missing, none of
    them generated; else an error in a CMake file the migration did not edit) or the migration's."""
    head = "CMake configure of the patched tree failed:\n" + _head(errors, 20)
    edited = {f for m in manifests for f in m.edited}
    at = [Path(f) for f in _CMAKE_ERROR_AT.findall(errors)]
    in_edited = [f for f in at if (f.relative_to(root).as_posix() if f.is_absolute() and f.is_relative_to(root)
                                   else f.as_posix()) in edited]
    found = environment_failure(errors, manifests)
    if found:
        return HostReport("environment", compiler=compiler, configure_seconds=seconds, reason=head,
                          missing=found[0], remedy=found[1])
    if at and not in_edited:
        return HostReport("environment", compiler=compiler, configure_seconds=seconds, reason=head,
                          remedy=f"the error is in {at[0]}, which the migration did not edit: pass what the "
                                 "library's configure needs with --cmake-arg, or --compile-db FILE of a configured "
                                 "build; --no-host checks the kernel strings only")
    return HostReport("failed", compiler=compiler, configure_seconds=seconds, reason=head)
