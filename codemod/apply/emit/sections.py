"""Where each part of the host stubs goes: `<output_dir>/kernels.h`, or the section of a library
header, `<output_dir>/kernels_<stem>.h`. Every kernel's launcher type and factory go to the section
of the header defining it (the type is `decltype` of the kernel, so it follows the kernel; the header
includes its section right after its kernels: generate._include_section), and kernels.h declares the
factories some launch site names before their section (generate._first_in_section). A spelling (a
template argument as a name expression writes it) goes to kernels.h when every unit has read what
it names where the unit first reaches kernels.h (through a header that launches a kernel or defines
one), else to the section of the header declaring that name (TE: cast/fp8's `DequantizeParam`,
4over6's `Config`). Each part is written once, where what it names
exists by construction."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ApplyError
from ..base import source
from ..base.tree import HEADER_SUFFIXES, read_overlay, resolve_include, units_reaching

# a name spelled with at least one qualifier (`::ns::Config`, `E::kName`), not inside a longer one
_QUALIFIED = re.compile(r"(?<![\w:])(?:::)?(?:[A-Za-z_]\w*::)+[A-Za-z_]\w*")
# an unqualified name (`ScanTraits` of `ScanTraits<32, true>`: a library at global scope), not part of a
# qualified one; a toolkit or builtin name is declared by no library header and stays in kernels.h
_UNQUALIFIED = re.compile(r"(?<![\w:])[A-Za-z_]\w*(?![\w:])")


@dataclass
class Layout:
    """kernels.h's reach and the sections: `reach`, the library headers kernels.h includes
    (transitively), and `visible`, the library headers every unit has read where it includes
    kernels.h (`reach` among them); `spelling_home` / `kernel_home`: a spelling or kernel id -> the
    library header whose section holds it (absent: kernels.h); `section`: that header -> the
    section's path."""
    reach: set[str] = field(default_factory=set)
    visible: set[str] = field(default_factory=set)
    spelling_home: dict[str, str] = field(default_factory=dict)
    kernel_home: dict[str, str] = field(default_factory=dict)
    section: dict[str, str] = field(default_factory=dict)


class _Files:
    """Library files as the migration reads them, their includes resolved and their namespace-scope
    declarations of the names asked for (tree-sitter), cached."""

    def __init__(self, root: Path, spec, extractions: dict, names: set[str]):
        self.root, self.spec, self.extractions, self.names = root, spec, extractions, names
        self._declared: dict[str, set[tuple[str, str]]] = {}
        self._includes: dict[str, list[str]] = {}

    def declared(self, path: str) -> set[tuple[str, str]]:
        if path not in self._declared:
            self._declared[path] = source.declared_names(read_overlay(self.root, path, self.extractions), self.names)
        return self._declared[path]

    def includes(self, path: str) -> list[str]:
        if path not in self._includes:
            data = read_overlay(self.root, path, self.extractions)
            found = (resolve_include(self.root, path, inc, self.spec.include_dirs) for inc in source.includes(data))
            self._includes[path] = [t for t in found if t is not None]
        return self._includes[path]

    def closure(self, starts: list[str]) -> list[str]:
        """Library files reached from `starts` (themselves included), breadth first."""
        order, seen, todo = [], set(), list(starts)
        while todo:
            path = todo.pop(0)
            if path in seen or not (self.root / path).is_file() and not any(
                    ex.header == path for ex in self.extractions.values()):
                continue
            seen.add(path)
            order.append(path)
            todo += [t for t in self.includes(path) if t not in seen]
        return order


def _candidates(spelled: str, scope: list[str]) -> list[tuple[str, str]]:
    """(namespace, name) pairs a spelled name may be declared as at namespace scope: from the
    global namespace when it starts with `::`, else from each namespace of `scope` outwards; for
    `A::B::c` also `A::B` itself (an enumerator or member of a declared class: its enclosing
    declaration is what must be visible)."""
    rooted = spelled.startswith("::")
    parts = spelled.lstrip(":").split("::")
    scopes = [""] if rooted else ["::".join(scope[:i]) for i in range(len(scope), -1, -1)]
    out = []
    for k in range(len(parts), 0, -1):
        for s in scopes:
            ns = "::".join(p for p in [s, *parts[:k - 1]] if p)
            out.append((ns, parts[k - 1]))
    return out


def _home(files: _Files, spelled: str, scope: list[str], visible: set[str], search: list[str]) -> str | None:
    """The library header a spelled name needs, or None when a header visible where kernels.h is
    included declares it (or no library header does: a toolkit or builtin name, or one of a
    translation unit)."""
    for ns, name in _candidates(spelled, scope):
        if any((ns, name) in files.declared(p) for p in visible):
            return None
        found = next((p for p in search if (ns, name) in files.declared(p)), None)
        if found is not None:
            return found if found.endswith(HEADER_SUFFIXES) else None
    return None


def _before_stubs(files: _Files, unit: str, rewritten: set[str]) -> set[str] | None:
    """The library files a unit has read whole where it first includes kernels.h (after the
    includes of the first rewritten file it reaches; include order, each file once), or None when
    it reaches none. The files still open at that point (its includers) count as unread."""
    done: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> bool:
        seen.add(path)
        for target in files.includes(path):
            if target not in seen and visit(target):
                return True
        if path in rewritten:
            return True
        done.append(path)
        return False

    return set(done) if visit(unit) else None


def section_path(output_dir: str, header: str, headers: list[str]) -> str:
    """`<output_dir>/kernels_<stem>.h`; with the folders when two headers share a stem."""
    stem = posixpath.splitext(posixpath.basename(header))[0]
    if sum(1 for h in headers if posixpath.splitext(posixpath.basename(h))[0] == stem) > 1:
        stem = "_".join(re.sub(r"\W", "_", p) for p in posixpath.splitext(header)[0].split("/"))
    return f"{output_dir}/kernels_{stem}.h"


def layout(root: Path, plan, spellings: set[str], stubs_includes: list[str]) -> Layout:
    """The sections of the stubs: each kernel, placed with the header defining it, and each spelling
    (a type or function argument as `<PREFIX>_RTC_SPELLING` writes it) kernels.h cannot see, placed
    with the header that declares what it names. `stubs_includes`: the library headers kernels.h includes
    (the rule's stub_includes, and what rtc_stubs.h includes: the layer header, the error header)."""
    spec = plan.spec
    spelled = {v: _QUALIFIED.findall(v) + _UNQUALIFIED.findall(v) for v in sorted(spellings)}
    asked = {part for names in spelled.values() for n in names for part in n.lstrip(":").split("::")}
    files = _Files(root, spec, plan.extractions, asked)
    reach = set(files.closure([s for s in stubs_includes if (root / s).is_file()]))
    # the files that include kernels.h: those launching a kernel, and (through its section) those
    # defining one
    rewritten = {s.file for kp in plan.kernels for s in kp.sites} | {
        kp.source_file or kp.kernel.file for kp in plan.kernels if kp.kernel.file not in plan.extractions}
    # the units including a rewritten header, and the rewritten units themselves
    units = sorted(set(units_reaching(root, rewritten, spec.include_dirs, skip=spec.output_dir))
                   | {f for f in rewritten if not f.endswith(HEADER_SUFFIXES)})
    visible: set[str] | None = None
    for unit in units:
        seen = _before_stubs(files, unit, rewritten)
        if seen is not None:
            visible = (reach | seen) if visible is None else visible & (reach | seen)
    visible = reach if visible is None else visible
    search = [p for p in files.closure(units) if p not in visible]
    out = Layout(reach=reach, visible=visible)
    for kp in plan.kernels:
        # every kernel's stubs follow its definition: the launcher type comes from the kernel itself
        out.kernel_home[kp.kernel.id] = kp.declared_in or kp.source_file or kp.kernel.file
    for value, names in spelled.items():
        homes = {h for h in (_home(files, n, [], visible, search) for n in names) if h}
        if not homes:
            continue
        last = [h for h in sorted(homes) if homes <= set(files.closure([h]))]
        if not last:
            raise ApplyError(f"the stubs spell `{value}`, whose names are declared in {', '.join(sorted(homes))}, "
                             "none of which includes the others: no header can hold its spelling",
                             hint="exclude the kernels whose variants spell it, or declare those names "
                                  "in one header")
        out.spelling_home[value] = last[0]
    headers = sorted({*out.spelling_home.values(), *out.kernel_home.values()})
    out.section = {h: section_path(spec.output_dir, h, headers) for h in headers}
    return out
