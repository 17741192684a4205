"""`codemod apply` on the command line: every exit code, the dirty-tree refusal of --write, the
summary line, and kernels with sites apply cannot rewrite left static with the reason."""

from __future__ import annotations

import pytest

from codemod.tool_state import manifest_path
from codemod.apply.command import repo_location
from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = str(GOLDEN / "actlib" / "activation.yaml")


def _run(capsys, *argv):
    code = main(["apply", "--target", RULE, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_prints_the_diff_and_a_summary(capsys):
    code, out, err = _run(capsys, str(GOLDEN / "actlib" / "input"), "-q")
    assert code == 0
    # paths from the root of the git repository holding the tree (this one, when it is checked out)
    _, prefix = repo_location(GOLDEN / "actlib" / "input")
    assert out.startswith(f"diff --git a/{prefix}CMakeLists.txt b/{prefix}CMakeLists.txt\n")
    assert err == ("16 files changed (10 new); 7 kernels migrated, 0 left static; 1 TU outside the analysis "
                   "include rewritten code (arguments only they use keep the static kernel)\n")


def test_write_refuses_a_dirty_tree_unless_allowed(actlib_git, capsys):
    (actlib_git / "transpose/transpose.cpp").write_text("// local work\n")
    code, out, err = _run(capsys, str(actlib_git), "--write", "-q")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "uncommitted changes in 1 tracked file(s)" in err and "transpose/transpose.cpp" in err
    assert "--allow-dirty" in err
    assert not (actlib_git / "rtc/activation").exists()
    # a dry run and --check change nothing, so they need no clean tree
    assert _run(capsys, str(actlib_git), "--check", "-q")[0] == 1
    code, _, err = _run(capsys, str(actlib_git), "--write", "--allow-dirty", "-q")
    assert code == 0, err
    assert err.endswith(f"written. Manifest (outside the tree): {manifest_path(actlib_git, 'activation')}. Next: "
                        f"build, then `codemod verify {actlib_git}`.\n")
    code, _, err = _run(capsys, str(actlib_git), "--write", "--allow-dirty", "-q")
    assert code == 0 and err == "already migrated: 0 files changed; nothing written\n"


def test_usage_errors_exit_2(capsys, tmp_path):
    code, _, err = _run(capsys, str(tmp_path / "nope"))
    assert code == 2 and err == f"codemod: error: no such directory: {tmp_path / 'nope'}\n"
    code = main(["apply", "--target", "no_such_rule", str(tmp_path)])
    assert code == 2 and "unknown target 'no_such_rule'" in capsys.readouterr().err


def test_interrupt_exits_130(capsys, monkeypatch):
    import codemod.apply.command as command

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "compute", interrupted)
    code, _, err = _run(capsys, str(GOLDEN / "actlib" / "input"))
    assert code == 130 and err == "codemod: interrupted\n"


@pytest.mark.parametrize("kind, api, via, reason", [
    ("launch", "cudaLaunchKernelEx", None, "launch through cudaLaunchKernelEx at "),
    ("launch", "cudaLaunchCooperativeKernel", None, "launch through cudaLaunchCooperativeKernel at "),
    ("use", "occupancy", None, "use in occupancy at "),  # on a kernel variable it is rewritten (kernel_api)
    ("use", "cudaFuncSetAttribute", None, "use in cudaFuncSetAttribute at "),
])
def test_sites_apply_cannot_rewrite_leave_the_kernel_static(kind, api, via, reason):
    from codemod.analysis.analyze import analyze
    from codemod.apply.plan.plan import build_plan
    from codemod.apply.plan.spec import migrate_spec
    from codemod.rule import load_rule

    root = GOLDEN / "actlib" / "input"
    rule = load_rule(RULE)
    analysis = analyze(root, [rule])
    site = next(s for s in analysis.sites if s.kernel == "actlib::reduce_dbias_kernel")
    site.kind, site.api, site.via = kind, api, via
    plan = build_plan(root, analysis, migrate_spec(rule))
    assert "actlib::reduce_dbias_kernel" not in [kp.kernel.id for kp in plan.kernels]
    skipped = {s.what: s.reason for s in plan.skipped}
    assert skipped["actlib::reduce_dbias_kernel"].startswith(reason + site.id)
    assert len(plan.kernels) == 6


def test_no_format_changes_only_generated_files():
    from codemod.apply.command import compute

    root = GOLDEN / "actlib" / "input"
    formatted, _, _ = compute(root, RULE)
    raw, _, _ = compute(root, RULE, formatted=False)
    assert formatted.keys() == raw.keys()
    for path, (old, new) in formatted.items():
        if old is not None:             # library sources: the same edits either way
            assert raw[path] == (old, new), path
    assert raw["rtc/activation/kernels.h"][1] != formatted["rtc/activation/kernels.h"][1]
    assert raw["rtc/activation/kernels.h"][1].startswith("// Host launch stubs of the kernels migrated to NVRTC")
