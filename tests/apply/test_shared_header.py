"""Definitions moved, not copied (codemod/apply/emit/shared_header.py, rule key kernel_strings.move_to)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.apply.emit import shared_header
from codemod.apply.base.changeset import ChangeSet
from codemod.apply.emit.texts import apply_edits
from codemod.errors import ApplyError

COMMON = """// lib's host header.
#ifndef LIB_COMMON_H_
#define LIB_COMMON_H_

#include <cuda.h>
#define LIB_FP8 (CUDA_VERSION >= 11080)

#include <cuda_fp16.h>
#if LIB_FP8
#include <cuda_fp8.h>
#endif
#include <string>

namespace lib {

std::string name();

using fp16 = __half;
#if LIB_FP8
using fp8 = __nv_fp8_e4m3;
#endif
using fp32 = float;

template <typename T>
struct is_fp8 : std::false_type {};
#if LIB_FP8
template <>
struct is_fp8<fp8> : std::true_type {};
#endif

// Tile of the copy kernels.
constexpr int kTile = 32;  // elements
constexpr int kHost = 1;

}  // namespace lib

#endif  // LIB_COMMON_H_
"""

API = """#ifndef LIB_API_H_
#define LIB_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! How lib rounds. */
enum LibRounding {
  kLibRoundNone = 0,
  kLibRoundRint = 1,
};

void lib_round(int rounding);

#ifdef __cplusplus
}
#endif

#endif  // LIB_API_H_
"""

STD = {"namespace": "lib::detail", "header": "utils.cuh"}
INCLUDES = [{"name": "cuda_fp16.h", "conds": []}, {"name": "cuda_fp8.h", "conds": ["#if LIB_FP8"]}]


def _move(tmp_path, names, text=COMMON, header="common.h", to="common_device.h", std=STD, includes=INCLUDES,
          rule="copy"):
    (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / header).write_text(text)
    cs = ChangeSet()
    moved = shared_header.move(tmp_path, header, to, names, std, includes, "LIB_COMMON_DEVICE_H_", cs, rule)
    edited = apply_edits(tmp_path, cs)
    return moved, cs, {path: new for path, (_, new) in edited.items()}


def test_the_definitions_leave_the_header_verbatim_for_one_both_builds_include(tmp_path):
    moved, cs, files = _move(tmp_path, ["LIB_FP8", "fp16", "fp8", "fp32", "is_fp8", "kTile"])
    common, device = files["common.h"], cs.new_files["common_device.h"]
    # the header includes it after its last file-scope include before the first moved line
    assert '#include <cuda.h>\n#include "common_device.h"\n\n#include <cuda_fp16.h>' in common
    for gone in ("#define LIB_FP8", "using fp16", "using fp8", "struct is_fp8", "kTile", "Tile of the copy"):
        assert gone not in common
    assert "constexpr int kHost = 1;" in common and "std::string name();" in common
    assert "#if LIB_FP8\n#include <cuda_fp8.h>\n#endif" in common        # its own include stays
    # the moved header: the macro first, its includes, then the text as it was (comments, the
    # rest of the line, the #if blocks that held only moved code), std names respelled
    assert device.index("#define LIB_FP8") < device.index("#include <cuda_fp16.h>") \
        < device.index("#if LIB_FP8\n#include <cuda_fp8.h>\n#endif")
    assert "using fp16 = __half;\n#if LIB_FP8\nusing fp8 = __nv_fp8_e4m3;\n#endif\nusing fp32 = float;" in device
    assert "struct is_fp8 : detail::false_type {};\n#if LIB_FP8\ntemplate <>\nstruct is_fp8<fp8> : detail::true_type {};" \
        in device
    assert "// Tile of the copy kernels.\nconstexpr int kTile = 32;  // elements" in device
    # std names: utils.cuh's under NVRTC, the standard library's in the library's build
    assert ('#ifdef __CUDACC_RTC__\n#include "utils.cuh"' in device
            and "#else\n#include <type_traits>\nnamespace lib::detail {\nusing std::false_type;\nusing std::true_type;\n"
            "}  // namespace lib::detail\n#endif  // __CUDACC_RTC__" in device)
    assert moved.include == "common_device.h" and moved.std_used == {"false_type", "true_type"}
    assert all(e.why == shared_header.WHY for e in cs.edits)       # not rewritten kernel code (command.py)


def test_an_enum_of_a_c_api_header_moves_without_the_extern_c_condition(tmp_path):
    """tree-sitter reads the `#ifdef __cplusplus` / `extern "C" {` / `#endif` of a C API header as
    one block holding the rest of the file; the enum is not under `__cplusplus`, and a C user of the
    moved header must see it."""
    _, cs, files = _move(tmp_path, ["LibRounding"], API, "include/lib/api.h", "include/lib/rounding.h", None, [])
    rounding = cs.new_files["include/lib/rounding.h"]
    assert "/*! How lib rounds. */\nenum LibRounding {" in rounding and "__cplusplus" not in rounding
    api = files["include/lib/api.h"]
    assert '#include <stddef.h>\n#include "rounding.h"\n' in api and "enum LibRounding" not in api
    assert "void lib_round(int rounding);" in api


def test_a_name_the_moved_code_needs_must_move_too(tmp_path):
    """is_fp8<fp8> names the alias fp8, which common.h declares after where it would include the
    moved header: the library's build would not compile; refused, naming it and the remedy."""
    with pytest.raises(ApplyError, match=r"names fp8, .*after where it would include") as e:
        _move(tmp_path, ["LIB_FP8", "is_fp8"])
    assert "prelude_copy" in e.value.hint


def test_a_later_rule_appends_to_the_header_an_earlier_rule_made(tmp_path):
    _, cs, files = _move(tmp_path, ["LIB_FP8", "fp16", "fp8", "fp32", "is_fp8"])
    (tmp_path / "common.h").write_text(files["common.h"])
    (tmp_path / "common_device.h").write_text(cs.new_files["common_device.h"])
    moved, cs2, files2 = _move(tmp_path, ["is_fp8", "kTile"], files["common.h"], rule="later")
    assert moved.names == ["kTile"] and not cs2.new_files                  # is_fp8 moved already
    device = files2["common_device.h"]
    assert device.count("struct is_fp8 : detail::false_type") == 1
    assert device.index("constexpr int kTile = 32;") < device.index("#endif  // LIB_COMMON_DEVICE_H_")
    assert "kTile" not in files2["common.h"] and files2["common.h"].count('#include "common_device.h"') == 1


def test_move_to_names_a_replaced_header(tmp_path):
    """A `move_to` key that the prelude does not replace is a rule error naming it."""
    import yaml

    from codemod.apply.plan.spec import migrate_spec
    from codemod.errors import RuleError
    from codemod.rule import load_rule

    from codemod.apply.golden import GOLDEN

    doc = yaml.safe_load((GOLDEN / "buildlib" / "rule.yaml").read_text())
    doc["migrate"]["kernel_strings"]["move_to"] = {"util/other.h": "util/other_device.h"}
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(RuleError, match="move_to names util/other.h, not in replace_with_prelude"):
        migrate_spec(load_rule(str(path)))


def test_a_prelude_holding_only_the_moved_header_is_not_written(tmp_path, capsys):
    """buildlib whose C API header includes cuda_fp16.h and cuda_bf16.h (the rule's prelude
    includes): include/buildlib/quant.h's prelude would include include/buildlib/rounding.h, where
    its enum moves with those two includes, and nothing else. No prelude file is written; NVRTC
    reads rounding.h under quant.h's include names, and the programs still compile (the precheck).
    common.h's prelude, which declares the dtype aliases, stays."""
    import json
    import shutil

    from codemod.apply.golden import GOLDEN
    from codemod.cli import main

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "buildlib" / "input", root)
    api = root / "include" / "buildlib" / "quant.h"
    api.write_text(api.read_text().replace("#include <cuda_runtime.h>\n",
                                           "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_runtime.h>\n"))
    rule = GOLDEN / "buildlib" / "rule.yaml"
    diff = tmp_path / "out.diff"
    assert main(["apply", "--target", str(rule), str(root), "--diff", str(diff), "-q"]) == 0, capsys.readouterr().err
    patch = diff.read_text()
    assert "rtc/quant/prelude/include/buildlib/quant.h" not in patch
    assert "+++ b/rtc/quant/prelude/common.h" in patch
    manifest = json.loads(Path(str(diff) + ".manifest.json").read_text())
    seen = {name: path for k in manifest["kernels"] for name, path in k["headers"].items()}
    assert seen.get("buildlib/quant.h") == "include/buildlib/rounding.h"
