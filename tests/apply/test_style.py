"""The target's conventions read at apply time (codemod/apply/emit/style.py): license header, pinned
clang-format, changed-line formatting, comment wrapping, and the diff's repository-root paths."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import pytest

from codemod.apply.emit import style
from codemod.apply.command import repo_location
from codemod.apply.write.patch import unified_diff
from codemod.errors import ApplyError

HEADER = "/*\n * Copyright (c) 2022-2025, Example Corp. All rights reserved.\n *\n * See LICENSE.\n */\n"


def test_license_header_is_the_leading_comment_of_the_named_file(tmp_path):
    (tmp_path / "a.cu").write_text(HEADER + "\n#include <x.h>\n")
    assert style.license_header(tmp_path, "a.cu") == HEADER
    now = style.license_header(tmp_path, "a.cu", "current", datetime.date(2027, 3, 1))
    assert "Copyright (c) 2022-2027, Example Corp." in now
    (tmp_path / "b.cu").write_text("// Copyright 2027 X\n// more\nint x;\n")
    assert style.license_header(tmp_path, "b.cu", "current", datetime.date(2027, 3, 1)) == "// Copyright 2027 X\n// more\n"


def test_license_header_refused_without_a_copyright(tmp_path):
    (tmp_path / "a.cu").write_text("// just a comment\nint x;\n")
    with pytest.raises(ApplyError, match="no copyright"):
        style.license_header(tmp_path, "a.cu")
    with pytest.raises(ApplyError, match="no such file"):
        style.license_header(tmp_path, "missing.cu")


def test_pinned_version_from_a_pre_commit_config(tmp_path):
    cfg = tmp_path / ".pre-commit-config.yaml"
    cfg.write_text("repos:\n  - repo: https://github.com/pre-commit/mirrors-clang-format\n    rev: v18.1.6\n"
                   "    hooks:\n      - id: clang-format\n")
    assert style.pinned_version(cfg) == "18.1.6"
    cfg.write_text("repos:\n  - repo: local\n    hooks:\n      - id: cf\n"
                   "        additional_dependencies: ['clang-format==17.0.6']\n")
    assert style.pinned_version(cfg) == "17.0.6"


def test_missing_pinned_version_falls_back_with_a_warning(tmp_path):
    (tmp_path / ".clang-format").write_text("BasedOnStyle: LLVM\nColumnLimit: 90\n")
    (tmp_path / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: https://github.com/pre-commit/mirrors-clang-format\n    rev: v1.0.0\n")
    s = style.target_style(tmp_path)
    assert s.pinned == "1.0.0" and s.warning and "pins clang-format 1.0.0" in s.warning
    assert s.style == f"file:{tmp_path / '.clang-format'}" and s.column_limit == 90


def test_only_changed_lines_are_formatted(tmp_path):
    (tmp_path / ".clang-format").write_text("BasedOnStyle: Google\nColumnLimit: 60\n")
    old = "int   keep( int a ){return a;}\nint x;\n"
    new = "int   keep( int a ){return a;}\nint x;\nint   added( int a ){return a;}\n"
    out = style.format_edits({"f.h": (old, new)}, style.target_style(tmp_path))
    assert out["f.h"][1].splitlines()[0] == "int   keep( int a ){return a;}"      # untouched
    assert "int added(int a) { return a; }" in out["f.h"][1]


def test_long_comments_are_wrapped():
    text = "  // " + " ".join(["word"] * 30) + "\nint x;\n"
    out = style.wrap_comments(text, 40)
    assert all(len(line) <= 40 for line in out.splitlines())
    assert all(line.startswith("  // ") for line in out.splitlines()[:-1])


def test_diff_paths_are_relative_to_the_repository_root(tmp_path):
    """Before: paths relative to the library root, so `git apply --check` failed from the
    repository root (TE: transformer_engine/common)."""
    lib = tmp_path / "pkg" / "lib"
    lib.mkdir(parents=True)
    (lib / "a.h").write_text("int a;\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, check=True, capture_output=True)
    top, prefix = repo_location(lib)
    assert prefix == "pkg/lib/" and top.resolve() == tmp_path.resolve()
    diff = tmp_path / "d.patch"
    diff.write_text(unified_diff({"a.h": ("int a;\n", "int a;\nint b;\n"), "n.h": (None, "int n;\n")}, prefix))
    r = subprocess.run(["git", "apply", "--check", str(diff)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert repo_location(Path("/")) == (None, "")


def test_a_new_library_file_is_formatted_whole_only_with_a_target_style(tmp_path):
    """A header that device code moved into is a new library file: TE's hook formats it whole."""
    files = {"moved.cuh": (None, "int   f( int a ){return a;}\n"), "notes.txt": (None, "a   b\n")}
    assert style.format_edits(files, style.target_style(tmp_path)) == files      # no .clang-format
    (tmp_path / ".clang-format").write_text("BasedOnStyle: Google\n")
    out = style.format_edits(files, style.target_style(tmp_path))
    assert out["moved.cuh"][1] == "int f(int a) { return a; }\n" and out["notes.txt"] == files["notes.txt"]


def test_added_lines_keep_the_files_derived_pointer_alignment(tmp_path):
    """DerivePointerAlignment: added lines written `T &x` in a file written `T& x` are formatted
    `T& x`: otherwise they outnumber the file's own and the target's hook flags untouched lines."""
    exe, _ = style.find_clang_format(None)
    if exe is None:
        pytest.skip("clang-format not installed")
    (tmp_path / ".clang-format").write_text("BasedOnStyle: Google\nDerivePointerAlignment: true\n"
                                            "PointerAlignment: Left\nColumnLimit: 100\n")
    target = style.TargetStyle(exe, None, f"file:{tmp_path / '.clang-format'}")
    old = "void f(const int& a);\nvoid g(int& b);\n"
    added = "".join(f"void h{i}(const std::string &x{i}, int *p{i});\n" for i in range(5))
    out = style.format_edits({"a.cpp": (old, old + added)}, target)["a.cpp"][1]
    assert "const std::string& x0, int* p0" in out and "const int& a" in out
    checked = subprocess.run([exe, f"--style=file:{tmp_path / '.clang-format'}", "--dry-run", "-Werror",
                              "--assume-filename=a.cpp"], input=out, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # and a file written `T &x` keeps that
    right = "void f(const int &a);\nvoid g(int &b);\n"
    out = style.format_edits({"b.cpp": (right, right + "void k(int& c);\n")}, target)["b.cpp"][1]
    assert "void k(int &c);" in out
