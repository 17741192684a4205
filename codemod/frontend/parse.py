"""Parse a set of TUs: content-hash cache, worker processes, diagnostics instead of tracebacks."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .toolchain import Toolchain, cache_root, flags_from_compile_db, make_toolchain

CACHE_FORMAT = 3


@dataclass
class ParseJob:
    tu: str            # path relative to root
    root: str
    flags: list[str]


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
    data = json.dumps([CACHE_FORMAT, __version__, _indexer_hash(), fingerprint, job.tu, job.flags,
                       _sha(Path(job.root) / job.tu)])
    return hashlib.sha256(data.encode()).hexdigest()


def _cache_valid(entry: dict, root: Path) -> bool:
    """Every included project file must still have the hash it had when parsed."""
    for rel, sha in entry.get("closure", {}).items():
        p = root / rel
        if not p.is_file() or _sha(p) != sha:
            return False
    return True


def _run_job(job: ParseJob) -> dict:
    from .clang_index import index_tu

    started = time.perf_counter()
    try:
        facts = index_tu(Path(job.root) / job.tu, Path(job.root), job.flags)
    except Exception as exc:  # noqa: BLE001 - a TU that cannot be loaded is a diagnostic
        hint = ""
        if any("sm_100" in f or "sm_120" in f for f in job.flags):
            hint = " (libclang 18 knows no Blackwell arch; codemod analyses with sm_90a)"
        facts = {"kernels": {}, "functions": {}, "global_uses": [], "typedefs": {}, "includes": [],
                 "external_includes": [],
                 "diagnostics": [{"severity": "fatal", "message": f"libclang could not load the TU: {exc}{hint}",
                                  "file": job.tu, "line": 1, "col": 1, "count": 1}]}
    facts["tu"] = job.tu
    facts["parse_seconds"] = round(time.perf_counter() - started, 3)
    root = Path(job.root)
    facts["closure"] = {rel: _sha(root / rel) for rel in [job.tu, *facts.get("includes", [])] if (root / rel).is_file()}
    return facts


def _missing_headers(facts: dict) -> list[str]:
    out = []
    for d in facts.get("diagnostics", []):
        msg = d["message"]
        if d["severity"] == "fatal" and msg.endswith("file not found") and "'" in msg:
            out.append(msg.split("'")[1])
    return out


def parse_all(root: Path, tus: list[str], extra_flags: list[str], compile_db: Path | None = None,
              jobs: int | None = None, use_cache: bool = True, stub_headers: list[str] = (),
              progress=None) -> tuple[list[dict], dict]:
    """Parse TUs (relative to root); returns (facts per TU, stats)."""
    tc: Toolchain = make_toolchain(list(stub_headers))
    base = tc.base_flags()
    job_list = []
    for tu in tus:
        flags = None
        if compile_db is not None:
            flags = flags_from_compile_db(compile_db, root / tu)
        if flags is None:
            flags = list(extra_flags)
        job_list.append(ParseJob(tu, str(root), base + flags))
    cache_dir = cache_root() / "parse"
    cache_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    todo = []
    fp = tc.fingerprint()
    for job in job_list:
        key = _cache_key(job, fp)
        path = cache_dir / f"{key}.json"
        if use_cache and path.is_file():
            try:
                entry = json.loads(path.read_text())
                if _cache_valid(entry, root):
                    results[job.tu] = entry
                    continue
            except ValueError:
                pass
        todo.append((job, path))
    stats = {"tus": len(job_list), "parsed": len(todo), "cached": len(job_list) - len(todo)}
    if todo:
        workers = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
        done = 0

        def finish(job, path, facts):
            nonlocal done
            done += 1
            if progress:
                progress(f"[{done}/{len(todo)}] parsed {job.tu} ({facts['parse_seconds']:.1f}s)")
            results[job.tu] = facts
            if not any(d["severity"] == "fatal" for d in facts["diagnostics"]):
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(facts))
                os.replace(tmp, path)

        if workers == 1:
            for job, path in todo:
                finish(job, path, _run_job(job))
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futs = [(job, path, pool.submit(_run_job, job)) for job, path in todo]
                for job, path, fut in futs:
                    finish(job, path, fut.result())
        # A header the environment lacks (e.g. cuBLAS, cuDNN) stops clang at once; retry such TUs
        # with empty stubs for the missing headers until none is missing, and say so.
        missing = sorted({h for job, _ in todo for h in _missing_headers(results[job.tu])})
        if missing and len(stub_headers) < 64:
            retry = [job.tu for job, _ in todo if _missing_headers(results[job.tu])]
            stubs = sorted(set(stub_headers) | set(missing))
            again, st2 = parse_all(root, retry, extra_flags, compile_db, jobs, use_cache, stubs, progress)
            for facts in again:
                if not any(d.get("id") == "CM0102" for d in facts["diagnostics"]):
                    facts["diagnostics"].insert(0, {
                        "severity": "warning", "id": "CM0102",
                        "message": "headers not found were replaced by empty stubs: " + ", ".join(stubs)
                        + "; analysis of code using them may be incomplete",
                        "file": facts["tu"], "line": 1, "col": 1, "count": 1})
                results[facts["tu"]] = facts
            stats["stubbed_headers"] = sorted(set(st2.get("stubbed_headers", [])) | set(stubs))
    return [results[t] for t in tus], stats
