"""The TE rules that move common.h's dtype aliases into common_device.h (move_to) list the toolkit
header each alias needs among their prelude includes: the moved header includes only those, and a
rule applied alone (not over another rule's common_device.h) must leave a common.h that nvcc
compiles whatever the unit included before it (rules/transpose.yaml lacked cuda_fp4.h: the static
units of verify --sass failed on `__nv_fp4_e2m1`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

RULES = Path(__file__).resolve().parents[2] / "rules"
# common.h's aliases (TE d0067d0) and the toolkit header declaring each one's type
NEEDS = {"fp16": "cuda_fp16.h", "bf16": "cuda_bf16.h", "fp8e4m3": "cuda_fp8.h", "fp8e5m2": "cuda_fp8.h",
         "fp8e8m0": "cuda_fp8.h", "fp4e2m1": "cuda_fp4.h", "fp4e2m1x2": "cuda_fp4.h", "fp4e2m1x4": "cuda_fp4.h"}


def _moving_rules() -> list[str]:
    out = []
    for path in sorted(RULES.glob("*.yaml")):
        strings = ((yaml.safe_load(path.read_text()) or {}).get("migrate") or {}).get("kernel_strings") or {}
        if strings.get("move_to") and set(strings.get("prelude_copy") or []) & set(NEEDS):
            out.append(path.stem)
    return out


def test_the_te_rules_that_move_the_aliases_are_found():
    assert {"activation", "transpose", "fused_router", "scaled_activation"} <= set(_moving_rules())


@pytest.mark.parametrize("rule", _moving_rules())
def test_a_rule_moving_a_dtype_alias_includes_the_header_of_its_type(rule):
    strings = yaml.safe_load((RULES / f"{rule}.yaml").read_text())["migrate"]["kernel_strings"]
    moved = set(strings["prelude_copy"]) & set(NEEDS)
    missing = sorted({NEEDS[alias] for alias in moved} - set(strings.get("prelude_includes") or []))
    assert not missing, f"rules/{rule}.yaml moves {sorted(moved)} but its prelude_includes lack {missing}"
