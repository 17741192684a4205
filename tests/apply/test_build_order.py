"""`codemod apply --build-log`: the build-order edit on the golden actlib, from a synthetic ninja log
and nvcc --time CSV written inline (durations chosen so that the reorder is predicted to help)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from codemod.apply.base import cmake_lists
from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.cli import main
from codemod.errors import ApplyError

RULE = str(GOLDEN / "actlib" / "activation.yaml")

# (source, measured s, host s, device s or None for no nvcc record), in add_library's order: the
# recorded -j2 build starts them in this order. util/rtc.cpp (100 s, not migrated) starts third;
# after the migration the activation and cast TUs shrink to their host phases.
BUILD = [
    ("dequantize/dequantize.cu", 30, 10, 20),
    ("transpose/transpose.cpp", 28, None, None),
    ("util/rtc.cpp", 100, None, None),
    ("activation/gelu.cu", 40, 10, 30),
    ("activation/relu.cu", 40, 10, 30),
    ("activation/swiglu.cu", 40, 10, 30),
    ("activation/gelu_dbias.cu", 40, 10, 30),
    ("cast/cast.cu", 30, 8, 22),
]


def _ninja_log(build, jobs: int = 2) -> str:
    """A v7 log of `build` run by ninja -j`jobs` in list order, then the link."""
    slots = [0] * jobs
    steps = []
    for k, (src, secs, *_) in enumerate(build):
        i = slots.index(min(slots))
        steps.append((slots[i], slots[i] + secs * 1000, f"CMakeFiles/actlib.dir/{src}.o", f"{k + 1:x}"))
        slots[i] += secs * 1000
    steps.append((max(slots), max(slots) + 2000, "libactlib.so", "ff"))
    # one line per step in the order ninja reaps them; v7's mtime is the start, in ns since the epoch
    lines = [f"{a}\t{b}\t{(1_700_000_000_000 + a) * 1_000_000}\t{out}\t{h}" for a, b, out, h in
             sorted(steps, key=lambda s: s[1])]
    return "# ninja log v7\n" + "\n".join(lines) + "\n"


def _nvcc_csv(build) -> str:
    rows = ["source file name , phase name , phase input files , phase output file , arch , tool, metric , unit"]
    for pid, (src, _, host, device) in enumerate(build, 0x100):
        if device is None:
            continue
        stem = Path(src).stem
        tmp = f"/tmp/tmpxft_{pid:08x}_00000000"
        out = f"CMakeFiles/actlib.dir/{src}.o"
        rows += [
            f"{src} , gcc (preprocessing 4) , {src}  , {tmp}-5_{stem}.cpp4.ii ,  , nvcc , {host * 200} , ms",
            f"{src} , cudafe++ , {tmp}-5_{stem}.cpp4.ii  , {tmp}-6_{stem}.compute_90.cudafe1.cpp , compute_90 , nvcc , {host * 300} , ms",
            f"{src} , gcc (preprocessing 1) , {src}  , {tmp}-8_{stem}.compute_90.cpp1.ii , compute_90 , nvcc , {device * 100} , ms",
            f"{src} , cicc ,  {tmp}-8_{stem}.compute_90.cpp1.ii  , {tmp}-7_{stem}.compute_90.ptx , compute_90 , nvcc , {device * 700} , ms",
            f"{src} , ptxas , {tmp}-7_{stem}.compute_90.ptx  , {tmp}-9_{stem}.compute_90.cubin , sm_90 , nvcc , {device * 200} , ms",
            f"{src} , gcc (compiling) ,   , {out} , compute_90 , nvcc , {host * 500} , ms",
            f" , nvcc (driver) ,  , {out} ,  , nvcc , 0.5 , ms",
        ]
    return "\n".join(rows) + "\n"


@pytest.fixture
def build_log(tmp_path) -> tuple[Path, Path]:
    log, csv = tmp_path / "actlib.ninja_log", tmp_path / "actlib.nvcc_time.csv"
    log.write_text(_ninja_log(BUILD))
    csv.write_text(_nvcc_csv(BUILD))
    return log, csv


def _rule(tmp_path: Path, **cmake) -> str:
    data = yaml.safe_load(Path(RULE).read_text())
    data["migrate"]["cmake"].update(cmake)
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


EXPECTED_BLOCK = """\
# NVRTC migration of the activation kernels: build order.
# Ninja (up to 1.13) starts compile steps of equal priority in the order of the
# target's source list. These 2 translation units are predicted to compile longest after the
# NVRTC migration (seconds, from actlib.ninja_log); listed first, longest first, they are predicted to
# take the build from 130.0 s to 108.0 s at -j2. Objects link in this order too.
set(actlib_longest_sources
    util/rtc.cpp  # 100.0 s
    dequantize/dequantize.cu  # 30.0 s
)
list(REMOVE_ITEM actlib_sources ${actlib_longest_sources})
list(PREPEND actlib_sources ${actlib_longest_sources})

add_library(actlib SHARED ${actlib_sources} ${actlib_arch_specific_sources})
"""


def test_the_longest_predicted_tus_move_to_the_front(actlib_git, build_log):
    log, csv = build_log
    files, report, plan = compute(actlib_git, RULE, version="9.9.9", build_log=log, nvcc_times=[csv])
    bo = plan.build_order
    assert bo.emitted and (bo.jobs, bo.policy) == (2, "1.12")
    # without the reorder util/rtc.cpp starts at 28 s (after transpose.cpp) and ends at 128 s, then
    # the 2 s link; listed first it ends at 100 s while the other slot compiles the rest (0-106 s)
    assert (bo.without_s, bo.with_s) == (130.0, 108.0)
    assert [(t.path, t.seconds, t.migrated) for t in bo.listed] == [
        ("util/rtc.cpp", 100.0, False), ("dequantize/dequantize.cu", 30.0, False)]
    old, new = files["CMakeLists.txt"]
    start = new.index("# NVRTC migration of the activation kernels: build order.\n")
    assert new[start:new.index("\n", new.index("add_library(actlib SHARED")) + 1] == EXPECTED_BLOCK
    assert "| 1 | `util/rtc.cpp` | 100.0 | 100.0 |  |" in report
    assert "| current source lists | 130.0 | `CMakeFiles/actlib.dir/util/rtc.cpp.o` |" in report
    assert "| listed TUs first | 108.0 | `CMakeFiles/actlib.dir/dequantize/dequantize.cu.o` |" in report


@pytest.mark.slow
def test_the_diff_applies_and_a_second_apply_is_a_no_op(actlib_git, build_log, tmp_path):
    log, csv = build_log
    args = ["apply", "--target", RULE, str(actlib_git), "--build-log", str(log), "--nvcc-time", str(csv), "-q"]
    diff = tmp_path / "m.diff"
    assert main([*args, "--diff", str(diff)]) == 0
    assert "+list(PREPEND actlib_sources ${actlib_longest_sources})" in diff.read_text()
    assert "## Build order" in Path(f"{diff}.report.md").read_text()
    r = subprocess.run(["git", "apply", "--check", str(diff)], cwd=actlib_git, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert main([*args, "--check"]) == 1
    assert main([*args, "--write"]) == 0
    assert main([*args, "--check"]) == 0
    files, _, _ = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    assert files == {}
    # the edited list: the two TUs first, each once, as CMake will see it
    data = (actlib_git / "CMakeLists.txt").read_bytes()
    cmds = cmake_lists.commands(data)
    assert [c.name for c in cmds if c.name == "list" and "actlib_sources" in [a.text for a in c.args]] == ["list", "list"]


def test_the_block_is_recognised_when_the_manifest_is_gone(actlib_git, build_log):
    """The block itself is the idempotency marker too (e.g. after the generated folder was removed)."""
    log, csv = build_log
    files, _, _ = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    cmake = actlib_git / "CMakeLists.txt"
    cmake.write_text(files["CMakeLists.txt"][1])
    _, report, plan = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    assert not plan.build_order.emitted and "already in CMakeLists.txt" in plan.build_order.reason
    assert "No build-order edit: already in CMakeLists.txt" in report


def test_an_unmatched_tu_is_left_out_with_a_diagnostic(actlib_git, tmp_path):
    """A long TU that is not an entry of the variable's lists (here: of another list) is never listed."""
    build = [*BUILD[:3], ("activation/gelu.cu", 90, 70, 20), *BUILD[4:]]
    log, csv = tmp_path / "a.ninja_log", tmp_path / "a.csv"
    log.write_text(_ninja_log(build))
    csv.write_text(_nvcc_csv(build))
    files, report, plan = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    bo = plan.build_order
    assert [t.path for t in bo.listed] == ["util/rtc.cpp"]
    assert len(bo.left_out) == 1
    assert bo.left_out[0].startswith("activation/gelu.cu (70.0 s predicted; ninja output "
                                      "CMakeFiles/actlib.dir/activation/gelu.cu.o): not a literal entry of "
                                      "actlib_sources")
    assert "- activation/gelu.cu (70.0 s predicted" in report
    if bo.emitted:
        assert "activation/gelu.cu  #" not in files["CMakeLists.txt"][1]


def test_no_edit_when_the_reorder_does_not_help(actlib_git, tmp_path):
    build = [("dequantize/dequantize.cu", 100, 30, 70), *BUILD[1:2], ("util/rtc.cpp", 20, None, None), *BUILD[3:]]
    log, csv = tmp_path / "a.ninja_log", tmp_path / "a.csv"
    log.write_text(_ninja_log(build))
    csv.write_text(_nvcc_csv(build))
    files, report, plan = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    assert not plan.build_order.emitted
    assert "not predicted to help" in plan.build_order.reason
    assert "actlib_longest_sources" not in files["CMakeLists.txt"][1]
    assert "**No build-order edit**: not predicted to help" in report


def test_refused_without_the_variable(actlib_git, build_log, tmp_path):
    log, csv = build_log
    rule = _rule(tmp_path, build_order={"variable": "actlib_SOURCES"})
    with pytest.raises(ApplyError, match=r"no set\(actlib_SOURCES \.\.\.\)"):
        compute(actlib_git, rule, build_log=log, nvcc_times=[csv])
    args = ["apply", "--target", rule, str(actlib_git), "--build-log", str(log), "--write", "-q"]
    assert main(args) == 2
    assert subprocess.run(["git", "status", "--porcelain"], cwd=actlib_git, capture_output=True,
                          text=True).stdout == ""


def test_refused_when_add_library_does_not_expand_the_variable(actlib_git, build_log, tmp_path):
    log, csv = build_log
    rule = _rule(tmp_path, build_order={"variable": "actlib_activation_sources"})
    with pytest.raises(ApplyError, match=r"does not expand \$\{actlib_activation_sources\}"):
        compute(actlib_git, rule, build_log=log, nvcc_times=[csv])


def test_refused_without_add_library(actlib_git, build_log, tmp_path):
    log, csv = build_log
    rule = _rule(tmp_path, target="actlib_missing")
    with pytest.raises(ApplyError, match=r"no add_library\(actlib_missing \.\.\.\)"):
        compute(actlib_git, rule, build_log=log, nvcc_times=[csv])


def test_rule_key_is_validated(tmp_path):
    from codemod.errors import RuleError
    from codemod.rule import load_rule_file

    with pytest.raises(RuleError, match="build_order"):
        load_rule_file(Path(_rule(tmp_path, build_order={"list": "actlib_sources"})))
    with pytest.raises(RuleError, match="build_order/variable"):
        load_rule_file(Path(_rule(tmp_path, build_order={"variable": "${actlib_sources}"})))


def test_without_build_log_nothing_changes(actlib_git):
    """The golden rule opts in, but without --build-log the patch is the golden one."""
    from codemod.apply.golden import golden_patch

    files, report, plan = compute(actlib_git, RULE, version="<version>")
    assert plan.build_order is None and "## Build order" not in report
    assert "actlib_longest_sources" not in files["CMakeLists.txt"][1]


def test_rule_without_the_key_gets_a_note(actlib_git, build_log, tmp_path):
    log, csv = build_log
    data = yaml.safe_load(Path(RULE).read_text())
    del data["migrate"]["cmake"]["build_order"]
    rule = tmp_path / "plain.yaml"
    rule.write_text(yaml.safe_dump(data, sort_keys=False))
    files, report, plan = compute(actlib_git, str(rule), build_log=log, nvcc_times=[csv])
    assert "No build-order edit: the rule has no migrate.cmake.build_order" in report
    assert "actlib_longest_sources" not in files["CMakeLists.txt"][1]


def test_cmake_lists_reads_quoted_bracket_and_commented_arguments():
    data = b"""set(a x.cu "y z.cu" # c.cu
  [[w.cu]] ${b})
list(APPEND b q.cu;r.cu)
#[[ set(a hidden.cu) ]]
add_library(t SHARED ${a})
"""
    cmds = cmake_lists.commands(data)
    assert [c.name for c in cmds] == ["set", "list", "add_library"]
    assert set(cmake_lists.list_entries(cmds, "a")) == {"x.cu", "y z.cu", "w.cu", "q.cu", "r.cu"}
    assert cmake_lists.add_library(cmds, "t").line == 5


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake")), reason="needs nvcc and cmake")
def test_cmake_writes_the_listed_objects_first(actlib_git, build_log, tmp_path):
    """What ninja will see: in the configured build.ninja the listed TUs' compile edges come first,
    longest first, and every source still has exactly one edge."""
    from tests.golden.test_golden_builds import _nvrtc_root

    log, csv = build_log
    assert main(["apply", "--target", RULE, str(actlib_git), "--build-log", str(log), "--nvcc-time", str(csv),
                 "--write", "-q"]) == 0
    cmd = ["cmake", "-S", str(actlib_git), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DACTLIB_NVRTC_ROOT={_nvrtc_root()}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    edges = [line.split(":", 1)[0][len("build CMakeFiles/actlib.dir/"):-len(".o")]
             for line in (tmp_path / "b" / "build.ninja").read_text().splitlines()
             if line.startswith("build CMakeFiles/actlib.dir/") and line.split(":", 1)[0].endswith(".o")]
    assert edges[:3] == ["util/rtc.cpp", "dequantize/dequantize.cu", "transpose/transpose.cpp"]
    # every source once, plus the one unit the migration adds (the rule's kernel strings)
    assert sorted(edges) == sorted([src for src, *_ in BUILD] + ["rtc/activation/kernels.cpp"])


def test_check_and_update_without_the_log_keep_the_block(actlib_git, build_log, capsys):
    """The block is data from a build log: a CI `--check` (or `--update`) without `--build-log`
    regenerates the migration without it and keeps the tree's block (TE's five rules merged as
    pull requests: activation's --check exited 1 on the block before, docs/results/te_issue31_builds.md)."""
    log, csv = build_log
    assert main(["apply", "--target", RULE, str(actlib_git), "--build-log", str(log), "--nvcc-time", str(csv),
                 "--write", "-q"]) == 0
    block = "list(PREPEND actlib_sources ${actlib_longest_sources})"
    assert block in (actlib_git / "CMakeLists.txt").read_text()
    assert main(["apply", "--target", RULE, str(actlib_git), "--check", "-q"]) == 0, capsys.readouterr().err
    files, _, _ = compute(actlib_git, RULE, update=True)
    assert files == {}


def test_a_unit_still_compiling_when_the_build_stopped_is_listed_from_its_nvcc_phases(actlib_git, tmp_path):
    """A stopped build: ninja never logged dequantize.cu (started first, 200 s), but nvcc --time wrote
    the phases it finished (no host compile, no driver row). Their sum, 195 s, is a lower bound that
    lists it first although the replay, which knows only logged steps, sees no gain."""
    build = [("dequantize/dequantize.cu", 200, 10, 190), *BUILD[1:]]
    log, csv = tmp_path / "a.ninja_log", tmp_path / "a.csv"
    log.write_text("".join(line for line in _ninja_log(build).splitlines(keepends=True)
                           if "dequantize.cu.o" not in line))
    rows = _nvcc_csv(build).splitlines(keepends=True)
    csv.write_text("".join(r for r in rows if not (r.startswith("dequantize/dequantize.cu , gcc (compiling)")
                                                   or "dequantize.cu.o ,  , nvcc , 0.5" in r)))
    files, report, plan = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    bo = plan.build_order
    assert [(t.path, t.seconds, t.unfinished) for t in bo.listed] == [
        ("dequantize/dequantize.cu", 195.0, True), ("util/rtc.cpp", 100.0, False)]
    assert "| 1 | `dequantize/dequantize.cu` | 195.0 | 195.0 | unfinished in the log: nvcc --time's phases so " \
           "far, a lower bound |" in report
    # the replay, blind to it, predicts no gain; the edit is made for the unit that outlasted the log
    assert bo.emitted and bo.without_s == bo.with_s
    new = files["CMakeLists.txt"][1]
    assert "    dequantize/dequantize.cu  # >= 195.0 s (unfinished in the log)\n    util/rtc.cpp  # 100.0 s\n" in new
    assert "# The recorded build stopped before the units marked >= finished" in new
    assert "Listed although the replay cannot price them: dequantize/dequantize.cu still compiling" in report


def test_a_finished_build_lists_no_unfinished_unit(actlib_git, build_log):
    log, csv = build_log
    _, _, plan = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    assert not any(t.unfinished for t in plan.build_order.listed)


@pytest.mark.parametrize("count", [1, "all"])
def test_count_sets_how_many_tus_are_listed(actlib_git, build_log, tmp_path, count):
    """`count` lists fewer or more TUs than ninja has jobs (default: -j2 here, two TUs); `all` lists
    every TU of the log that is an entry of the list, longest first: a short one that the source
    order starts last (the tail of a single-arch build: TE's host-only normalization/common.cpp)
    moves up too. The activation and cast TUs are in actlib_arch_specific_sources: left out."""
    log, csv = build_log
    rule = _rule(tmp_path, build_order={"variable": "actlib_sources", "count": count})
    files, report, plan = compute(actlib_git, rule, build_log=log, nvcc_times=[csv])
    bo = plan.build_order
    listed = [(t.path, t.seconds) for t in bo.listed]
    if count == 1:
        assert listed == [("util/rtc.cpp", 100.0)] and bo.left_out == []
    else:
        assert listed == [("util/rtc.cpp", 100.0), ("dequantize/dequantize.cu", 30.0),
                          ("transpose/transpose.cpp", 28.0)]
        assert len(bo.left_out) == 5 and all("not a literal entry of actlib_sources" in d for d in bo.left_out)
    assert f"These {len(listed)} translation units" in files["CMakeLists.txt"][1]


def test_count_is_validated(tmp_path):
    from codemod.errors import RuleError
    from codemod.rule import load_rule_file

    for bad in (0, "some"):
        with pytest.raises(RuleError, match="build_order"):
            load_rule_file(Path(_rule(tmp_path, build_order={"variable": "actlib_sources", "count": bad})))


def test_a_log_of_the_migrated_tree_keeps_every_measured_time(actlib_git, tmp_path):
    """A log that compiles the migration's own stub source (rtc/activation/kernels.cpp) is a build
    of the migrated tree: its TUs already took their post-migration time. Scaling them by the
    instantiation share again would count the migration twice (TE's six-arch order, written from
    the migrated build, ranked gelu_grouped.cu's 163 s at ~60 s)."""
    build = [*BUILD, ("rtc/activation/kernels.cpp", 3, None, None)]
    log, csv = tmp_path / "m.ninja_log", tmp_path / "m.csv"
    log.write_text(_ninja_log(build))
    csv.write_text(_nvcc_csv(build))
    _, report, plan = compute(actlib_git, RULE, build_log=log, nvcc_times=[csv])
    bo = plan.build_order
    assert bo.migrated_log == "rtc/activation/kernels.cpp"
    assert any(d.startswith("activation/gelu.cu (40.0 s predicted") for d in bo.left_out)
    assert bo.without_s == bo.replayed_wall_s   # the replay without a what-if
    assert "The log compiles `rtc/activation/kernels.cpp`, this migration's stub source" in report
