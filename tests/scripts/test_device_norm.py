"""scripts/device_norm.sh on stub trees: the whole chain (three timed builds, one tests build run against
two libraries, parity, sizes) with real CMake projects standing in for TE's library and its
tests/cpp, so that the link and LD_LIBRARY_PATH mechanics the device run relies on are exercised."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device_norm.sh"

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("cmake", "ninja", "cc", "taskset", "ldd", "setsid")),
    reason="needs cmake, ninja, cc, taskset, ldd, setsid")

LIB_CMAKE = """\
cmake_minimum_required(VERSION 3.18)
project(stub_te LANGUAGES C)
add_library(transformer_engine SHARED side.c)
"""

# As TE's tests/cpp: the library found by find_library under TE_LIB_PATH and linked by full path.
TESTS_CMAKE = """\
cmake_minimum_required(VERSION 3.18)
project(stub_tests LANGUAGES C)
find_library(TE_LIB NAMES transformer_engine PATHS "${TE_LIB_PATH}/.." ${TE_LIB_PATH} REQUIRED)
add_executable(test_operator main.c)
target_link_libraries(test_operator PUBLIC ${TE_LIB})
"""

TESTS_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
const char *te_side(void);
int main(int argc, char **argv) {
  const char *shard = getenv("GTEST_SHARD_INDEX");
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--gtest_output=xml:", 19) == 0) {
      FILE *f = fopen(argv[i] + 19, "w");
      fprintf(f, "<testsuites tests=\"1\" failures=\"0\"><testsuite name=\"NormTestSuite\">"
                 "<testcase name=\"%s_%s\" status=\"run\" result=\"completed\"/></testsuite></testsuites>\n",
              te_side(), shard ? shard : "-");
      fclose(f);
    }
  }
  printf("library %s shard %s\n", te_side(), shard ? shard : "-");
  return 0;
}
"""

PARITY_STUB = """\
import json, sys
args = sys.argv[1:]
out = args[args.index("--json") + 1]
json.dump({"parity": {"equal": 3, "ran": 3, "all_equal": True}, "argv": args}, open(out, "w"))
"""


PREFLIGHT = "CMakeFiles/transformer_engine.dir/side.c.o"   # the stub library's one object


def _driver(tmp_path: Path) -> Path:
    """A stand-in for `codemod parity generate`'s folder, and the parity stub beside it."""
    driver = tmp_path / "driver"
    driver.mkdir()
    (driver / "driver.cu").write_text("// stub\n")
    (tmp_path / "parity_stub.py").write_text(PARITY_STUB)
    return driver


def _one_cpu() -> str:
    return str(sorted(os.sched_getaffinity(0))[0])


def _tree(root: Path, side: str) -> Path:
    common = root / side / "transformer_engine" / "common"
    common.mkdir(parents=True)
    (common / "CMakeLists.txt").write_text(LIB_CMAKE)
    (common / "side.c").write_text(f'const char *te_side(void) {{ return "{side}"; }}\n')
    tests = root / side / "tests" / "cpp"
    tests.mkdir(parents=True)
    (tests / "CMakeLists.txt").write_text(TESTS_CMAKE)
    (tests / "main.c").write_text(TESTS_MAIN)
    return root / side


@pytest.mark.slow
def test_the_chain_builds_three_trees_and_runs_one_test_build_against_two_libraries(tmp_path):
    trees = [_tree(tmp_path, s) for s in ("orig", "migr", "hand")]
    driver = _driver(tmp_path)
    cpu = _one_cpu()
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(ROOT), POLL_S="1", TESTS_SHARDS="2",
               CHAIN_CPUS_A=cpu, CHAIN_CPUS_B=cpu, COMMIT="abc1234", TESTS_BIN="test_operator",
               CONFIGURE_CMD="cmake -S {src} -B {build} -G Ninja", BUILD_CMD="ninja -C {build}",
               TESTS_CONFIGURE_CMD="cmake -S {tests} -B {build} -G Ninja -DTE_LIB_PATH={lib}",
               TESTS_BUILD_CMD="cmake --build {build}",
               PARITY_RUN=f"{sys.executable} {tmp_path / 'parity_stub.py'}", PREFLIGHT_TARGETS=PREFLIGHT)
    work, out = tmp_path / "work", tmp_path / "out"
    start = subprocess.run(["bash", str(SCRIPT), "start", str(work), *map(str, trees), str(driver)],
                           cwd=ROOT, env=env, capture_output=True, text=True)
    assert start.returncode == 0, start.stderr
    assert "preflight passed" in start.stdout and not list(work.glob("preflight-*/"))
    poll = subprocess.run(["bash", str(SCRIPT), "poll", str(work), "300", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    stages = (work / "res" / "stages").read_text()
    assert poll.returncode == 0, poll.stdout + poll.stderr + stages + (work / "chain.log").read_text()
    assert (out / "norm_results.tgz").is_file()
    res = work / "res"
    # The hand tree builds on the migrated build's cores once that build has ended.
    lines = stages.splitlines()
    assert [i for i, l in enumerate(lines) if "migrated built rc=0" in l][0] < \
        [i for i, l in enumerate(lines) if "hand build started" in l][0]
    assert lines[-1].endswith("done status=0")
    for side in ("original", "migrated", "hand"):
        assert (res / f"build-{side}.json").is_file() and (res / f"{side}.ninja_log").is_file()
    assert [l.split()[0] for l in (res / "so_size.txt").read_text().splitlines()] == ["original", "migrated", "hand"]
    # One tests build; each run loaded its own side's library (the stub library names its tree).
    assert len(list(work.glob("tests-build/test_operator"))) == 1 and not (work / "tests-lib").exists()
    for side, tree in (("original", "orig"), ("migrated", "migr")):
        xml = [(res / f"tests-{side}-{i}.xml").read_text() for i in (0, 1)]
        assert all(f'name="{tree}_' in x for x in xml), xml
        assert f"{work}/build-{side}/libtransformer_engine.so" in (res / f"tests-{side}.ldd").read_text()
    assert "original shards=2 rc=0" in (res / "tests.status").read_text()
    assert "linked against the original library" in stages
    argv = __import__("json").loads((res / "parity_norm.json").read_text())["argv"]
    assert argv[argv.index("--work") + 1] == str(work) and "--skip-build" in argv


@pytest.mark.slow
def test_a_failed_build_is_reported_and_the_chain_still_ends_without_a_hand_tree(tmp_path):
    trees = [_tree(tmp_path, s) for s in ("orig", "migr", "hand")]
    (trees[1] / "transformer_engine" / "common" / "side.c").write_text("this does not compile\n")
    driver = _driver(tmp_path)
    cpu = _one_cpu()
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(ROOT), POLL_S="1", TESTS_SHARDS="1",
               CHAIN_CPUS_A=cpu, CHAIN_CPUS_B=cpu, TESTS_BIN="test_operator",
               CONFIGURE_CMD="cmake -S {src} -B {build} -G Ninja", BUILD_CMD="ninja -C {build}",
               TESTS_CONFIGURE_CMD="cmake -S {tests} -B {build} -G Ninja -DTE_LIB_PATH={lib}",
               TESTS_BUILD_CMD="cmake --build {build}", PARITY_RUN="false")
    work = tmp_path / "work"
    subprocess.run(["bash", str(SCRIPT), "start", str(work), str(trees[0]), str(trees[1]), "-", str(driver)],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    poll = subprocess.run(["bash", str(SCRIPT), "poll", str(work), "300", str(tmp_path / "out")], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    stages = (work / "res" / "stages").read_text()
    assert poll.returncode == 1, poll.stdout + stages
    assert "migrated built rc=0" not in stages and "migrated built rc=" in stages and "no parity" in stages
    # Without the migrated library the tests are built against the original one, on half A.
    assert "linked against the original library" in stages and "tests migrated: no library" in stages
    assert stages.splitlines()[-1].endswith("done status=1")
    assert "original shards=1 rc=0" in (work / "res" / "tests.status").read_text()
    assert "hand" not in stages and (work / "res" / "so_size.txt").read_text().split() == ["original", \
        (work / "res" / "so_size.txt").read_text().split()[1]]


def test_pair_builds_migrated_and_hand_at_once_and_nothing_else(tmp_path):
    trees = [_tree(tmp_path, s) for s in ("migr", "hand")]
    cpu = _one_cpu()
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(ROOT), POLL_S="1", CHAIN_CPUS_A=cpu, CHAIN_CPUS_B=cpu,
               CONFIGURE_CMD="cmake -S {src} -B {build} -G Ninja", BUILD_CMD="ninja -C {build}")
    work = tmp_path / "work"
    subprocess.run(["bash", str(SCRIPT), "pair", str(work), *map(str, trees)], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    poll = subprocess.run(["bash", str(SCRIPT), "poll", str(work), "120", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    stages = (work / "res" / "stages").read_text()
    assert poll.returncode == 0, poll.stdout + stages
    assert "builds migrated(A) hand(B)" in stages and "original" not in stages and "parity" not in stages
    assert [l.split()[0] for l in (work / "res" / "so_size.txt").read_text().splitlines()] == ["migrated", "hand"]
    assert (work / "res" / "build-hand.json").is_file() and (tmp_path / "out" / "norm_results.tgz").is_file()


@pytest.mark.slow
def test_without_a_hand_tree_the_tests_build_starts_with_the_migrated_library(tmp_path):
    trees = [_tree(tmp_path, s) for s in ("orig", "migr")]
    # The original builds longer: the tests must not wait for it.
    (trees[0] / "transformer_engine" / "common" / "CMakeLists.txt").write_text(
        LIB_CMAKE + 'add_custom_target(slow ALL COMMAND sleep 4)\n')
    driver = _driver(tmp_path)
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(ROOT), POLL_S="1", TESTS_SHARDS="1",
               CHAIN_CPUS_A=str(sorted(os.sched_getaffinity(0))[0]), CHAIN_CPUS_B=str(sorted(os.sched_getaffinity(0))[-1]),
               TESTS_BIN="test_operator", CONFIGURE_CMD="cmake -S {src} -B {build} -G Ninja",
               BUILD_CMD="ninja -C {build}", TESTS_CONFIGURE_CMD="cmake -S {tests} -B {build} -G Ninja -DTE_LIB_PATH={lib}",
               TESTS_BUILD_CMD="cmake --build {build}", PARITY_RUN="true")
    work = tmp_path / "work"
    subprocess.run(["bash", str(SCRIPT), "start", str(work), str(trees[0]), str(trees[1]), "-", str(driver)],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    poll = subprocess.run(["bash", str(SCRIPT), "poll", str(work), "300", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    lines = (work / "res" / "stages").read_text().splitlines()
    assert poll.returncode == 0, "\n".join(lines)
    started = [i for i, l in enumerate(lines) if "linked against the migrated library" in l]
    original = [i for i, l in enumerate(lines) if "original built rc=0" in l]
    assert started and original and started[0] < original[0], lines
    for side, tree in (("original", "orig"), ("migrated", "migr")):
        assert f'name="{tree}_' in (work / "res" / f"tests-{side}-0.xml").read_text()


def test_a_failed_preflight_starts_nothing(tmp_path):
    """A staging error (this session: cudnn-frontend headers older than TE needs) stopped the migrated
    build nine minutes into a device call; with PREFLIGHT_TARGETS `start` fails in the foreground first."""
    trees = [_tree(tmp_path, s) for s in ("orig", "migr")]
    (trees[1] / "transformer_engine" / "common" / "side.c").write_text("this does not compile\n")
    driver = _driver(tmp_path)
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(ROOT), CONFIGURE_CMD="cmake -S {src} -B {build} -G Ninja",
               BUILD_CMD="ninja -C {build}", TESTS_CONFIGURE_CMD="true", TESTS_BUILD_CMD="true",
               PREFLIGHT_TARGETS=PREFLIGHT)
    work = tmp_path / "work"
    start = subprocess.run(["bash", str(SCRIPT), "start", str(work), str(trees[0]), str(trees[1]), "-", str(driver)],
                           cwd=ROOT, env=env, capture_output=True, text=True)
    assert start.returncode == 1, start.stdout + start.stderr
    assert f"preflight failed in {trees[1]}" in start.stderr and "this does not compile" in start.stderr
    assert "preflight failed in " + str(trees[0]) not in start.stderr
    assert not (work / "chain.log").exists() and not (work / "res").exists()


@pytest.mark.slow
def test_without_tests_the_chain_is_the_builds_and_parity(tmp_path):
    """TESTS_CONFIGURE_CMD `-`: no tests build or run, parity runs once both libraries exist, and the
    chain's status is the builds' and parity's (`false` as the tests command made every such chain fail)."""
    trees = [_tree(tmp_path, s) for s in ("orig", "migr")]
    driver = _driver(tmp_path)
    cpu = _one_cpu()
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(ROOT), POLL_S="1", CHAIN_CPUS_A=cpu, CHAIN_CPUS_B=cpu,
               CONFIGURE_CMD="cmake -S {src} -B {build} -G Ninja", BUILD_CMD="ninja -C {build}",
               TESTS_CONFIGURE_CMD="-", TESTS_BUILD_CMD="-", PARITY_LABEL="te_issue14",
               PARITY_RUN=f"{sys.executable} {tmp_path / 'parity_stub.py'}")
    work = tmp_path / "work"
    subprocess.run(["bash", str(SCRIPT), "start", str(work), str(trees[0]), str(trees[1]), "-", str(driver)],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    poll = subprocess.run(["bash", str(SCRIPT), "poll", str(work), "300", str(tmp_path / "out")], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    stages = (work / "res" / "stages").read_text()
    assert poll.returncode == 0, poll.stdout + stages
    assert "no tests (TESTS_CONFIGURE_CMD -)" in stages and "tests build started" not in stages
    assert stages.splitlines()[-1].endswith("done status=0")
    assert (work / "res" / "parity_issue14.json").is_file() and not (work / "tests-build.log").exists()
