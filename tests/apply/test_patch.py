"""Edits to files: identical edits from several sources dedupe, overlapping different ones are an
error naming both; the write refuses a tree that changed since the diff was computed."""

from __future__ import annotations

import shutil

import pytest

from codemod.apply.command import compute
from codemod.apply.base.changeset import ChangeSet, Edit
from codemod.apply.golden import GOLDEN
from codemod.apply.emit.texts import apply_edits
from codemod.apply.write.patch import line_counts, write_all
from codemod.errors import ApplyError

RULE = str(GOLDEN / "actlib" / "activation.yaml")


def test_identical_edits_dedupe(tmp_path):
    (tmp_path / "h.h").write_text("int a;\nint b;\n")
    guard = [Edit("h.h", 7, 7, "#ifndef X\n", f"guard seen from TU {i}") for i in range(3)]
    files = apply_edits(tmp_path, ChangeSet(edits=guard))
    assert files == {"h.h": ("int a;\nint b;\n", "int a;\n#ifndef X\nint b;\n")}


def test_overlapping_edits_name_both_sources(tmp_path):
    (tmp_path / "h.h").write_text("x = 1;\n")
    edits = [Edit("h.h", 0, 5, "y = ", "rename from rule A"), Edit("h.h", 2, 6, "= 2", "value from rule B")]
    with pytest.raises(ApplyError) as exc:
        apply_edits(tmp_path, ChangeSet(edits=edits))
    text = exc.value.render()
    assert text.startswith("h.h: overlapping edits") and "rename from rule A" in text and "value from rule B" in text


def test_line_counts():
    assert line_counts(None, "a\nb\n") == (2, 0)
    assert line_counts("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)


@pytest.mark.parametrize("change", ["edit", "create"])
def test_write_refuses_a_tree_that_changed_since(tmp_path, change):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    files, _, _ = compute(root, RULE)
    if change == "edit":
        (root / "CMakeLists.txt").write_text((root / "CMakeLists.txt").read_text() + "# a local edit\n")
        expected = "CMakeLists.txt: changed since the migration was computed"
    else:
        (root / "rtc/activation").mkdir()
        (root / "rtc/activation/kernels.h").write_text("// someone else's file\n")
        expected = "rtc/activation/kernels.h: exists, but the migration creates it"
    with pytest.raises(ApplyError) as exc:
        write_all(root, files)
    assert exc.value.render().startswith(expected)
    assert not (root / "rtc/activation/codemod_manifest.json").exists()
    assert not any(p.name.startswith(".codemod-") for p in root.iterdir())
