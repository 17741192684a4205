"""Framework types in kernels' template arguments (PyTorch's `c10::Half`, `at::BFloat16`, ...).
NVRTC programs cannot include PyTorch's headers. With `migrate.types.framework: torch` the 16-bit
float types, whose layout and float conversions are CUDA's own, are CUDA's types in the NVRTC
programs (aliases the programs declare before the kernel's header; name expressions keep the
extension's spelling); any other framework type leaves its kernel static, the reason naming it."""

from __future__ import annotations

import re

# PyTorch type -> the CUDA type of identical layout NVRTC programs use for it
TORCH = {"c10::Half": "__half", "at::Half": "__half", "c10::BFloat16": "__nv_bfloat16",
         "at::BFloat16": "__nv_bfloat16"}
_NAME = re.compile(r"(?<![\w:])(?:::)?(?:c10|at|torch)::[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def names(text: str) -> set[str]:
    """The framework names a spelled template argument holds, without a leading `::`."""
    return {m.group(0).lstrip(":") for m in _NAME.finditer(text)}


def mapped(spec) -> dict[str, str]:
    return dict(TORCH) if spec.types.get("framework") == "torch" else {}


def refusal(kernel_id: str, variants, spec) -> str | None:
    """Why the kernel stays static: a variant spelling a framework type NVRTC cannot have."""
    table = mapped(spec)
    for v in variants:
        for param, value in v.axes.items():
            for name in sorted(names(value)):
                if name in table:
                    continue
                if name in TORCH:
                    return (f"template argument {param} = `{value}` of {kernel_id} spells the PyTorch type "
                            f"`{name}`, which NVRTC programs cannot include; `migrate.types.framework: torch` maps "
                            f"it to CUDA's `{TORCH[name]}` (same layout and conversions)")
                return (f"template argument {param} = `{value}` of {kernel_id} spells the PyTorch type `{name}`, "
                        "which NVRTC programs cannot include and which has no CUDA type of the same layout and "
                        "behaviour codemod maps it to; leave the kernel out of migrate.kernels")
    return None


def uses(kernel_plans, spec) -> bool:
    """Whether these kernels' programs need the aliases (a variant spells a mapped type)."""
    table = mapped(spec)
    return any(n in table for kp in kernel_plans for v in kp.variants for value in v.axes.values()
               for n in names(value))
