"""Layer feature `cache` (codemod/apply/emit/layer_cache.py): the edits on small layer sources, the shapes
it refuses (one line naming file:line, nothing changed), detection of a layer that has it, and
`codemod warm`'s refusals."""

from __future__ import annotations

import json
import re

import pytest

from codemod.apply.emit import layer_cache
from codemod.cli import main
from codemod.errors import ApplyError
from codemod.verify import rtc_cache

LAYER = b"""#include "rtc.h"

#include <nvrtc.h>

namespace lib {
void Manager::compile(const std::string &label, const std::string &name, const std::string &code) {
  std::unique_lock<std::shared_mutex> guard(mutex_);
  if (map_.count(label) > 0) return;
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, code.c_str(), "x.cu", 0, nullptr, nullptr);
  nvrtcAddNameExpression(prog, name.c_str());
  const char *opts[] = {"--std=c++17"};
  CHECK(nvrtcCompileProgram(prog, 1, opts));
  int major, minor;
  nvrtcVersion(&major, &minor);
  nvrtcDestroyProgram(&prog);
}
}  // namespace lib
"""


def _apply(data: bytes, edits) -> bytes:
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        data = data[:e.start] + e.text.encode() + data[e.end:]
    return data


def test_edits():
    out = _apply(LAYER, layer_cache.layer_edits(LAYER, "util/rtc.cpp", "util/rtc.h", "util/rtc_cache.h")).decode()
    assert '#include "rtc.h"\n#include "rtc_cache.h"\n' in out
    assert "rtc_cache::CompileLock guard(mutex_, label);" in out and "unique_lock" not in out
    for fn in ("create_program", "add_name_expression", "destroy_program"):
        assert f"  rtc_cache::{fn}(" in out
    # the layer's mutex released around the compile, in the compile function (not in a callee)
    assert ("  guard.unlock();  // launches and other variants go on\n"
            "  CHECK(rtc_cache::load_or_compile(prog, 1, opts));\n  guard.lock();\n") in out
    assert "  rtc_cache::ProgramHandle prog;" in out
    assert not re.findall(r"\bnvrtc(?:Program\b|\w+Program\(|AddNameExpression|GetCUBIN)", out)   # no NVRTC name
    assert "  nvrtcVersion(&major" in out              # no program: left alone
    assert layer_cache.present(out.encode(), "util/rtc_cache.h") and not layer_cache.present(LAYER, "util/rtc_cache.h")


@pytest.mark.parametrize("change, message", [
    (("  std::unique_lock<std::shared_mutex> guard(mutex_);\n", ""), "takes no lock at its top level"),
    (("nvrtcVersion(&major, &minor);", "nvrtcGetLTOIRSize(prog, nullptr);"), "uses nvrtcGetLTOIRSize"),
    (("nvrtcVersion(&major, &minor);", "auto f = &nvrtcCompileProgram;"), "uses nvrtcCompileProgram"),
    (("  nvrtcDestroyProgram(&prog);\n", "  guard.unlock();\n  nvrtcDestroyProgram(&prog);\n"),
     "the compile lock `guard` is used again"),
    (('#include "rtc.h"\n', ""), "no #include of rtc.h"),
])
def test_refused_shapes(change, message):
    data = LAYER.replace(change[0].encode(), change[1].encode())
    with pytest.raises(ApplyError) as err:
        layer_cache.layer_edits(data, "util/rtc.cpp", "util/rtc.h", "util/rtc_cache.h")
    assert message in str(err.value) and "\n" not in str(err.value).split(" (hint")[0]


def test_second_compile_function_refused():
    data = LAYER.replace(b"}  // namespace lib", b"void other(nvrtcProgram p) { nvrtcCompileProgram(p, 0, nullptr); }\n"
                         b"}  // namespace lib")
    with pytest.raises(ApplyError, match=r"util/rtc.cpp:\d+: a second function calls nvrtcCompileProgram"):
        layer_cache.layer_edits(data, "util/rtc.cpp", "util/rtc.h", "util/rtc_cache.h")


def test_entry_round_trip_and_damage():
    key = rtc_cache.hash128(b"material")
    data = rtc_cache.encode(key, [("&k", "_Z1kv")], b"\x7fELF...", b"")
    assert rtc_cache.decode(data, key) == {"lowered": [("&k", "_Z1kv")], "cubin": b"\x7fELF...", "ptx": b""}
    assert rtc_cache.decode(data, rtc_cache.hash128(b"other")) is None
    assert rtc_cache.decode(data[:-1], key) is None
    assert rtc_cache.decode(data[:10] + b"X" + data[11:], key) is None


def test_warm_refusals(tmp_path, capsys):
    lst = tmp_path / "list.jsonl"
    assert main(["warm", str(lst), "--cache-dir", str(tmp_path / "c")]) == 2
    assert "cannot read" in capsys.readouterr().err
    lst.write_text("{not json\n")
    assert main(["warm", str(lst), "--cache-dir", str(tmp_path / "c")]) == 2
    assert f"{lst}:1: not a recorded program" in capsys.readouterr().err
    lst.write_text(json.dumps({"key": "1" * 32, "nvrtc": "13.0", "filename": "a.cu", "source": "0" * 32, "headers": [],
                               "names": ["&a"], "options": []}) + "\n")
    assert main(["warm", str(lst), "--cache-dir", str(tmp_path / "c")]) == 2
    assert "is missing from" in capsys.readouterr().err
    (tmp_path / "list.jsonl.sources").mkdir()
    (tmp_path / "list.jsonl.sources" / ("0" * 32)).write_text("changed")
    assert main(["warm", str(lst), "--cache-dir", str(tmp_path / "c")]) == 2
    assert "does not hash to its name" in capsys.readouterr().err


def test_with_another_layer_feature_in_the_same_source():
    """A feature that replaces a program call by a helper it generates (norm13's `extend` does so for
    compile's headers and options): the cache leaves that call to it and qualifies the helper's."""
    at = LAYER.index(b"nvrtcCreateProgram(")
    other = (at, at + len(b"nvrtcCreateProgram("), "helper_create(extra, ")
    helper = "nvrtcResult helper_create(int extra, nvrtcProgram *p) { return nvrtcCreateProgram(p, \"\", 0, 0, 0, 0); }"
    edits = layer_cache.merge(layer_cache.layer_edits(LAYER, "util/rtc.cpp", "util/rtc.h", "util/rtc_cache.h"),
                              [other[:2]])
    out = _apply(LAYER, edits + [layer_cache.LayerEdit("util/rtc.cpp", *other, "x")]).decode()
    assert "helper_create(extra, &prog" in out and "rtc_cache::create_program" not in out
    assert "rtc_cache::load_or_compile(" in out
    assert layer_cache.qualify_generated(helper) == (
        "nvrtcResult helper_create(int extra, rtc_cache::ProgramHandle *p) { "
        "return rtc_cache::create_program(p, \"\", 0, 0, 0, 0); }")
    assert layer_cache.qualify_generated("rtc_cache::get_cubin(p, b); x.nvrtcVersion();") == \
        "rtc_cache::get_cubin(p, b); x.nvrtcVersion();"


@pytest.mark.parametrize("pch, minimal", [(True, True), (True, False), (False, True), (False, False)])
def test_the_options_the_layer_adds_are_warms(pch, minimal):
    """The generated layer adds kPchOptions, then kMinimalOptions, each with its rule key: in that
    order they are `codemod warm`'s LAYER_OPTIONS (what it drops to compile a failed program again,
    as the layer does). Neither key: no option added, no second compile."""
    import re

    from codemod.apply.emit.generate import render
    from codemod.verify import warm

    layer = {"header": "util/rtc.h", "source": "util/rtc.cpp", "manager": "::lib::rtc::KernelManager::instance()",
             "cache": {"env_prefix": "LIB_RTC_CACHE", "default_dir": "lib/rtc", "pch": pch, "minimal": minimal}}
    cfg = layer_cache.settings(layer)
    text = render("layer/rtc_cache.h.j2", banner="b", guard="G", layer_source=cfg["source"], namespace=cfg["namespace"],
                  env=cfg["env"], default_dir=cfg["default_dir"], pch=cfg["pch"], minimal=cfg["minimal"],
                  list_options=cfg["list_options"], list_option_prefixes=cfg["list_option_prefixes"])
    sets = {name: re.findall(r'"([^"]+)"', body)
            for name, body in re.findall(r"constexpr const char \*(k\w+Options)\[\] = \{([^}]*)\};", text)}
    added = re.findall(r"add_options\(options, (k\w+Options)\)", text)
    listed = sets.pop("kListOptions")           # warm lists may carry what the layer adds, and no more
    assert set(sets.get("kPchOptions", [])) | set(sets.get("kMinimalOptions", [])) <= set(listed)
    assert ("-pch" in listed) == pch and ("-minimal" in listed) == minimal
    assert added == ["kPchOptions"] * pch + ["kMinimalOptions"] * minimal and sorted(sets) == sorted(added)
    expected = list(warm.PCH_OPTIONS) * pch + list(warm.MINIMAL_OPTIONS) * minimal
    assert [o for name in added for o in sets[name]] == expected
    assert ("LIB_RTC_CACHE_MINIMAL=0" in text) == minimal and ("LIB_RTC_CACHE_PCH=0" in text) == pch
    assert ("compile_once" in text) == (pch or minimal)          # the retry path only with an option added


@pytest.mark.parametrize("shape", [
    "  if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) return;\n",
    "  return (void)nvrtcCompileProgram(prog, 1, opts);\n",
])
def test_compile_call_must_be_a_statement_of_its_own(shape):
    data = LAYER.replace(b"  CHECK(nvrtcCompileProgram(prog, 1, opts));\n", shape.encode())
    with pytest.raises(ApplyError, match=r"util/rtc.cpp:\d+: nvrtcCompileProgram is not called in a statement"):
        layer_cache.layer_edits(data, "util/rtc.cpp", "util/rtc.h", "util/rtc_cache.h")


def test_list_options_take_every_rule_option_and_no_file_writer():
    """Warm lists (<prefix>_WARM) may carry each option of every rule in rules/ and golden/ (else the
    warm-up would skip their programs), and none of NVRTC's options that write or load a file."""
    from codemod.apply.golden import GOLDEN
    from codemod.rule import load_rule_file

    rules = sorted(GOLDEN.parent.glob("rules/*.yaml")) + sorted(GOLDEN.glob("*/rule.yaml")) + \
        sorted(GOLDEN.glob("*/activation.yaml"))
    assert len(rules) > 5
    for path in rules:
        options = load_rule_file(path).raw.get("migrate", {}).get("options", {})
        layer_cache.check_rule_options(options, path.stem)
    for o in ("--time=/home/u/.bashrc", "--create-pch=/x", "--use-pch=/x", "-pch-dir=/x", "--pch-dir=/x",
              "--fdevice-time-trace=/x", "-time=/x", "-pch", "-minimal", "-D", "-I"):
        assert not layer_cache.list_option(o), o
    assert layer_cache.list_option("-pch", pch=True) and layer_cache.list_option("-minimal", minimal=True)
    assert layer_cache.list_option("--gpu-architecture=sm_100a") and layer_cache.list_option("-DNDEBUG=1")
    with pytest.raises(ApplyError, match="--time=x is not an option"):
        layer_cache.check_rule_options({"always": ["--std=c++17", "--time=x"]}, "r")
