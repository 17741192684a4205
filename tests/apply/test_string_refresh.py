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
    return cmake.replace(fn, without)


def _function(cmake: str) -> str:
    return re.search(r"function\(make_string_header_from_file.*?endfunction\(\)\n", cmake, re.S).group(0)


def _strings_block(cmake: str) -> str:
    return re.search(r"foreach\(rtc_file IN ITEMS.*?endforeach\(\)\n", cmake, re.S).group(0)


def _te_shaped(root: Path, read_as_te: bool = True) -> None:
    """actlib's function as TE's: no configure dependency, and (`read_as_te`) reading its argument
    itself, `file(READ "${source_file}" ...)` (actlib reads a variable it sets from it)."""
    cmake = root / "CMakeLists.txt"
    text = _te_shaped_function(cmake.read_text())
    if read_as_te:
        assert text.count('file(READ "${source_path}"') == 1
        text = text.replace('file(READ "${source_path}"', 'file(READ "${source_file}"')
    cmake.write_text(text)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "TE-shaped"], cwd=root,
                   check=True, capture_output=True)


def test_the_string_function_gets_the_configure_dependency_in_the_layer_part(actlib_git, tmp_path):
    """Every file the function embeds refreshes, the library's own calls' too (TE's utils.cuh and
    util/math.h): the dependency goes into the function, in the NVRTC layer's part, once; the rule's
    block calls the function and adds none of its own."""
    _te_shaped(actlib_git)
    diff, layer = tmp_path / "k.diff", tmp_path / "l.diff"
    assert main(["apply", "--target", RULE, str(actlib_git), "--diff", str(diff), "--layer-diff", str(layer),
                 "--no-precheck", "-q"]) == 0
    assert layer.read_text().count("CMAKE_CONFIGURE_DEPENDS") == 1
    assert '+  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source_file}")' in layer.read_text()
    assert "CMAKE_CONFIGURE_DEPENDS" not in diff.read_text()
    # a function that has one already (actlib as it is) is not edited
    subprocess.run(["git", "checkout", "-q", "HEAD~1", "--", "CMakeLists.txt"], cwd=actlib_git, check=True)
    assert main(["apply", "--target", RULE, str(actlib_git), "--diff", str(diff), "--layer-diff", str(layer),
                 "--no-precheck", "-q", "--allow-dirty"]) == 0
    assert "CMAKE_CONFIGURE_DEPENDS" not in layer.read_text() + diff.read_text()


def test_a_string_function_not_recognised_leaves_the_dependency_to_the_block(actlib_git, tmp_path):
    """A function that reads its file through a variable (actlib's own `${source_path}`), without a
    dependency: not edited; the block makes each file it embeds a configure dependency itself."""
    _te_shaped(actlib_git, read_as_te=False)
    diff, layer = tmp_path / "k.diff", tmp_path / "l.diff"
    assert main(["apply", "--target", RULE, str(actlib_git), "--diff", str(diff), "--layer-diff", str(layer),
                 "--no-precheck", "-q"]) == 0
    assert "CMAKE_CONFIGURE_DEPENDS" not in layer.read_text()
    assert diff.read_text().count("CMAKE_CONFIGURE_DEPENDS ${rtc_file}") == 1


@needs_cmake
def test_an_embedded_file_edit_rebuilds_its_string_with_plain_ninja(actlib_git, tmp_path):
    _te_shaped(actlib_git)
    assert main(["apply", "--target", RULE, str(actlib_git), "--write", "--no-precheck", "-q"]) == 0
    migrated = (actlib_git / "CMakeLists.txt").read_text()
    block = _strings_block(migrated)
    assert EMBEDDED in block
    assert "CMAKE_CONFIGURE_DEPENDS" not in block and "CMAKE_CONFIGURE_DEPENDS" in _function(migrated)
    # a CMake project of its own around apply's function and block: the string headers, no compiler needed
    own = "make_string_header_from_file(rtc/transpose.cu string_code_rtc_transpose_cu)\n"   # the library's own call
    assert own in migrated
    (actlib_git / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(strings LANGUAGES NONE)\n"
        + _function(migrated) + own + block + "add_custom_target(strings ALL)\n")
    build = tmp_path / "build"
    run = lambda *cmd: subprocess.run(cmd, cwd=actlib_git, check=True, capture_output=True, text=True)
    run("cmake", "-S", ".", "-B", str(build), "-G", "Ninja")
    header = build / "string_headers" / "string_code_util_vectorized_pointwise_h.h"
    assert "edited after the migration" not in header.read_text()
    source = actlib_git / EMBEDDED
    source.write_text(source.read_text() + "// edited after the migration\n")
    run("ninja", "-C", str(build))
    assert "edited after the migration" in header.read_text()
    # a string of the library's own call refreshes too (TE's utils.cuh, util/math.h)
    own_source, own_header = actlib_git / "rtc/transpose.cu", build / "string_headers/string_code_rtc_transpose_cu.h"
    own_source.write_text(own_source.read_text() + "// edited after the migration\n")
    run("ninja", "-C", str(build))
    assert "edited after the migration" in own_header.read_text()
