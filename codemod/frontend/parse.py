"""Parse a set of TUs: content-hash cache, worker processes, diagnostics instead of tracebacks."""

from __future__ import annotations

import glob
import hashlib
import re
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .toolchain import WRAPPER_STUBS, Toolchain, cache_root, flags_from_compile_db, make_toolchain

CACHE_FORMAT = 3


@dataclass
class ParseJob:
    tu: str            # path relative to root (for a group: the group's name)
    root: str
    flags: list[str]
    members: list[str] | None = None   # TUs parsed together through one umbrella file
    pch: str | None = None             # prefix PCH to load (not part of the cache key)


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read())
    return h.hexdigest()


def _indexer_hash() -> str:
    """The indexer's own source is part of the key: changing how facts are made drops old ones."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in ("clang_index.py", "source_text.py"):
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


def _cache_key(job: ParseJob, fingerprint: str) -> str:
    members = job.members or [job.tu]
    data = json.dumps([CACHE_FORMAT, __version__, _indexer_hash(), fingerprint, job.tu, job.flags,
                       [(m, _sha(Path(job.root) / m)) for m in members]])
    return hashlib.sha256(data.encode()).hexdigest()


def _cache_valid(entry: dict, root: Path) -> bool:
    """Every included project file must still have the hash it had when parsed."""
    for rel, sha in entry.get("closure", {}).items():
        p = root / rel
        if not p.is_file() or _sha(p) != sha:
            return False
    return True


# System and CUDA headers nearly every CUDA TU includes. Parsed once into a precompiled header that
# every parse with the same flags loads (-include-pch): ~1.5 s less per parse. Project headers
# are never in it, so the PCH cannot change what the analysis sees of the project.
PCH_PREFIX = ("cuda_runtime.h", "cuda.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cstdint", "cstddef",
              "string", "vector", "type_traits", "memory", "functional", "iostream", "sstream", "stdexcept",
              "mutex", "unordered_map", "algorithm", "limits", "tuple", "cmath", "utility")


def _pch_flags(flags: list[str]) -> list[str]:
    """Flags that change how the prefix headers parse (not the project's -I dirs)."""
    return [f for f in flags if not f.startswith(("-I", "-include"))]


def build_pch(flags: list[str]) -> Path | None:
    """The prefix PCH for these flags (cached by flag set); None when it cannot be built."""
    if os.environ.get("CODEMOD_NO_PCH"):
        return None
    import clang.cindex as ci

    key = hashlib.sha256(json.dumps([CACHE_FORMAT, _indexer_hash(), _pch_flags(flags)]).encode()).hexdigest()[:16]
    out = cache_root() / "pch" / f"prefix-{key}.pch"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    header = out.with_suffix(".h")
    header.write_text("".join(f"#include <{h}>\n" for h in PCH_PREFIX))
    try:
        tu = ci.Index.create().parse(str(header), args=_pch_flags(flags), options=ci.TranslationUnit.PARSE_INCOMPLETE)
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tu.save(str(tmp))
        os.replace(tmp, out)
        return out
    except Exception:  # noqa: BLE001 - no PCH just means slower parses
        return None


def _run_job(job: ParseJob) -> dict:
    from .clang_index import index_tu

    started = time.perf_counter()
    root = Path(job.root)
    path = root / job.tu
    mains = None
    if job.members:
        # One parse for TUs that share their headers: an umbrella file including each of them.
        mains = [root / m for m in job.members]
        umbrella = cache_root() / "umbrella" / (hashlib.sha256(job.tu.encode() + job.root.encode()).hexdigest()[:16] + ".cu")
        umbrella.parent.mkdir(parents=True, exist_ok=True)
        umbrella.write_text("".join(f'#include "{m.resolve()}"\n' for m in mains))
        path = umbrella
    flags = list(job.flags)
    if job.pch:
        flags += ["-include-pch", job.pch]
    try:
        facts = index_tu(path, root, flags, mains)
    except Exception as exc:  # noqa: BLE001 - a TU that cannot be loaded is a diagnostic
        hint = ""
        if any("sm_100" in f or "sm_120" in f for f in job.flags):
            hint = " (libclang 18 knows no Blackwell arch; codemod analyses with sm_90a)"
        facts = {"load_failed": True, "kernels": {}, "functions": {}, "global_uses": [], "typedefs": {}, "includes": [],
                 "external_includes": [],
                 "diagnostics": [{"severity": "fatal", "message": f"libclang could not load the TU: {exc}{hint}",
                                  "file": job.tu, "line": 1, "col": 1, "count": 1}]}
    facts["tu"] = job.tu
    facts["members"] = job.members or [job.tu]
    stub_dir = next((f[len("-idirafter"):] for f in job.flags if f.startswith("-idirafter")), None)
    facts["stubs_used"] = _stubs_used(facts, stub_dir) if stub_dir else []
    facts["parse_seconds"] = round(time.perf_counter() - started, 3)
    facts["closure"] = {rel: _sha(root / rel) for rel in [*facts["members"], *facts.get("includes", [])]
                        if (root / rel).is_file()}
    return facts


_CLASH = ("redefinition", "conflicting", "redeclar", "already defined", "ambiguous")


def _umbrella_conflict(facts: dict) -> bool:
    """Whether a shared parse must be redone one TU at a time.

    File-local names may clash, and one TU's broken syntax must not be charged to the next, so a
    shared parse with errors is redone — unless the errors are explained by stubbed headers (the
    parse included stubs for missing third-party headers), which fail the same way per TU; clash
    errors are always redone.
    """
    if len(facts.get("members", [])) <= 1:
        return False
    errors = [d for d in facts.get("diagnostics", []) if d["severity"] in ("error", "fatal")]
    if not errors:
        return False
    if any(any(c in d["message"] for c in _CLASH) for d in errors):
        return True
    return not facts.get("stubs_used")


def _missing_headers(facts: dict) -> list[str]:
    out = []
    for d in facts.get("diagnostics", []):
        msg = d["message"]
        if d["severity"] == "fatal" and msg.endswith("file not found") and "'" in msg:
            out.append(msg.split("'")[1])
    return out


def _group_jobs(root: Path, tus: list[str], flags_of: dict[str, list[str]], group: bool) -> list[ParseJob]:
    """One job per directory of TUs with identical flags (an umbrella parse), else one per TU."""
    if not group:
        return [ParseJob(t, str(root), flags_of[t]) for t in tus]
    buckets: dict[tuple, list[str]] = {}
    for t in tus:
        key = (os.path.dirname(t), tuple(flags_of[t]))
        buckets.setdefault(key, []).append(t)
    jobs = []
    for (d, flags), members in buckets.items():
        if len(members) == 1:
            jobs.append(ParseJob(members[0], str(root), list(flags)))
        else:
            jobs.append(ParseJob(f"{d or '.'}/*", str(root), list(flags), members))
    return jobs


def _run_jobs(job_list: list[ParseJob], root: Path, fp: str, jobs: int | None, use_cache: bool, progress):
    cache_dir = cache_root() / "parse"
    cache_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    todo = []
    for job in job_list:
        path = cache_dir / f"{_cache_key(job, fp)}.json"
        if use_cache and path.is_file():
            try:
                entry = json.loads(path.read_text())
                if _cache_valid(entry, root):
                    entry["from_cache"] = True
                    results[job.tu] = entry
                    continue
            except ValueError:
                pass
        todo.append((job, path))
    pchs: dict[tuple, Path | None] = {}
    for job, _ in todo:
        key = tuple(_pch_flags(job.flags))
        if key not in pchs:
            pchs[key] = build_pch(job.flags)
        job.pch = str(pchs[key]) if pchs[key] else None
    done = 0

    def finish(job, path, facts):
        nonlocal done
        done += 1
        if progress:
            n = len(job.members or [job.tu])
            progress(f"[{done}/{len(todo)}] parsed {job.tu}" + (f" ({n} TUs together)" if n > 1 else "")
                     + f" in {facts['parse_seconds']:.1f}s")
        results[job.tu] = facts
        # Everything is cached, failures included: a warm run must parse nothing. A shared parse
        # that has to be redone per TU is cached too, so the next run goes straight to the TUs.
        if not facts.get("load_failed"):
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(facts))
            os.replace(tmp, path)

    if todo:
        # Largest groups first so that the two workers finish together.
        todo.sort(key=lambda jp: -len(jp[0].members or [1]))
        workers = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
        if workers == 1:
            for job, path in todo:
                finish(job, path, _run_job(job))
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futs = {pool.submit(_run_job, job): (job, path) for job, path in todo}
                from concurrent.futures import as_completed

                for fut in as_completed(futs):
                    job, path = futs[fut]
                    finish(job, path, fut.result())
    return [results[j.tu] for j in job_list], len(todo)


_INCLUDE = re.compile(rb'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def missing_system_headers(root: Path, flags: list[str], tc: Toolchain) -> list[str]:
    """`#include <...>` names in the project that no known include dir holds (to be stubbed).

    Stubs sit behind every real include dir (-idirafter), so a false positive is harmless.
    """
    dirs = [Path(f[2:]) for f in flags if f.startswith("-I")] + [Path(f[8:]) for f in flags if f.startswith("-isystem")]
    dirs += [tc.cuda_include, tc.cuda_include / "cccl", tc.resource_dir / "include", Path("/usr/include"),
             Path("/usr/local/include"), Path("/usr/include/x86_64-linux-gnu"), Path("/usr/include/aarch64-linux-gnu")]
    dirs += [Path(p) for p in glob.glob("/usr/include/c++/*")] + [Path(p) for p in glob.glob("/usr/include/*-linux-gnu/c++/*")]
    dirs = [d for d in dirs if d.is_dir()]
    names = set()
    for p in root.rglob("*"):
        if p.suffix in (".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl") and p.is_file():
            for kind, raw in _INCLUDE.findall(p.read_bytes()):
                name = raw.decode(errors="replace")
                if kind == b'"' and (p.parent / name).is_file():
                    continue  # found next to the including file
                names.add(name)
    return sorted(n for n in names if not n.startswith(("/", "..")) and not any((d / n).is_file() for d in dirs))


def parse_all(root: Path, tus: list[str], extra_flags: list[str], compile_db: Path | None = None,
              jobs: int | None = None, use_cache: bool = True, stub_headers: list[str] | None = None,
              progress=None, group: bool = True) -> tuple[list[dict], dict]:
    """Parse TUs (relative to root). Returns (facts per parse: a TU or a group of TUs, stats)."""
    if stub_headers is None:
        probe = make_toolchain([])
        stub_headers = missing_system_headers(root, probe.base_flags() + list(extra_flags), probe)
    tc: Toolchain = make_toolchain(list(stub_headers))
    base = tc.base_flags()
    flags_of = {}
    for tu in tus:
        flags = flags_from_compile_db(compile_db, root / tu) if compile_db is not None else None
        flags_of[tu] = base + (flags if flags is not None else list(extra_flags))
    fp = tc.fingerprint()
    facts_list, parsed = _run_jobs(_group_jobs(root, tus, flags_of, group), root, fp, jobs, use_cache, progress)
    # Umbrella parses whose TUs clash (file-local names defined twice) are redone one TU at a time.
    clashing = [f for f in facts_list if len(f.get("members", [])) > 1 and _umbrella_conflict(f)]
    if clashing:
        singles = [m for f in clashing for m in f["members"]]
        if progress:
            progress(f"{len(singles)} TUs had errors when parsed together; parsing them one by one")
        again, n2 = _run_jobs(_group_jobs(root, singles, flags_of, False), root, fp, jobs, use_cache, progress)
        facts_list = [f for f in facts_list if f not in clashing] + again
        parsed += n2
    stats = {"tus": len(tus), "parses": len(facts_list), "parsed": parsed,
             "cached": sum(1 for f in facts_list if f.get("from_cache"))}
    _note_stubs(facts_list, tc)
    # A header the environment lacks (cuBLAS, cuDNN, ...) stops clang at once: redo such parses
    # with empty stubs for the missing headers until none is missing, and say so.
    missing = sorted({h for f in facts_list for h in _missing_headers(f)} - set(stub_headers))
    if missing and len(stub_headers) < 256:
        retry_tus = [m for f in facts_list if _missing_headers(f) for m in f["members"]]
        stubs = sorted(set(stub_headers) | set(missing))
        again, st2 = parse_all(root, retry_tus, extra_flags, compile_db, jobs, use_cache, stubs, progress, group)
        facts_list = [f for f in facts_list if not _missing_headers(f)] + again
        stats = {"tus": len(tus), "parses": len(facts_list), "parsed": stats["parsed"] + st2["parsed"],
                 "cached": sum(1 for f in facts_list if f.get("from_cache")),
                 "stubbed_headers": st2.get("stubbed_headers", [])}
    else:
        stats["stubbed_headers"] = sorted({h for f in facts_list for h in f.get("stubs_used", [])})
    return facts_list, stats


def _stubs_used(facts: dict, stub_dir: str) -> list[str]:
    """Stubbed headers a parse really included (the two clang's CUDA wrapper always wants, and
    that are stubbed by design, do not count)."""
    stub_dir = os.path.realpath(stub_dir)
    return sorted(h for h in (os.path.relpath(i, stub_dir) for i in facts.get("external_includes", [])
                              if i.startswith(stub_dir + os.sep)) if h not in WRAPPER_STUBS)


def _note_stubs(facts_list: list[dict], tc: Toolchain) -> None:
    """CM0102 for every parse that really included a stubbed header."""
    for f in facts_list:
        used = f["stubs_used"] = f.get("stubs_used") or _stubs_used(f, str(tc.stub_dir))
        if used and not any(d.get("id") == "CM0102" for d in f["diagnostics"]):
            f["diagnostics"].insert(0, {
                "severity": "warning", "id": "CM0102",
                "message": "headers not found were replaced by empty stubs: " + ", ".join(used)
                + "; analysis of code using them may be incomplete",
                "file": f["members"][0], "line": 1, "col": 1, "count": 1})
