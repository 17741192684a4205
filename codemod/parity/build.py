"""`codemod parity build`: one clean, timed build of a library tree with the library's own commands,
keeping what the impact model reads (the `.ninja_log` and nvcc `--time` rows).

Standard library only (runs on the GPU machine). The configure command is timed apart from the
build command, as a maintainer's "build time" is the compile step. nvcc timings are collected
without touching the build command: `--time FILE` is appended to every nvcc call through nvcc's
own `NVCC_APPEND_FLAGS` environment variable (all compiles append to one file; `codemod impact
--nvcc-time` attributes the interleaved rows by process).
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .. import strict_json
from .runner import environment, run_logged


@dataclass
class BuildSpec:
    side: str                 # a name: original / migrated
    src: Path
    work: Path                # the build goes to work/build-<side>
    build_cmd: str            # {src} and {build} substituted
    configure_cmd: str = ""   # likewise; run first, timed apart
    nvcc_time: bool = True
    commit: str = ""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed(cmd: str, log: Path, env: dict) -> dict:
    cpu0 = _children_cpu()
    wall = run_logged(cmd, log, env=env)
    return {"cmd": cmd, "wall_s": round(wall, 2), "cpu_s": round(_children_cpu() - cpu0, 2), "log": log.name}


def build(spec: BuildSpec) -> dict:
    if not spec.src.is_dir():
        raise UsageError(f"{spec.side} tree {spec.src} is not a directory")
    spec.work.mkdir(parents=True, exist_ok=True)
    build_dir = spec.work / f"build-{spec.side}"
    if build_dir.exists():
        shutil.rmtree(build_dir)          # a clean build, always
    subst = {"src": shlex.quote(str(spec.src.resolve())), "build": shlex.quote(str(build_dir.resolve()))}
    env = dict(os.environ)
    csv = spec.work / f"{spec.side}.nvcc_time.csv"
    if spec.nvcc_time:
        csv.unlink(missing_ok=True)
        env["NVCC_APPEND_FLAGS"] = f"{env.get('NVCC_APPEND_FLAGS', '')} --time {csv.resolve()}".strip()
    result = {"schema": "codemod-build/1", "side": spec.side, "environment": environment(commit=spec.commit)}
    if spec.configure_cmd:
        result["configure"] = _timed(spec.configure_cmd.format(**subst), spec.work / f"configure-{spec.side}.log",
                                     env)
    result["build"] = _timed(spec.build_cmd.format(**subst), spec.work / f"build-{spec.side}.log", env)
    logs = sorted(build_dir.rglob(".ninja_log"))
    if logs:
        shutil.copyfile(logs[0], spec.work / f"{spec.side}.ninja_log")
        result["ninja_log"] = f"{spec.side}.ninja_log"
    if spec.nvcc_time and csv.is_file():
        result["nvcc_time"] = csv.name
    (spec.work / f"build-{spec.side}.json").write_text(strict_json.dumps(result, "build record", indent=1, sort_keys=True) + "\n")
    return result
