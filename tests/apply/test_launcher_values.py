"""Runtime flags as values of one launcher (golden/flaglib, rule key migrate.launcher_values): a
switch whose constant only a migrated kernel's template arguments use goes, the kernel's factory
takes the value at run time (one instance per remaining template argument tuple), and a switch
whose constant has another use stays, the report saying why."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN, golden_patch
from codemod.apply.write.patch import write_all

CASE = GOLDEN / "flaglib"
RULE = CASE / "rule.yaml"


def _added(patch: str, path: str) -> str:
    """The lines `patch` adds to `path`, without their `+`."""
    section = patch[patch.index(f"+++ b/{path}\n"):]
    section = section[:section.index("\ndiff --git") if "\ndiff --git" in section else len(section)]
    return "\n".join(line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++"))


def test_flaglib_golden_patch_matches_expected():
    patch, _, manifest = golden_patch("flaglib")
    assert manifest == (CASE / "expected" / "apply.manifest.json").read_text()
    if patch != (CASE / "expected" / "apply.patch").read_text():
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden flaglib --update` "
                    "and review the diff)")


def test_switches_whose_constant_only_the_kernel_takes_go():
    """The rounding and saturation switches around scale_kernel's launch go: the launch passes `mode`
    and `saturate` to a factory instantiated per (IType, OType) only; the dtype switches stay."""
    patch, _, _ = golden_patch("flaglib")
    unit = _added(patch, "quant/quant.cu")
    assert "rtc_quant::scale_kernel<IType, OType>(mode, saturate).launch(" in unit
    assert "FLAGLIB_ROUNDING_SWITCH" not in unit and "FLAGLIB_BOOL_SWITCH(saturate" not in unit
    removed = "\n".join(line for line in patch.splitlines() if line.startswith("-"))
    assert "FLAGLIB_ROUNDING_SWITCH(mode, kRounding," in removed
    assert "FLAGLIB_BOOL_SWITCH(saturate, kSaturate, {" in removed
    section = _added(patch, "rtc/quant/kernels_kernels.h")
    assert "auto scale_kernel(Rounding kRounding, bool kSaturate)" in section
    # one launcher type for every value, checked where the factory is compiled
    # (runtime::launcher's static_assert): the factory returns it, its type never spelled
    assert "RtcKernelOf" not in section and "Launcher" not in section
    flat = re.sub(r"\s+", " ", section).replace("( ", "(")
    assert ('return runtime::template launcher<(legacy_build || !stubs::spelled(axes))>(runtime::taken(kRounding, '
            'kSaturate), kernel_info, "scale_kernel", "kRounding, kSaturate", axes, static_kernel);') in flat
    # one list of the template arguments, the run-time ones by their position among the factory's
    assert flat.count("stubs::axis_values(") == flat.count("[[gnu::noinline]] auto") == 2
    assert "const stubs::AxisValue axes[]" not in flat
    assert re.search(r'stubs::at_run_time\(0, "static_cast<::flaglib::Rounding>\("\), stubs::at_run_time\(1\)', flat)
    # the values' domains are those the static build instantiated (the switches' cases)
    assert "stubs::Domain<bool, false, true>" in section
    assert re.search(r"stubs::Domain<Rounding, static_cast<::flaglib::Rounding>\(0\),\s*"
                     r"static_cast<::flaglib::Rounding>\(1\),\s*static_cast<::flaglib::Rounding>\(2\)>", section)
    # kernels.h declares the factory as the section defines it
    assert "auto scale_kernel(Rounding kRounding, bool kSaturate);" in _added(patch, "rtc/quant/kernels.h")


def test_a_switch_whose_constant_has_another_use_stays(tmp_path):
    """amax_kernel's kSquare also sets the block size: its switch stays, kSquare stays a template
    argument, and the report says why; kAbs's switch around it goes, its braces with it (they held
    only the kept switch), the kept switch one level out."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    files, report, _ = compute(root, str(RULE))
    unit = files["quant/quant.cu"][1]
    assert ("  FLAGLIB_TYPE_SWITCH(in->dtype, IType, {\n"
            "    FLAGLIB_BOOL_SWITCH(square, kSquare, {\n"
            "      // kSquare is also the block size's: its switch stays\n"
            "      constexpr unsigned kBlock = kSquare ? 128 : kThreads;\n"
            "      rtc_quant::amax_kernel<IType, kSquare, kBlock>(use_abs).launch(") in unit
    assert "    });\n  });\n  FLAGLIB_CHECK_CUDA" in unit
    assert "use_abs, kAbs" not in unit
    assert "`FLAGLIB_BOOL_SWITCH(square, kSquare, ...)` stays a switch: line 34 uses kSquare otherwise" in report


def test_the_scale_launch_keeps_one_block():
    """The rounding switch's arm was the saturation switch, whose arm was a block: one block stays,
    inside the dtype switches, one level out."""
    patch, _, _ = golden_patch("flaglib")
    unit = _added(patch, "quant/quant.cu")
    assert ("    {\n      rtc_quant::scale_kernel<IType, OType>(mode, saturate).launch(blocks_for(in->size, kThreads), "
            "kThreads, 0, stream)(\n          static_cast<const IType *>(in->data)") in unit
    assert "\n    }" in unit


def test_no_rule_key_no_change(tmp_path):
    """Without migrate.launcher_values every switch stays and every factory takes its template
    arguments as before."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    rule = tmp_path / "rule.yaml"
    text = RULE.read_text()
    rule.write_text(re.sub(r"  launcher_values:\n    switch_macros: \[[^\]]*\]\n", "", text))
    assert "launcher_values" not in rule.read_text().split("migrate:")[1].split("names:")[0].replace(
        "# Switches whose constant a migrated kernel's launcher may take as a value", "")
    files, _, _ = compute(root, str(rule))
    unit = files["quant/quant.cu"][1]
    assert "rtc_quant::scale_kernel<IType, OType, kRounding, kSaturate>().launch(" in unit
    assert "FLAGLIB_ROUNDING_SWITCH(mode, kRounding," in unit
    assert "struct RuntimeValues" not in files["util/rtc_stubs.h"][1]


@pytest.mark.slow
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_flaglib_builds(tmp_path, legacy):
    """The patched flaglib compiles and links with nvcc (sm_90), the legacy static kernels on and off:
    the launcher type is the same for every value (the static_assert holds), and with the legacy
    option the factory takes every static kernel's address through the values' domains."""
    from tests.golden.test_golden_builds import _missing_tools, _nvrtc_root

    if _missing_tools():
        pytest.skip(f"needs {', '.join(_missing_tools())} on PATH")
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           "-DCMAKE_BUILD_TYPE=Release", f"-DFLAGLIB_BUILD_LEGACY_STATIC_QUANT={legacy}"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DFLAGLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "b" / "libflaglib.so")], capture_output=True, text=True).stdout
    factories = {line for line in symbols.splitlines() if "rtc_quant::scale_kernel<" in line and re.search(" [TW] ", line)}
    # one factory per (IType, OType): 9, not 9 x 3 roundings x 2 saturations
    assert len(factories) == 9, sorted(factories)
    static = "flaglib::quant::scale_kernel<" in symbols
    assert static == (legacy == "ON")


def test_a_launch_given_a_value_outside_the_domain_is_refused_in_words(tmp_path):
    """The rounding switch refused an unknown mode; its factory does too (not_instantiated), naming
    the kernel and the parameters."""
    patch, _, _ = golden_patch("flaglib")
    stubs = _added(patch, "util/rtc_stubs.h")
    assert re.search(r"\[\[noreturn\]\] inline void not_instantiated\(const KernelInfo ?& ?kernel, const char ?\* ?params\)",
                     stubs)
    assert "if (taken.slot < 0) not_instantiated(info(name), params);" in stubs
    assert re.search(r'runtime::template launcher<[^;]*\(\s*runtime::taken\(kRounding, kSaturate\),\s*kernel_info, "scale_kernel", "kRounding, kSaturate",',
                     _added(patch, "rtc/quant/kernels_kernels.h"))


def _collapsed(tmp_path, text: str, macros=("SWITCH",)) -> str:
    """`text` with every switch of `macros` removed as collapse_edits removes one that goes."""
    from codemod.apply.base.changeset import ChangeSet
    from codemod.apply.emit.launcher_values import LauncherValues, _switches, collapse_edits
    from codemod.apply.emit.texts import apply_edits

    (tmp_path / "f.cu").write_text(text)
    lv = LauncherValues(switches={"f.cu": _switches("f.cu", text.encode(), list(macros))})
    cs = ChangeSet()
    collapse_edits(tmp_path, lv, cs)
    return apply_edits(tmp_path, cs)["f.cu"][1]


def test_arms_of_statements_become_a_block(tmp_path):
    """A switch whose arms are statements (TE's MXFP8 dequantize launcher) leaves them as a block."""
    text = ("void f() {\n  TYPE(t, T,\n       SWITCH(\n           c, F,\n\n           int a = 1;\n"
            "           k<T, F>(a););  // NOLINT(*)\n  );  // NOLINT(*)\n}\n")
    assert _collapsed(tmp_path, text) == (
        "void f() {\n  TYPE(t, T,\n       {\n         int a = 1;\n         k<T, F>(a);\n       }\n  );  // NOLINT(*)\n}\n")


def test_nested_switches_in_the_arguments_leave_one_block(tmp_path):
    """TE's grouped MXFP8 launcher: each switch the arm of the one around it, closings with lint
    comments of their own; the innermost block stays, the other closings go with their lines."""
    text = ("void f() {\n  SWITCH(\n      a, A,\n      SWITCH(\n          b, B,\n          SWITCH(c, C, {\n"
            "            k<A, B, C>();\n          });  // NOLINT(*)\n      );       // NOLINT(*)\n  );  // NOLINT(*)\n}\n")
    assert _collapsed(tmp_path, text) == "void f() {\n  {\n    k<A, B, C>();\n  }\n}\n"


def test_a_block_alone_in_a_block_loses_its_braces(tmp_path):
    """TE's 4over6 launcher: three switches, each the whole block of the one around it."""
    text = ("void f() {\n  int x = 0;\n  SWITCH(a, A, {\n    SWITCH(b, B, {\n      SWITCH(c, C, {\n"
            "        auto k = g<A, B, C>();\n        k(x);\n      });\n    });\n  });\n}\n")
    assert _collapsed(tmp_path, text) == "void f() {\n  int x = 0;\n  {\n    auto k = g<A, B, C>();\n    k(x);\n  }\n}\n"


def test_a_block_alone_in_a_case_before_its_break_loses_its_braces(tmp_path):
    """TE's MXFP8 quantize launcher: `case X: { SWITCH(c, C, { ... }); break; }`: the arm's lines
    join the case's block (no `{ {`), one level out; the break stays."""
    text = ("void f(int s) {\n  switch (s) {\n    case 1: {\n      SWITCH(c, C, {\n        auto k = g<C>();\n"
            "        k();\n      });\n      break;\n    }\n  }\n}\n")
    assert _collapsed(tmp_path, text) == (
        "void f(int s) {\n  switch (s) {\n    case 1: {\n      auto k = g<C>();\n      k();\n      break;\n    }\n"
        "  }\n}\n")


def test_a_comment_naming_the_constant_is_no_use(tmp_path):
    """TE's NVFP4 launcher names RETURN_ROWWISE in a comment inside the switch: not a use."""
    from codemod.apply.emit.launcher_values import Switch, _other_use

    text = b"SWITCH(r, R, {\n  // no R here\n  auto k = kern<R>();\n});\n"
    switch = Switch("f.cu", "SWITCH", 0, text.index(b"{"), text.rindex(b")"), "R", "r")
    candidates = {("ns::kern", "R"): {switch}}
    assert _other_use(text, switch, {"kern"}, {"kern": "ns::kern"}, {"ns::kern": ["R"]}, candidates) is None
    text = text.replace(b"// no R here", b"int x = R;   ")
    assert "line 2 uses R" in _other_use(text, switch, {"kern"}, {"kern": "ns::kern"}, {"ns::kern": ["R"]}, candidates)


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_the_migration_with_runtime_flags_passes_the_precheck_and_the_round_trip(tmp_path, capsys):
    """`apply --write` (its NVRTC precheck compiles every variant's name expression), the result
    committed as a merged PR, the manifest gone: `--check` regenerates from git history, switches
    included, and exits 0."""
    from codemod.cli import main
    from tests.apply.test_reach import _nvrtc_available

    if not _nvrtc_available():
        pytest.skip("needs NVRTC (the nvidia-cuda-nvrtc wheel)")
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "flaglib")
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "NVRTC migration of the quant kernels")
    shutil.rmtree(root / ".git" / "codemod", ignore_errors=True)
    assert main(["apply", "--target", str(RULE), str(root), "--check", "-q"]) == 0, capsys.readouterr().err
