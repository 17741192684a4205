"""`nvrtc_layer.cache.test` (issue 29: the layer's tests live in the target's test tree): apply adds a
googletest file generated from templates/apply/layer/rtc_cache_test.cpp.j2 and its line in the test
executable's CMake list; the file, built against the patched golden actlib's cache header and the
real NVRTC (the wheel; no GPU), passes. Built here with a googletest stand-in of the macros it uses
(fixtures/rtc_cache/gtest_shim), or with googletest when GTEST_INCLUDE_DIR and GTEST_LIB_DIR name one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.command import compute, write_migration
from codemod.apply.golden import GOLDEN

from .test_rtc_cache import CXX, FIXTURES, _cuda_include

TEST_FILE = "tests/cpp/util/test_rtc_cache.cpp"
CMAKE = "add_executable(test_util\n  test_nvrtc.cpp\n  test_string.cpp\n)\n"


def _rule() -> str:
    text = (GOLDEN / "actlib" / "activation.yaml").read_text()
    anchor = "      default_dir: actlib/rtc\n"
    assert anchor in text
    return text.replace(anchor, anchor + "      test: {file: %s, cmake: tests/cpp/util/CMakeLists.txt, "
                        "after: test_nvrtc.cpp}\n" % TEST_FILE)


@pytest.fixture(scope="module")
def patched(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("rtc_cache_target_test")
    root = work / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    (root / "tests/cpp/util").mkdir(parents=True)
    (root / "tests/cpp/util/CMakeLists.txt").write_text(CMAKE)
    rule = work / "rule.yaml"
    rule.write_text(_rule())
    files, _, plan = compute(root, str(rule))
    write_migration(root, files, plan)
    return root


def test_the_test_file_joins_the_targets_test_executable(patched):
    assert (patched / "tests/cpp/util/CMakeLists.txt").read_text() == CMAKE.replace(
        "  test_nvrtc.cpp\n", "  test_nvrtc.cpp\n  test_rtc_cache.cpp\n")
    text = (patched / TEST_FILE).read_text()
    assert '#include "util/rtc_cache.h"' in text and "namespace cache = actlib::rtc::rtc_cache;" in text
    assert "ACTLIB_RTC_CACHE_DIR" in text and "codemod" not in text.split("\n", 1)[1]   # past the banner line
    assert text.count("TEST(RtcCacheTest, ") + text.count("TEST_F(RtcCacheEntryTest, ") == 13


@pytest.mark.slow   # g++ and the real NVRTC, twice
@pytest.mark.parametrize("other_unit", [None, "layer_used_first", "writes_home"])
def test_the_generated_test_passes_with_the_real_nvrtc(patched, tmp_path, other_unit):
    """`layer_used_first`: the test program has read the cache's settings before its first case (in
    TE's test_util, the NVRTC tests before it use the layer): each case must still get its own
    (a forked child alone would keep the parent's: every case needing the cache on failed on the H200).
    `writes_home`: another part of the program writes under $HOME in every process, as something
    in TE's test_util did on the H200 (two cases that wanted the child's HOME empty failed there):
    only the cache's own folder may count."""
    from codemod.verify import nvrtc

    try:
        lib = Path(nvrtc.find_library())
    except nvrtc.NvrtcNotFound:
        pytest.skip("no libnvrtc (pip install nvidia-cuda-nvrtc)")
    inc = _cuda_include()
    if inc is None:
        pytest.skip("no CUDA headers (nvrtc.h)")
    gtest_inc, gtest_lib = os.environ.get("GTEST_INCLUDE_DIR"), os.environ.get("GTEST_LIB_DIR")
    gtest = ["-I", gtest_inc] if gtest_inc else ["-I", str(FIXTURES / "gtest_shim")]
    libs = ["-L", gtest_lib, "-lgtest", "-lgtest_main"] if gtest_inc and gtest_lib else []
    exe = tmp_path / "test_rtc_cache"
    extra = []
    if other_unit == "layer_used_first":   # another unit reads the settings (cache off) before main
        first = tmp_path / "layer_used_first.cpp"
        first.write_text('#include "util/rtc_cache.h"\n'
                         "static const bool read_first = !actlib::rtc::rtc_cache::enabled();\n"
                         "bool layer_was_off() { return read_first; }\n")
        extra = [str(first)]
    elif other_unit == "writes_home":      # another library makes its folder in $HOME at load time
        # (linked first: its initializer runs before the test's, as a shared library's does)
        other = tmp_path / "writes_home.cpp"
        other.write_text("#include <sys/stat.h>\n#include <cstdlib>\n#include <string>\n"
                         "static const bool made = [] {\n"
                         '  const char *home = std::getenv("HOME");\n'
                         '  return home != nullptr && ::mkdir((std::string(home) + "/.other").c_str(), 0700) == 0;\n'
                         "}();\n"
                         "bool other_made_its_folder() { return made; }\n")
        extra = [str(other)]
    proc = subprocess.run([CXX, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread", *gtest,
                           "-I", str(patched), "-I", str(inc), *extra, str(patched / TEST_FILE), "-o", str(exe), *libs,
                           f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib.parent), "TMPDIR": str(tmp_path)}
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    if not gtest_inc:
        lines = run.stdout.splitlines()
        assert sum(line.startswith(("OK RtcCacheTest.", "OK RtcCacheEntryTest.")) for line in lines) == 13, run.stdout
