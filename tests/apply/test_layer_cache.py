"""Layer feature `cache` (codemod/apply/emit/layer_cache.py): the edits on small layer sources (the
compile function keeps its NVRTC calls; the key, load and store and every lock are at its call
sites), the shapes it refuses (one line naming file:line, nothing changed), detection of a layer that
has it, and the entry format's Python copy."""

from __future__ import annotations

import re

import pytest

from codemod.apply.emit import layer_cache
from codemod.errors import ApplyError
from codemod.verify import rtc_cache

LAYER = b"""#include "rtc.h"

#include <nvrtc.h>

namespace lib {
// Compiles a kernel once.
void Manager::compile(const std::string &label, const std::string &name, const std::string &code) {
  std::unique_lock<std::shared_mutex> guard(mutex_);
  if (map_.count(label) > 0) return;
  nvrtcProgram prog;
  const char *opts[] = {"--std=c++17"};
  nvrtcCreateProgram(&prog, code.c_str(), "x.cu", 0, nullptr, nullptr);
  nvrtcAddNameExpression(prog, name.c_str());
  CHECK(nvrtcCompileProgram(prog, 1, opts));
  const char *lowered;
  nvrtcGetLoweredName(prog, name.c_str(), &lowered);
  std::string cubin(size, '\\0');
  nvrtcGetCUBIN(prog, cubin.data());
  map_.emplace(label, Kernel(lowered, cubin));
  nvrtcDestroyProgram(&prog);
}
}  // namespace lib
"""


def _apply(data: bytes, edits) -> bytes:
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        data = data[:e.start] + e.text.encode() + data[e.end:]
    return data


def _edits(data: bytes = LAYER, others=()):
    return layer_cache.layer_edits(data, "util/rtc.cpp", "util/rtc.h", "util/rtc_cache.h", list(others))


def test_edits():
    out = _apply(LAYER, _edits()).decode()
    assert '#include "rtc.h"\n#include "rtc_cache.h"\n' in out
    # the label's mutex defined in the source, above the compile function and its comment
    assert out.index("std::mutex &label_mutex(const std::string &label) {") < out.index("// Compiles a kernel once.")
    assert ("  std::lock_guard<std::mutex> label_lock(label_mutex(label));  // then the layer's lock\n"
            "  std::unique_lock<std::shared_mutex> guard(mutex_);\n") in out
    # the NVRTC calls are the layer's own, unchanged
    for call in ('nvrtcCreateProgram(&prog, code.c_str(), "x.cu", 0, nullptr, nullptr);',
                 "CHECK(nvrtcCompileProgram(prog, 1, opts));", "nvrtcGetCUBIN(prog, cubin.data());",
                 "nvrtcDestroyProgram(&prog);"):
        assert out.count(call) == 1, call
    # key over the calls' own arguments; released before it, taken again where the map is used
    assert ('    cache_key = rtc_cache::key(code.c_str(), "x.cu", 0, nullptr, nullptr, name.c_str(), 1, opts);\n'
            in out)
    body = out[out.index("  guard.unlock();"):]
    assert body.index("guard.unlock();") < body.index("rtc_cache::key(") < body.index("nvrtcCreateProgram(")
    assert ("  if (!cache_key.empty() && rtc_cache::load(cache_key, &cached_name, &cached_code)) {\n"
            "    guard.lock();\n"
            "    map_.emplace(label, Kernel(cached_name, cached_code));\n"
            "    return;\n  }\n") in out
    assert ("  nvrtcGetCUBIN(prog, cubin.data());\n"
            "  if (!cache_key.empty()) rtc_cache::store(cache_key, lowered, cubin);\n"
            "  guard.lock();\n"
            "  map_.emplace(label, Kernel(lowered, cubin));\n") in out
    assert "const rtc_cache::FileLock file_lock(cache_key);" in out
    assert not re.findall(r"rtc_cache::(?:create_program|load_or_compile|ProgramHandle|CompileLock)", out)
    assert layer_cache.present(out.encode(), "util/rtc_cache.h") and not layer_cache.present(LAYER, "util/rtc_cache.h")


def test_the_label_mutex_joins_the_sources_anonymous_namespace():
    data = LAYER.replace(b"namespace lib {\n", b"namespace lib {\nnamespace {\n\nint helper();\n\n}  // namespace\n\n")
    out = _apply(data, _edits(data)).decode()
    assert out.count("namespace {") == 1
    assert ("int helper();\n\n// One mutex per kernel label: a label compiles once, while other labels compile "
            "and launch.\nstd::mutex &label_mutex(") in out
    assert "  return mutexes[label];\n}\n\n}  // namespace\n" in out


def test_a_copy_of_the_lowered_name_is_restored_too():
    data = LAYER.replace(b"  std::string cubin(", b"  const std::string mangled(lowered);\n  std::string cubin(")
    data = data.replace(b"Kernel(lowered, cubin)", b"Kernel(mangled, cubin)")
    out = _apply(data, _edits(data)).decode()
    assert "    map_.emplace(label, Kernel(cached_name, cached_code));\n" in out
    assert "rtc_cache::store(cache_key, lowered, cubin);" in out


@pytest.mark.parametrize("change, message", [
    (("  std::unique_lock<std::shared_mutex> guard(mutex_);\n", ""), "takes no lock at its top level"),
    (("std::unique_lock<std::shared_mutex> guard(mutex_);", "std::lock_guard<std::mutex> guard(mutex_);"),
     "is not a std::unique_lock"),
    (("  nvrtcDestroyProgram(&prog);\n", "  guard.unlock();\n  nvrtcDestroyProgram(&prog);\n"),
     "the compile lock `guard` is used again"),
    (("  nvrtcAddNameExpression(prog, name.c_str());\n",
      "  nvrtcAddNameExpression(prog, name.c_str());\n  nvrtcAddNameExpression(prog, \"&x\");\n"),
     "calls nvrtcAddNameExpression 2 times"),
    (("  const char *opts[] = {\"--std=c++17\"};\n", ""), "no function calls"),
    (("Kernel(lowered, cubin)", "Kernel(lowered, cubin, size)"), "keeps `size`"),
    (('#include "rtc.h"\n', ""), "no #include of rtc.h"),
])
def test_refused_shapes(change, message):
    data = LAYER.replace(change[0].encode(), change[1].encode())
    if message == "no function calls":      # the options declared after the program is created
        data = LAYER.replace(b'  const char *opts[] = {"--std=c++17"};\n', b"").replace(
            b"  CHECK(nvrtcCompileProgram", b'  const char *opts[] = {"--std=c++17"};\n  CHECK(nvrtcCompileProgram')
        message = "`opts` is declared after the program is created"
    if message == "keeps `size`":
        data = data.replace(b"  std::string cubin(size,", b"  int size = 1;\n  std::string cubin(size,")
    assert data != LAYER
    with pytest.raises(ApplyError) as err:
        _edits(data)
    assert message in str(err.value) and "\n" not in str(err.value).split(" (hint")[0]


def test_second_compile_function_refused():
    data = LAYER.replace(b"}  // namespace lib", b"void other(nvrtcProgram p) { nvrtcCompileProgram(p, 0, nullptr); }\n"
                         b"}  // namespace lib")
    with pytest.raises(ApplyError, match=r"util/rtc.cpp:\d+: a second function calls nvrtcCompileProgram"):
        _edits(data)


def test_a_call_another_feature_replaces_is_refused():
    """norm13's `extend` routes compile's nvrtcCreateProgram through a helper that appends the
    caller's headers: the key would miss them, so the cache refuses that layer."""
    at = LAYER.index(b"nvrtcCreateProgram(")
    with pytest.raises(ApplyError, match="another layer feature"):
        _edits(others=[(at, at + len(b"nvrtcCreateProgram("), "create_program_with_headers(extra_headers, ")])
    # compile_program's helper takes NVRTC's arguments as they are: the key is the same
    at = LAYER.index(b"nvrtcCompileProgram(")
    assert _edits(others=[(at, at + len(b"nvrtcCompileProgram"), "compile_program_one_target")])


def test_entry_round_trip_and_damage():
    key = rtc_cache.hash128(b"material")
    data = rtc_cache.encode(key, "_Z1kv", b"\x7fELF...")
    assert rtc_cache.decode(data, key) == {"lowered": "_Z1kv", "code": b"\x7fELF..."}
    assert rtc_cache.decode(data, rtc_cache.hash128(b"other")) is None
    assert rtc_cache.decode(data[:-1], key) is None
    assert rtc_cache.decode(data[:10] + b"X" + data[11:], key) is None


def test_the_header_is_small_and_names_nothing_of_nvrtc():
    from codemod.apply.emit.generate import render

    layer = {"header": "util/rtc.h", "source": "util/rtc.cpp", "manager": "::lib::rtc::KernelManager::instance()",
             "cache": {"env_prefix": "LIB_RTC_CACHE", "default_dir": "lib/rtc"}}
    cfg = layer_cache.settings(layer)
    text = render("layer/rtc_cache.h.j2", banner="b", guard="G", layer_source=cfg["source"], namespace=cfg["namespace"],
                  env=cfg["env"], default_dir=cfg["default_dir"])
    assert len(text.splitlines()) < 400
    assert "LIB_RTC_CACHE_DIR" in text and "namespace lib::rtc {" in text
    # NVRTC is only asked its version: the header neither compiles nor stands in for a program
    assert set(re.findall(r"\bnvrtc[A-Z]\w*\(", text)) == {"nvrtcVersion("}
