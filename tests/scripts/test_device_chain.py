"""scripts/device_chain.sh with stub commands for every step (the library's configure and build, the
tests' build, the util, ctest and operator test programs): the chain's order, the results it leaves
under $OUT after the call, and no build command in them (the build recipe stays out of results)."""

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from codemod.parity.runner import REDACTED

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device_chain.sh"

pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in ("ninja", "ctest", "setsid")),
                                reason="needs ninja, ctest, setsid")

UTIL = "#!/bin/bash\necho '[  PASSED  ] 3 tests.'\n"
OPS = "#!/bin/bash\necho \"$@\" >> args.txt\necho '[  PASSED  ] 1 tests.'\n"   # keeps its arguments


def _tgz(folder: Path, out: Path) -> Path:
    with tarfile.open(out, "w:gz") as t:
        t.add(folder, arcname=".")
    return out


def _run_chain(tmp_path, extra: str = "", ops: str = "CTEST_REGEX=none; OPS_TEST=util.sh; OPS_SHARDS=2"):
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "tests").mkdir()
    for name, text in (("util.sh", UTIL), ("ops.sh", OPS)):
        (tree / "tests" / name).write_text(text)
        (tree / "tests" / name).chmod(0o755)
    (tmp_path / "extra/gen").mkdir(parents=True)
    (tmp_path / "extra/gen/plan.json").write_text("{}")
    w = tmp_path / "W"
    env = tmp_path / "chain.env"
    env.write_text(f"""W={w}; ORIG_TGZ={_tgz(tree, tmp_path / 'o.tgz')}; MIGR_TGZ={_tgz(tree, tmp_path / 'm.tgz')}
EXTRA_TGZ={_tgz(tmp_path / 'extra', tmp_path / 'e.tgz')}; LIB=lib; COMMIT=abc
CONFIGURE_CMD="mkdir -p {{build}}"; BUILD_CMD="echo {{jobs}} > {{build}}/jobs"
TESTS_SRC=tests
TESTS_CONFIGURE_CMD="mkdir -p {{build}} && cp {{src}}/*.sh {{build}}/ && printf 'rule r\\n  command = touch \\$out\\nbuild x: r\\nbuild y: r\\n' > {{build}}/build.ninja && echo {{lib}} > {{build}}/lib.txt"
UTIL_TEST=util.sh; {ops}; DRIVERS="g=gen"
{extra}
""")
    out = tmp_path / "out"
    out.mkdir()
    run = subprocess.run(["bash", str(SCRIPT), "start", str(env), "60"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "OUT": str(out), "POLL": "1"})
    assert run.returncode == 0, run.stderr
    assert "CHAIN DONE" in run.stdout
    stages = [line.split(" ", 1)[1] for line in (out / "stages.txt").read_text().splitlines()]
    return w, out, stages


def test_chain_runs_each_step_in_order_and_collects(tmp_path):
    w, out, stages = _run_chain(tmp_path)
    stages = [line.split(" ", 1)[1] for line in (out / "stages.txt").read_text().splitlines()]
    steps = [s.split(" rc=")[0].split(" in ")[0] for s in stages]
    assert steps[:3] == ["1 migrated build alone (-j%d)" % len(os.sched_getaffinity(0)), "build migrated",
                         "2 original build beside the tests' build"]
    assert "util tests" in steps and "build original" in steps and steps[-1] == "chain done"
    assert any(s.startswith("util tests rc=0 [  PASSED  ] 3 tests.") for s in stages)
    assert any(s.startswith("operator tests (2 shards)") and s.endswith("rc 0 0") for s in stages)
    # the tests were configured against the migrated library's build
    assert (w / "bt/lib.txt").read_text().strip() == str(w / "scratch/build-migrated")
    assert any(s.startswith("parity g rc=") and not s.startswith("parity g rc=0") for s in stages)  # {} is no plan
    with tarfile.open(out / "res.tgz") as t:
        names = t.getnames()
        record = t.extractfile("res/build-migrated.json").read().decode()
    assert "res/util.log" in names and "res/parity-g.log" in names
    assert "mkdir -p" not in record and REDACTED in record


def test_chain_builds_another_configure_alone_first_and_the_migrated_beside_the_original(tmp_path):
    w, out, stages = _run_chain(tmp_path, ops="CTEST_REGEX=; OPS_TEST=", extra="""
ALONE_CONFIGURE_CMD="mkdir -p {build} && touch {build}/other"; ALONE_SIDE=other
MIGRATED_ALONE=0; MIGR_JOBS=3; TESTS_TARGETS=x""")
    steps = [s.split(" rc=")[0].split(" in ")[0] for s in stages]
    jobs = len(os.sched_getaffinity(0))
    assert steps[:3] == [f"0 other build alone (-j{jobs})", "build other",
                         f"1 original build (-j{jobs}) beside the migrated build (nice -n 10 -j3), then the tests' build"]
    assert steps.index("build migrated") < steps.index("tests build") < steps.index("util tests")
    assert "build original" in steps and steps[-1] == "chain done"
    assert not any(s.startswith(("ctest", "operator tests")) for s in stages)  # both left empty
    assert not (w / "scratch/build-other").exists()  # the timed build's folder is removed after
    assert (w / "scratch/build-migrated/jobs").read_text().strip() == "3"
    assert (w / "scratch/build-original/jobs").read_text().strip() == str(jobs)
    assert (w / "bt/x").exists() and not (w / "bt/y").exists()  # only the named target was built
    with tarfile.open(out / "res.tgz") as t:
        assert "res/build-other.json" in t.getnames()


def test_a_failed_migrated_build_skips_the_tests_and_parity(tmp_path):
    """Built beside the original, a migrated build that fails leaves the tests unbuilt and parity
    not run (it needs both builds); the original still finishes and the chain ends."""
    w, out, stages = _run_chain(tmp_path, extra="""MIGRATED_ALONE=0
BUILD_CMD='case {src} in */migr/*) exit 1;; esac; echo {jobs} > {build}/jobs'""")
    steps = [s.split(" in ")[0] for s in stages]
    assert any(s.startswith("build migrated rc=") and s != "build migrated rc=0" for s in steps)
    assert "build original rc=0" in steps and steps[-1] == "chain done"
    assert not any(s.startswith(("tests build", "util tests", "parity")) for s in stages)


def test_parity_runs_once_both_builds_are_done_beside_the_tests(tmp_path):
    """Parity needs the two builds only: it starts when they are done, while the tests still run
    (before, it waited for the operator tests, and a device session ran out of time before it).
    The util test here waits (30 s at most) until parity has ended."""
    w, out, stages = _run_chain(tmp_path, ops="CTEST_REGEX=; OPS_TEST=", extra=f"""MIGRATED_ALONE=0; ORIG_JOBS=2; MIGR_NICE=
UTIL_TEST=slow.sh; TESTS_CONFIGURE_CMD="$TESTS_CONFIGURE_CMD && (echo 'for i in \\$(seq 150); do grep -q \\"parity g\\" {tmp_path}/W/stages.txt && break; sleep 0.2; done'; cat {{src}}/util.sh) > {{build}}/slow.sh && chmod +x {{build}}/slow.sh"
""")
    steps = [s.split(" rc=")[0].split(" in ")[0] for s in stages]
    assert steps[0] == "1 original build (-j2) beside the migrated build ( -j8), then the tests' build"
    assert steps.index("parity g") < steps.index("util tests"), steps
    assert any(s.startswith("util tests rc=0 [  PASSED  ] 3 tests.") for s in stages)   # the slow one ran
    assert (w / "scratch/build-original/jobs").read_text().strip() == "2"


def test_without_the_original_the_tests_run_then_the_alone_build_and_no_parity(tmp_path):
    """ORIGINAL=0 (a device session's time fits neither the original's build nor parity): the
    migrated build alone, its tests, then ALONE_CONFIGURE_CMD's build; OPS_FILTER reaches every
    operator test shard as --gtest_filter."""
    w, out, stages = _run_chain(tmp_path, ops="CTEST_REGEX=; OPS_TEST=ops.sh; OPS_SHARDS=2", extra="""ORIGINAL=0
ALONE_CONFIGURE_CMD="mkdir -p {build} && touch {build}/other"; ALONE_SIDE=other
OPS_FILTER='*ActTestSuite*:*CTTestSuite*'""")
    steps = [s.split(" rc=")[0].split(" in ")[0] for s in stages]
    jobs = len(os.sched_getaffinity(0))
    assert steps == [f"1 migrated build alone (-j{jobs})", "build migrated", "2 the tests' build alone",
                     "tests build", "util tests", "operator tests (2 shards)", f"3 other build alone (-j{jobs})",
                     "build other", "chain done"], steps
    assert not (w / "scratch/build-original").exists() and not (w / "scratch/build-other").exists()
    args = (w / "bt/args.txt").read_text().splitlines()
    assert len(args) == 2 and all(a.startswith("--gtest_filter=*ActTestSuite*:*CTTestSuite* --gtest_output=xml:")
                                  for a in args), args
