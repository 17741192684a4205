"""Parse a set of TUs: content-hash cache, worker processes, diagnostics instead of tracebacks."""

from __future__ import annotations

import functools
import glob
import hashlib
import heapq
import itertools
import re
import json
import os
import time
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from pathlib import Path

from .. import __version__, strict_json
from ..workers import process_pool
from .compile_db import language_standard, load as load_compile_db
from .toolchain import (WRAPPER_STUBS, Toolchain, cache_root, flags_from_compile_db, make_toolchain, private_dir,
                        with_standard)

CACHE_FORMAT = 4  # 4: shared parses carry cut_at (MEMBER_MARK)


@dataclass
class ParseJob:
    tu: str            # path relative to root (for a group: the group's name)
    root: str          # absolute, symlinks resolved (parse_all): worker processes and libclang read it
    flags: list[str]
    members: list[str] | None = None   # TUs parsed together through one umbrella file
    pch: str | None = None             # prefix PCH to load (not part of the cache key)
    cost: int = 0                      # scheduling estimate: bytes of project source it includes
    cccl: bool = False                 # every TU includes CCCL: the PCH with CCCL_PREFIX


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read())
    return h.hexdigest()


# The modules whose code makes a TU's facts: clang_index.py and every frontend module it uses.
INDEXER_MODULES = ("clang_index.py", "declarations.py", "walk.py", "sites.py", "locations.py", "cursors.py",
                   "source_text.py", "traits.py")


def indexer_files() -> list[Path]:
    here = Path(__file__).resolve().parent
    return sorted([*(here / m for m in INDEXER_MODULES), *(here / "recognizers").glob("*.py")])


@functools.lru_cache(maxsize=1)
def indexer_hash() -> str:
    """The indexer's own source is part of the key: changing how facts are made drops old ones."""
    h = hashlib.sha256()
    for path in indexer_files():
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _cache_key(job: ParseJob, fingerprint: str) -> str:
    members = job.members or [job.tu]
    data = json.dumps([CACHE_FORMAT, __version__, indexer_hash(), fingerprint, job.tu, job.flags,
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
# are never in it, so the PCH cannot change what the analysis sees of the project; it holds only
# headers whose names live in std:: or carry a CUDA prefix, or that the CUDA wrapper includes
# anyway. NOTE: what a TU did not include can still change its name lookup: cuda_pipeline.h
# declares a namespace `cuda` that makes TE's `using namespace transformer_engine; cuda::...`
# ambiguous, and POSIX headers declare `close`, `read`, `sync`, ... globally; such headers stay
# out, as do headers with errors of their own (CCCL's <cuda/barrier> with libclang 18: a PCH is
# only built without errors).
PCH_PREFIX = ("cuda_runtime.h", "cuda.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_fp4.h", "cudaTypedefs.h",
              "nvrtc.h", "cstdint", "cstddef", "cstdlib", "cstdio", "cstring", "cmath", "string", "vector", "array",
              "map", "set", "deque", "stack", "unordered_map", "unordered_set", "type_traits", "memory", "functional",
              "iostream", "sstream", "iomanip", "stdexcept", "mutex", "atomic", "algorithm", "numeric", "iterator",
              "limits", "tuple", "utility", "optional", "variant", "typeindex", "chrono", "regex")
# CCCL (libcu++, CUB, Thrust) headers that TUs using CCCL pull in, in a second PCH loaded only by
# parses whose every TU includes a CCCL header (found by following `#include`s textually), so that
# CCCL's `namespace cuda` never reaches a TU that does not include it. <cuda/barrier> itself has
# errors under libclang 18 (`__isClusterShared` undeclared) that each TU must still report, so its
# clean dependencies are here instead (~1 s less per TU that includes it).
CCCL_PREFIX = ("cuda/std/atomic", "cuda/std/chrono", "cuda/std/cstdint", "cuda/ptx", "nv/target",
               "cuda/std/__atomic/scopes.h", "cuda/std/__barrier/barrier.h", "cuda/std/__barrier/empty_completion.h",
               "cuda/std/__barrier/poll_tester.h", "cuda/std/__new_", "cuda/__fwd/barrier.h",
               "cuda/__fwd/barrier_native_handle.h")
CCCL_DIRS = ("cuda/", "cub/", "thrust/", "nv/")


def _pch_flags(flags: list[str]) -> list[str]:
    """Flags that change how the prefix headers parse (not the project's -I dirs)."""
    return [f for f in flags if not f.startswith(("-I", "-include"))]


def _pch_loads(pch: Path, flags: list[str]) -> bool:
    """Whether clang loads the cached `pch` (one empty unit with it). A PCH clang cannot use makes it
    load no TU at all: every TU of the run failed, "libclang could not load any of the N translation
    units" (seen after the venv and toolchain were set up again under the same paths, the cache
    kept). Checked once per run and PCH, where the PCH is looked up; a refused one is built again."""
    import clang.cindex as ci

    probe = pch.with_suffix(".probe.cu")
    try:
        ci.Index.create().parse(str(probe), args=[*_pch_flags(flags), "-include-pch", str(pch)],
                                unsaved_files=[(str(probe), "")])
        return True
    except Exception:  # noqa: BLE001 - TranslationUnitLoadError: the PCH is not usable
        return False


def build_pch(flags: list[str], headers: tuple[str, ...] = PCH_PREFIX) -> Path | None:
    """The prefix PCH of these headers for these flags (cached); None when it cannot be built."""
    if os.environ.get("CODEMOD_NO_PCH"):
        return None
    import clang.cindex as ci

    key = hashlib.sha256(json.dumps([CACHE_FORMAT, indexer_hash(), headers, _pch_flags(flags)]).encode()).hexdigest()[:16]
    out = cache_root() / "pch" / f"prefix-{key}.pch"
    if out.is_file() and _pch_loads(out, flags):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    header = out.with_suffix(".h")
    # A header this toolchain lacks is left out rather than failing the PCH.
    header.write_text("".join(f"#if __has_include(<{h}>)\n#include <{h}>\n#endif\n" for h in headers))
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


def _build_pch_timed(flags: list[str], headers: tuple[str, ...]) -> tuple[Path | None, float]:
    started = time.process_time()
    return build_pch(flags, headers), time.process_time() - started


def _run_job(job: ParseJob) -> dict:
    from .clang_index import index_tu, parse_tu

    started, cpu_started = time.perf_counter(), time.process_time()
    root = Path(job.root)
    path = root / job.tu
    mains = None
    if job.members:
        # One parse for TUs that share their headers: an umbrella file including each of them.
        mains = [root / m for m in job.members]
        umbrella = cache_root() / "umbrella" / (hashlib.sha256(job.tu.encode() + job.root.encode()).hexdigest()[:16] + ".cu")
        umbrella.parent.mkdir(parents=True, exist_ok=True)
        # NOTE: written whole, then renamed: another run parsing the same group (same root) may be
        # reading it, and a truncated umbrella parses in no time as a group that includes nothing.
        tmp = umbrella.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text("".join(f'#include "{m.resolve()}"\n#error {MEMBER_MARK}{k}\n' for k, m in enumerate(mains)))
        os.replace(tmp, umbrella)
        path = umbrella
    flags = list(job.flags)
    if job.pch:
        flags += ["-include-pch", job.pch]
    stub_dir = next((f[len("-idirafter"):] for f in job.flags if f.startswith("-idirafter")), None)
    try:
        tu, facts = parse_tu(path, root, flags)
        facts["members"] = job.members or [job.tu]
        if job.members:
            facts["diagnostics"], facts["cut_at"] = _member_marks(facts["diagnostics"], job.members)
        facts["stubs_used"] = _stubs_used(facts, stub_dir) if stub_dir else []
        # A shared parse that will be redone TU by TU is not walked: only its diagnostics count.
        walked = {"kernels": {}, "functions": {}, "global_uses": [], "typedefs": {}} if _umbrella_conflict(facts) \
            else index_tu(tu, root, mains)
        facts = {**walked, **facts}
    except Exception as exc:  # noqa: BLE001 - a TU that cannot be loaded is a diagnostic
        hint = ""
        if any("sm_100" in f or "sm_120" in f for f in job.flags):
            hint = " (libclang 18 knows no Blackwell arch; codemod analyses with sm_90a)"
        facts = {"load_failed": True, "load_error": f"{exc}{hint}", "kernels": {}, "functions": {}, "global_uses": [],
                 "typedefs": {}, "includes": [], "external_includes": [], "members": job.members or [job.tu], "stubs_used": [],
                 "diagnostics": [{"severity": "fatal", "message": f"libclang could not load the TU: {exc}{hint}",
                                  "file": job.tu, "line": 1, "col": 1, "count": 1}]}
    facts["tu"] = job.tu
    facts["parse_seconds"] = round(time.perf_counter() - started, 3)
    facts["cpu_seconds"] = round(time.process_time() - cpu_started, 3)
    facts["closure"] = {rel: _sha(root / rel) for rel in [*facts["members"], *facts.get("includes", [])]
                        if (root / rel).is_file()}
    return facts


_CLASH = ("redefinition", "conflicting", "redeclar", "already defined", "ambiguous")

# NOTE: after a fatal error clang reports nothing more and instantiates no more templates (fast
# mode's template-depth limit raises one that the facts drop). In a shared parse that hides every
# later member's errors and launches: the member's errors were charged to nobody and it looked
# clean. An `#error` mark after each member tells where the reports stop; a missing mark means a
# fatal error cut the parse, and the parse is redone TU by TU.
MEMBER_MARK = "codemod-member-parsed-"


def _member_marks(diagnostics: list[dict], members: list[str]) -> tuple[list[dict], str | None]:
    """The diagnostics without the marks, and the first member whose mark is missing (None when
    clang reported to the end of every member)."""
    seen = {d["message"][len(MEMBER_MARK):] for d in diagnostics if d["message"].startswith(MEMBER_MARK)}
    cut = next((m for k, m in enumerate(members) if str(k) not in seen), None)
    return [d for d in diagnostics if not d["message"].startswith(MEMBER_MARK)], cut


def _umbrella_conflict(facts: dict) -> bool:
    """Whether a shared parse must be redone one TU at a time.

    File-local names may clash, and one TU's broken syntax must not be charged to the next, so a
    shared parse with errors is redone — unless the errors are explained by stubbed headers (the
    parse included stubs for missing third-party headers), which fail the same way per TU; clash
    errors are always redone.
    """
    if len(facts.get("members", [])) <= 1:
        return False
    if facts.get("cut_at"):
        return True
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


def _cached_facts(path: Path, root: Path) -> dict | None:
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not _cache_valid(entry, root):
        return None
    entry["from_cache"] = True
    return entry


def _run_jobs(job_list: list[ParseJob], root: Path, fp: str, jobs: int | None, use_cache: bool, progress,
              estimate, on_parse_start=None) -> tuple[list[dict], dict]:
    """Facts of every job, from the cache or parsed by worker processes, largest first.

    A shared parse that must be redone TU by TU (`_umbrella_conflict`) has its TUs queued as soon
    as its result is in, so they run alongside the rest. `estimate(job)` gives (cost, cccl). The
    prefix PCHs are built by the workers first. Returns the facts in job order with a redone
    parse's TUs after the rest (the order the merge sees), and counts.
    """
    cache_dir = private_dir(cache_root() / "parse")
    results: dict[str, dict] = {}
    redo: dict[str, list[ParseJob]] = {}
    queue: list[tuple] = []   # heap of (-cost, order, job, cache path)
    order = itertools.count()
    pchs: dict[tuple, Path | None] = {}   # (PCH flags, CCCL or not) -> built PCH
    counts = {"parsed": 0, "cpu": 0.0, "pch_cpu": 0.0}

    def add(job: ParseJob) -> None:
        path = cache_dir / f"{_cache_key(job, fp)}.json"
        entry = _cached_facts(path, root) if use_cache and path.is_file() else None
        if entry is not None:
            accept(job, entry)
            return
        job.cost, job.cccl = estimate(job)
        heapq.heappush(queue, (-job.cost, next(order), job, path))

    def accept(job: ParseJob, facts: dict) -> None:
        results[job.tu] = facts
        if _umbrella_conflict(facts):
            redo[job.tu] = [ParseJob(m, job.root, job.flags) for m in facts["members"]]
            if progress:
                why = (f"a fatal error stopped clang's reports before the end of {facts['cut_at']}" if facts.get("cut_at")
                       else "had errors")
                progress(f"{job.tu}: {len(redo[job.tu])} TUs parsed together {why}; parsing them one by one")
            for single in redo[job.tu]:
                add(single)

    def pch_key(job: ParseJob) -> tuple:
        return tuple(_pch_flags(job.flags)), job.cccl

    def missing_pchs() -> list[tuple]:
        """PCHs queued jobs need that are not built yet, the largest job's first."""
        return list(dict.fromkeys(k for _, _, job, _ in sorted(queue) if (k := pch_key(job)) not in pchs))

    def pch_args(key: tuple) -> tuple[list[str], tuple[str, ...]]:
        return list(key[0]), PCH_PREFIX + (CCCL_PREFIX if key[1] else ())

    def next_ready() -> tuple[ParseJob, Path] | None:
        """The largest queued job whose PCH is built (None when all wait for one)."""
        held, found = [], None
        while queue and found is None:
            item = heapq.heappop(queue)
            if pch_key(item[2]) in pchs:
                found = item
            else:
                held.append(item)
        for item in held:
            heapq.heappush(queue, item)
        if found is None:
            return None
        job, path = found[2], found[3]
        pch = pchs[pch_key(job)]
        job.pch = str(pch) if pch else None
        return job, path

    def finish(job: ParseJob, path: Path, facts: dict) -> None:
        counts["parsed"] += 1
        counts["cpu"] += facts.get("cpu_seconds", 0.0)
        if progress:
            n = len(job.members or [job.tu])
            progress(f"[{counts['parsed']}/{counts['parsed'] + len(queue)}] parsed {job.tu}"
                     + (f" ({n} TUs together)" if n > 1 else "")
                     + f" in {facts['parse_seconds']:.1f}s ({facts['cpu_seconds']:.1f}s CPU)")
        # Everything is cached, failures included: a warm run must parse nothing. A shared parse
        # that has to be redone per TU is cached too, so the next run goes straight to the TUs.
        if not facts.get("load_failed"):
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(strict_json.dumps(facts, "parse cache entry"))
            os.replace(tmp, path)
        accept(job, facts)

    for job in job_list:
        add(job)
    workers = max(1, jobs or os.cpu_count() or 1)
    if queue and workers == 1:
        if on_parse_start:
            on_parse_start()
        while queue:
            for key in missing_pchs():
                pchs[key], cpu = _build_pch_timed(*pch_args(key))
                counts["pch_cpu"] += cpu
            job, path = next_ready()
            finish(job, path, _run_job(job))
    elif queue:
        with process_pool(workers) as pool:
            running: dict = {}   # future -> (job, cache path), or the key of a PCH being built

            def start_pchs() -> None:
                for key in missing_pchs():
                    if key not in running.values() and len(running) < workers:
                        running[pool.submit(_build_pch_timed, *pch_args(key))] = key

            start_pchs()
            if on_parse_start:
                on_parse_start()  # while the workers build the PCHs
            while queue or running:
                start_pchs()
                while len(running) < workers and (ready := next_ready()) is not None:
                    running[pool.submit(_run_job, ready[0])] = ready
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    what = running.pop(fut)
                    if isinstance(what[0], ParseJob):
                        finish(*what, fut.result())
                    else:
                        pchs[what], cpu = fut.result()
                        counts["pch_cpu"] += cpu
    facts = [results[j.tu] for j in job_list if j.tu not in redo]
    facts += [results[s.tu] for j in job_list for s in redo.get(j.tu, [])]
    return facts, {"parsed": counts["parsed"], "workers": workers, "parse_cpu_seconds": round(counts["cpu"], 1),
                   "pch_cpu_seconds": round(counts["pch_cpu"], 1)}


_INCLUDE = re.compile(rb'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


class IncludeGraph:
    """The project's `#include`s, read once with a regex (no preprocessor: conditions are ignored)."""

    def __init__(self, root: Path):
        self.directives: dict[Path, list[tuple[str, str]]] = {}   # file -> (`<` or `"`, name)
        for p in root.rglob("*"):
            if p.suffix in (".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl") and p.is_file():
                self.directives[p.resolve()] = [(kind.decode(), raw.decode(errors="replace"))
                                                for kind, raw in _INCLUDE.findall(p.read_bytes())]
        self._resolved: dict[tuple, Path | None] = {}

    def _resolve(self, including: Path, kind: str, name: str, dirs: tuple[Path, ...]) -> Path | None:
        """The project file an include names (next to the including file first for `"`), if any."""
        key = (including.parent if kind == '"' else None, name, dirs)
        if key not in self._resolved:
            self._resolved[key] = next((q for d in ((including.parent,) if kind == '"' else ()) + dirs
                                        if (q := (d / name).resolve()) in self.directives), None)
        return self._resolved[key]

    def estimate(self, job: ParseJob) -> tuple[int, bool]:
        """Following each TU's includes through the project: the bytes of project source the job
        includes (its scheduling estimate: it tracks the parse time well, system headers being in
        the PCH), and whether every TU includes a CCCL header."""
        dirs = tuple(Path(f[2:]) for f in job.flags if f.startswith("-I"))
        files: set[Path] = set()
        cccl = True
        for member in job.members or [job.tu]:
            seen, uses_cccl = self.closure((Path(job.root) / member).resolve(), dirs)
            files |= seen
            cccl = cccl and uses_cccl
        return sum(p.stat().st_size for p in files), cccl

    def closure(self, start: Path, dirs: tuple[Path, ...]) -> tuple[set[Path], bool]:
        """The project files `start` (resolved) reaches through includes, itself included; and
        whether an include it could not resolve in the project names a CCCL header."""
        seen: set[Path] = set()
        todo = [start]
        uses_cccl = False
        while todo:
            p = todo.pop()
            if p in seen or p not in self.directives:
                continue
            seen.add(p)
            for kind, name in self.directives[p]:
                found = self._resolve(p, kind, name, dirs)
                if found is not None:
                    todo.append(found)
                elif name.startswith(CCCL_DIRS):
                    uses_cccl = True
        return seen, uses_cccl


def missing_system_headers(root: Path, flags: list[str], tc: Toolchain, graph: IncludeGraph | None = None) -> list[str]:
    """`#include <...>` names in the project that no known include dir holds (to be stubbed).

    Stubs sit behind every real include dir (-idirafter), so a false positive is harmless.
    """
    dirs = [Path(f[2:]) for f in flags if f.startswith("-I")] + [Path(f[8:]) for f in flags if f.startswith("-isystem")]
    dirs += [tc.cuda_include, tc.cuda_include / "cccl", tc.resource_dir / "include", Path("/usr/include"),
             Path("/usr/local/include"), Path("/usr/include/x86_64-linux-gnu"), Path("/usr/include/aarch64-linux-gnu")]
    dirs += [Path(p) for p in glob.glob("/usr/include/c++/*")] + [Path(p) for p in glob.glob("/usr/include/*-linux-gnu/c++/*")]
    dirs = [d for d in dirs if d.is_dir()]
    names = set()
    for p, found in (graph or IncludeGraph(root)).directives.items():
        for kind, name in found:
            if kind == '"' and (p.parent / name).is_file():
                continue  # found next to the including file
            names.add(name)
    return sorted(n for n in names if not n.startswith(("/", "..")) and not any((d / n).is_file() for d in dirs))


def parse_all(root: Path, tus: list[str], extra_flags: list[str], compile_db: Path | None = None,
              jobs: int | None = None, use_cache: bool = True, stub_headers: list[str] | None = None,
              progress=None, group: bool = True, on_parse_start=None) -> tuple[list[dict], dict]:
    """Parse TUs (relative to root). Returns (facts per parse: a TU or a group of TUs, stats).

    `on_parse_start` is called once in this process when something has to be parsed, before the
    first parse (while the workers build the prefix PCHs).
    """
    started = time.perf_counter()
    # NOTE: root as the caller spelled it may be relative: resolved before it goes into a job, so
    # that no worker process or libclang reads it against another working directory, and a
    # group's umbrella file (named after the root) is never shared by two trees.
    root = Path(root).resolve()
    graph = IncludeGraph(root)
    if stub_headers is None:
        probe = make_toolchain([])
        stub_headers = missing_system_headers(root, probe.base_flags() + list(extra_flags), probe, graph)
    tc: Toolchain = make_toolchain(list(stub_headers))
    db_entries = load_compile_db(compile_db) if compile_db is not None else None
    # NOTE: the database's language standard is every parse's default, also for files it does not
    # list: PyTorch's current headers need C++20, and apply parses scratch copies of the tree.
    base = with_standard(tc.base_flags(), language_standard(db_entries, str(compile_db)) if db_entries else None)
    flags_of = {}
    for tu in tus:
        flags = flags_from_compile_db(compile_db, root / tu, db_entries) if compile_db is not None else None
        flags_of[tu] = base + (flags if flags is not None else list(extra_flags))
    facts_list, run = _run_jobs(_group_jobs(root, tus, flags_of, group), root, tc.fingerprint(), jobs, use_cache,
                                progress, estimate=graph.estimate, on_parse_start=on_parse_start)
    stats = {"tus": len(tus), "parses": len(facts_list), **run,
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
        stats.update(parses=len(facts_list), parsed=stats["parsed"] + st2["parsed"],
                     parse_cpu_seconds=round(stats["parse_cpu_seconds"] + st2["parse_cpu_seconds"], 1),
                     pch_cpu_seconds=round(stats["pch_cpu_seconds"] + st2["pch_cpu_seconds"], 1),
                     cached=sum(1 for f in facts_list if f.get("from_cache")), stubbed_headers=st2.get("stubbed_headers", []))
    else:
        stats["stubbed_headers"] = sorted({h for f in facts_list for h in f.get("stubs_used", [])})
    stats["parse_seconds"] = round(time.perf_counter() - started, 2)
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
