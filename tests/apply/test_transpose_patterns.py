"""The patterns of TE's transpose units (golden/ctlib): a carveout set with cudaFuncSetAttribute on
the kernel's template-id, vector widths from `FLAG ? kA : kB` over namespace-scope constants, a
data header included inside a namespace before the kernels, and a comment calling the kernel
statically compiled (migrate.comments)."""

from __future__ import annotations

import json
import shutil

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main

CASE = GOLDEN / "ctlib"
RULE = CASE / "rule.yaml"


def test_ctlib_golden_patch_matches_expected():
    import difflib

    from codemod.apply.golden import golden_patch

    patch, _, manifest = golden_patch("ctlib")
    assert manifest == (CASE / "expected" / "apply.manifest.json").read_text()
    expected = (CASE / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True), n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden ctlib "
                    "--update` and review):\n" + diff[:8000])


def test_vector_width_from_a_flag_folds_per_variant(tmp_path, capsys):
    """`load = DACT ? kLoadBytesDact : kLoadBytes; nvec = load / sizeof(IType)`: clang spells the
    constants from the global scope, so the text reads `DACT?::ctlib::detail::kLoadBytesDact: ::...`.
    Each variant's nvec is the folded value, (4) / 2 = 2 for DACT and a 16-bit input."""
    out = tmp_path / "a.json"
    assert main(["analyze", "--target", str(RULE), str(CASE / "input"), "--json", str(out), "-q"]) == 0, \
        capsys.readouterr().err
    doc = json.loads(out.read_text())
    (kernel,) = doc["kernels"]
    names = [p["name"] for p in kernel["params"]]
    variants = {tuple(v["args"]) for s in doc["sites"] if s["kind"] == "launch" for v in s["variants"]}
    got = {(dict(zip(names, v))["DACT"], dict(zip(names, v))["IType"]): dict(zip(names, v))["nvec"] for v in variants}
    assert got == {("false", "float"): "2", ("false", "__half"): "4", ("false", "__nv_bfloat16"): "4",
                   ("true", "float"): "1", ("true", "__half"): "2", ("true", "__nv_bfloat16"): "2"}
    assert not [d for d in doc["diagnostics"] if d["id"] == "CM1005"]


def test_attribute_on_a_template_id_goes_to_the_stub(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    unit = (root / "tu" / "transpose.cu").read_text()
    # parenthesized: the template-id's commas would split CTLIB_CHECK_CUDA's one argument
    assert ("CTLIB_CHECK_CUDA((rtc_transpose::cast_transpose_kernel<nvec, DACT, IType, OType>()).set_attribute(\n"
            "                                          cudaFuncAttributePreferredSharedMemoryCarveout, 100));") in unit
    assert "cudaFuncSetAttribute" not in unit
    # the moved header and the stubs follow the last file-scope include, not the one in the namespace
    assert ('#include "ctlib/transpose.h"\n#include "transpose_kernels.cuh"\n'
            '// The host stubs of the kernels the header above defines.\n'
            '#include "../rtc/transpose/kernels.h"\n\nnamespace ctlib {\nnamespace detail {\n\n'
            '#include "transpose_name.h"\n') in unit
    # the host-only constants stay; the kernel's constant and device function moved
    header = (root / "tu" / "transpose_kernels.cuh").read_text()
    assert "constexpr size_t kLoadBytes = 8;" in unit and "kLoadBytes" not in header
    assert "constexpr int kTransposeThreads = 128;" in header and "float dgelu(float x)" in header


STATIC = "// Statically-compiled kernel: one instantiation per vector width, DACT and type pair."


def test_a_comment_the_migration_makes_untrue_is_rewritten_in_comments_only(tmp_path, capsys):
    """migrate.comments: the launcher's comment loses "Statically-compiled"; the same words in code
    (a string here) stay."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    unit = root / "tu" / "transpose.cu"
    text = unit.read_text()
    assert text.count(STATIC) == 1
    text = text.replace('  if (n == 0) return;', '  if (n == 0) return;\n  (void)"Statically-compiled kernel";', 1)
    unit.write_text(text)
    assert main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"]) == 0, \
        capsys.readouterr().err
    after = unit.read_text()
    assert "    // Kernel: one instantiation per vector width, DACT and type pair.\n" in after
    assert "// Statically" not in after and '(void)"Statically-compiled kernel";' in after


def test_a_comment_no_longer_there_stops_apply(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    unit = root / "tu" / "transpose.cu"
    unit.write_text(unit.read_text().replace(STATIC, "// One instantiation per vector width, DACT and type pair."))
    code = main(["apply", "--target", str(RULE), str(root), "--write", "-q", "--no-precheck"])
    err = capsys.readouterr().err
    assert code != 0 and 'no comment of migrate/translation_units says "Statically-compiled kernel"' in err, err
    assert "rtc_transpose" not in unit.read_text()      # nothing written


def test_attribute_on_a_larger_first_argument_leaves_the_kernel_static(tmp_path, capsys):
    """A template-id that is only part of the first argument (a cast around it) is no rewrite
    apply knows: the kernel stays static, the report naming the site."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    unit = root / "tu" / "transpose.cu"
    text = unit.read_text()
    old = "cudaFuncSetAttribute(cast_transpose_kernel<nvec, DACT, IType, OType>,"
    assert old in text
    unit.write_text(text.replace(old, "cudaFuncSetAttribute(reinterpret_cast<const void *>("
                                      "cast_transpose_kernel<nvec, DACT, IType, OType>),"))
    code = main(["apply", "--target", str(RULE), str(root), "--diff", str(tmp_path / "d.diff"), "-q", "--no-precheck"])
    err = capsys.readouterr().err
    report = (tmp_path / "d.diff.report.md").read_text()
    assert code == 1, err       # the rule's one kernel stays static: nothing migrated is no success
    assert "no kernel migrated" in err
    assert "ctlib::detail::cast_transpose_kernel`: use in cudaFuncSetAttribute at tu/transpose.cu:" in report, report


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_ctlib_builds(tmp_path, legacy):
    import subprocess

    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DCTLIB_BUILD_LEGACY_STATIC_TRANSPOSE={legacy}", "-DCMAKE_BUILD_TYPE=Release"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DCTLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
