"""Kernels that depend on the build (golden/buildlib): a macro the build defines reaches NVRTC as
the host compile saw it (migrate.options.build_defines), an enumeration constant nested in a type
argument is spelled as its enumerator, a kernel whose head an `#if` splits is migrated, and a
kernel header that relies on its includers gets their header first (kernel_strings.include_first)."""

from __future__ import annotations

import difflib
import json
import shlex
import shutil
import subprocess

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main
from tests.apply.test_reach import needs_nvrtc

RULE = GOLDEN / "buildlib" / "rule.yaml"


def _copy(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "buildlib" / "input", root)
    return root


def _rule(tmp_path, *edits: tuple[str, str]) -> str:
    text = RULE.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "rule.yaml"
    path.write_text(text)
    return str(path)


def _apply(tmp_path, capsys, root, rule=str(RULE), *extra) -> tuple[str, dict]:
    diff = tmp_path / "p.diff"
    assert main(["apply", "--target", rule, str(root), "--diff", str(diff), "-q", *extra]) == 0, \
        capsys.readouterr().err
    return diff.read_text(), json.loads((tmp_path / "p.diff.manifest.json").read_text())


def _new_file(patch: str, path: str) -> str:
    text = patch[patch.index(f"+++ b/{path}\n"):]
    text = text[:text.index("diff --git")] if "diff --git" in text else text
    return "\n".join(line[1:] for line in text.splitlines()[2:] if line.startswith("+"))


@needs_nvrtc
def test_buildlib_golden_patch_matches_expected():
    """On main the rule is refused (no key build_defines / include_first) and, without them, the
    precheck fails: `Config<1, true>` for an enumeration parameter, BUILDLIB_NUM_PASSES undefined."""
    from codemod.apply.golden import golden_patch

    patch, _, manifest = golden_patch("buildlib")
    assert manifest == (GOLDEN / "buildlib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "buildlib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True), n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden buildlib "
                    "--update` and review):\n" + diff[:8000])


def test_a_build_define_reaches_the_stubs_the_manifest_and_verify(tmp_path, capsys):
    """The stubs pass `-DBUILDLIB_NUM_PASSES=<the value the host compile sees>` (stringified from
    the macro: CMake's 3 in the golden's build, common.h's 2 without it), so it is in every cache
    key; the manifest records the library's default, which verify compiles with unless
    `--define` names the build's."""
    from codemod.tool_state import manifest_path
    from codemod.verify.manifest import parse_manifest
    from codemod.verify.programs import plan

    root = _copy(tmp_path)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    cpp = (root / "rtc" / "quant" / "kernels.cpp").read_text()
    assert '"-DBUILDLIB_NUM_PASSES=" BUILDLIB_RTC_BUILD_VALUE(BUILDLIB_NUM_PASSES)' in cpp
    assert "#ifndef BUILDLIB_NUM_PASSES\n#error" in cpp
    path = manifest_path(root, "quant")
    doc = json.loads(path.read_text())
    assert all(k["build_defines"] == {"BUILDLIB_NUM_PASSES": "2"} for k in doc["kernels"])
    manifest = parse_manifest(path.read_text(), path, root, {})
    options = {tuple(p.options) for p in plan([manifest], ["sm_90"])}
    assert all("-DBUILDLIB_NUM_PASSES=2" in o for o in options)
    options = {tuple(p.options) for p in plan([manifest], ["sm_90"], build_values={"BUILDLIB_NUM_PASSES": "3"})}
    assert all("-DBUILDLIB_NUM_PASSES=3" in o and "-DBUILDLIB_NUM_PASSES=2" not in o for o in options)


def test_verify_define_must_name_a_build_define(tmp_path, capsys):
    root = _copy(tmp_path)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0
    capsys.readouterr()
    assert main(["verify", str(root), "--no-host", "--define", "OTHER=1", "-q"]) == 2
    assert "not a build define" in capsys.readouterr().err


def test_a_build_define_without_a_default_in_the_library_is_refused(tmp_path, capsys):
    """The precheck and verify need a value: a macro no header the stubs include defines is a
    refusal naming the key (nothing written), not a guess."""
    root = _copy(tmp_path)
    common = root / "common.h"
    text = common.read_text()
    common.write_text(text.replace("#define BUILDLIB_NUM_PASSES 2\n", ""))
    # the analysis (clang) gets it as the build does, from the command line
    rule = _rule(tmp_path, ('  include_dirs: ["include", "."]\n',
                            '  include_dirs: ["include", "."]\n  defines: ["BUILDLIB_NUM_PASSES=3"]\n'))
    assert main(["apply", "--target", rule, str(root), "--diff", str(tmp_path / "p.diff"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "build_defines: BUILDLIB_NUM_PASSES" in err and "has no `#define`" in err


def test_an_enumeration_constant_nested_in_a_type_argument_is_spelled_as_its_enumerator(tmp_path, capsys):
    """`using Cfg = Config<kMode, true>` with `constexpr BuildlibRounding kMode = kBuildlibRoundRint`
    from a switch macro: the analysis folded kMode to `1`, and `Config<1, true>` is no valid
    argument list (NVRTC: argument of type "int" is incompatible with template parameter of type
    BuildlibRounding). Now each arm's enumerator: `Config<::BuildlibRounding::kBuildlibRoundRint,
    true>`."""
    root = _copy(tmp_path)
    assert main(["analyze", str(root), "--target", str(RULE), "--json", str(tmp_path / "a.json"), "-q",
                 "--no-cache"]) == 0
    doc = json.loads((tmp_path / "a.json").read_text())
    cfgs = {v["args"][0] for s in doc["sites"] for v in s["variants"] if s["kernel"] == "buildlib::quant::round_kernel"}
    assert cfgs == {"::buildlib::quant::Config<::BuildlibRounding::kBuildlibRoundRint, true>",
                    "::buildlib::quant::Config<::BuildlibRounding::kBuildlibRoundTrunc, true>"}


def test_a_whole_enumeration_argument_keeps_its_number():
    """A constant of enumeration type that is the whole argument stays a number (apply casts it to
    the kernel parameter's type, as the stubs do at run time)."""
    from codemod.analysis.instantiate import Evaluator

    binding = {"kMode": {"value": "1", "kind": "value", "enumerator": "::E::kA"}}
    ev = Evaluator({})
    assert ev.evaluate("kMode", {}, binding) == "1"
    assert ev.evaluate("Config<kMode, true>", {}, binding) == "Config<::E::kA, true>"


def test_a_split_head_kernel_with_its_includers_header_first(tmp_path, capsys):
    """absmax_kernel: `__global__ void` / `#if ... __launch_bounds__(N) #endif` / `absmax_kernel(...)`
    (CM0202; on main: "definition of buildlib::quant::absmax_kernel not found"), and its header
    names reduce::warp_max of util/reduce.cuh, which only quant.cu includes (before it): the program
    includes util/reduce.cuh before the kernel's header, and the precheck compiles it."""
    root = _copy(tmp_path)
    patch, doc = _apply(tmp_path, capsys, root)
    ids = {k["id"] for k in doc["kernels"]}
    assert ids == {"buildlib::quant::round_kernel", "buildlib::quant::absmax_kernel"}
    program = _new_file(patch, "rtc/quant/kernels.cu")     # quant/kernels.cuh's program, both kernels'
    assert program.index('#include "util/reduce.cuh"') < program.index('#include "quant/kernels.cuh"')
    absmax = next(k for k in doc["kernels"] if k["id"] == "buildlib::quant::absmax_kernel")
    assert absmax["headers"]["util/reduce.cuh"] == "util/reduce.cuh"


@needs_nvrtc
def test_without_include_first_the_split_head_kernel_fails_the_precheck(tmp_path, capsys):
    root = _copy(tmp_path)
    rule = _rule(tmp_path, ("    include_first:\n      buildlib::quant::absmax_kernel: [util/reduce.cuh]\n", ""))
    assert main(["apply", "--target", rule, str(root), "--diff", str(tmp_path / "p.diff"), "-q"]) == 2
    assert "reduce" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
def test_patched_buildlib_builds_and_passes_the_builds_value(tmp_path):
    """The patched golden builds; kernels.cpp, compiled with the build's -DBUILDLIB_NUM_PASSES=3
    (CMake), hands NVRTC `-DBUILDLIB_NUM_PASSES=3`, not common.h's default."""
    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _nvrtc_root

    root = _copy(tmp_path)
    write_all(root, compute(root, str(RULE))[0])
    build = tmp_path / "b"
    cmd = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DBUILDLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(build)]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    unit = next(u for u in json.loads((build / "compile_commands.json").read_text())
                if u["file"].endswith("rtc/quant/kernels.cpp"))
    args = shlex.split(unit["command"])
    at = args.index("-o")
    args = ["-E" if a == "-c" else a for a in args[:at] + args[at + 2:]]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=unit["directory"])
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert '"-DBUILDLIB_NUM_PASSES=" "3"' in proc.stdout


def test_a_prelude_include_keeps_the_condition_of_its_header(tmp_path, capsys):
    """common.h includes cuda_fp8.h under `#if BUILDLIB_FP8_SUPPORTED` (TE: cuda_fp4.h under
    FP4_TYPE_SUPPORTED, which an NVRTC before CUDA 12.8 lacks): the macro moves into common_types.h,
    which defines it before including cuda_fp8.h under the same condition; the prelude includes that
    header before its own conditional include; the C API header's prelude, whose header does not
    include it, leaves it out (on main: included unconditionally in both)."""
    root = _copy(tmp_path)
    patch, _ = _apply(tmp_path, capsys, root)
    moved = _new_file(patch, "common_types.h")
    define = moved.index("#define BUILDLIB_FP8_SUPPORTED (CUDA_VERSION >= 11080)")
    assert define < moved.index("#if BUILDLIB_FP8_SUPPORTED\n#include <cuda_fp8.h>\n#endif")
    common = _new_file(patch, "rtc/quant/prelude/common.h")
    assert "#define BUILDLIB_FP8_SUPPORTED" not in common
    assert common.index('#include "common_types.h"') < common.index("#if BUILDLIB_FP8_SUPPORTED\n#include <cuda_fp8.h>")
    assert "#include <cuda_fp16.h>" in common
    api = _new_file(patch, "rtc/quant/prelude/include/buildlib/quant.h")
    assert "cuda_fp8.h" not in api and "#include <cuda_fp16.h>" in api


def test_include_first_names_a_kernel_of_the_rule(tmp_path, capsys):
    root = _copy(tmp_path)
    rule = _rule(tmp_path, ("      buildlib::quant::absmax_kernel: [util/reduce.cuh]\n",
                            "      buildlib::quant::other_kernel: [util/reduce.cuh]\n"))
    assert main(["apply", "--target", rule, str(root), "--diff", str(tmp_path / "p.diff"), "-q"]) == 2
    assert "include_first names buildlib::quant::other_kernel" in capsys.readouterr().err
