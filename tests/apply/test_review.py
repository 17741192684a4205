"""Review by change set on the golden actlib tree: --interactive with answers fed through stdin,
its refusal without a terminal, --only/--exclude, every subset of three change sets (applies, and
touches library sources only where one of its change sets does), and a partial migration's build."""

from __future__ import annotations

import io
import itertools
import json
import shutil
import subprocess
import sys

import pytest

from codemod import __version__
from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.apply.write.patch import unified_diff, write_all
from codemod.apply.review import DECLINED, NOT_REVIEWED, change_sets
from codemod.cli import main
from codemod.tool_state import manifest_path

RULE = str(GOLDEN / "actlib" / "activation.yaml")
KERNELS = ["actlib::cast_fp8_kernel", "actlib::dgated_act_kernel", "actlib::gated_act_kernel",
           "actlib::quantize_block_kernel", "actlib::reduce_dbias_kernel", "actlib::unary_grad_kernel",
           "actlib::unary_kernel"]   # the review order: sorted by id
# unary_kernel and unary_grad_kernel share their launcher header; reduce_dbias_kernel lives elsewhere
TRIO = ["actlib::unary_kernel", "actlib::unary_grad_kernel", "actlib::reduce_dbias_kernel"]


class _Terminal(io.StringIO):
    """Answers typed on a terminal."""

    def isatty(self) -> bool:
        return True


def _apply(capsys, monkeypatch, stdin, *argv):
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["apply", "--target", RULE, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _edited_lines(diff: str) -> set[tuple[str, str]]:
    """(path, +/- line) of every changed line of a file that existed before (library sources)."""
    out, path, new_file = set(), None, False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            path, new_file = line.split(" b/", 1)[1], False
        elif line.startswith("new file mode"):
            new_file = True
        elif not new_file and line[:1] in "+-" and not line.startswith(("+++", "---")):
            out.add((path, line))
    return out


def test_answers_from_stdin_choose_the_change_sets(actlib_git, capsys, monkeypatch, tmp_path):
    # cast_fp8: y; dgated: show the diff, then n; gated: q (it and every later one stay static)
    report = tmp_path / "r.md"
    code, out, err = _apply(capsys, monkeypatch, io.StringIO("y\n\n# the dgated change set\nd\nn\nq\n"),
                            str(actlib_git), "--interactive", "--answers", "-", "--quiet", "--report", str(report))
    assert code == 0, err
    assert "change set 1/7: actlib::cast_fp8_kernel: 48 variants, 1 launch site" in err
    assert "+++ b/rtc/activation/kernels_vectorized_pointwise.h" in err       # the diff shown for d
    assert "change set 4/7" not in err                                  # nothing asked after q
    assert "review: 1 of 7 change sets accepted, 6 declined" in err
    assert err.strip().splitlines()[-1] == ("12 files changed (8 new); 1 kernel migrated, 6 left static; 1 TU outside "
                                            "the analysis include rewritten code (arguments only they use keep the "
                                            "static kernel): see " + str(report))
    # the accepted set takes the --only path: the same patch
    only, _, only_plan = compute(actlib_git, RULE, only=["cast_fp8_kernel"])
    assert out == unified_diff(only)
    assert [k["id"] for k in json.loads(only_plan.manifest)["kernels"]] == ["actlib::cast_fp8_kernel"]
    text = report.read_text()
    assert f"- `actlib::dgated_act_kernel`: {DECLINED}\n" in text
    assert f"- `actlib::gated_act_kernel`: {DECLINED}\n" in text
    assert f"- `actlib::unary_kernel`: {NOT_REVIEWED}\n" in text


@pytest.mark.slow
def test_terminal_help_then_accept_all_writes_everything(tmp_path, capsys, monkeypatch):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    code, out, err = _apply(capsys, monkeypatch, _Terminal("what?\nn\na\n"), str(root), "-i", "--write", "-q")
    assert code == 0, err
    assert "d - show this change set's diff" in err                     # an unknown key shows the help
    assert "review: 6 of 7 change sets accepted, 1 declined" in err
    assert out == ""
    manifest = json.loads(manifest_path(root, "activation").read_text())
    assert [k["id"] for k in manifest["kernels"]] == KERNELS[1:]
    assert (root / "rtc/activation/kernels_vectorized_pointwise.h").is_file()
    assert "cast_fp8_kernel" not in (root / "rtc/activation/kernels.cpp").read_text()


def test_without_a_terminal_interactive_is_refused_in_one_line(tmp_path):
    # a pipe is not a terminal: refused before any analysis, unless --answers says where answers come from
    proc = subprocess.run([sys.executable, "-m", "codemod.cli", "apply", "--target", RULE,
                           str(GOLDEN / "actlib" / "input"), "--interactive"],
                          input="y\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "--interactive needs a terminal on stdin" in proc.stderr and "--answers -" in proc.stderr


@pytest.mark.parametrize("answers, message", [
    ("y\n", "no answer for actlib::dgated_act_kernel: the answers ended; nothing was written"),
    ("y\nyes please\n", "answer 'yes please' (line 2) for actlib::dgated_act_kernel is not one of y/n/a/d/q"),
])
def test_bad_or_missing_answers_write_nothing(tmp_path, capsys, monkeypatch, answers, message):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    (tmp_path / "answers.txt").write_text(answers)
    code, out, err = _apply(capsys, monkeypatch, io.StringIO(""), str(root), "--answers",
                            str(tmp_path / "answers.txt"), "--write", "-q")
    assert code == 2
    assert message in err.strip().splitlines()[-1]
    assert not (root / "rtc/activation").exists()


def test_interactive_with_check_and_unknown_kernel_names_are_usage_errors(capsys, monkeypatch):
    code, _, err = _apply(capsys, monkeypatch, _Terminal(""), str(GOLDEN / "actlib" / "input"), "-i", "--check")
    assert code == 2 and "--check only reports" in err
    code, _, err = _apply(capsys, monkeypatch, _Terminal(""), str(GOLDEN / "actlib" / "input"), "--only", "gelu_kernel")
    assert code == 2 and "does not migrate: gelu_kernel" in err and err.count("\n") == 1


def test_only_and_exclude_reasons_in_the_report(actlib_git, tmp_path):
    files, report, plan = compute(actlib_git, RULE, only=["unary_kernel", "actlib::unary_grad_kernel"],
                                  exclude=["unary_grad_kernel"])
    assert [kp.kernel.id for kp in plan.kernels] == ["actlib::unary_kernel"]
    assert "- `actlib::unary_grad_kernel`: excluded with --exclude\n" in report
    assert "- `actlib::cast_fp8_kernel`: not selected with --only\n" in report


# NOTE: the pairs (3 s each) run with -m slow; none, each single kernel and all three stay in the fast set
@pytest.mark.parametrize("subset", [pytest.param(list(c), marks=[pytest.mark.slow] if n == 2 else [])
                                    for n in range(4) for c in itertools.combinations(TRIO, n)],
                         ids=lambda s: "+".join(k.split("::")[1] for k in s) or "none")
def test_every_subset_of_change_sets_applies(actlib_git, tmp_path, subset):
    files, _, plan = compute(actlib_git, RULE, exclude=[k for k in KERNELS if k not in subset])
    if not subset:
        assert files == {} and not plan.kernels
        return
    diff = unified_diff(files)
    assert [k["id"] for k in json.loads(plan.manifest)["kernels"]] == sorted(subset)
    for kernel in TRIO:
        stub = f"rtc_activation::{kernel.split('::')[1]}<"       # a launch site's call of the stub
        assert (stub in diff) == (kernel in subset), kernel
    (tmp_path / "p.diff").write_text(diff)
    subprocess.run(["git", "apply", "--check", str(tmp_path / "p.diff")], cwd=actlib_git, check=True)
    # no library line changes outside the subset's own change sets (each computed alone)
    alone = set().union(*(_edited_lines(v.diff) for v in change_sets(actlib_git, plan.plan, __version__)))
    assert _edited_lines(diff) <= alone
    assert (actlib_git / "CMakeLists.txt").read_text().count("rtc/activation") == 0   # nothing written


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
def test_partial_migration_builds(tmp_path):
    """unary_kernel and cast_fp8_kernel migrated; unary_grad_kernel and reduce_dbias_kernel, launched
    from the same headers, stay static (legacy option OFF)."""
    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    files, _, plan = compute(root, RULE, only=["unary_kernel", "cast_fp8_kernel"])
    assert len(plan.kernels) == 2
    write_all(root, files)
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DACTLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
