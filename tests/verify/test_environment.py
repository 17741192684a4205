"""verify tells the build environment's failures (a library header or package missing, a CMake
configure failing) from the generated code's, names what is missing and the remedy; finds only the
tree's own manifests; times every program. No real CMake or nvcc: the toolchain is stubbed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codemod.cli import main
from codemod.verify.host import missing_from_log
from codemod.verify.manifest import find_manifests

from .conftest import MINILIB

CMAKE_LOG = """-- The CXX compiler identification is GNU 12.2.0
CMake Error at CMakeLists.txt:120 (message):
  cudnn_frontend.h not found: set CUDNN_FRONTEND_INCLUDE_DIR or install cudnn-frontend
-- Configuring incomplete, errors occurred!
"""


def test_missing_from_log_reads_gcc_edg_and_cmake():
    assert missing_from_log("a.cu:3:10: fatal error: cudnn.h: No such file or directory\n") == (["cudnn.h"], [])
    assert missing_from_log('x.cu(4): catastrophic error: cannot open source file "nccl.h"\n') == (["nccl.h"], [])
    assert missing_from_log(CMAKE_LOG) == (["cudnn_frontend.h"], [])
    assert missing_from_log("CMake Error: Could NOT find CUDNN (missing: CUDNN_INCLUDE_DIR)") == ([], ["CUDNN"])
    assert missing_from_log("a.cu(1): error: identifier \"x\" is undefined") == ([], [])
    # an error inside a header is not that header missing
    assert missing_from_log("ops/a.h:3:5: error: member 'x' not found in 'S'") == ([], [])
    assert missing_from_log("x.cpp:1:10: fatal error: 'nccl.h' file not found") == (["nccl.h"], [])


def _toolchain(monkeypatch, nvcc="/bin/true"):
    monkeypatch.setattr("codemod.verify.host.find_nvcc", lambda explicit=None: nvcc)
    real_which = shutil.which
    monkeypatch.setattr("codemod.verify.host.shutil.which",
                        lambda name, *a, **k: "/usr/bin/cmake" if name == "cmake" else real_which(name, *a, **k))


def test_configure_missing_header_is_the_environment(minilib, monkeypatch, capsys):
    _toolchain(monkeypatch)
    monkeypatch.setattr("codemod.verify.host.configure", lambda *a, **k: (False, CMAKE_LOG))
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q", "--json", str(minilib / "v.json")])
    captured = capsys.readouterr()
    assert rc == 2, captured.out
    assert "host code: NOT CHECKED, the build environment stopped it: CMake configure" in captured.out
    assert "- missing: cudnn_frontend.h" in captured.out
    assert "- remedy: install the package that provides cudnn_frontend.h" in captured.out
    assert "The generated code compiled with NVRTC" in captured.out
    assert "Fix the generated code" not in captured.out
    err = captured.err.strip()
    assert err.count("\n") == 0 and err.startswith("codemod: error: the build environment stopped the host check")
    assert "missing: cudnn_frontend.h" in err and "every NVRTC program compiled" in err
    host = json.loads((minilib / "v.json").read_text())["host"]
    assert host["status"] == "environment" and host["missing"] == ["cudnn_frontend.h"]


def test_configure_error_in_a_file_the_migration_edited_is_the_generated_code(minilib, monkeypatch, capsys):
    _toolchain(monkeypatch)
    manifest = minilib / "rtc/scale/codemod_manifest.json"
    doc = json.loads(manifest.read_text())
    doc.setdefault("files", {})["CMakeLists.txt"] = {"before": "0" * 64, "after": "1" * 64}
    manifest.write_text(json.dumps(doc))
    log = "CMake Error at CMakeLists.txt:12 (target_sources):\n  Cannot find source file:\n    rtc/scale/nope.cpp\n"
    monkeypatch.setattr("codemod.verify.host.configure", lambda *a, **k: (False, log))
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "Fix the generated code (or the rule)" in out and "build environment" not in out


def test_configure_error_outside_the_migration_is_the_environment(minilib, monkeypatch, capsys):
    _toolchain(monkeypatch)
    log = "CMake Error at cmake/deps.cmake:3 (message):\n  need a newer compiler\n"
    monkeypatch.setattr("codemod.verify.host.configure", lambda *a, **k: (False, log))
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q"])
    out = capsys.readouterr().out
    assert rc == 2
    assert "the error is in cmake/deps.cmake, which the migration did not edit" in out


def _compile_db(root: Path, message: str) -> Path:
    """A compile database whose stub unit 'fails' printing `message` (a shell in place of nvcc)."""
    db = root / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(root), "file": "rtc/scale/scale_stub.cpp",
                               "arguments": ["/bin/sh", "-c", f"echo '{message}' >&2; exit 1"]}]))
    return db


def test_unit_stopped_at_a_library_header_is_the_environment(minilib, monkeypatch, capsys):
    _toolchain(monkeypatch)
    db = _compile_db(minilib, "rtc/scale/scale_stub.cpp:2:10: fatal error: cudnn_frontend.h: No such file or directory")
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q", "--compile-db", str(db)])
    out = capsys.readouterr().out
    assert rc == 2, out
    assert "- host rtc/scale/scale_stub.cpp: stopped at a missing header" in out
    assert "host: not checked (build environment: cudnn_frontend.h)" in out


def test_unit_missing_a_generated_header_is_the_generated_code(minilib, monkeypatch, capsys):
    _toolchain(monkeypatch)
    db = _compile_db(minilib, "ops/launch.cu:2:10: fatal error: scale_stub.h: No such file or directory")
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q", "--compile-db", str(db)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "- host rtc/scale/scale_stub.cpp: compile failed" in out and "build environment" not in out


def test_verbose_lists_every_program_with_its_time(minilib, capsys):
    rc = main(["verify", str(minilib), "--no-host", "--arch", "sm_90", "--arch", "sm_100a", "-v", "-q"])
    out = capsys.readouterr().out
    assert rc == 0
    listing = out.split("NVRTC programs, slowest first (wall s, CPU s):\n")[1].split("\n\n")[0].splitlines()
    assert len(listing) >= 2 and all("mini::scale_kernel" in line and line.endswith(" ok") for line in listing)
    seconds = [float(line.split()[0]) for line in listing]
    assert seconds == sorted(seconds, reverse=True)
    assert "(slowest mini::scale_kernel sm_" in out.splitlines()[-1]


# --- manifest discovery -----------------------------------------------------------------------------

def _legacy_tree(dest: Path) -> Path:
    shutil.copytree(MINILIB, dest)
    return dest


def test_verify_of_a_folder_does_not_borrow_a_nested_trees_manifest(tmp_path, capsys):
    outer = tmp_path / "trees"
    outer.mkdir()
    _legacy_tree(outer / "other")                       # other/rtc/scale/codemod_manifest.json
    _legacy_tree(outer / "a" / "b" / "c" / "deep")      # far below: never scanned
    assert find_manifests(outer) == []
    rc = main(["verify", str(outer), "--no-host", "-q"])
    assert rc == 2
    assert f"no migration manifest for {outer}" in capsys.readouterr().err


def test_own_legacy_manifest_is_found_where_its_output_dir_puts_it(tmp_path):
    tree = _legacy_tree(tmp_path / "lib")
    _legacy_tree(tree / "vendored")                     # a nested tree's manifest is not the library's
    assert find_manifests(tree) == [tree / "rtc/scale/codemod_manifest.json"]


def test_stored_manifest_comes_from_the_trees_state_location_only(tmp_path):
    from codemod.tool_state import manifest_path

    tree = tmp_path / "lib"
    tree.mkdir()
    stored = manifest_path(tree, "scale")
    stored.parent.mkdir(parents=True)
    stored.write_text("{}")
    _legacy_tree(tmp_path / "lib" / "copies" / "old")   # another tree inside: not found
    assert find_manifests(tree) == [stored]
