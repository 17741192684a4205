"""The NVRTC layer's disk cache and per-label compiles (layer feature `cache`, issues 17 and 29), on
the host: the golden actlib's layer as `apply` patches it, compiled with g++ against a mock NVRTC and
a mock CUDA runtime (fixtures/rtc_cache/), driven by fixtures/rtc_cache/driver.cpp in separate
processes. Compiles are counted by the NVRTC the driver links (the mock's log, or the real library's
nvrtcCompileProgram wrapped by real_nvrtc_glue.cpp). The unpatched layer is built too: the lock test
shows it blocking."""

from __future__ import annotations

import os
import shutil
import subprocess
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
    libs = [f"-L{nvrtc_lib.parent}", f"-l:{nvrtc_lib.name}", f"-Wl,-rpath,{nvrtc_lib.parent}",
            "-Wl,--wrap=nvrtcCompileProgram"] if nvrtc_lib else []
    proc = subprocess.run([CXX, "-pthread", *objs, *libs, "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


def _real_driver(work: Path, name: str, rule_text: str | None = None) -> tuple[Path, dict[str, str]]:
    """The patched layer linked with the real NVRTC (the wheel), and the environment its runs need."""
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
        self.exe, self.dir, self.mock_log = exe, tmp / "cache", tmp / "mock.log"
        self.env = {**os.environ, "ACTLIB_RTC_CACHE_DIR": str(self.dir), "MOCK_NVRTC_LOG": str(self.mock_log), **env}
        if "ACTLIB_RTC_CACHE" not in env:
            self.env.pop("ACTLIB_RTC_CACHE", None)

    def start(self, *args: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen([str(self.exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**self.env, **env})

    def __call__(self, *args: str, **env: str) -> list[str]:
        proc = self.start(*args, **env)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        return out.splitlines()

    def compiles(self) -> list[str]:
        """Name expressions the mock NVRTC compiled ("compile" for the real one), in all processes so far."""
        return [line.split()[1] for line in self.mock_log.read_text().splitlines()] if self.mock_log.exists() else []

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
    entries = run.entries()
    assert len(entries) == 2
    for key, data in entries.items():
        entry = rtc_cache.decode(data, key)
        assert entry is not None and entry["code"].startswith(b"\x7fELF mock cubin")
        assert entry["lowered"] in ("&a", "&b")          # the mock's lowered name: the expression
    assert (run.dir.stat().st_mode & 0o777) == 0o700
    assert all((run.dir / f"{k}.bin").stat().st_mode & 0o777 == 0o600 for k in entries)


def test_an_entry_python_writes_is_loaded(drivers, tmp_path):
    """Python's copy of the entry format (verify/rtc_cache.py) is the header's: an entry rewritten by
    Python under the layer's key, with another code, is what the next process launches, uncompiled."""
    run = Run(drivers["patched"], tmp_path)
    _ok(run("run", "a"))
    (key, data), = run.entries().items()
    entry = rtc_cache.decode(data, key)
    (run.dir / f"{key}.bin").write_bytes(rtc_cache.encode(key, entry["lowered"], entry["code"] + b"!"))
    _ok(run("run", "a"))
    assert run.compiles() == ["&a"]


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
    assert max(first_use) < 400 + 600, first_use       # one compile plus process noise, not eight
    entries = run.entries()
    assert len(entries) == 1 and rtc_cache.decode(*next(iter(entries.items()))[::-1]) is not None
    assert not [p for p in run.dir.iterdir() if ".tmp." in p.name]


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "foreign"])
def test_corrupt_or_foreign_entry_is_recompiled(drivers, tmp_path, damage):
    run = Run(drivers["patched"], tmp_path)
    _ok(run("run", "a", "b"))
    key, data = next((k, d) for k, d in run.entries().items() if rtc_cache.decode(d, k)["lowered"] == "&a")
    path = run.dir / f"{key}.bin"
    if damage == "flip":
        broken = bytearray(data)
        broken[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(broken))
    elif damage == "truncate":
        path.write_bytes(data[:-40])
    elif damage == "empty":
        path.write_bytes(b"")
    else:                                             # another key's whole entry
        other = next(d for k, d in run.entries().items() if k != key)
        path.write_bytes(other)
    _ok(run("run", "a"))
    assert run.compiles() == ["&a", "&b", "&a"]
    assert rtc_cache.decode(path.read_bytes(), key) is not None       # whole again
    _ok(run("run", "a"))
    assert run.compiles() == ["&a", "&b", "&a"]                       # and used


@pytest.mark.slow   # waits on a deliberately slow compile
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


def test_failed_compile_carries_the_log_and_is_not_stored(drivers, tmp_path):
    run = Run(drivers["patched"], tmp_path)
    lines = run("run", "f:fail", "g")
    assert lines[0].startswith("f error ") and "NVRTC failed to compile f" in lines[0]
    assert lines[1].startswith("g ok")
    assert [k for k, d in run.entries().items() if rtc_cache.decode(d, k)["lowered"] == "&f"] == []
    assert run("run", "g")[0].startswith("g ok")       # the layer's lock and the label's were released
    assert run.compiles() == ["&f", "&g"]


@pytest.mark.slow
def test_real_nvrtc_compiles_once_then_loads(tmp_path):
    """The patched layer over the real NVRTC (the wheel): the first process compiles with NVRTC and
    stores ELF cubins; a second process loads them (no compile) and launches."""
    exe, env = _real_driver(tmp_path, "real")
    run = Run(exe, tmp_path / "run", **env)
    cold = _ok(run("run", "a", "b"))
    assert run.compiles() == ["compile", "compile"]
    warm_first = _ok(run("run", "a", "b"))
    assert run.compiles() == ["compile", "compile"]
    assert warm_first["b"] < cold["b"]
    for key, data in run.entries().items():
        entry = rtc_cache.decode(data, key)
        assert entry["code"].startswith(b"\x7fELF") and entry["lowered"].startswith("_Z")
