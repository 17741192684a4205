"""options.arch_targets_from: the arch-specific NVRTC targets read from the CMake list where the
static build decides them (issue 29: CMake's arch policy in one place, not a table in each rule)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codemod.apply.plan.arch_policy import from_cmake
from codemod.errors import ApplyError

# TE d0067d0's shape: the policy under toolkit-version branches, heads moved out of the list.
CMAKE = """
set(NVTE_SPECIFIC_ARCHS)
list(FIND CMAKE_CUDA_ARCHITECTURES "100" arch_100_index)
if(NOT arch_100_index EQUAL -1)
  list(APPEND NVTE_GENERIC_ARCHS "100")
  list(APPEND NVTE_SPECIFIC_ARCHS "100a")
  if(CUDAToolkit_VERSION VERSION_GREATER_EQUAL 12.9)
    list(APPEND NVTE_SPECIFIC_ARCHS "103a")
  endif()
endif()
if(NOT arch_120_index EQUAL -1)
  if(CUDAToolkit_VERSION VERSION_GREATER_EQUAL 12.9)
    list(APPEND NVTE_SPECIFIC_ARCHS "120f")
  else()
    list(APPEND NVTE_SPECIFIC_ARCHS "120a")
  endif()
endif()
list(APPEND NVTE_SPECIFIC_ARCHS ${EXTRA_ARCHS})  # not a literal: left out
"""


def test_literal_entries_family_preferred(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    assert from_cmake(tmp_path, "CMakeLists.txt", "NVTE_SPECIFIC_ARCHS") == {100: "sm_100a", 103: "sm_103a",
                                                                              120: "sm_120f"}


def test_a_list_without_targets_is_refused(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    with pytest.raises(ApplyError, match="appends no arch-specific target"):
        from_cmake(tmp_path, "CMakeLists.txt", "NVTE_GENERIC_ARCHS")


@pytest.mark.skipif(not os.environ.get("TE_SOURCE_DIR"), reason="TE_SOURCE_DIR is not set")
def test_te_cmake():
    common = Path(os.environ["TE_SOURCE_DIR"]) / "transformer_engine/common"
    assert from_cmake(common, "CMakeLists.txt", "NVTE_SPECIFIC_ARCHS") == {
        100: "sm_100a", 101: "sm_101a", 103: "sm_103a", 107: "sm_107a", 110: "sm_110f", 120: "sm_120f"}
