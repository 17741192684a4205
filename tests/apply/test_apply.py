"""codemod apply on the golden cases: exact expected patch, idempotency, --check, all-or-nothing
--write, refusals, and the patched library's build."""

from __future__ import annotations

import difflib
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN, golden_patch
from codemod.apply.write.patch import write_all
from codemod.tool_state import manifest_path
from codemod.cli import main
from codemod.errors import ApplyError, UnsupportedConstruct

RULE = str(GOLDEN / "actlib" / "activation.yaml")
HERE = Path(__file__).resolve().parent


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def actlib_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("actlib") / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    return root


def test_golden_patch_matches_expected():
    patch, _, manifest = golden_patch("actlib")
    assert manifest == (GOLDEN / "actlib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "actlib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True),
                                            "expected/apply.patch", "generated", n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden actlib "
                    "--update` and review):\n" + diff[:8000])


def test_patch_applies_with_git(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    (tmp_path / "p.diff").write_text(golden_patch("actlib")[0])
    subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
    subprocess.run(["git", "apply", "--check", str(tmp_path / "p.diff")], cwd=root, check=True)


def test_injected_failure_leaves_tree_unchanged(actlib_copy):
    before = _tree_digest(actlib_copy)
    files, _, _ = compute(actlib_copy, RULE)
    assert len(files) > 5
    with pytest.raises(ApplyError, match="injected failure"):
        write_all(actlib_copy, files, fail_after=len(files) // 2)
    assert _tree_digest(actlib_copy) == before


@pytest.mark.slow
def test_check_write_then_idempotent(actlib_copy):
    assert main(["apply", "--target", RULE, str(actlib_copy), "--check", "--quiet"]) == 1
    assert main(["apply", "--target", RULE, str(actlib_copy), "--write", "--quiet"]) == 0
    assert manifest_path(actlib_copy, "activation").is_file()
    assert not list(actlib_copy.rglob("codemod_manifest.json"))   # no data file in the tree
    assert main(["apply", "--target", RULE, str(actlib_copy), "--check", "--quiet"]) == 0
    files, _, _ = compute(actlib_copy, RULE)
    assert files == {}


def test_manifest_variants_are_fully_qualified():
    import json

    patch, _, manifest = golden_patch("actlib")
    assert "codemod_manifest" not in patch
    doc = json.loads(manifest)
    assert doc["schema"] == "codemod-manifest/1"
    unary = next(k for k in doc["kernels"] if k["id"] == "actlib::unary_kernel")
    names = {v["name_expression"] for v in unary["variants"]}
    assert ("&::actlib::unary_kernel<4, true, float, ::actlib::Empty, &::actlib::gelu<float, "
            "::actlib::Empty>, float, __half>") in names
    assert unary["headers"]["../common.h"] == "rtc/activation/prelude/common.h"


def test_macro_body_launch_is_refused(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "castlib" / "input", root)
    with pytest.raises(UnsupportedConstruct, match="macro body"):
        compute(root, str(HERE / "castlib_copy.yaml"))


def test_rule_naming_missing_kernel_is_refused(tmp_path):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "castlib" / "input", root)
    rule = (HERE / "castlib_copy.yaml").read_text().replace("[castlib::copy_kernel]", "[castlib::nope]")
    (tmp_path / "r.yaml").write_text(rule)
    with pytest.raises(ApplyError, match="kernels not found: castlib::nope"):
        compute(root, str(tmp_path / "r.yaml"))


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_golden_builds(tmp_path, legacy):
    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    write_all(root, compute(root, RULE)[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja",
           "-DCMAKE_CUDA_ARCHITECTURES=90", f"-DACTLIB_BUILD_LEGACY_STATIC_ACTIVATION={legacy}",
           "-DCMAKE_BUILD_TYPE=Release"]   # -O3: how libraries ship, and what exposed a COMDAT link error
    if _nvrtc_root() is not None:
        cmd.append(f"-DACTLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_cmake_insertion_point_is_after_the_whole_command():
    from codemod.apply.emit.generate import cmake_command_end

    data = (b'make_string_header_from_file(a.cu\n'
            b'                             sym_a)  # tail\n'
            b'make_string_header_from_file("b (x).cu" # a ) in a comment\n'
            b'    sym_b)\nnext()\n')
    first = cmake_command_end(data, data.index(b"("))
    assert data[:first].endswith(b"sym_a)")
    second = cmake_command_end(data, data.index(b"(", first))
    assert data[:second].endswith(b"sym_b)")
    assert cmake_command_end(b"f(a (b)", 1) == -1


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_cmake_block_loop_makes_each_string_header_once_under_its_symbol(tmp_path):
    """The CMake block makes its string headers in one loop; CMake spells each symbol as the stubs
    do (symbol_for), and a second rule's block leaves out what a first rule's loop makes."""
    from codemod.apply.emit.generate import made_in_loops, render
    from codemod.apply.base.tree import symbol_for

    paths = ["activation/rtc/kernels-x.cu", "cast/mxfp8/specialized/swizzle.cuh", "util/ptx.cuh"]
    block = render("cmake_block.cmake.j2", marker="NVRTC migration of the r kernels", rule="r", legacy_option="L",
                   disable_env=None, configure_depends=True,
                   function="make_string_header_from_file", strings=[dict(path=p) for p in paths])
    script = tmp_path / "s.cmake"
    script.write_text('function(make_string_header_from_file file_ STRING_NAME)\n'
                      '  message(STATUS "${file_} ${STRING_NAME}")\nendfunction()\n' + block)
    r = subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    made = [line.split()[-2:] for line in r.stdout.splitlines() if line.startswith("-- ")]
    assert made == [[p, symbol_for(p)] for p in paths]
    assert made_in_loops(block.encode(), "make_string_header_from_file") == {(p, symbol_for(p)) for p in paths}
    assert made_in_loops(block.encode(), "other_function") == set()


def test_programs_share_one_header_list_unless_an_include_name_means_two_files():
    from codemod.apply.emit.generate import _shared_headers

    a = dict(headers=[dict(symbol="s_common", include_name="../common.h"), dict(symbol="s_m", include_name="math.h")])
    b = dict(headers=[dict(symbol="s_common", include_name="../common.h"), dict(symbol="s_k", include_name="k.cuh")])
    assert [h["include_name"] for h in _shared_headers([a, b])] == ["../common.h", "k.cuh", "math.h"]
    c = dict(headers=[dict(symbol="s_other_common", include_name="../common.h")])   # another file, same name
    assert _shared_headers([a, c]) is None


def test_units_reaching_a_rewritten_header_follow_includes(tmp_path):
    """The TUs a rewritten header reaches, directly or through other headers (quoted includes from
    the including folder, then the rule's include dirs); others and the output folder are left out."""
    from codemod.apply.base.tree import units_reaching

    files = {
        "util/launch.h": "#pragma once\n",
        "cast/dispatch.cuh": '#include "../util/launch.h"\n',
        "cast/cast.cu": '#include "dispatch.cuh"\n',
        "gemm/gemm.cu": '#include "util/launch.h"\n',      # through the include dir "."
        "norm/norm.cu": '#include <cuda_runtime.h>\n',      # reaches nothing
        "loop/a.h": '#include "b.h"\n', "loop/b.h": '#include "a.h"\n', "loop/l.cu": '#include "a.h"\n',
        "gen/out.cu": '#include "../util/launch.h"\n',      # the generated output folder
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert units_reaching(tmp_path, {"util/launch.h"}, ["."], skip="gen") == ["cast/cast.cu", "gemm/gemm.cu"]
