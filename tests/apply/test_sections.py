"""The stubs' sections (apply/emit/sections.py, golden/latelib): what kernels.h cannot see where units
include it goes to `kernels_<stem>.h`, which the header declaring it includes at its end."""

from __future__ import annotations

import difflib
import shutil
import subprocess

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.apply.check.self_contained import kernels_h_errors
from codemod.cli import main

RULE = str(GOLDEN / "latelib" / "rule.yaml")
OUT = "rtc/quant"


def test_latelib_golden_patch_matches_expected():
    from codemod.apply.golden import golden_patch

    patch, _, manifest = golden_patch("latelib")
    assert manifest == (GOLDEN / "latelib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "latelib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True), n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden latelib "
                    "--update` and review):\n" + diff[:8000])


def test_each_part_goes_where_what_it_names_is_declared():
    """kernels.h keeps what util/pointwise.cuh's includers have read (Empty, relu: util/math.cuh,
    one of its own includes); DequantParam and dequant go to quant/dequant.cuh's section; the
    block-scaling kernel, whose parameter type ScaleBlock blocks.cuh declares after including
    kernels.h, goes whole to blocks.cuh's section with its Rounding spellings; it is launched only
    in blocks.cuh, after the section, so kernels.h does not declare it. Each spelling is written once."""
    root = GOLDEN / "latelib" / "input"
    files, _, _ = compute(root, RULE)
    kernels_h = files[f"{OUT}/kernels.h"][1]
    dequant = files[f"{OUT}/kernels_dequant.h"][1]
    blocks = files[f"{OUT}/kernels_blocks.h"][1]
    assert "LATELIB_RTC_SPELLING(type_arg, ::latelib::Empty)" in kernels_h
    assert "LATELIB_RTC_SPELLING(fn_arg, &::latelib::relu)" in kernels_h
    assert "LATELIB_RTC_SPELLING(type_arg, ::latelib::quant::DequantParam)" in dequant
    assert "LATELIB_RTC_SPELLING(fn_arg, &::latelib::quant::dequant)" in dequant
    assert "LATELIB_RTC_SPELLING(type_arg, ::latelib::quant::Rounding<1>)" in blocks
    assert "decltype(&::latelib::quant::block_scale_kernel<" in blocks   # its type from the kernel itself
    assert "auto block_scale_kernel() {" in blocks
    assert "block_scale_kernel" not in kernels_h and "ScaleBlock" not in kernels_h
    for name in ("DequantParam", "Rounding", "::dequant"):
        assert sum(text.count(name) for text in (kernels_h, dequant, blocks)) >= 1
        assert name not in kernels_h
    spellings = [line for text in (kernels_h, dequant, blocks) for line in text.splitlines()
                 if line.startswith("LATELIB_RTC_SPELLING(")]
    assert len(spellings) == len(set(spellings))
    # dequant.cuh (spellings only) includes its section at its end, hidden from NVRTC
    text = files["quant/dequant.cuh"][1]
    tail = text[text.rindex("}  // namespace latelib"):]
    assert '#ifndef __CUDACC_RTC__\n#include "../rtc/quant/kernels_dequant.h"\n#endif  // __CUDACC_RTC__\n\n#endif' in tail, tail
    # blocks.cuh, right after its kernel and before the code launching it, at namespace scope
    text = files["quant/blocks.cuh"][1]
    at = text.index('#include "../rtc/quant/kernels_blocks.h"')
    assert text.index("__global__ void block_scale_kernel") < at < text.index("void block_scale(")
    assert text[:at].endswith("#ifndef __CUDACC_RTC__\n}  // namespace quant\n}  // namespace latelib\n")
    # the guard it opened goes on over the host code after it, which NVRTC does not see either
    after = text[at:].split("\n", 1)[1]
    assert after.startswith("namespace latelib {\nnamespace quant {\n\ntemplate <int SHIFT>\nvoid block_scale(")
    assert "#endif  // __CUDACC_RTC__" not in after[:after.index("void block_scale(")]


def test_the_units_compile_with_the_sections_and_a_misplaced_spelling_is_caught():
    """The precheck's parse of the rule's units finds nothing; the same spelling put back into
    kernels.h (as apply wrote it before sections) is an error there, and one inside a section that
    names what its header does not declare is an error in the section."""
    root = GOLDEN / "latelib" / "input"
    files, _, plan = compute(root, RULE)
    units = list(plan.spec.translation_units)
    assert kernels_h_errors(root, OUT, plan.spec.include_dirs, files, [], units=units) == []
    old, text = files[f"{OUT}/kernels.h"]
    early = text.replace("#if LATELIB_BUILD_LEGACY_STATIC_QUANT",
                         "LATELIB_RTC_SPELLING(type_arg, ::latelib::quant::DequantParam)\n"
                         "#if LATELIB_BUILD_LEGACY_STATIC_QUANT", 1)
    assert early != text
    errors = kernels_h_errors(root, OUT, plan.spec.include_dirs, {**files, f"{OUT}/kernels.h": (old, early)}, [],
                              units=units)
    assert errors and all(f"{OUT}/kernels.h:" in e for e in errors), errors   # `latelib::quant` not declared yet
    old, text = files[f"{OUT}/kernels_dequant.h"]
    broken = text.replace("\n}  // namespace latelib::rtc_quant",
                          "LATELIB_RTC_SPELLING(type_arg, ::latelib::quant::ScaleBlock)\n}  // namespace latelib::rtc_quant", 1)
    assert broken != text
    errors = kernels_h_errors(root, OUT, plan.spec.include_dirs, {**files, f"{OUT}/kernels_dequant.h": (old, broken)},
                              [], units=units)
    assert errors and f"{OUT}/kernels_dequant.h:" in errors[0] and "ScaleBlock" in errors[0], errors


def test_a_launch_in_a_non_template_function_of_the_kernels_header_is_migrated(tmp_path, capsys):
    """A launch of the block-scaling kernel in a non-template function of blocks.cuh needs the
    factory's return type there: the section comes right after the kernel, before that function
    (it was at the header's end, and such a tree was refused); the precheck's parse finds nothing."""
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "latelib" / "input", root)
    header = root / "quant" / "blocks.cuh"
    text = header.read_text()
    anchor = "}  // namespace quant\n}  // namespace latelib"
    header.write_text(text.replace(anchor, (
        "inline void block_scale_eighth(const LatelibTensor *in, const float *scales, float *out, "
        "cudaStream_t stream) {\n"
        "  block_scale_kernel<Rounding<3>, float><<<1, 256, 0, stream>>>(\n"
        "      static_cast<const float *>(in->data), ScaleBlock{scales, 1}, out, in->size);\n}\n\n") + anchor, 1))
    unit = root / "quant" / "quant.cu"
    unit.write_text(unit.read_text() + (
        "\nextern \"C\" void latelib_block_scale_eighth(const LatelibTensor *in, const float *scales, float *out,\n"
        "                                           cudaStream_t stream) {\n"
        "  latelib::quant::block_scale_eighth(in, scales, out, stream);\n}\n"))
    capsys.readouterr()
    assert main(["apply", "--target", RULE, str(root), "--diff", str(tmp_path / "p.diff"), "-q"]) == 0, \
        capsys.readouterr().err
    files, _, plan = compute(root, RULE)
    text = files["quant/blocks.cuh"][1]
    assert text.index('#include "../rtc/quant/kernels_blocks.h"') < text.index("inline void block_scale_eighth")
    assert "rtc_quant::block_scale_kernel<Rounding<3>, float>()" in text
    assert kernels_h_errors(root, OUT, plan.spec.include_dirs, files, [], units=list(plan.spec.translation_units)) == []


def test_a_migrated_tree_with_sections_checks_clean(tmp_path):
    """--check on the written tree (manifest hashes, then the regeneration from the tree un-migrated:
    the sections are created files, their includes edits of the headers) finds nothing pending."""
    from codemod.tool_state import manifest_path

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "latelib" / "input", root)
    assert main(["apply", "--target", RULE, str(root), "--write", "--quiet"]) == 0
    assert (root / OUT / "kernels_blocks.h").is_file() and (root / OUT / "kernels_dequant.h").is_file()
    assert manifest_path(root, "quant").is_file()
    assert main(["apply", "--target", RULE, str(root), "--check", "--quiet"]) == 0


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_latelib_builds(tmp_path, legacy):
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "latelib" / "input", root)
    write_all(root, compute(root, RULE)[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           "-DCMAKE_BUILD_TYPE=Release", f"-DLATELIB_BUILD_LEGACY_STATIC_QUANT={legacy}"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DLATELIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_an_update_adding_a_section_beside_an_existing_kernels_h_passes_the_precheck(tmp_path, capsys):
    """A rule landed in parts: the second part's section is a new file in the folder the first part
    created. The precheck's parse must find it (it refused the tree: '... file not found', because
    only includes through new folders were spelled absolute for libclang's unsaved files)."""
    import subprocess

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "latelib" / "input", root)
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    assert main(["apply", "--target", RULE, str(root), "--write", "--quiet", "--only", "latelib::pointwise_kernel"]) == 0
    assert not (root / OUT / "kernels_blocks.h").exists()
    for cmd in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "part 1"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    assert main(["apply", "--target", RULE, str(root), "--update", "--write", "--quiet"]) == 0, capsys.readouterr().err
    assert (root / OUT / "kernels_blocks.h").is_file()


def test_kernels_h_declares_only_factories_named_before_their_section():
    """actlib: gated_act_kernel and dgated_act_kernel are launched from cast/dispatch.cuh, another
    header, so kernels.h declares their factories; unary_kernel is launched only in
    util/vectorized_pointwise.h, after the point where that header includes its section, so its
    factory is first declared (with its defaults, were there any) in the section, not in kernels.h."""
    from codemod.apply.golden import golden_patch

    patch, _, _ = golden_patch("actlib")

    def added(path: str) -> str:
        part = patch[patch.index(f"+++ b/{path}\n"):]
        part = part[:part.index("\ndiff --git") if "\ndiff --git" in part else len(part)]
        return "\n".join(line[1:] for line in part.splitlines() if line.startswith("+") and not line.startswith("+++"))

    kernels_h = added("rtc/activation/kernels.h")
    section = added("rtc/activation/kernels_vectorized_pointwise.h")
    for name in ("gated_act_kernel", "dgated_act_kernel"):
        assert f"auto {name}();" in kernels_h and f"auto {name}() {{" in section
    assert "auto unary_kernel()" not in kernels_h
    assert "auto unary_kernel() {" in section


def test_section_included_past_the_namespaces_closing_right_after_the_kernels():
    """A header whose kernels end their innermost namespace: the section's include goes after that
    closing, inside the namespaces still open before the launching code (one fewer to close and
    reopen); a closing brace that is not a namespace's stops it."""
    from codemod.apply.base import source

    header = (b"namespace a {\nnamespace k {\n__global__ void f() {}\n\n}  // namespace k\n\n"
              b"void launch() { f<<<1, 1>>>(); }\n}  // namespace a\n")
    kernel_end = header.index(b"{}") + 2
    at = source.stubs_point(header, [kernel_end], len(header))
    assert header[:at].endswith(b"}  // namespace k\n")
    assert [name for _, name in source.namespaces_at(header, at)] == ["a"]
    linkage = b'namespace a {\nextern "C++" {\n__global__ void f() {}\n}\nvoid launch();\n}  // namespace a\n'
    at = source.stubs_point(linkage, [linkage.index(b"{}") + 2], len(linkage))
    assert linkage[at:].startswith(b"}\nvoid launch();")     # not a namespace's brace: the include stays before it
