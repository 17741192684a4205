"""rules/normalization on the parent of TE's own norm NVRTC migration (aef96db0c^): all 12 kernel
templates migrate from the rule alone; the RMSNorm backward union loses its zero-length padding by
specialization, and TE's NVRTC layer (util/rtc.{h,cpp}) gains exactly the features the stubs call.
Runs only with TE_NORM_SOURCE_DIR (the checkout's repository root)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.cli import main

SOURCE = os.environ.get("TE_NORM_SOURCE_DIR")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not SOURCE, reason="TE_NORM_SOURCE_DIR is not set")]


def test_all_twelve_kernels_migrate_with_the_layer_extended(tmp_path):
    repo = tmp_path / "te"
    shutil.copytree(Path(SOURCE) / "transformer_engine", repo / "transformer_engine",
                    ignore=shutil.ignore_patterns(".git", "build", "*.so"))
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True)
    patch, report = tmp_path / "n.patch", tmp_path / "n.md"
    assert main(["apply", "--target", "normalization", str(repo / "transformer_engine/common"),
                 "--diff", str(patch), "--report", str(report), "--quiet"]) == 0
    text, rep = patch.read_text(), report.read_text()
    assert "12 kernels migrated" in rep and "Left static\n\n- nothing" in rep
    assert "dx_add_t::_padding can be a zero-length array" in rep
    assert ("the NVRTC layer lacked compile_headers, compile_program, function_for, set_function_attribute, occupancy, "
            "launch_cooperative: added (nvrtc_layer.extend)") in rep
    assert "union dx_add_t<Ivec, Ovec, FusedAdd, false> {" in text
    # the layer's own compile keeps its body: its program calls go through the helpers; no other
    # line of TE's is removed (the rule has no disk cache: extend's helpers hide headers from a key)
    rtc_cpp = text[text.index("diff --git a/transformer_engine/common/util/rtc.cpp"):]
    rtc_cpp = rtc_cpp[:rtc_cpp.index("\ndiff --git") if "\ndiff --git" in rtc_cpp else None]
    added = "\n".join(line for line in rtc_cpp.splitlines() if line.startswith("+"))
    assert "create_program_with_headers(extra_headers," in added and "compile_program_with_options(extra_options," in added
    removed = [line for line in rtc_cpp.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert all(any(k in line for k in ("KernelManager::compile(", "filename)", "nvrtc", "include_names));", "lock_guard"))
               for line in removed), removed
    assert "rtc_cache" not in added
    # a second apply on the migrated tree adds nothing to the layer
    assert subprocess.run(["git", "apply", str(patch)], cwd=repo).returncode == 0
    again = tmp_path / "again.patch"
    main(["apply", "--target", "normalization", str(repo / "transformer_engine/common"), "--diff", str(again),
          "--quiet", "--allow-dirty"])
    assert "util/rtc" not in (again.read_text() if again.exists() else "")
