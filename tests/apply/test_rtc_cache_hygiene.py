"""The generated layer's disk cache against hostile folders and entries (issue 33, acceptance 3; issue
29, the opt-in): the golden actlib's layer as `apply` patches it, compiled with g++ against the real
NVRTC (the nvidia-cuda-nvrtc wheel: headers and libnvrtc) and the mock CUDA runtime of
fixtures/rtc_cache/ (no GPU), driven in separate processes. Compiles are counted on their way to
NVRTC (real_nvrtc_glue.cpp wraps nvrtcCompileProgram). Every process runs under a timeout: a FIFO entry must not hang it.
Owner cases chown to `nobody` and need root (else skipped)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from codemod.verify import rtc_cache

from .patched_actlib import patch_actlib
from .test_rtc_cache import _build, _ok

NOBODY = 65534
TIMEOUT = 120


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """(driver over the patched layer linked with the real libnvrtc, that library)."""
    from codemod.verify import nvrtc

    try:
        lib = Path(nvrtc.find_library())
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc (pip install nvidia-cuda-nvrtc)")
    work = tmp_path_factory.mktemp("rtc_cache_hygiene")
    root, _, _ = patch_actlib(work)
    return _build(root, work, "real", nvrtc_lib=lib), lib


class Proc:
    """One run of the driver: its stdout lines, stderr, and the cache events it logged."""

    def __init__(self, exe: Path, lib: Path, events: Path, args: list[str], env: dict[str, str]):
        base = {k: v for k, v in os.environ.items() if not k.startswith(("ACTLIB_RTC_CACHE", "XDG_CACHE_HOME"))}
        base.update({"LD_LIBRARY_PATH": str(lib.parent), "MOCK_NVRTC_LOG": str(events)}, **env)
        done = subprocess.run([str(exe), *args], capture_output=True, text=True, env=base, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        self.lines, self.stderr = done.stdout.splitlines(), done.stderr
        _ok(self.lines)


def events(path: Path, event: str) -> int:
    lines = path.read_text().splitlines() if path.exists() else []
    return sum(1 for line in lines if line.split()[1] == event)


def run(real, tmp: Path, *args: str, **env: str) -> Proc:
    exe, lib = real
    tmp.mkdir(parents=True, exist_ok=True)
    return Proc(exe, lib, tmp / "events.log", list(args) or ["run", "a"], env)


def entries(folder: Path) -> dict[str, Path]:
    return {p.name[:-4]: p for p in folder.glob("*.bin")}


def warning_lines(p: Proc) -> list[str]:
    return [line for line in p.stderr.splitlines() if "disk cache off" in line]


# ---- opt-in -----------------------------------------------------------------------------------------

def test_off_unless_turned_on(real, tmp_path):
    """No <prefix> and no <prefix>_DIR: every process compiles, nothing is created under
    XDG_CACHE_HOME or HOME, and no warning is printed."""
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    xdg.mkdir()
    for _ in range(2):
        p = run(real, tmp_path, HOME=str(home), XDG_CACHE_HOME=str(xdg))
        assert warning_lines(p) == []
    assert events(tmp_path / "events.log", "compile") == 2
    assert list(home.iterdir()) == [] and list(xdg.iterdir()) == []


def test_prefix_zero_wins_over_dir(real, tmp_path):
    cache = tmp_path / "cache"
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(cache), ACTLIB_RTC_CACHE="0")
    assert not cache.exists()


def test_dir_turns_it_on_created_0700(real, tmp_path):
    cache = tmp_path / "a" / "cache"
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(cache))
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(cache))
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert events(tmp_path / "events.log", "compile") == 1
    (entry,) = entries(cache).values()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_default_folder_in_a_private_home(real, tmp_path):
    """<prefix>=1 uses $XDG_CACHE_HOME/<default_dir>, created 0700, when no folder above it is
    writable by others."""
    base = Path.home()
    try:
        private = Path(tempfile.mkdtemp(prefix="rtc_cache_test_", dir=base))
    except OSError:
        pytest.skip("home folder not writable")
    try:
        os.chmod(private, 0o700)
        p = run(real, tmp_path, ACTLIB_RTC_CACHE="1", XDG_CACHE_HOME=str(private))
        if warning_lines(p):
            pytest.skip(f"the home folder {base} is itself in a shared location: {p.stderr}")
        cache = private / "actlib" / "rtc"
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700 and len(entries(cache)) == 1
    finally:
        shutil.rmtree(private)


def test_default_folder_refused_in_a_shared_location(real, tmp_path):
    """HOME=/tmp (CI, containers): the default folder would be where anyone can create it first.
    The cache is off with one warning; nothing is created; the compile still works."""
    shared = tmp_path / "sticky"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    env = dict(ACTLIB_RTC_CACHE="1", HOME=str(shared))
    p = run(real, tmp_path, **env)
    assert len(warning_lines(p)) == 1 and "other users can write to" in p.stderr
    assert list(shared.iterdir()) == []
    # a folder planted there beforehand, with a valid entry, is not used either
    planted = shared / ".cache" / "actlib" / "rtc"
    run(real, tmp_path / "donor", "run", "a", ACTLIB_RTC_CACHE_DIR=str(tmp_path / "donor_cache"))
    planted.mkdir(parents=True, mode=0o700)
    for e in (tmp_path / "donor_cache").glob("*.bin"):
        shutil.copy(e, planted / e.name)
    run(real, tmp_path, **env)
    assert events(tmp_path / "events.log", "compile") == 2


def test_default_dir_with_dots_is_a_rule_error(tmp_path):
    from codemod.errors import RuleError
    from codemod.rule import load_rule_file

    from .test_rtc_cache import GOLDEN

    text = (GOLDEN / "actlib" / "activation.yaml").read_text()
    for bad in ("../escape", "actlib/../../x", "./actlib", ".."):
        rule = tmp_path / "rule.yaml"
        rule.write_text(text.replace("default_dir: actlib/rtc", f"default_dir: {bad}"))
        with pytest.raises(RuleError) as err:
            load_rule_file(rule)
        assert "default_dir" in str(err.value) and "'..'" in str(err.value)


# ---- the folder ---------------------------------------------------------------------------------------

def _planted(real, tmp_path: Path, folder: Path) -> None:
    """`folder` holding a valid entry of variant `a` (from a process of this user)."""
    donor = tmp_path / "donor_cache"
    run(real, tmp_path / "donor", "run", "a", ACTLIB_RTC_CACHE_DIR=str(donor))
    folder.mkdir(parents=True, exist_ok=True)
    for e in donor.glob("*.bin"):
        shutil.copy(e, folder / e.name)


def _refused(real, tmp_path: Path, folder: Path, why: str) -> None:
    before = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else None
    p = run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(folder))
    assert len(warning_lines(p)) == 1 and why in p.stderr, p.stderr
    assert events(tmp_path / "events.log", "compile") == 1
    if before is not None:
        assert sorted(p.name for p in folder.iterdir()) == before       # nothing written there


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777, 0o1777])
def test_group_or_world_writable_folder_refused(real, tmp_path, mode):
    folder = tmp_path / "cache"
    _planted(real, tmp_path, folder)
    os.chmod(folder, mode)
    _refused(real, tmp_path, folder, "writable by group or others")


def test_folder_of_another_user_refused(real, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a folder to nobody")
    folder = tmp_path / "cache"
    _planted(real, tmp_path, folder)
    os.chmod(folder, 0o755)
    os.chown(folder, NOBODY, NOBODY)
    for e in folder.iterdir():
        os.chown(e, NOBODY, NOBODY)
    _refused(real, tmp_path, folder, "belongs to another user")


@pytest.mark.parametrize("spelled", ["link", "link/", "link//"])
def test_symlinked_folder_refused(real, tmp_path, spelled):
    """A link to a private folder of this user, however the variable spells it: a trailing slash
    makes lstat and open follow the link, so the layer strips it before opening the folder."""
    target = tmp_path / "real_cache"
    _planted(real, tmp_path, target)
    os.chmod(target, 0o700)
    link = tmp_path / "cache"
    link.symlink_to(target)
    p = run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(link) + spelled[4:])
    assert len(warning_lines(p)) == 1 and "is a symbolic link" in p.stderr, p.stderr
    assert events(tmp_path / "events.log", "compile") == 1


def test_folder_moved_after_the_check_is_not_followed(real, tmp_path):
    """The folder is opened once and its files reached through that descriptor: in a process that
    checked and used the folder (`a`), the folder renamed away and a link to elsewhere put at its
    path; the next program (`b`) is stored in the folder that was checked, and nothing is written
    where the path now leads."""
    folder = tmp_path / "cache"
    exe, lib = real
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ACTLIB_RTC_CACHE")},
           "LD_LIBRARY_PATH": str(lib.parent), "MOCK_NVRTC_LOG": str(tmp_path / "events.log"),
           "ACTLIB_RTC_CACHE_DIR": str(folder)}
    proc = subprocess.Popen([str(exe), "pause", "a", "b"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().split() == ["a", "ok"]          # `a` compiled and stored; folder open
    moved, elsewhere = tmp_path / "moved", tmp_path / "elsewhere"
    folder.rename(moved)
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)
    out, err = proc.communicate("\n", timeout=TIMEOUT)            # now `b`
    assert proc.returncode == 0 and out.split() == ["b", "ok"], err
    assert list(elsewhere.iterdir()) == []
    assert len(entries(moved)) == 2


# ---- entries and locks ------------------------------------------------------------------------------

@pytest.fixture
def cached(real, tmp_path):
    """A cache folder holding variant `a`'s entry: (folder, key, entry bytes)."""
    folder = tmp_path / "cache"
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(folder))
    ((key, path),) = entries(folder).items()
    return folder, key, path.read_bytes()


def _recompiled(real, tmp_path: Path, folder: Path, key: str, event: str) -> None:
    """The next process compiles `a` again (the first process compiled it too), logs `event`, and
    leaves a whole entry of this user in place; the one after loads it."""
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(folder))
    log = tmp_path / "events.log"
    assert events(log, "compile") == 2
    path = folder / f"{key}.bin"
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
    assert rtc_cache.decode(path.read_bytes(), key) is not None
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(folder))
    assert events(log, "compile") == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "checksum"])
def test_corrupt_or_truncated_entry_recompiled(real, tmp_path, cached, damage):
    folder, key, data = cached
    path = folder / f"{key}.bin"
    if damage == "flip":                      # a bit of the cubin changed
        broken = bytearray(data)
        broken[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(broken))
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:                                     # the checksum itself damaged
        path.write_bytes(data[:-1] + (b"0" if data[-1:] != b"0" else b"1"))
    _recompiled(real, tmp_path, folder, key, "corrupt")


def test_foreign_entry_recompiled(real, tmp_path, cached):
    """Another key's whole entry (valid checksum) under this key's name is not loaded."""
    folder, key, _ = cached
    run(real, tmp_path / "other", "run", "b", ACTLIB_RTC_CACHE_DIR=str(tmp_path / "other_cache"))
    ((_, other),) = entries(tmp_path / "other_cache").items()
    shutil.copy(other, folder / f"{key}.bin")
    _recompiled(real, tmp_path, folder, key, "corrupt")


def test_entry_of_another_user_recompiled(real, tmp_path, cached):
    if os.geteuid() != 0:
        pytest.skip("needs root to chown an entry to nobody")
    folder, key, _ = cached
    os.chown(folder / f"{key}.bin", NOBODY, NOBODY)
    _recompiled(real, tmp_path, folder, key, "refused")


def test_fifo_entry_does_not_hang(real, tmp_path, cached):
    """A FIFO in place of an entry: open() must not block (O_NONBLOCK, then fstat: not a regular
    file); the process compiles and replaces it (the run's timeout fails the test on a hang)."""
    folder, key, _ = cached
    path = folder / f"{key}.bin"
    path.unlink()
    os.mkfifo(path, 0o600)
    _recompiled(real, tmp_path, folder, key, "refused")


def test_symlinked_entry_not_followed(real, tmp_path, cached):
    """An entry that is a link to a whole entry elsewhere is not read (O_NOFOLLOW); the link is
    replaced, its target left as it was."""
    folder, key, data = cached
    elsewhere = tmp_path / "elsewhere.bin"
    elsewhere.write_bytes(data)
    path = folder / f"{key}.bin"
    path.unlink()
    path.symlink_to(elsewhere)
    _recompiled(real, tmp_path, folder, key, "refused")
    assert elsewhere.read_bytes() == data


@pytest.mark.parametrize("target_exists", [False, True])
def test_symlinked_lock_creates_nothing_at_its_target(real, tmp_path, cached, target_exists):
    """`<key>.lock` planted as a link: the process neither creates nor touches the link's target,
    replaces the link by a lock file of its own, and still compiles once."""
    folder, key, _ = cached
    (folder / f"{key}.bin").unlink()
    lock = folder / f"{key}.lock"
    if lock.exists() or lock.is_symlink():
        lock.unlink()
    victim = tmp_path / "victim"
    if target_exists:
        victim.write_text("precious\n")
        os.chmod(victim, 0o644)
    lock.symlink_to(victim)
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(folder))
    if target_exists:
        assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    else:
        assert not victim.exists()
    assert not lock.is_symlink() and stat.S_ISREG(os.lstat(lock).st_mode)
    assert events(tmp_path / "events.log", "compile") == 2
    assert rtc_cache.decode((folder / f"{key}.bin").read_bytes(), key) is not None


def test_fifo_lock_does_not_hang(real, tmp_path, cached):
    folder, key, _ = cached
    (folder / f"{key}.bin").unlink()
    lock = folder / f"{key}.lock"
    if lock.exists():
        lock.unlink()
    os.mkfifo(lock, 0o600)
    run(real, tmp_path, ACTLIB_RTC_CACHE_DIR=str(folder))
    assert stat.S_ISREG(os.lstat(lock).st_mode) and events(tmp_path / "events.log", "compile") == 2


# ---- one compile per variant -----------------------------------------------------------------------

@pytest.mark.parametrize("cache", ["on", "off"])
def test_threads_of_one_label_compile_once(real, tmp_path, cache):
    """Sixteen threads of one process want the same label at once: NVRTC compiles it once."""
    env = {"ACTLIB_RTC_CACHE_DIR": str(tmp_path / "cache")} if cache == "on" else {}
    exe, lib = real
    p = subprocess.run([str(exe), "threads", "16", "a"], capture_output=True, text=True, timeout=TIMEOUT,
                       env={**{k: v for k, v in os.environ.items() if not k.startswith("ACTLIB_RTC_CACHE")},
                            "LD_LIBRARY_PATH": str(lib.parent), "MOCK_NVRTC_LOG": str(tmp_path / "events.log"),
                            **env})
    assert p.returncode == 0 and p.stdout.split() == ["ok", "16"], p.stderr
    assert events(tmp_path / "events.log", "compile") == 1


def test_processes_of_one_label_compile_once(real, tmp_path):
    """Six processes started together: one compiles, the others wait on its lock and load its entry."""
    exe, lib = real
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ACTLIB_RTC_CACHE")},
           "LD_LIBRARY_PATH": str(lib.parent), "MOCK_NVRTC_LOG": str(tmp_path / "events.log"),
           "ACTLIB_RTC_CACHE_DIR": str(tmp_path / "cache")}
    procs = [subprocess.Popen([str(exe), "run", "a"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(6)]
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert events(tmp_path / "events.log", "compile") == 1


# ---- the key ------------------------------------------------------------------------------------------

def test_key_holds_the_nvrtc_library_identity(real, tmp_path):
    """The layer's key is the one Python computes (verify/rtc_cache.py) from the program's inputs and
    the NVRTC library's version, size and modification time; another file of the same version is
    another identity, so another key."""
    from codemod.verify import nvrtc

    _, lib = real
    folder = tmp_path / "cache"
    run(real, tmp_path, "run", "a", ACTLIB_RTC_CACHE_DIR=str(folder))
    version = nvrtc.load(lib).version
    identity = rtc_cache.nvrtc_identity(lib, version)
    assert identity.split()[0] == f"{version[0]}.{version[1]}" and len(identity.split()) == 3
    # driver.cpp's program `a` and the options the golden layer gives NVRTC (the mock device is sm_90)
    source = b'// variant a\n#include "variant.h"\n__global__ void a() {}\n'
    key = rtc_cache.key(identity, source, "a.cu", [("variant.h", b"#define VARIANT_HEADER 1\n")], "&a",
                        ["--gpu-architecture=sm_90", "--std=c++17"], {})
    assert list(entries(folder)) == [key]
    copy = tmp_path / lib.name
    shutil.copy(lib, copy)
    os.utime(copy, ns=(1, 1))
    assert rtc_cache.nvrtc_identity(copy, version) != identity
