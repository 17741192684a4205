"""Kernel strings that refresh: the library's string function reads an embedded file at configure
time (`file(READ)` + `configure_file`, as TE's `make_string_header_from_file`), so after an edit of
the file a plain `ninja` would keep the old string and NVRTC would compile stale code. The CMake
block apply adds makes every file it embeds a configure dependency: the edit re-runs CMake and the
string header holds the new text."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = str(GOLDEN / "actlib" / "activation.yaml")
EMBEDDED = "util/vectorized_pointwise.h"

needs_cmake = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")),
                                 reason="cmake and ninja are needed")


def _te_shaped_function(cmake: str) -> str:
    """actlib's string function without its own configure dependency (TE's function has none)."""
    fn = re.search(r"function\(make_string_header_from_file.*?endfunction\(\)\n", cmake, re.S).group(0)
    without = re.sub(r"  # Re-run the configure step.*\n  set_property\(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS .*\n",
                     "", fn)
    assert "CMAKE_CONFIGURE_DEPENDS" not in without
    return without


def _strings_block(cmake: str) -> str:
    return re.search(r"foreach\(rtc_file IN ITEMS.*?endforeach\(\)\n", cmake, re.S).group(0)


@needs_cmake
def test_an_embedded_file_edit_rebuilds_its_string_with_plain_ninja(actlib_git, tmp_path):
    assert main(["apply", "--target", RULE, str(actlib_git), "--write", "--no-precheck", "-q"]) == 0
    migrated = (actlib_git / "CMakeLists.txt").read_text()
    block = _strings_block(migrated)
    assert EMBEDDED in block
    # a CMake project of its own around apply's block: the string headers, no compiler needed
    (actlib_git / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(strings LANGUAGES NONE)\n"
        + _te_shaped_function(migrated) + block + "add_custom_target(strings ALL)\n")
    build = tmp_path / "build"
    run = lambda *cmd: subprocess.run(cmd, cwd=actlib_git, check=True, capture_output=True, text=True)
    run("cmake", "-S", ".", "-B", str(build), "-G", "Ninja")
    header = build / "string_headers" / "string_code_util_vectorized_pointwise_h.h"
    assert "edited after the migration" not in header.read_text()
    source = actlib_git / EMBEDDED
    source.write_text(source.read_text() + "// edited after the migration\n")
    run("ninja", "-C", str(build))
    assert "edited after the migration" in header.read_text()
