"""`codemod warm LIST`: compile, in parallel on this host, the NVRTC programs a run recorded
(<prefix>_RECORD of the layer's disk cache, docs/rtc_cache.md) into the cache folder, so that the
processes of a training run load them instead of compiling."""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import nvrtc_options, strict_json
from ..errors import CodemodError, UsageError
from ..text import printable, printable_lines
from . import nvrtc, rtc_cache


class WarmError(CodemodError):
    """A recorded list that cannot be compiled as recorded."""


@dataclass
class Program:
    key: str
    nvrtc: str
    filename: str
    source: bytes
    headers: list[tuple[str, bytes]]
    names: list[str]
    options: list[str]
    line: int


# NOTE: a list is data from a shared path (docs/rtc_cache.md): bounded before it is parsed. TE's
# programs make a few thousand lines of under 2 KB each.
MAX_LIST_BYTES = 64 << 20
MAX_LINE_BYTES = 1 << 20
MAX_LIST_ENTRIES = 100_000
MAX_STRING = 4096          # a key, file name, header name, name expression or option
MAX_ITEMS = 4096           # headers, names or options of one program
FIELDS = ("key", "nvrtc", "filename", "source", "headers", "names", "options")
_DIGEST = re.compile(r"[0-9a-f]{32}")
# NVRTC's major.minor, then the size and modification time of its library file (rtc_cache.nvrtc_identity)
_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}(?: [0-9]{1,20} [0-9]{1,20}\.[0-9]{9})?")


def _source(folder: Path, digest: str, where: str) -> bytes:
    path = folder / digest
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_LIST_BYTES + 1)
    except OSError:
        raise WarmError(f"{where}: source {digest} is missing from {folder}",
                        hint="copy the list together with its .sources folder") from None
    if rtc_cache.hash128(data) != digest:
        raise WarmError(f"{where}: {path} does not hash to its name (changed after the run)")
    return data


def _string(value, what: str, where: str, pattern: re.Pattern | None = None) -> str:
    if not isinstance(value, str):
        raise WarmError(f"{where}: {what} must be a string, found {type(value).__name__}")
    if len(value) > MAX_STRING:
        raise WarmError(f"{where}: {what} is longer than {MAX_STRING} characters")
    if pattern is not None and not pattern.fullmatch(value):
        raise WarmError(f"{where}: {what} {printable(value, 60)!r} is not what the layer records")
    if printable(value) != value:
        raise WarmError(f"{where}: {what} {printable(value, 60)!r} holds a control character")
    return value


def _strings(value, what: str, where: str) -> list[str]:
    if not isinstance(value, list):
        raise WarmError(f"{where}: {what} must be a list, found {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise WarmError(f"{where}: more than {MAX_ITEMS} {what}")
    return [_string(v, what, where) for v in value]


def parse_entry(line: str, where: str) -> dict:
    """One recorded program, checked against the schema: exactly FIELDS, bounded strings, digests
    of 32 hex digits, options from the allow-list (codemod.nvrtc_options)."""
    try:
        e = strict_json.loads(line)
    except ValueError as exc:
        raise WarmError(f"{where}: not a recorded program: {exc}") from None
    if not isinstance(e, dict):
        raise WarmError(f"{where}: not a recorded program (a JSON object with {', '.join(FIELDS)})")
    if set(e) != set(FIELDS):
        missing, extra = sorted(set(FIELDS) - set(e)), sorted(set(e) - set(FIELDS))
        said = [f"missing {', '.join(missing)}"] if missing else []
        said += [f"unknown {', '.join(printable(x, 40) for x in extra[:4])}"] if extra else []
        raise WarmError(f"{where}: not a recorded program ({'; '.join(said)})")
    _string(e["key"], "key", where, _DIGEST)
    _string(e["nvrtc"], "nvrtc version", where, _VERSION)
    _string(e["filename"], "file name", where)
    _string(e["source"], "source digest", where, _DIGEST)
    if not isinstance(e["headers"], list) or len(e["headers"]) > MAX_ITEMS:
        raise WarmError(f"{where}: headers must be a list of at most {MAX_ITEMS} [name, digest] pairs")
    for h in e["headers"]:
        if not isinstance(h, list) or len(h) != 2:
            raise WarmError(f"{where}: headers must be [name, digest] pairs")
        _string(h[0], "header name", where)
        _string(h[1], "header digest", where, _DIGEST)
    _strings(e["names"], "names", where)
    if not isinstance(e["options"], list) or len(e["options"]) > MAX_ITEMS:
        raise WarmError(f"{where}: options must be a list of at most {MAX_ITEMS} strings")
    bad = nvrtc_options.refused(e["options"])
    if bad:
        raise WarmError(f"{where}: option(s) not allowed: {nvrtc_options.describe(bad)}",
                        hint="a recorded list holds the rule's and the layer's options only "
                             "(codemod.nvrtc_options); record the list again")
    _strings(e["options"], "options", where)
    return e


def _lines(path: Path):
    """(line number, text) of the list, bounded in size, line length and count."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_LIST_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_LIST_BYTES:
        raise WarmError(f"{path}: larger than {MAX_LIST_BYTES >> 20} MiB, not a recorded list")
    count = 0
    for i, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        where = f"{path}:{i}"
        if len(raw) > MAX_LINE_BYTES:
            raise WarmError(f"{where}: line longer than {MAX_LINE_BYTES >> 10} KiB")
        count += 1
        if count > MAX_LIST_ENTRIES:
            raise WarmError(f"{path}: more than {MAX_LIST_ENTRIES} programs, not a recorded list")
        try:
            yield i, raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WarmError(f"{where}: not UTF-8") from None


def read_list(path: Path) -> list[Program]:
    """The recorded programs, one per key, in list order; every line checked first."""
    folder = Path(str(path) + ".sources")
    entries, seen = [], set()
    for i, line in _lines(path):
        e = parse_entry(line, f"{path}:{i}")
        if e["key"] not in seen:
            seen.add(e["key"])
            entries.append((i, e))
    return [Program(key=e["key"], nvrtc=e["nvrtc"], filename=e["filename"],
                    source=_source(folder, e["source"], f"{path}:{i}"),
                    headers=[(n, _source(folder, h, f"{path}:{i}")) for n, h in e["headers"]],
                    names=list(e["names"]), options=list(e["options"]), line=i) for i, e in entries]


def check_includes(programs: list[Program], include_dirs, list_path: Path) -> None:
    """An -I folder must be one of the NVRTC's own header folders (the layer passes those): any other
    makes NVRTC read code from wherever the list says."""
    own = {os.path.realpath(d) for d in include_dirs}
    for p in programs:
        for o in p.options:
            folder = nvrtc_options.include_dir(o)
            if folder is not None and os.path.realpath(folder) not in own:
                raise WarmError(f"{list_path}:{p.line}: option {printable(o, 80)} is not allowed: not a folder of "
                                "the toolkit headers this NVRTC uses",
                                hint="record the list with the toolkit the training processes use")


def key_of(p: Program) -> str:
    """The key the layer computes for `p` on this host (toolkit header versions read now)."""
    versions = {}
    for o in p.options:
        for flag in ("-I", "--include-path="):
            if o.startswith(flag):
                versions[o[len(flag):]] = rtc_cache.header_version(o[len(flag):])
    return rtc_cache.hash128(rtc_cache.key_material(p.nvrtc, p.source, p.filename, p.headers, p.names, p.options,
                                                    versions))


def warm(list_path: Path, cache_dir: Path, jobs: int | None = None, library: Path | None = None) -> dict:
    """Compile every recorded program missing from `cache_dir`; the counts and times."""
    programs = read_list(list_path)
    lib = nvrtc.load(library)
    check_includes(programs, lib.include_dirs, list_path)
    version = rtc_cache.nvrtc_identity(lib.path, lib.version)
    for p in programs:
        where = f"{list_path}:{p.line}"
        if p.nvrtc != version:
            raise WarmError(f"{where}: recorded with NVRTC {p.nvrtc}, this host has {version}: entries would not be "
                            "found by that run", hint="run `codemod warm` with the NVRTC the training processes load")
        if key_of(p) != p.key:
            raise WarmError(f"{where}: the key computed here differs from the recorded one (another cache format, "
                            "or the toolkit headers behind an -I folder changed)", hint="record the list again")
    cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    todo = [p for p in programs if not _present(cache_dir, p.key)]

    pch = PchFolders()

    def one(p: Program) -> tuple[Program, nvrtc.CompileResult]:
        headers = {n: c.decode() for n, c in p.headers}

        def run(options: list[str]) -> nvrtc.CompileResult:
            return lib.compile(p.source.decode(), p.filename, headers, options=options, name_expressions=p.names,
                               keep_cubin=True, exact=True)

        # as the layer: never fail a program for the options the layer added (compiled again without them)
        plain = [o for o in p.options if o not in LAYER_OPTIONS]
        if plain == p.options:
            return p, run(p.options)
        r = run(p.options + [f"-pch-dir={pch.folder(p.headers)}"] if "-pch" in p.options else p.options)
        return p, r if r.ok else run(plain)

    t0 = time.monotonic()
    failed, seconds = [], []
    with pch, ThreadPoolExecutor(max(1, jobs or os.cpu_count() or 1)) as pool:
        for p, r in pool.map(one, todo):
            if not r.ok:
                failed.append({"key": p.key, "names": p.names, "log": r.log_head()})
                continue
            seconds.append(r.seconds)
            ptx = b"" if r.cubin else (r.ptx or "").encode() + b"\0"
            _write(cache_dir, p.key, rtc_cache.encode(p.key, [(n, r.lowered[n]) for n in p.names], r.cubin or b"", ptx))
    return {"programs": len(programs), "present": len(programs) - len(todo), "compiled": len(seconds),
            "failed": failed, "wall_s": round(time.monotonic() - t0, 3),
            "compile_s_sum": round(sum(seconds), 3), "nvrtc": version, "cache_dir": str(cache_dir)}


# What the layer adds after a program's own options: codemod.nvrtc_options (one copy).
PCH_OPTIONS, MINIMAL_OPTIONS, LAYER_OPTIONS = (nvrtc_options.PCH_OPTIONS, nvrtc_options.MINIMAL_OPTIONS,
                                               nvrtc_options.LAYER_OPTIONS)


class PchFolders:
    """As the layer: a PCH folder per set of headers (NVRTC checks a PCH against the options and the
    leading directives, not the content of in-memory headers), under a temporary folder."""

    def __init__(self):
        self._lock = threading.Lock()
        self._root: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> "PchFolders":
        return self

    def __exit__(self, *exc) -> None:
        if self._root is not None:
            self._root.cleanup()

    def folder(self, headers: list[tuple[str, bytes]]) -> str:
        material = rtc_cache.put(str(len(headers))) + b"".join(rtc_cache.put(n) + rtc_cache.put(c) for n, c in headers)
        with self._lock:
            if self._root is None:
                self._root = tempfile.TemporaryDirectory(prefix="rtc_pch_")
            path = Path(self._root.name) / rtc_cache.hash128(material)
            path.mkdir(mode=0o700, exist_ok=True)
            return str(path)


def _present(cache_dir: Path, key: str) -> bool:
    try:
        return rtc_cache.decode((cache_dir / f"{key}.bin").read_bytes(), key) is not None
    except OSError:
        return False


def _write(cache_dir: Path, key: str, data: bytes) -> None:
    """As the layer writes: a temporary file in the folder, renamed over the entry."""
    final = cache_dir / f"{key}.bin"
    tmp = cache_dir / f"{key}.bin.tmp.{os.getpid()}.warm"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, final)


def add_parser(sub) -> None:
    p = sub.add_parser("warm", help="precompile a recorded list of NVRTC programs into the layer's disk cache",
                       description="Compile the programs a run recorded (<prefix>_RECORD=LIST, docs/rtc_cache.md) "
                                   "into the layer's disk cache, in parallel, before the training processes start.")
    p.add_argument("list", type=Path, help="the recorded list (JSON lines; sources in LIST.sources/)")
    p.add_argument("--cache-dir", type=Path, required=True,
                   help="the layer's cache folder (what the run's <prefix>_DIR names, e.g. $NVTE_RTC_CACHE_DIR)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="compiles at once (default: CPU count)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the counts and times as JSON")
    p.set_defaults(run=_run)


def _run(args) -> int:
    result = warm(args.list, args.cache_dir, args.jobs)
    if args.json:
        args.json.write_text(strict_json.dumps(result, indent=1) + "\n")
    for f in result["failed"]:
        print(printable(f"failed: {', '.join(f['names'])} ({f['key']}):") + "\n" + printable_lines(f["log"]))
    print(f"{result['programs']} programs: {result['present']} already cached, {result['compiled']} compiled, "
          f"{len(result['failed'])} failed ({result['wall_s']} s) into {result['cache_dir']}")
    return 1 if result["failed"] else 0
