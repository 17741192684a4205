"""Framework types in kernels' template arguments (PyTorch's `c10::Half`, `at::BFloat16`, ...).
NVRTC programs cannot include PyTorch's headers. With `migrate.types.framework: torch` the 16-bit
float types, whose layout and float conversions are CUDA's own, are CUDA's types in the NVRTC
programs (aliases the programs declare before the kernel's header; name expressions keep the
extension's spelling); `c10::complex<T>` and ATen's `gpuAtomicAdd` come from NVRTC-only stand-ins
of their headers (FRAMEWORK_HEADERS, templates/apply/framework/); any other framework type leaves
its kernel static, the reason naming it."""

from __future__ import annotations

import re

# PyTorch type -> the CUDA type of identical layout NVRTC programs use for it
TORCH = {"c10::Half": "__half", "at::Half": "__half", "c10::BFloat16": "__nv_bfloat16",
         "at::BFloat16": "__nv_bfloat16"}
# PyTorch types the programs define through a framework header below (not aliases)
DEFINED = {"c10::complex": "c10/util/complex.h"}
# PyTorch header (as included) -> (its NVRTC stand-in's template, the framework headers it includes,
# the standard headers PyTorch's includes, which the stand-in includes when the rule shims them: the
# names a library takes from PyTorch's header that way are the shims'). Shipped under the same include name, so a kernel header's
# `#include <c10/util/complex.h>` finds the stand-in under NVRTC and PyTorch's own in the static
# build: the library's file is not edited.
FRAMEWORK_HEADERS = {
    "c10/util/complex.h": ("framework/c10_complex.h.j2", (), ("complex", "cmath")),
    "ATen/cuda/Atomic.cuh": ("framework/aten_atomic.cuh.j2", ("c10/util/complex.h",), ()),
}
_NAME = re.compile(r"(?<![\w:])(?:::)?(?:c10|at|torch)::[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def names(text: str) -> set[str]:
    """The framework names a spelled template argument holds, without a leading `::`."""
    return {m.group(0).lstrip(":") for m in _NAME.finditer(text)}


def mapped(spec) -> dict[str, str]:
    return dict(TORCH) if spec.types.get("framework") == "torch" else {}


def defined(spec) -> dict[str, str]:
    """Framework type -> the framework header whose NVRTC stand-in defines it."""
    return dict(DEFINED) if spec.types.get("framework") == "torch" else {}


def stand_in(spec, include_name: str) -> bool:
    """Whether an include is a PyTorch header the programs get the NVRTC stand-in of."""
    return spec.types.get("framework") == "torch" and include_name in FRAMEWORK_HEADERS


def stand_in_closure(include_name: str) -> list[str]:
    """The framework header and the framework headers its stand-in includes, transitively."""
    out, todo = [], [include_name]
    while todo:
        name = todo.pop()
        if name not in out:
            out.append(name)
            todo += FRAMEWORK_HEADERS[name][1]
    return out


def stand_in_std(spec, include_name: str) -> list[str]:
    """The standard headers a stand-in includes: its PyTorch header's that the rule shims."""
    shims = spec.kernel_strings.get("shims", {})
    return [std for std in FRAMEWORK_HEADERS[include_name][2] if std in shims]


def stand_in_path(output_dir: str, include_name: str) -> str:
    """The generated file of a stand-in, shipped to NVRTC under the framework's include name."""
    return f"{output_dir}/framework/{include_name}"


def layout_checks(shipped, output_dir: str) -> list[str]:
    """The framework headers whose types the NVRTC programs define themselves (the stand-ins
    shipped): kernels.cpp checks the extension's own types have the layout the stand-ins give them."""
    return [name for name in DEFINED.values() if stand_in_path(output_dir, name) in shipped]


def spelled_headers(variants, spec) -> list[str]:
    """Framework headers declaring the types a kernel's variants spell (`c10::complex<float>`): its
    program includes them, as it would any header declaring a type its name expressions spell."""
    table = defined(spec)
    return sorted({table[n] for v in variants for value in v.axes.values() for n in names(value) if n in table})


def refusal(kernel_id: str, variants, spec) -> str | None:
    """Why the kernel stays static: a variant spelling a framework type NVRTC cannot have."""
    table = {**mapped(spec), **defined(spec)}
    for v in variants:
        for param, value in v.axes.items():
            for name in sorted(names(value)):
                if name in table:
                    continue
                if name in TORCH:
                    return (f"template argument {param} = `{value}` of {kernel_id} spells the PyTorch type "
                            f"`{name}`, which NVRTC programs cannot include; `migrate.types.framework: torch` maps "
                            f"it to CUDA's `{TORCH[name]}` (same layout and conversions)")
                if name in DEFINED:
                    return (f"template argument {param} = `{value}` of {kernel_id} spells the PyTorch type "
                            f"`{name}`, which NVRTC programs cannot include; `migrate.types.framework: torch` "
                            f"gives the programs an NVRTC stand-in of `{DEFINED[name]}` defining it (same layout "
                            "and arithmetic)")
                return (f"template argument {param} = `{value}` of {kernel_id} spells the PyTorch type `{name}`, "
                        "which NVRTC programs cannot include and which has no CUDA type of the same layout and "
                        "behaviour codemod maps it to; leave the kernel out of migrate.kernels")
    return None


def uses(kernel_plans, spec) -> bool:
    """Whether these kernels' programs need the aliases (a variant spells a mapped type)."""
    table = mapped(spec)
    return any(n in table for kp in kernel_plans for v in kp.variants for value in v.axes.values()
               for n in names(value))
