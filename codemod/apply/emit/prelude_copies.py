"""The declarations a prelude copies byte for byte from the header it replaces under NVRTC
(`kernel_strings.prelude_copy`): which ones a selection of kernels needs, their text grouped by
namespace and respelled for NVRTC, and the build-time checks that each copy still matches."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import ApplyError
from ..base import source
from . import stdnames
from ..base.changeset import ChangeSet
from ..base.tree import read_overlay, symbol_for
from ..plan.plan import Plan

Declarations = dict[str, list[tuple[str, str, str]]]    # header -> (namespace, name, text)

COPY_HASH_BASE = 1099511628211      # the polynomial hash rtc_stubs.h's holds rolls (copy_holds.h.j2)

# NOTE: each static_assert rolls a hash over the whole header once per copy; gcc stops a constant
# evaluation after 33,554,432 operations (-fconstexpr-ops-limit): TE's 54 KB common.h exceeded it
# with 12 copies in one assertion (8 passed). Six copies per assertion keep well below.
COPIES_PER_CHECK = 6


def copy_hash(text: str) -> tuple[int, int]:
    """(length in bytes, hash) of a copied declaration as kernels.h's `text_holds` computes them
    over the header's embedded text: sum of byte * BASE^(n-1-i), modulo 2^64."""
    h = 0
    data = text.encode()
    for b in data:
        h = (h * COPY_HASH_BASE + b) % (1 << 64)
    return len(data), h


def replaced_declarations(root: Path, replaced: list[str], names: list[str]) -> Declarations:
    """Replaced header -> the declarations of the prelude_copy `names` it holds, in file order: each
    header parsed once, for the selection, the sources and the copies below."""
    wanted = set(names)
    return {h: source.named_declarations((root / h).read_bytes(), wanted) if wanted else [] for h in replaced}


def selected_copies(root: Path, plan: Plan, shipped: dict[str, str], names: list[str], replaced: list[str],
                    declared: Declarations, cs: ChangeSet) -> list[str]:
    """The prelude copies a partial migration (--only, --exclude, declined kernels) needs: the names
    its programs' headers or name expressions spell, and the names those copies spell in turn. The
    others come with the pull request that migrates their kernels (`--update`); the precheck
    compiles every program of the selection, so a name this misses refuses the tree."""
    def spelled(text: str, among: set[str]) -> set[str]:
        return {n for n in among if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text)}

    texts = []
    for path in shipped:
        if path in cs.new_files:
            texts.append(cs.new_files[path])
        elif path not in replaced:
            try:
                texts.append(read_overlay(root, path, plan.extractions).decode(errors="replace"))
            except OSError:
                continue        # a generated file written later (its own names are not copies)
    texts += [v for kp in plan.kernels for var in kp.variants for v in var.axes.values()]
    wanted = spelled("\n".join(t for t in texts if t), set(names))
    text_of = {name: t for h in replaced for _, name, t in declared[h]}
    todo = list(wanted)
    while todo:
        more = spelled(text_of.get(todo.pop(), ""), set(names) - wanted)
        wanted |= more
        todo += more
    left = [n for n in names if n not in wanted]
    if left:
        cs.notes.append(f"prelude: {', '.join(left)} not copied (no selected kernel's program spells them; they come "
                        "with the kernels that do)")
    return [n for n in names if n in wanted]


def copy_sources(replaced: list[str], names: list[str], declared: Declarations) -> dict[str, list[str]]:
    """Replaced header -> the prelude_copy names it declares (each copied into that header's
    prelude); a name no replaced header declares refuses the tree (as one header's would)."""
    if len(replaced) < 2:
        return {h: list(names) for h in replaced}
    out: dict[str, list[str]] = {}
    for header in replaced:
        found = {name for _, name, _ in declared[header]}
        out[header] = [n for n in names if n in found]
    missing = [n for n in names if not any(n in v for v in out.values())]
    if missing:
        raise ApplyError(f"no replaced header declares {', '.join(missing)} to copy into a prelude",
                         where=replaced[0], hint="check migrate/kernel_strings/prelude_copy in the rule")
    return out


def copied(header: str, names: list[str], declared: Declarations, cs: ChangeSet) -> list[dict]:
    """Device-usable declarations the rule names, copied byte-for-byte from a replaced header into
    its prelude, grouped by namespace; a name not found refuses the tree."""
    if not names:
        return []
    found = [(ns, text) for ns, name, text in declared[header] if name in names]
    missing = sorted(set(names) - {name for _, name, _ in declared[header]})
    if missing:
        raise ApplyError(f"{header}: no declaration of {', '.join(missing)} to copy into the prelude",
                         where=header, hint="check migrate/kernel_strings/prelude_copy in the rule")
    cs.notes.append(f"{header}: {', '.join(sorted(set(names)))} copied into the NVRTC prelude "
                    f"({len(found)} declarations)")
    groups: list[dict] = []
    for ns, text in found:
        if groups and groups[-1]["namespace"] == ns:
            groups[-1]["texts"].append(text)
        else:
            groups.append({"namespace": ns, "texts": [text]})
    return groups


def checked(groups: list[dict], header: str, prelude: str, checks: list[dict]) -> list[dict]:
    """Record a build-time check per copied declaration (kernels.cpp: a static_assert that the
    header's embedded text still holds it, so a copy cannot drift silently); groups unchanged."""
    for g in groups:
        for t in g["texts"]:
            lines = t.split("\n")
            while lines and lines[0].lstrip().startswith("#if"):     # the header's own conditions around it
                lines = lines[1:-1]
            length, h = copy_hash("\n".join(lines))
            name = first_name(t)
            checks.append(dict(file=header, symbol=symbol_for(header), length=length, hash=h, name=name,
                               what=f"what {prelude} copies", copy=prelude))
    return groups


def grouped_checks(checks: list[dict]) -> list[dict]:
    """One static_assert per header and kind of copy (and per COPIES_PER_CHECK copies): its copies'
    (length, hash) and a message naming what changed (the declaration, or the kind when the header
    has several) and the file holding the copy to change with it."""
    groups: dict[tuple, dict] = {}
    for c in checks:
        key = (c["symbol"], c["what"])
        chunk = sum(1 for k in groups if k[:2] == key) - 1
        if chunk < 0 or len(groups[(*key, chunk)]["copies"]) == COPIES_PER_CHECK:
            chunk += 1
        g = groups.setdefault((*key, chunk), dict(symbol=c["symbol"], copies=[], names=[]))
        g["copies"].append(c)
        if c["name"] not in g["names"]:
            g["names"].append(c["name"])
    for (_, what, _), g in groups.items():
        names = g["names"]
        first = g["copies"][0]
        g["message"] = (f"{first['file']} changed {names[0] if len(names) == 1 else what}: "
                        f"update {first['copy']}")
    return list(groups.values())


def respell_copies(groups: list[dict], std_cfg: dict | None, used: set[str], ints: set[str]) -> list[dict]:
    """The prelude's copied declarations with their std uses in the rule's std_names namespace;
    the names they use are added to `used`, the `<cstdint>` integers they spell to `ints` (TE's
    align_up takes a uintptr_t: the std_names header must define it under NVRTC)."""
    if not std_cfg:
        return groups
    out = []
    for g in groups:
        texts = []
        for t in g["texts"]:
            new, names = stdnames.respell(t, std_cfg["namespace"], g["namespace"].split("::"))
            texts.append(new)
            used |= names
            ints |= stdnames.integer_names([t.encode()])
        out.append(dict(g, texts=texts))
    return out


def early_macros(groups: list[dict]) -> tuple[list[str], list[dict]]:
    """(the copied `#define`s, the other copies): the macros go before the prelude's includes, whose
    conditions may name them (FP4_TYPE_SUPPORTED), as in the header they are copied from."""
    macros, rest = [], []
    for g in groups:
        texts = []
        for t in g["texts"]:
            lines = [line for line in t.split("\n") if not line.lstrip().startswith("#if")]
            (macros if lines and lines[0].lstrip().startswith("#define") else texts).append(t)
        if texts:
            rest.append({**g, "texts": texts})
    return macros, rest


def prelude_includes(names: list[str], replaced: str, conds: dict[str, dict[str, list[str]]]) -> list[dict]:
    """A prelude's toolkit includes, each under the conditions its replaced header includes it with
    (TE's common.h: `#if FP4_TYPE_SUPPORTED` / `#include <cuda_fp4.h>`: an NVRTC before CUDA 12.8
    has no cuda_fp4.h). One another replaced header includes only conditionally is left out of a
    prelude whose header does not include it; the others are included as listed."""
    out = []
    for name in names:
        here = conds[replaced].get(name)
        if here is None and any(c.get(name) for c in conds.values()):
            continue
        out.append(dict(name=name, conds=here or []))
    return out


def first_name(text: str) -> str:
    """The name a copied declaration (or `#define`) introduces; a `#if` wrapper is looked through."""
    lines = text.split("\n")
    while lines and lines[0].lstrip().startswith("#if"):
        lines = lines[1:-1]
    text = "\n".join(lines)
    m = re.match(r"\s*#\s*define\s+(\w+)", text)
    if m:
        return m.group(1)
    return source._declared_name(source.parse(text.encode()).children[0], text.encode()) or ""
