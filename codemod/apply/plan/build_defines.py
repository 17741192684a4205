"""The library's build-time macros (`migrate.options.build_defines`): the stubs pass each to NVRTC
as the host compile saw it; the precheck and `codemod verify` need a value of their own, the
default the library's headers give it (`#ifndef NAME` / `#define NAME 10`), found here."""

from __future__ import annotations

from pathlib import Path

from ...errors import ApplyError
from ..base import source


def macro_values(data: bytes, name: str) -> list[str]:
    """The values of every object-like `#define name value` in a file (tree-sitter), in file order."""
    out = []
    for node in source._walk(source.parse(data)):
        if node.type != "preproc_def":
            continue
        ident, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if ident is not None and source.node_text(data, ident) == name:
            out.append(source.node_text(data, value).strip() if value is not None else "")
    return out


def defaults(root: Path, spec) -> dict[str, str]:
    """NAME -> the value the library's headers define it to when the build does not: looked up in
    the headers the stubs include (the error header, `stub_includes`) and the headers replaced by a
    prelude (NVRTC never sees their copy: the stubs pass the host's value). None or two different
    values refuse the tree: the precheck and verify would guess."""
    names = spec.options.get("build_defines", [])
    if not names:
        return {}
    headers = list(dict.fromkeys([*([spec.layer["error_header"]] if spec.layer.get("error_header") else []),
                                  *spec.stub_includes, *spec.kernel_strings.get("replace_with_prelude", [])]))
    texts = {h: (root / h).read_bytes() for h in headers if (root / h).is_file()}
    out = {}
    for name in names:
        found = {(h, v) for h, data in texts.items() for v in macro_values(data, name)}
        values = sorted({v for _, v in found})
        if len(values) != 1 or not values[0]:
            what = (f"defines it {len(values)} ways ({'; '.join(f'{h}: {v!r}' for h, v in sorted(found))})"
                    if found else "has no `#define` of it")
            raise ApplyError(f"migrate/options/build_defines: {name}: {', '.join(headers) or 'no header'} {what}",
                             where=headers[0] if headers else None,
                             hint="the precheck and `codemod verify` compile with the library's default: give "
                                  f"{name} one `#ifndef {name}` / `#define {name} <value>` in a header the stubs "
                                  "include (stub_includes)")
        out[name] = values[0]
    return out
