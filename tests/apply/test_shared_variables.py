"""migrate.shared_variables (golden/sharedlib): a migrated kernel that reads a namespace-scope
`__device__` variable a static kernel writes (TE: group_quantize_mxfp8_kernel and `g_tensor_maps`)
gets the launching unit's copy in its NVRTC module before each launch; without the rule key it
stays static, with the key named."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN, golden_patch
from codemod.apply.write.patch import write_all
from codemod.cli import main
from codemod.errors import RuleError
from codemod.rule import load_rule_file
from codemod.apply.plan.spec import migrate_spec
from tests.apply.test_reach import needs_nvrtc

CASE = GOLDEN / "sharedlib"
RULE = CASE / "rule.yaml"
KEY = "    sharedlib::group_scale_kernel: [sharedlib::g_groups]\n"


def _rule(tmp_path: Path, old: str, new: str) -> str:
    text = RULE.read_text()
    assert old in text
    path = tmp_path / "rule.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


def _report(tmp_path: Path, rule: str, capsys) -> tuple[int, str]:
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    report = tmp_path / "report.md"
    code = main(["apply", "--target", rule, str(root), "--diff", str(tmp_path / "d.diff"), "-q", "--no-precheck",
                 "--report", str(report)])
    return code, report.read_text() if report.is_file() else capsys.readouterr().err


def test_sharedlib_golden_patch_matches_expected():
    patch, report, manifest = golden_patch("sharedlib")
    assert manifest == (CASE / "expected" / "apply.manifest.json").read_text()
    assert patch == (CASE / "expected" / "apply.patch").read_text(), \
        "golden patch drifted (regenerate with `python -m codemod.apply.golden sharedlib --update` and read the diff)"
    assert "1 kernels migrated" in report or "1 kernel migrated" in report
    assert "global_address" in report
    assert "sharedlib::group_scale_kernel reads `sharedlib::g_groups`, which a static kernel writes" in report
    # the launch passes the launching unit's variable; the program points at the module's copy
    assert "rtc_scale::group_scale_kernel<T, SQUARED>(::sharedlib::g_groups).launch(grid, 256, 0, stream)" in patch
    assert '+__device__ void* rtc_shared_g_groups = &::sharedlib::g_groups;' in patch
    assert "copy_shared(variant.label(), shared, shared_count, stream);" in patch
    # only the factory with shared variables returns a handle that carries them; the others' handle
    # is the variant's pointer, and its launch passes none
    assert "RtcKernelShared<Params...> rtc_kernel(" in patch
    assert "RtcKernelShared::launch_now(*kernel.variant_, kernel.shared_.data(), kernel.shared_count_," in patch
    assert "launch_now(*variant, nullptr, 0, grid, block, shared_mem_bytes, stream, params...);" in patch
    assert "update_groups_kernel<T><<<1, kMaxGroups, 0, stream>>>(scales, groups);\n" in patch   # the writer stays


def test_without_the_rule_key_the_reader_stays_static_naming_the_key(tmp_path, capsys):
    code, text = _report(tmp_path, _rule(tmp_path, "  shared_variables:\n" + KEY, ""), capsys)
    line = next(l for l in text.splitlines() if l.startswith("- `sharedlib::group_scale_kernel`"))
    assert "the __device__ variable `g_groups` (src/group_scale.cuh), which sharedlib::update_groups_kernel" in line
    assert "list it under migrate.shared_variables.sharedlib::group_scale_kernel" in line


def test_a_writer_migrated_too_is_refused(tmp_path, capsys):
    rule = _rule(tmp_path, "    - sharedlib::group_scale_kernel\n",
                 "    - sharedlib::group_scale_kernel\n    - sharedlib::update_groups_kernel\n")
    code, text = _report(tmp_path, rule, capsys)
    line = next(l for l in text.splitlines() if l.startswith("- `sharedlib::group_scale_kernel`"))
    assert "so the kernels that also use it must stay static: sharedlib::update_groups_kernel is in migrate.kernels" \
        in line


def test_a_listed_variable_the_body_does_not_share_is_refused(tmp_path, capsys):
    rule = _rule(tmp_path, KEY, "    sharedlib::group_scale_kernel: [sharedlib::g_groups, sharedlib::g_other]\n")
    code, text = _report(tmp_path, rule, capsys)
    line = next(l for l in text.splitlines() if l.startswith("- `sharedlib::group_scale_kernel`"))
    assert "lists `sharedlib::g_other`, which its body does not share" in line


def test_a_layer_without_global_address_and_no_extend_is_refused(tmp_path, capsys):
    """Without nvrtc_layer.extend the layer is taken as complete: the stubs would call a
    global_address it lacks, and the host code would not compile. Apply stops, naming the key."""
    rule = _rule(tmp_path, "    extend:\n      driver_call: SHAREDLIB_CALL_DRIVER\n      check_macro: SHAREDLIB_CHECK\n", "")
    code, text = _report(tmp_path, rule, capsys)
    assert code == 2
    assert "migrate.shared_variables needs the NVRTC layer's global_address" in text
    assert "add nvrtc_layer.extend" in text


def test_a_key_naming_a_kernel_outside_the_rule_is_a_rule_error(tmp_path):
    rule = _rule(tmp_path, KEY, KEY + "    sharedlib::update_groups_kernel: [sharedlib::g_groups]\n")
    with pytest.raises(RuleError, match="migrate.shared_variables names sharedlib::update_groups_kernel"):
        migrate_spec(load_rule_file(Path(rule)))


@needs_nvrtc
def test_the_program_with_the_module_pointer_passes_the_precheck(tmp_path, capsys):
    """NVRTC compiles the program with the extern "C" pointer to the module's copy."""
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    assert main(["apply", "--target", str(RULE), str(root), "--diff", str(tmp_path / "d.diff"), "-q"]) == 0, \
        capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_sharedlib_builds(tmp_path, legacy):
    """The patched sharedlib (layer with global_address, stubs copying the table) compiles and links
    with nvcc, sm_90."""
    from tests.golden.test_golden_builds import _missing_tools, _nvrtc_root

    if _missing_tools():
        pytest.skip(f"needs {', '.join(_missing_tools())} on PATH")
    root = tmp_path / "input"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DSHAREDLIB_BUILD_LEGACY_STATIC_SCALE={legacy}"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DSHAREDLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def _gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _gpu(), reason="needs a GPU")
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_the_nvrtc_kernel_reads_what_the_static_writer_wrote(tmp_path, legacy):
    """On a GPU (check_scale.cu): the NVRTC kernel scales by the table the static writer filled,
    for a first launch, a second one with a new table, and another variant. Without the copy the
    same check sees zeros (its module's own table): seen on an H200, docs/apply.md."""
    from tests.golden.test_golden_builds import _missing_tools, _nvrtc_root

    if _missing_tools():
        pytest.skip(f"needs {', '.join(_missing_tools())} on PATH")
    root, build = tmp_path / "input", tmp_path / "b"
    shutil.copytree(CASE / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DSHAREDLIB_BUILD_LEGACY_STATIC_SCALE={legacy}"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DSHAREDLIB_NVRTC_ROOT={_nvrtc_root()}")
    check = build / "check"
    for c in (cmd, ["ninja", "-C", str(build)],
              ["nvcc", "-std=c++17", "-arch=sm_90", "-I", str(root / "include"), str(CASE / "check_scale.cu"),
               "-L", str(build), "-lsharedlib", "-Xlinker", f"-rpath={build}", "-o", str(check)], [str(check)]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.stdout.strip() == "ok"
