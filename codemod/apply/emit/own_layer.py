"""The NVRTC layer a migration adds to a library that has none (rule key `nvrtc_layer.create`): a
header and a source rendered from `templates/apply/own_layer/`, with the API the stubs call
(rtc_stubs.h), in the namespace and under the names the rule's `nvrtc_layer` gives."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ApplyError

FRAMEWORKS = ("none", "torch")


@dataclass(frozen=True)
class OwnLayer:
    header: str                 # library-relative paths of the files the migration adds
    source: str
    namespace: str              # `scan::rtc`
    manager: str                # the class: `KernelManager`
    header_type: str            # the in-memory header struct: `Header`
    error_macro: str
    framework: str              # none: std::runtime_error; torch: TORCH_CHECK
    include_dir_macro: str      # the build's define naming the CUDA toolkit's include folder


def settings(layer: dict, legacy_option: str) -> OwnLayer:
    """The layer to create, from the rule's `nvrtc_layer` (with `create`)."""
    where = "migrate/nvrtc_layer"
    if "source" not in layer:
        raise ApplyError("nvrtc_layer.create needs nvrtc_layer.source (the layer's .cpp the migration adds)",
                         where=where, hint="add `source:` beside `header:`, e.g. csrc/rtc/rtc.cpp")
    if "extend" in layer:
        raise ApplyError("nvrtc_layer.create and nvrtc_layer.extend exclude each other: a created layer has "
                         "everything the stubs call", where=where, hint="remove one of them")
    m = re.fullmatch(r"(?:::)?((?:\w+::)*\w+)::(\w+)::instance\(\)", layer["manager"])
    if m is None:
        raise ApplyError(f"nvrtc_layer.manager {layer['manager']!r}: a created layer's manager is spelled "
                         "`::<namespace>::<Class>::instance()`", where=where,
                         hint="e.g. ::scan::rtc::KernelManager::instance()")
    namespace, cls = m.group(1), m.group(2)
    ht = layer["header_type"].lstrip(":")
    if ht.rpartition("::")[0] != namespace:
        raise ApplyError(f"nvrtc_layer.header_type {layer['header_type']} is not in the layer's namespace "
                         f"{namespace} (from nvrtc_layer.manager)", where=where,
                         hint=f"spell it ::{namespace}::Header")
    prefix = legacy_option.partition("_BUILD_LEGACY_STATIC_")[0]
    return OwnLayer(header=layer["header"], source=layer["source"], namespace=namespace, manager=cls,
                    header_type=ht.rpartition("::")[2], error_macro=layer["error_macro"],
                    framework=layer["create"].get("framework", "none"),
                    include_dir_macro=f"{prefix}_CUDA_INCLUDE_DIR")


def check_tree(root: Path, own: OwnLayer) -> None:
    """A file of the tree at the layer's paths must be a layer the migration added (a second rule of
    the library regenerates it); anything else is the library's own file, never overwritten."""
    for path, mark in ((own.header, f"class {own.manager} {{"), (own.source, f"{own.manager}::compile(")):
        p = root / path
        if p.is_file() and mark not in p.read_text(errors="replace"):
            raise ApplyError(f"{path} exists and is not the NVRTC layer the rule describes (no `{mark}`)",
                             where=path, hint="point nvrtc_layer.header / source at new files, or drop "
                                              "nvrtc_layer.create if this is the library's own layer")


def render_files(own: OwnLayer, features: dict[str, bool], library: str, guard: Callable[[str], str],
                 render: Callable[..., str], include: Callable[[str, str], str]) -> dict[str, str]:
    """Library path -> text of the layer's header and source (unformatted)."""
    features = {name: bool(features.get(name)) for name in ("occupancy", "cooperative", "shared")}
    ctx = dict(library=library, namespace=own.namespace, manager=own.manager, header_type=own.header_type,
               error_macro=own.error_macro, framework=own.framework, features=features,
               include_dir_macro=own.include_dir_macro)
    return {own.header: render("own_layer/rtc.h.j2", guard=guard(own.header), **ctx),
            own.source: render("own_layer/rtc.cpp.j2", header_include=include(own.header, own.source), **ctx)}


def add(root: Path, layer: dict, legacy_option: str, library: str, features: dict[str, bool],
        render: Callable[..., str], fmt: Callable[[str, str], str], guard: Callable[[str], str],
        include: Callable[[str, str], str]) -> tuple[dict[str, str], str]:
    """(library path -> formatted text, a note for the report) of the layer the migration adds."""
    own = settings(layer, legacy_option)
    check_tree(root, own)
    files = render_files(own, features, library, guard, render, include)
    kept = [p for p, text in files.items() if (root / p).is_file()]
    note = (f"{own.header}, {own.source}: the NVRTC layer the library lacked "
            f"(nvrtc_layer.create, errors {'through TORCH_CHECK' if own.framework == 'torch' else 'as std::runtime_error'})"
            + (f"; regenerated: {', '.join(kept)}" if kept else ""))
    return {p: fmt(text, p) for p, text in files.items()}, note


def _strings_dir(rule_id: str) -> str:
    """The folder of the string headers under the build folder: one per library (every rule's
    blocks call the one function)."""
    return "kernel_strings"


def cmake_function(data: bytes, function: str, marker: str, rule_id: str, render: Callable[..., str]) -> str:
    """The string-header function, unless the CMake file defines it already (a second rule)."""
    if re.search(rb"(?mi)^[ \t]*function\(\s*" + re.escape(function.encode()) + rb"\s", data):
        return ""
    return render("own_layer/string_function.cmake.j2", marker=marker, function=function,
                  strings_dir=_strings_dir(rule_id))


def cmake_layer(layer: dict, legacy_option: str, target: str, marker: str, rule_id: str,
                render: Callable[..., str]) -> str:
    """The target's layer source, string headers' folder, CUDA include folder define and NVRTC."""
    own = settings(layer, legacy_option)
    return render("own_layer/cmake_layer.cmake.j2", marker=marker, target=target, source=own.source,
                  strings_dir=_strings_dir(rule_id), include_dir_macro=own.include_dir_macro)


def indented(text: str, indent: str) -> str:
    """`text` with `indent` before every non-blank line."""
    return "".join(indent + line if line.strip() else line for line in text.splitlines(True))


def conditional(text: str, condition: str) -> str:
    """A CMake block inside `if(<condition>)`, at the block's own indentation."""
    body = text.rstrip("\n")
    first = next((line for line in body.splitlines() if line.strip()), "")
    indent = first[:len(first) - len(first.lstrip())]
    tail = text[len(body):]
    return f"{indent}if({condition})\n" + indented(body + "\n", "  ") + f"{indent}endif()\n" + tail[1:]
