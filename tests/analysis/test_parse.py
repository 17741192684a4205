"""Parse orchestration: shared (umbrella) parses and their per-TU redo, the scheduling estimate,
the prefix PCH."""

from pathlib import Path

from codemod.frontend.clang_index import parse_tu
from codemod.frontend.parse import IncludeGraph, ParseJob, build_pch, parse_all
from codemod.frontend.toolchain import make_toolchain


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _timeless(facts: list[dict]) -> list[dict]:
    return [{k: v for k, v in f.items() if k not in ("parse_seconds", "cpu_seconds", "from_cache")} for f in facts]


def test_clashing_shared_parse_is_redone_per_tu(tmp_path):
    _write(tmp_path, {
        "clash/a.cu": "static int helper() { return 1; }\nint run_a() { return helper(); }\n",
        "clash/b.cu": "static int helper() { return 2; }\nint run_b() { return helper(); }\n",
        "clean/common.h": "#pragma once\ninline int shared() { return 3; }\n",
        "clean/c.cu": '#include "common.h"\nint run_c() { return shared(); }\n',
        "clean/d.cu": '#include "common.h"\nint run_d() { return shared() + 1; }\n',
    })
    tus = ["clash/a.cu", "clash/b.cu", "clean/c.cu", "clean/d.cu"]
    facts, stats = parse_all(tmp_path, tus, [f"-I{tmp_path}"], jobs=2)
    # The clean directory stays one parse; the clashing one is parsed together once (its
    # redefinition error is what sends it back), then TU by TU, after the rest.
    assert [f["tu"] for f in facts] == ["clean/*", "clash/a.cu", "clash/b.cu"]
    assert stats["parsed"] == 4 and stats["parses"] == 3
    assert not any(d["severity"] == "error" for f in facts for d in f["diagnostics"])
    names = {fn["name"] for f in facts for fn in f["functions"].values()}
    assert {"run_a", "run_b", "run_c", "run_d", "helper"} <= names
    # A warm run goes straight to the TUs and parses nothing.
    warm, warm_stats = parse_all(tmp_path, tus, [f"-I{tmp_path}"], jobs=2)
    assert warm_stats["parsed"] == 0 and _timeless(warm) == _timeless(facts)
    # One worker, in this process: the same facts in the same order.
    serial, _ = parse_all(tmp_path, tus, [f"-I{tmp_path}"], jobs=1, use_cache=False)
    assert _timeless(serial) == _timeless(facts)


def test_estimate_follows_includes_through_the_project(tmp_path):
    _write(tmp_path, {
        "src/a.cu": '#include "local.h"\n#include <lib/api.h>\n#include <vector>\n',
        "src/b.cu": '#include <lib/api.h>\n#include <cuda/barrier>\n',
        "src/local.h": '#include <lib/api.h>\n#include "missing.h"\n#include <cub/cub.cuh>\n',
        "include/lib/api.h": "#pragma once\nint api();\n",
        "src/unused.h": "int unused();\n",
    })
    flags = [f"-I{tmp_path / 'include'}"]
    # Bytes of each project file included, once; CCCL only when every TU includes some of it.
    cost, cccl = IncludeGraph(tmp_path).estimate(ParseJob("src/*", str(tmp_path), flags, ["src/a.cu", "src/b.cu"]))
    assert cost == sum((tmp_path / rel).stat().st_size for rel in ("src/a.cu", "src/b.cu", "src/local.h", "include/lib/api.h"))
    assert cccl
    _write(tmp_path, {"src/c.cu": "#include <lib/api.h>\n"})
    assert not IncludeGraph(tmp_path).estimate(ParseJob("src/*", str(tmp_path), flags, ["src/a.cu", "src/c.cu"]))[1]


def test_prefix_pch_leaves_project_name_lookup_alone(tmp_path):
    # A project namespace `cuda` used after `using namespace` (as TE's common does) must stay
    # unambiguous, and POSIX names stay free for project functions, with and without the PCH.
    src = tmp_path / "tu.cu"
    src.write_text("namespace proj { namespace cuda { int current_device(); } }\n"
                   "int device() { using namespace proj; return cuda::current_device(); }\n"
                   "static int close(int handle) { return handle; }\n"
                   "int closed() { return close(3); }\n")
    flags = make_toolchain([]).base_flags()
    pch = build_pch(flags)
    assert pch is not None
    for extra in ([], ["-include-pch", str(pch)]):
        _, facts = parse_tu(src, tmp_path, flags + extra)
        assert facts["diagnostics"] == []


def test_prefix_pch_clang_refuses_is_built_again(tmp_path, monkeypatch):
    """A cached prefix PCH that clang refuses to load makes libclang load no TU with it ("Error
    parsing translation unit": every TU, "libclang could not load any of the translation units").
    Seen after the environment was set up again under the same paths (a new venv and toolchain,
    the cache kept); simulated here with a damaged file. The lookup of the cached PCH finds that
    clang refuses it and builds it again."""
    from codemod.frontend import parse

    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(parse, "PCH_PREFIX", ("prefix_only.h",))
    _write(tmp_path, {"inc/prefix_only.h": "#pragma once\nint from_prefix();\n",
                      "src/a.cu": "#include <prefix_only.h>\nint a() { return from_prefix(); }\n"})
    flags = ["-isystem", str(tmp_path / "inc")]
    facts, _ = parse_all(tmp_path, ["src/a.cu"], flags, jobs=1, use_cache=False)
    pchs = list((tmp_path / "cache/pch").glob("*.pch"))
    assert len(pchs) == 1 and not facts[0].get("load_failed")
    data = pchs[0].read_bytes()
    pchs[0].write_bytes(data[: len(data) // 2])
    facts, _ = parse_all(tmp_path, ["src/a.cu"], flags, jobs=1, use_cache=False)
    assert not facts[0].get("load_failed"), facts[0]["diagnostics"]
    assert "a" in {fn["name"] for fn in facts[0]["functions"].values()}
    rebuilt = pchs[0].stat()
    assert rebuilt.st_size > len(data) // 2                                  # built again
    facts, _ = parse_all(tmp_path, ["src/a.cu"], flags, jobs=1, use_cache=False)
    assert not facts[0].get("load_failed") and pchs[0].stat().st_mtime_ns == rebuilt.st_mtime_ns   # and kept
