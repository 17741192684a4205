"""The NVRTC layer's disk cache and per-variant compiles (layer feature `cache`, issue 17), on the
host: the golden actlib's layer as `apply` patches it, compiled with g++ against a mock NVRTC and a
mock CUDA runtime (fixtures/rtc_cache/), driven by fixtures/rtc_cache/driver.cpp in separate
processes. The unpatched layer is built too: the lock test shows it blocking."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from codemod.apply.golden import GOLDEN
from codemod.verify import rtc_cache

from .patched_actlib import patch_actlib

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "rtc_cache"
CXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs g++ (host build of the layer)")


def _cuda_include() -> Path | None:
    """Toolkit headers (cuda_runtime_api.h, nvrtc.h): the CUDA wheel, else a toolkit."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) / sub for p in (spec.submodule_search_locations or []) for sub in ("cu13", "cu12")] if spec else []
    roots += [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))]
    for r in roots:
        if (r / "include" / "nvrtc.h").is_file() and (r / "include" / "cuda_runtime_api.h").is_file():
            return r / "include"
    return None


def _build(root: Path, work: Path, name: str, nvrtc_lib: Path | None = None) -> Path:
    """The driver over `root`'s layer with the mock CUDA runtime and the mock NVRTC (or the real
    library `nvrtc_lib`)."""
    inc = _cuda_include()
    if inc is None:
        pytest.skip("no CUDA headers (nvrtc.h)")
    objs = []
    nvrtc_obj = FIXTURES / ("real_nvrtc_glue.cpp" if nvrtc_lib else "mock_nvrtc.cpp")
    for src in (root / "util/rtc.cpp", FIXTURES / "driver.cpp", nvrtc_obj, FIXTURES / "mock_cudart.cpp"):
        obj = work / f"{name}_{src.stem}.o"
        proc = subprocess.run([CXX, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-c", str(src), "-I", str(root),
                               "-I", str(root / "include"), "-I", str(inc), "-o", str(obj)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]
        objs.append(str(obj))
    exe = work / name
    libs = [f"-L{nvrtc_lib.parent}", f"-l:{nvrtc_lib.name}", f"-Wl,-rpath,{nvrtc_lib.parent}"] if nvrtc_lib else []
    proc = subprocess.run([CXX, "-pthread", *objs, *libs, "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


def _real_driver(work: Path, name: str, rule_text: str | None = None) -> tuple[Path, dict[str, str]]:
    """The patched layer linked with the real NVRTC (the wheel), and the environment its runs need.
    Lists for `codemod warm` are recorded with it: the key holds the NVRTC library's identity, which
    the mock's is not."""
    from codemod.verify import nvrtc

    try:
        lib = Path(nvrtc.find_library())
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    root, _, _ = patch_actlib(work / "tree", rule_text)
    return _build(root, work, name, nvrtc_lib=lib), {"LD_LIBRARY_PATH": str(lib.parent)}


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    work = tmp_path_factory.mktemp("rtc_cache")
    root, _, _ = patch_actlib(work)
    assert (root / "util/rtc_cache.h").is_file()
    return {"patched": _build(root, work, "patched"), "original": _build(GOLDEN / "actlib" / "input", work, "original")}


class Run:
    """One cache folder and mock log; `start` runs the driver in a new process."""

    def __init__(self, exe: Path, tmp: Path, **env: str):
        tmp.mkdir(parents=True, exist_ok=True)
        self.exe, self.dir, self.mock_log, self.events = exe, tmp / "cache", tmp / "mock.log", tmp / "events.log"
        self.env = {**os.environ, "ACTLIB_RTC_CACHE_DIR": str(self.dir), "MOCK_NVRTC_LOG": str(self.mock_log),
                    "ACTLIB_RTC_CACHE_LOG": str(self.events), **env}
        for k in ("ACTLIB_RTC_CACHE", "ACTLIB_RTC_CACHE_MAX_SIZE", "ACTLIB_RTC_CACHE_RECORD"):
            if k not in env:
                self.env.pop(k, None)

    def start(self, *args: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen([str(self.exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**self.env, **env})

    def __call__(self, *args: str, **env: str) -> list[str]:
        proc = self.start(*args, **env)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        return out.splitlines()

    def compiles(self) -> list[str]:
        """Name expressions the mock NVRTC compiled, in all processes so far."""
        return [line.split()[1] for line in self.mock_log.read_text().splitlines()] if self.mock_log.exists() else []

    def event_counts(self, event: str) -> int:
        lines = self.events.read_text().splitlines() if self.events.exists() else []
        return sum(1 for line in lines if line.split()[1] == event)

    def entries(self) -> dict[str, bytes]:
        return {p.name[:-4]: p.read_bytes() for p in self.dir.glob("*.bin")} if self.dir.is_dir() else {}


def _ok(lines: list[str]) -> dict[str, float]:
    out = {}
    for line in lines:
        name, status, rest = line.split(" ", 2)
        assert status == "ok", line
        out[name] = float(rest)
    return out


def test_second_process_loads_from_disk(drivers, tmp_path):
    run = Run(drivers["patched"], tmp_path)
    _ok(run("run", "a", "b:50"))
    assert run.compiles() == ["&a", "&b"]
    _ok(run("run", "a", "b:50"))                       # a new process
    assert run.compiles() == ["&a", "&b"]              # nothing compiled again
    assert run.event_counts("hit") == 2
    entries = run.entries()
    assert len(entries) == 2
    for key, data in entries.items():
        entry = rtc_cache.decode(data, key)
        assert entry is not None and entry["cubin"].startswith(b"\x7fELF mock cubin")


def test_cache_off_and_folder_untouched(drivers, tmp_path):
    run = Run(drivers["patched"], tmp_path, ACTLIB_RTC_CACHE="0")
    _ok(run("run", "a"))
    _ok(run("run", "a"))
    assert run.compiles() == ["&a", "&a"] and not run.dir.exists()


def test_key_covers_nvrtc_version(drivers, tmp_path):
    run = Run(drivers["patched"], tmp_path)
    _ok(run("run", "a", MOCK_NVRTC_VERSION="13.0"))
    _ok(run("run", "a", MOCK_NVRTC_VERSION="13.1"))
    assert run.compiles() == ["&a", "&a"] and len(run.entries()) == 2


def test_concurrent_processes_compile_once(drivers, tmp_path):
    """Eight processes started together want the same slow variant: one compiles, the others wait
    for it (no longer than that compile) and load its entry; one whole entry, no temporary files."""
    run = Run(drivers["patched"], tmp_path)
    procs = [run.start("run", "x:400") for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    first_use = [_ok(o[0].splitlines())["x"] for o in outs]
    assert run.compiles() == ["&x"]
    assert run.event_counts("hit") == 7
    assert max(first_use) < 400 + 600, first_use       # one compile plus process noise, not eight
    entries = run.entries()
    assert len(entries) == 1 and rtc_cache.decode(*next(iter(entries.items()))[::-1]) is not None
    assert not [p for p in run.dir.iterdir() if ".tmp." in p.name]


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_corrupt_entry_is_recompiled(drivers, tmp_path, damage):
    run = Run(drivers["patched"], tmp_path)
    _ok(run("run", "a"))
    (key, data), = run.entries().items()
    path = run.dir / f"{key}.bin"
    if damage == "flip":
        broken = bytearray(data)
        broken[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(broken))
    elif damage == "truncate":
        path.write_bytes(data[:-40])
    else:
        path.write_bytes(b"")
    _ok(run("run", "a"))
    assert run.compiles() == ["&a", "&a"]
    assert run.event_counts("corrupt") == 1
    assert rtc_cache.decode(path.read_bytes(), key) is not None       # whole again
    _ok(run("run", "a"))
    assert run.compiles() == ["&a", "&a"]                             # and used


def test_size_bound_evicts_least_recently_used(drivers, tmp_path):
    run = Run(drivers["patched"], tmp_path)
    _ok(run("run", "v0"))
    size = len(next(iter(run.entries().values())))
    bound = size * 4 + size // 2                      # room for four entries
    for i in range(1, 10):
        _ok(run("run", f"v{i}", "v0", ACTLIB_RTC_CACHE_MAX_SIZE=str(bound)))   # v0 used again each time
        time.sleep(0.01)
    entries = run.entries()
    assert sum(len(d) for d in entries.values()) <= bound
    assert run.event_counts("evict") >= 5
    kept = {rtc_cache.decode(d, k)["lowered"][0][0] for k, d in entries.items()}
    assert "&v0" in kept and "&v9" in kept            # recently used stay
    assert "&v1" not in kept


def test_slow_compile_blocks_no_launch_and_no_other_variant(drivers, tmp_path):
    """While variant `slow` compiles (1.5 s) on one thread, another thread launches the compiled
    `fast` and compiles and launches `fresh` at once. The unpatched layer holds its lock for the whole
    compile: the same launch waits there (the test sees the difference)."""
    for cache in ("on", "off"):
        run = Run(drivers["patched"], tmp_path / cache, **({"ACTLIB_RTC_CACHE": "0"} if cache == "off" else {}))
        launch, new, slow = _nolock(run)
        assert launch < 200 and new < 200 and slow >= 1500, (cache, launch, new, slow)
    launch, new, slow = _nolock(Run(drivers["original"], tmp_path / "original"))
    assert launch > 1000, (launch, new, slow)   # (then `fresh` compiles after `slow`)


def _nolock(run: Run) -> tuple[float, float, float]:
    (line,) = run("nolock", "slow:1500", "fast", "fresh")
    words = line.split()
    assert words[0::2][:3] == ["launch", "new", "slow"] and "error" not in words, line
    return float(words[1]), float(words[3]), float(words[5])


def test_many_threads_one_compile(drivers, tmp_path):
    for cache in ("on", "off"):
        run = Run(drivers["patched"], tmp_path / cache, **({"ACTLIB_RTC_CACHE": "0"} if cache == "off" else {}))
        assert run("threads", "16", "y:300") == ["ok 16"]
        assert run.compiles() == ["&y"], cache


def test_failed_compile_remembered_in_process(drivers, tmp_path):
    run = Run(drivers["patched"], tmp_path)
    lines = run("run", "f:fail", "f:fail", "g")
    assert lines[0] == lines[1] and lines[0].startswith("f error ") and "NVRTC failed to compile f" in lines[0]
    assert lines[2].startswith("g ok")
    assert run.compiles() == ["&f", "&g"]              # the second call did not compile
    assert [k for k, d in run.entries().items() if rtc_cache.decode(d, k)["lowered"][0][0] == "&f"] == []
    run("run", "f:fail")
    assert run.compiles() == ["&f", "&g", "&f"]        # per process: a new process tries again


def test_record_key_matches_python(drivers, tmp_path):
    """What the layer records for `codemod warm`: its key is the one Python computes from the recorded
    inputs (same hash, same key material)."""
    from codemod.verify import warm

    lst = tmp_path / "list.jsonl"
    run = Run(drivers["patched"], tmp_path, ACTLIB_RTC_CACHE_RECORD=str(lst))
    _ok(run("run", "a", "b", "a"))
    _ok(run("run", "a"))                               # a second process appends its line too
    programs = warm.read_list(lst)
    assert [p.names for p in programs] == [["&a"], ["&b"]]
    assert len(lst.read_text().splitlines()) == 3
    assert all(warm.key_of(p) == p.key for p in programs)
    assert set(run.entries()) == {p.key for p in programs}
    assert programs[0].headers == [("variant.h", b"#define VARIANT_HEADER 1\n")]


def test_warm_fills_the_cache_with_real_nvrtc(drivers, tmp_path):
    """`codemod warm LIST` compiles the recorded programs with the real NVRTC (the wheel) into a fresh
    folder; a later process of the run loads them (no compile) and gets NVRTC's ELF cubin."""
    from codemod.cli import main
    from codemod.verify import nvrtc

    try:
        lib = nvrtc.load()
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    exe, env = _real_driver(tmp_path, "real")
    lst = tmp_path / "list.jsonl"
    recorder = Run(exe, tmp_path / "rec", ACTLIB_RTC_CACHE_RECORD=str(lst), ACTLIB_RTC_CACHE="0", **env)
    _ok(recorder("run", "a", "b"))
    cache = tmp_path / "warm"
    assert main(["warm", str(lst), "--cache-dir", str(cache), "-j", "2", "--json", str(tmp_path / "w.json")]) == 0
    assert main(["warm", str(lst), "--cache-dir", str(cache)]) == 0       # a second time: all present
    run = Run(exe, tmp_path / "use", **env)
    run.env["ACTLIB_RTC_CACHE_DIR"] = str(cache)
    _ok(run("run", "a", "b"))
    assert run.event_counts("compile") == 0 and run.event_counts("hit") == 2
    for path in cache.glob("*.bin"):
        key, data = path.name[:-4], path.read_bytes()
        entry = rtc_cache.decode(data, key)
        assert entry["cubin"].startswith(b"\x7fELF") and b"mock" not in entry["cubin"]
        assert entry["lowered"][0][0] in ("&a", "&b")


def test_warm_refuses_another_nvrtc(drivers, tmp_path, capsys):
    from codemod.cli import main

    lst = tmp_path / "list.jsonl"
    recorder = Run(drivers["patched"], tmp_path, ACTLIB_RTC_CACHE_RECORD=str(lst), MOCK_NVRTC_VERSION="9.9")
    _ok(recorder("run", "a"))
    assert main(["warm", str(lst), "--cache-dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "recorded with NVRTC 9.9" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2


@pytest.mark.slow
def test_real_nvrtc_compiles_once_then_loads(tmp_path):
    """The patched layer over the real NVRTC (the wheel): the first process compiles with NVRTC and
    stores ELF cubins; a second process loads them (`hit`, no compile) and launches."""
    from codemod.verify import nvrtc

    try:
        lib = nvrtc.find_library()
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    root, _, _ = patch_actlib(tmp_path / "tree")
    exe = _build(root, tmp_path, "real", nvrtc_lib=Path(lib))
    # libnvrtc loads its builtins library by name: the wheel's folder on the search path
    run = Run(exe, tmp_path / "run", LD_LIBRARY_PATH=str(Path(lib).parent))
    cold = _ok(run("run", "a", "b"))
    assert run.event_counts("compile") == 2 and run.event_counts("hit") == 0
    warm_first = _ok(run("run", "a", "b"))
    assert run.event_counts("compile") == 2 and run.event_counts("hit") == 2
    assert warm_first["b"] < cold["b"]
    for key, data in run.entries().items():
        entry = rtc_cache.decode(data, key)
        assert entry["cubin"].startswith(b"\x7fELF") and entry["lowered"][0][1].startswith("_Z")


def test_in_process_warm_up_compiles_the_list_in_parallel(drivers, tmp_path):
    """`<prefix>_WARM=LIST`: at a process's first compile, background threads compile the recorded
    programs missing from the cache, in parallel with the layer's own compiles (the file lock keeps
    each to one compile); three 400 ms variants used one after the other then cost about one compile,
    not three. The threads are joined at exit."""
    lst = tmp_path / "list.jsonl"
    specs = ("p:400", "q:400", "r:400")
    recorder = Run(drivers["patched"], tmp_path / "rec", ACTLIB_RTC_CACHE_RECORD=str(lst), ACTLIB_RTC_CACHE="0")
    _ok(recorder("run", *specs))
    run = Run(drivers["patched"], tmp_path / "use", ACTLIB_RTC_CACHE_WARM=str(lst), ACTLIB_RTC_CACHE_WARM_THREADS="3")
    t0 = time.monotonic()
    times = _ok(run("run", *specs))
    wall = time.monotonic() - t0
    # each once, by a warm thread or the layer; "?": the warm-up's first compile (no name expression),
    # which orders NVRTC's teardown after the threads' join at exit
    assert sorted(run.compiles()) == ["&p", "&q", "&r", "?"]
    assert run.event_counts("warm") >= 2
    assert sum(times.values()) < 800 and wall < 2.0, (times, wall)
    cold = Run(drivers["patched"], tmp_path / "cold")
    assert sum(_ok(cold("run", *specs)).values()) > 1150          # the same without the list


# ---- nvrtc_layer.cache.pch: NVRTC's automatic precompiled headers ---------------------------------

def _cache_rule(*keys: str) -> str:
    """The golden rule with `nvrtc_layer.cache.<key>: true` for each key."""
    text = (GOLDEN / "actlib" / "activation.yaml").read_text()
    assert "      default_dir: actlib/rtc\n" in text
    return text.replace("      default_dir: actlib/rtc\n",
                        "      default_dir: actlib/rtc\n" + "".join(f"      {k}: true\n" for k in keys))


def _pch_rule() -> str:
    return _cache_rule("pch")


def _nvrtc_got(data: bytes, key: str) -> tuple[str, list[str]]:
    """(name expression, the options the mock NVRTC compiled the entry with)."""
    entry = rtc_cache.decode(data, key)
    return entry["lowered"][0][0], entry["cubin"].decode().rsplit("{}\n", 1)[1].split()


@pytest.fixture(scope="module")
def pch_driver(tmp_path_factory):
    work = tmp_path_factory.mktemp("rtc_cache_pch")
    root, _, _ = patch_actlib(work, _pch_rule())
    header = (root / "util/rtc_cache.h").read_text()
    assert "kPchOptions" in header and "kMinimalOptions" not in header
    return _build(root, work, "pch")


@pytest.mark.slow
def test_pch_options_in_the_key_and_a_folder_per_header_set(pch_driver, tmp_path):
    """With `pch: true` NVRTC gets -pch (messages off) and -pch-dir=<a folder of this process for the
    program's set of headers>; the options are in the key (a second process loads, the recorded key is
    Python's); the process's PCH folders are gone after it exits."""
    from codemod.verify import warm

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    lst = tmp_path / "list.jsonl"
    run = Run(pch_driver, tmp_path, TMPDIR=str(tmp), ACTLIB_RTC_CACHE_RECORD=str(lst))
    _ok(run("run", "a", "b"))
    cubins = {rtc_cache.decode(d, k)["lowered"][0][0]: rtc_cache.decode(d, k)["cubin"] for k, d in run.entries().items()}
    folders = set()
    for name, cubin in cubins.items():
        opts = cubin.decode().split(" ")
        assert {"-pch", "-pch-messages=false", "-pch-verbose=false"} <= set(opts), opts
        folders |= {o[len("-pch-dir="):] for o in opts if o.startswith("-pch-dir=")}
    assert len(folders) == 1 and Path(next(iter(folders))).parent.parent == tmp   # a and b: the same headers
    assert list(tmp.iterdir()) == []                                               # removed at exit
    programs = warm.read_list(lst)
    assert all("-pch" in p.options and warm.key_of(p) == p.key for p in programs)
    _ok(run("run", "a", "b"))
    assert run.event_counts("compile") == 2 and run.event_counts("hit") == 2


@pytest.mark.slow
def test_pch_never_fails_a_variant(pch_driver, tmp_path):
    """A compile that fails with the PCH options is compiled again without them; no folder for the PCH
    (TMPDIR unusable): compiled without them. A program that fails either way still fails."""
    run = Run(pch_driver, tmp_path / "a")
    _ok(run("run", "p:pchfail"))
    (cubin,) = [rtc_cache.decode(d, k)["cubin"] for k, d in run.entries().items()]
    assert b"-pch" not in cubin
    run = Run(pch_driver, tmp_path / "b", TMPDIR=str(tmp_path / "missing"))
    _ok(run("run", "q"))
    (cubin,) = [rtc_cache.decode(d, k)["cubin"] for k, d in run.entries().items()]
    assert b"-pch" not in cubin
    out = Run(pch_driver, tmp_path / "c")("run", "r:fail")
    assert out[0].startswith("r error")


@pytest.mark.slow
def test_pch_off_switch(pch_driver, tmp_path):
    """`<prefix>_PCH=0`: the programs go to NVRTC without the PCH options (another key: entries
    compiled with them are not loaded)."""
    run = Run(pch_driver, tmp_path)
    _ok(run("run", "a"))
    _ok(run("run", "a", ACTLIB_RTC_CACHE_PCH="0"))
    assert run.event_counts("compile") == 2 and run.event_counts("hit") == 0
    cubins = sorted(rtc_cache.decode(d, k)["cubin"] for k, d in run.entries().items())
    assert [b"-pch " in c for c in cubins].count(True) == 1


@pytest.mark.slow
def test_pch_real_nvrtc_headers_of_other_content(tmp_path):
    """The real NVRTC checks a PCH against the options and the program's leading directives, not the
    content of in-memory headers: programs alike but for a header's content, compiled one after the
    other in one process, each give the cubin NVRTC gives without any PCH (the layer keeps a PCH
    folder per set of headers)."""
    from codemod.verify import nvrtc, warm

    try:
        lib_path = nvrtc.find_library()
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    root, _, _ = patch_actlib(tmp_path / "tree", _pch_rule())
    exe = _build(root, tmp_path, "real_pch", nvrtc_lib=Path(lib_path))
    lst = tmp_path / "list.jsonl"
    run = Run(exe, tmp_path / "run", LD_LIBRARY_PATH=str(Path(lib_path).parent), ACTLIB_RTC_CACHE_RECORD=str(lst))
    assert run("values", "11", "22", "33") == ["ok 3"]
    entries = run.entries()
    lib = nvrtc.load()
    programs = warm.read_list(lst)
    assert len(programs) == 3
    for p in programs:
        plain = [o for o in p.options if o not in ("-pch", "-pch-messages=false", "-pch-verbose=false")]
        assert plain != p.options
        r = lib.compile(p.source.decode(), p.filename, {n: c.decode() for n, c in p.headers}, plain, p.names,
                        keep_cubin=True, exact=True)
        assert r.ok, r.log
        assert rtc_cache.decode(entries[p.key], p.key)["cubin"] == r.cubin, p.headers


@pytest.mark.slow
def test_pch_warm_compiles_as_the_layer(tmp_path):
    """`codemod warm` on a list recorded with -pch compiles in one process, as the layer: a PCH folder
    per set of headers, so programs alike but for a header's content get the cubins of PCH-less
    compiles (real NVRTC)."""
    from codemod.verify import nvrtc, warm

    try:
        lib = nvrtc.load()
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    exe, env = _real_driver(tmp_path, "real_pch", _pch_rule())
    lst = tmp_path / "list.jsonl"
    recorder = Run(exe, tmp_path / "rec", ACTLIB_RTC_CACHE_RECORD=str(lst), ACTLIB_RTC_CACHE="0", **env)
    assert recorder("values", "11", "22", "33") == ["ok 3"]
    cache = tmp_path / "warm"
    result = warm.warm(lst, cache, jobs=1)
    assert result["compiled"] == 3 and not result["failed"]
    for p in warm.read_list(lst):
        plain = [o for o in p.options if o not in warm.PCH_OPTIONS]
        assert plain != p.options
        r = lib.compile(p.source.decode(), p.filename, {n: c.decode() for n, c in p.headers}, plain, p.names,
                        keep_cubin=True, exact=True)
        assert rtc_cache.decode((cache / f"{p.key}.bin").read_bytes(), p.key)["cubin"] == r.cubin


# ---- nvrtc_layer.cache.minimal: NVRTC's -minimal --------------------------------------------------

@pytest.fixture(scope="module")
def minimal_drivers(tmp_path_factory):
    out = {}
    for name, keys in (("minimal", ("minimal",)), ("pch_minimal", ("pch", "minimal"))):
        work = tmp_path_factory.mktemp(f"rtc_cache_{name}")
        root, _, _ = patch_actlib(work, _cache_rule(*keys))
        assert "kMinimalOptions" in (root / "util/rtc_cache.h").read_text()
        out[name] = _build(root, work, name)
    return out


@pytest.mark.slow
def test_minimal_reaches_nvrtc_and_the_key(minimal_drivers, tmp_path):
    """`minimal: true`: NVRTC gets -minimal after the program's own options, after the PCH options with
    `pch: true` too (the order of warm.LAYER_OPTIONS); it is in the key (the recorded key is Python's,
    a second process loads)."""
    from codemod.verify import warm

    for name, added in (("minimal", warm.MINIMAL_OPTIONS), ("pch_minimal", warm.LAYER_OPTIONS)):
        lst = tmp_path / name / "list.jsonl"
        run = Run(minimal_drivers[name], tmp_path / name, ACTLIB_RTC_CACHE_RECORD=str(lst))
        _ok(run("run", "a", "b"))
        programs = warm.read_list(lst)
        assert [p.options[-len(added):] for p in programs] == [list(added)] * 2
        assert all(warm.key_of(p) == p.key for p in programs)
        entries = run.entries()
        for p in programs:
            _, got = _nvrtc_got(entries[p.key], p.key)
            pch_dir = [o for o in got if o.startswith("-pch-dir=")]
            assert [o for o in got if o not in pch_dir] == p.options and len(pch_dir) == ("-pch" in added)
        _ok(run("run", "a", "b"))
        assert run.event_counts("compile") == 2 and run.event_counts("hit") == 2


@pytest.mark.slow
def test_minimal_off_switch(minimal_drivers, tmp_path):
    """`<prefix>_MINIMAL=0`: NVRTC does not get -minimal (another key: the entry compiled with it is not
    loaded); with pch and minimal, each switch leaves the other's options."""
    run = Run(minimal_drivers["minimal"], tmp_path / "m")
    _ok(run("run", "a"))
    _ok(run("run", "a", ACTLIB_RTC_CACHE_MINIMAL="0"))
    assert run.event_counts("compile") == 2 and run.event_counts("hit") == 0
    assert sorted("-minimal" in _nvrtc_got(d, k)[1] for k, d in run.entries().items()) == [False, True]
    run = Run(minimal_drivers["pch_minimal"], tmp_path / "pm")
    _ok(run("run", "a", ACTLIB_RTC_CACHE_MINIMAL="0"))
    _ok(run("run", "b", ACTLIB_RTC_CACHE_PCH="0"))
    got = dict(_nvrtc_got(d, k) for k, d in run.entries().items())
    assert "-pch" in got["&a"] and "-minimal" not in got["&a"]
    assert "-minimal" in got["&b"] and "-pch" not in got["&b"]


@pytest.mark.slow
def test_an_nvrtc_before_12_4_gets_no_minimal_and_keeps_the_pch(minimal_drivers, tmp_path):
    """-minimal is an NVRTC 12.4 option: an earlier NVRTC (the mock rejects it there) does not get
    it, so no variant pays a rejected compile and the PCH options stay; a program failing anyway
    fails with its compile's log, remembered, and the entries load in a second process."""
    for name in ("minimal", "pch_minimal"):
        pch = name == "pch_minimal"
        run = Run(minimal_drivers[name], tmp_path / name, MOCK_NVRTC_VERSION="12.3")
        lines = run("run", "a", "b", "f:fail", "f:fail")
        assert [line.split()[:2] for line in lines[:2]] == [["a", "ok"], ["b", "ok"]], lines
        assert lines[2].startswith("f error ") and "this program fails" in lines[2] and lines[3] == lines[2]
        assert "unrecognized option" not in lines[2]
        # one compile per variant; the failing one again without the PCH options when it had them
        assert run.compiles() == (["&a", "&b", "&f", "&f"] if pch else ["&a", "&b", "&f"])
        got = dict(_nvrtc_got(d, k) for k, d in run.entries().items())
        assert sorted(got) == ["&a", "&b"]
        assert not any("-minimal" in opts for opts in got.values())
        assert all(("-pch" in opts) == pch for opts in got.values())
        _ok(run("run", "a", "b"))
        assert len(run.compiles()) == (4 if pch else 3) and run.event_counts("hit") == 2


@pytest.mark.slow
def test_a_program_that_needs_what_minimal_omits_still_compiles(minimal_drivers, tmp_path):
    """A program using a runtime API type fails with -minimal: it is compiled again without the
    options the layer added (the PCH ones too), whose result stands; the process's next variants
    still get them. A program failing only with the PCH options, the same."""
    for name in ("minimal", "pch_minimal"):
        run = Run(minimal_drivers[name], tmp_path / name)
        _ok(run("run", "m:minimalfail", "p:pchfail", "a"))
        expected = ["&m", "&m", "&p", "&p", "&a"] if name == "pch_minimal" else ["&m", "&m", "&p", "&a"]
        assert run.compiles() == expected
        got = dict(_nvrtc_got(d, k) for k, d in run.entries().items())
        assert not any(o in got["&m"] for o in ("-minimal", "-pch"))
        assert "-minimal" in got["&a"] and ("-pch" in got["&a"]) == (name == "pch_minimal")
        assert "-pch" not in got["&p"] and ("-minimal" in got["&p"]) == (name == "minimal")


@pytest.mark.slow
def test_without_minimal_nvrtc_never_gets_it(drivers, pch_driver, tmp_path):
    """`minimal` off (the golden rule; `pch: true` alone): no -minimal, whatever the environment says
    (with neither, a failed compile is not compiled again: test_failed_compile_remembered_in_process)."""
    for name, exe in (("plain", drivers["patched"]), ("pch", pch_driver)):
        run = Run(exe, tmp_path / name, ACTLIB_RTC_CACHE_MINIMAL="1")
        _ok(run("run", "a", "m:minimalfail"))
        got = dict(_nvrtc_got(d, k) for k, d in run.entries().items())
        assert not any("-minimal" in opts for opts in got.values())
        assert ("-pch" in got["&a"]) == (name == "pch")
        assert run.compiles() == ["&a", "&m"]


@pytest.mark.slow
def test_minimal_real_nvrtc(tmp_path):
    """The layer with pch and minimal over the real NVRTC (the wheel): cubins equal NVRTC's without the
    layer's options (-frandom-seed=1), and a program using a runtime API type, which the real NVRTC
    refuses with -minimal, compiles."""
    from codemod.verify import nvrtc, warm

    try:
        lib_path = nvrtc.find_library()
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    lib = nvrtc.load()
    if lib.version < (12, 4):
        pytest.skip("NVRTC before 12.4 has no -minimal")
    root, _, _ = patch_actlib(tmp_path / "tree", _cache_rule("pch", "minimal"))
    exe = _build(root, tmp_path, "real_minimal", nvrtc_lib=Path(lib_path))
    lst = tmp_path / "list.jsonl"
    run = Run(exe, tmp_path / "run", LD_LIBRARY_PATH=str(Path(lib_path).parent), ACTLIB_RTC_CACHE_RECORD=str(lst))
    assert run("values", "11", "22") == ["ok 2"]
    _ok(run("run", "m:minimalfail"))
    entries = run.entries()
    programs = warm.read_list(lst)
    assert len(programs) == 3 and all(p.options[-len(warm.LAYER_OPTIONS):] == list(warm.LAYER_OPTIONS)
                                      for p in programs)
    for p in programs:
        headers = {n: c.decode() for n, c in p.headers}
        plain = [o for o in p.options if o not in warm.LAYER_OPTIONS]
        if p.names == ["&m"]:
            assert not lib.compile(p.source.decode(), p.filename, headers, p.options, p.names, exact=True).ok
            assert rtc_cache.decode(entries[p.key], p.key)["cubin"].startswith(b"\x7fELF")
            continue
        r = lib.compile(p.source.decode(), p.filename, headers, plain, p.names, keep_cubin=True, exact=True)
        assert r.ok, r.log
        assert rtc_cache.decode(entries[p.key], p.key)["cubin"] == r.cubin


@pytest.mark.slow
def test_minimal_warm_compiles_as_the_layer(tmp_path):
    """`codemod warm` on a list recorded with the PCH options and -minimal (real NVRTC): a program that
    fails with them is compiled again without them, as the layer does, instead of failing."""
    from codemod.verify import nvrtc, warm

    try:
        lib = nvrtc.load()
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc")
    if lib.version < (12, 4):
        pytest.skip("NVRTC before 12.4 has no -minimal")
    exe, env = _real_driver(tmp_path, "real_pch_minimal", _cache_rule("pch", "minimal"))
    lst = tmp_path / "list.jsonl"
    recorder = Run(exe, tmp_path / "rec", ACTLIB_RTC_CACHE_RECORD=str(lst), ACTLIB_RTC_CACHE="0", **env)
    _ok(recorder("run", "a", "m:minimalfail"))
    (m,) = [p for p in warm.read_list(lst) if p.names == ["&m"]]
    assert not lib.compile(m.source.decode(), m.filename, {n: c.decode() for n, c in m.headers}, m.options, m.names,
                           exact=True).ok
    result = warm.warm(lst, tmp_path / "warm", jobs=1)
    assert result["compiled"] == 2 and not result["failed"], result
