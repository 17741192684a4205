"""Runtime flags as values of one launcher: a value parameter of a migrated kernel that every launch
binds through a switch macro the rule lists (`migrate.launcher_values.switch_macros`), and whose
constant the switch's arms use nowhere but in the kernel's template arguments, becomes an argument
of the kernel's factory; the switch goes (its arms were copies of one code), and the launch passes
the switch's condition. What stays a switch, and why, goes to the report."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UnsupportedConstruct
from ..base.changeset import ChangeSet, Edit
from ..plan.kernel_api import _split_args
from .launch_rewrite import matching
from ..plan.names import enum_cast
from ..plan.plan import Plan

# the condition a switch's launches take instead: a variable or a member of one
_PLAIN = re.compile(r"^[A-Za-z_]\w*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)*$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class Switch:
    """One invocation `MACRO(condition, FLAG, body)` in `file` (byte offsets)."""
    file: str
    macro: str
    start: int          # the macro's name
    body: int           # the body's first byte
    close: int          # the invocation's `)`
    flag: str
    condition: str
    line: int = 0       # the macro's line (1-based)

    def encloses(self, at: int) -> bool:
        return self.body <= at < self.close


@dataclass(frozen=True)
class RuntimeParam:
    """A kernel template parameter its factory takes at run time."""
    name: str
    index: int          # position among the kernel's template parameters
    decl: str           # `bool RETURN_IDENTITY`, as the kernel's template head declares it
    type: str           # `bool`
    domain: tuple       # its values as C++ spells them, those the static build instantiated


@dataclass
class LauncherValues:
    params: dict[str, list[RuntimeParam]] = field(default_factory=dict)   # kernel id -> its runtime parameters
    switches: dict[str, list[Switch]] = field(default_factory=dict)       # file -> the switches that go
    kept: list[str] = field(default_factory=list)                         # what stays a switch, and why

    def summary(self) -> list[str]:
        """The report's lines: each factory's runtime parameters, the switches gone, what stays."""
        out = [f"`{k}` takes {', '.join(f'`{p.name}`' for p in ps)} at run time"
               for k, ps in sorted(self.params.items())]
        out += [f"{path}:{s.line}: `{s.macro}({s.condition}, {s.flag}, ...)` removed: the launch passes "
                f"`{s.condition}`" for path, ss in sorted(self.switches.items()) for s in ss]
        return out + self.kept

    def runtime(self, kernel_name: str) -> list[RuntimeParam]:
        return next((v for k, v in self.params.items() if k.rsplit("::", 1)[-1] == kernel_name), [])

    def spell_call(self, path: str, at: int, spelled: str, factory_args: str) -> str:
        """`k<A, FLAG, B>` (a template-id at byte `at` of `path`) as its factory's call: the runtime
        parameters' arguments leave the template argument list for the call's, a switch's constant
        given as the switch's condition."""
        name, _, rest = spelled.partition("<")
        runtime = self.runtime(name.rsplit("::", 1)[-1].strip())
        if not runtime or not rest:
            return f"{spelled}({factory_args})"
        args = _split_args(rest[:rest.rindex(">")])
        if len(args) <= max(p.index for p in runtime):
            raise UnsupportedConstruct(f"`{spelled}` spells fewer template arguments than its kernel's runtime "
                                       f"parameters need", where=path,
                                       hint="spell every template argument up to the flags at that use")
        indices = {p.index for p in runtime}
        values = []
        for p in runtime:
            arg = args[p.index]
            switch = next((s for s in self.switches.get(path, []) if s.flag == arg and s.encloses(at)), None)
            values.append(switch.condition if switch is not None else arg)
        kept = [a for i, a in enumerate(args) if i not in indices]
        call_args = ", ".join(a for a in [factory_args, *values] if a)
        return f"{name}<{', '.join(kept)}>({call_args})"


def _switches(path: str, data: bytes, macros: list[str]) -> list[Switch]:
    """Every invocation of the listed macros in `data` (not in a #define)."""
    out = []
    if not macros:
        return out
    text = data.decode()
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, macros)) + r")\s*\(")
    for m in pattern.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        previous = text[max(0, line_start - 2):line_start]
        if text[line_start:m.start()].lstrip().startswith("#") or previous.startswith("\\"):
            continue        # the macro's definition, or a use inside another macro's
        close = _closing(data, len(text[:m.end() - 1].encode()))
        if close < 0:
            continue
        opened = len(text[:m.end()].encode())
        args = _split_args(data[opened:close].decode())
        if len(args) < 3 or not _IDENT.match(args[1]):
            continue
        # the body starts after the second top-level comma
        depth, commas, i = 0, 0, opened
        while i < close and commas < 2:
            c = data[i:i + 1]
            if c in b"([{<":
                depth += 1
            elif c in b")]}>":
                depth -= 1
            elif c == b"," and depth == 0:
                commas += 1
            i += 1
        while data[i:i + 1].isspace():
            i += 1
        out.append(Switch(path, m.group(1), len(text[:m.start()].encode()), i, close, args[1],
                          " ".join(args[0].split()), text.count("\n", 0, m.start()) + 1))
    return out


def _without_comments(text: bytes) -> bytes:
    """`text` with its comments blanked (same length: offsets hold)."""
    return re.sub(rb"//[^\n]*|/\*.*?\*/", lambda m: re.sub(rb"[^\n]", b" ", m.group(0)), text, flags=re.S)


def _closing(data: bytes, i: int) -> int:
    """Offset of the bracket closing the one at `i`, comments and literals skipped; -1 if none."""
    end = matching(data, i)
    return end - 1 if end >= 0 else -1


def _template_ids(data: bytes, start: int, end: int, names: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, name) of each `name<...>` of `names` in [start, end), launches included; the
    range is the argument list's (from `<` to past `>`)."""
    out = []
    if not names:
        return out
    pattern = re.compile(rb"(?<![\w])(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\s*<(?!<)")
    for m in pattern.finditer(data, start, end):
        depth, i = 0, m.end() - 1
        while i < end:
            c = data[i:i + 1]
            if c == b"<":
                depth += 1
            elif c == b">" and data[i - 1:i] != b"-":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        if depth == 0:
            out.append((m.end() - 1, i + 1, m.group(1).decode()))
    return out


def _offset(data: bytes, line: int, col: int) -> int:
    starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
    return starts[line - 1] + col - 1 if 1 <= line <= len(starts) else -1


def _assigned(body: str, condition: str) -> bool:
    root = re.match(r"[A-Za-z_]\w*", condition).group(0)
    return re.search(rf"(?<![\w.>])({re.escape(root)}\s*([-+*/%&|^]|<<|>>)?=(?!=)|\+\+\s*{re.escape(root)}\b|"
                     rf"--\s*{re.escape(root)}\b|\b{re.escape(root)}\s*(\+\+|--))", body) is not None


def plan_values(root: Path, plan: Plan) -> LauncherValues:
    """Which value parameters of the migrated kernels their factories take at run time, and the
    switches that go; see the module's doc."""
    lv = LauncherValues()
    macros = list(plan.spec.raw.get("launcher_values", {}).get("switch_macros", []))
    if not macros:
        return lv
    names = {kp.name for kp in plan.kernels}
    files: dict[str, bytes] = {}
    found: dict[str, list[Switch]] = {}

    def switches_of(path: str) -> list[Switch]:
        if path not in found:
            files[path] = (root / path).read_bytes()
            found[path] = _switches(path, files[path], macros)
        return found[path]

    # candidates: (kernel id, parameter) -> the switches binding it at its sites
    candidates: dict[tuple[str, str], set[Switch]] = {}
    heads: dict[str, list[str]] = {}
    for kp in plan.kernels:
        decls = _split_args(kp.signature.template_params.strip()[1:-1])
        if len(decls) != len(kp.kernel.params) or kp.deduced:
            continue
        heads[kp.kernel.id] = decls
        for index, p in enumerate(kp.kernel.params):
            if p.kind != "value" or "=" in decls[index]:
                continue
            bound: set[Switch] = set()
            why = None
            for site in kp.sites:
                axis = next((a for a in site.axes if a.param == p.name), None)
                if axis is None or axis.binding != "value_switch":
                    why = f"{site.id} binds it {'by ' + axis.binding if axis else 'by default'}"
                    break
                switches_of(site.file)
                at = _offset(files[site.file], site.line, site.col)
                enclosing = [s for s in switches_of(site.file) if s.flag == axis.arg and s.encloses(at)]
                if not enclosing:
                    why = f"{site.id}: {axis.arg} comes from a switch the rule does not list"
                    break
                switch = max(enclosing, key=lambda s: s.body)       # the innermost
                if not _PLAIN.match(switch.condition):
                    why = f"{site.id}: the switch's condition `{switch.condition}` is not a variable"
                    break
                if _assigned(files[site.file][switch.body:switch.close].decode(), switch.condition):
                    why = f"{site.id}: the switch's arms assign `{switch.condition}`"
                    break
                bound.add(switch)
            if why is None and bound:
                candidates[(kp.kernel.id, p.name)] = bound
            elif why is not None and kp.sites and any(a.binding == "value_switch" for s in kp.sites
                                                      for a in s.axes if a.param == p.name):
                lv.kept.append(f"{kp.kernel.id}: {p.name} stays a template argument ({why})")
    # a switch goes only if its constant appears nowhere in its arms but as a runtime argument
    params_of = {kp.kernel.id: [p.name for p in kp.kernel.params] for kp in plan.kernels}
    ids = {kp.name: kp.kernel.id for kp in plan.kernels}
    while True:
        dropped = False
        for key, bound in list(candidates.items()):
            for switch in bound:
                reason = _other_use(files[switch.file], switch, names, ids, params_of, candidates)
                if reason is not None:
                    lv.kept.append(f"{switch.file}:{switch.line}: `{switch.macro}({switch.condition}, "
                                   f"{switch.flag}, ...)` stays a switch: {reason}")
                    for k2 in [k for k, b in candidates.items() if switch in b]:
                        del candidates[k2]
                    dropped = True
                    break
            if dropped:
                break
        if not dropped:
            break
    for kp in plan.kernels:
        runtime = []
        for index, p in enumerate(kp.kernel.params):
            if (kp.kernel.id, p.name) not in candidates:
                continue
            decl = heads[kp.kernel.id][index]
            ptype = decl[:decl.rindex(p.name)].strip()
            seen = []
            for v in kp.variants:
                value = v.axes.get(p.name)
                if value is not None and value not in seen:
                    seen.append(value)
            domain = tuple(f"{enum_cast(p.enum)}{v})" if p.enum and v.lstrip("-").isdigit() else v for v in seen)
            runtime.append(RuntimeParam(p.name, index, decl, ptype, domain))
        if runtime and len(runtime) < len(kp.kernel.params):
            lv.params[kp.kernel.id] = runtime
            for key in [(kp.kernel.id, r.name) for r in runtime]:
                for switch in candidates[key]:
                    if switch not in lv.switches.setdefault(switch.file, []):
                        lv.switches[switch.file].append(switch)
    for path in lv.switches:
        lv.switches[path].sort(key=lambda s: s.start)
    return lv


def _other_use(data: bytes, switch: Switch, names: set[str], ids: dict[str, str], params_of: dict,
               candidates: dict) -> str | None:
    """Why the switch's constant must stay one: a use in its arms other than a template argument of
    a migrated kernel that its factory takes at run time; None when there is none."""
    body = _without_comments(data[switch.body:switch.close])
    spans = [(a - switch.body, b - switch.body, n) for a, b, n in _template_ids(data, switch.body, switch.close, names)]
    for m in re.finditer(rb"\b" + re.escape(switch.flag.encode()) + rb"\b", body):
        span = next(((a, b, n) for a, b, n in spans if a <= m.start() < b), None)
        if span is None:
            line = data[:switch.body + m.start()].count(b"\n") + 1
            return f"line {line} uses {switch.flag} otherwise than as a migrated kernel's template argument"
        a, b, n = span
        args = _split_args(body[a + 1:b - 1].decode())
        kid = ids[n]
        positions = [i for i, arg in enumerate(args) if arg == switch.flag]
        params = params_of[kid]
        if not positions or any(i >= len(params) or (kid, params[i]) not in candidates for i in positions):
            line = data[:switch.body + m.start()].count(b"\n") + 1
            return f"line {line}: {n}'s parameter there stays a template argument"
    return None


def collapse_edits(root: Path, lv: LauncherValues, cs: ChangeSet) -> None:
    """The edits removing each switch that goes, by what its arms are (`_mode`): a block stays a
    block (`MACRO(c, F, { ... });` -> `{ ... }`), a block holding one call or alone in an enclosing
    block loses its braces, a call stays a call (`MACRO(c, F, INNER(...));` -> `INNER(...);`),
    statements become a block. A line left blank (or holding only a `// NOLINT` comment) goes
    whole, and the arms' lines move out one indentation level per switch removed around them (the
    target's clang-format then formats them as the changed lines they are)."""
    why = "a switch whose constant its kernel's launcher takes as a value"
    for path, switches in lv.switches.items():
        data = (root / path).read_bytes()
        gone = set(switches)
        others = [(e.start, e.end) for e in cs.edits if e.path == path]
        modes: dict[Switch, str] = {}
        for s in switches:      # outer ones first: an inner block may lean on the outer's braces
            modes[s] = _mode(data, s, {t.body for t in modes if modes[t] == "unbrace"})
        deleted = bytearray(len(data))
        replaced: list[tuple[int, str]] = []

        def drop(a: int, b: int) -> None:
            deleted[a:b] = b"\1" * (b - a)

        for s in switches:
            close, end = _after_close(data, s)
            mode = modes[s]
            if mode == "block":
                drop(s.start, s.body)
                drop(close, _with_lint_comment(data, end))
            elif mode == "unbrace":
                drop(s.start, s.body + 1)
                drop(data.rindex(b"}", s.body, s.close), _with_lint_comment(data, end))
            elif mode == "call":
                drop(s.start, s.body)
                inner = next((t for t in gone if t.start == s.body), None)
                drop(close, _with_lint_comment(data, end) if inner is not None else close + 1)
            else:       # statements: a block of them, the braces on lines of their own
                newline = data.rfind(b"\n", s.start, s.body)
                drop(s.start + 1, newline if newline >= 0 else s.body)
                line_start = data.rfind(b"\n", 0, s.start) + 1
                indent = data[line_start:s.start].decode()
                own_line = not data[data.rfind(b"\n", 0, close) + 1:close].strip()
                replaced += [(s.start, "{"), (close, "}" if own_line else f"\n{' ' * len(indent)}}}")]
                drop(close + 1, _with_lint_comment(data, end))
        kept = {at for at, _ in replaced}
        # lines as the deletions leave them (joined where a newline went): one that starts deleted
        # keeps its first line's indentation; one left blank (or with only a `// NOLINT`) goes whole
        for pos, end in _joined_lines(data, deleted):
            first_end = data.find(b"\n", pos)
            first_end = end if first_end < 0 or first_end > end else first_end
            if deleted[pos] and not all(deleted[pos:end]):
                width = len(data[pos:first_end]) - len(data[pos:first_end].lstrip(b" \t"))
                deleted[pos:pos + width] = bytes(width)
            rest = bytes(c for i, (c, d) in enumerate(zip(data[pos:end], deleted[pos:end])) if not d)
            if any(deleted[pos:end]) and not any(pos <= at < end for at in kept) and \
                    not re.sub(rb"//\s*NOLINT[^\n]*", b"", rest).strip():
                drop(pos, min(end + 1, len(data)))
        # the arms out by what each switch around them indented them
        shifts = {s: _shift(data, s, modes[s]) for s in switches}
        for pos, end in _lines(data):
            width = len(data[pos:end]) - len(data[pos:end].lstrip(b" "))
            cut = min(width, sum(shifts[s] for s in switches if s.start < pos < s.close))
            if cut and not any(deleted[pos:pos + cut]) and not all(deleted[pos:end]) and \
                    not any(a < pos + cut and pos < b or a == pos for a, b in others):
                cs.edits.append(Edit(path, pos, pos + cut, "", "the arm of a switch that went, one level out"))
        for at, text in replaced:
            cs.edits.append(Edit(path, at, at + 1, text, why))
        start = None
        for i in range(len(data) + 1):
            on = i < len(data) and deleted[i]
            if on and start is None:
                start = i
            elif not on and start is not None:
                cs.edits.append(Edit(path, start, i, "", why))
                start = None


def _indent(data: bytes, at: int) -> int:
    """The indentation of the line holding `at`."""
    start = data.rfind(b"\n", 0, at) + 1
    line = data[start:data.find(b"\n", start) if data.find(b"\n", start) >= 0 else len(data)]
    return len(line) - len(line.lstrip(b" "))


def _shift(data: bytes, s: Switch, mode: str) -> int:
    """How far the switch indented its arms beyond what is left of it: the first line of its arms
    against its own line, less a level where it leaves braces there (a block, statements)."""
    start = s.body + 1 if mode in ("block", "unbrace") else s.body
    first = re.compile(rb"\s*").match(data, start).end()
    extra = 2 if mode in ("block", "statements") else 0
    return max(0, _indent(data, first) - _indent(data, s.start) - extra)


def _joined_lines(data: bytes, deleted: bytearray):
    """(start, end) of each line as deletions leave it: original lines joined where the newline
    between them is deleted; `end` is the offset of the newline that stays (or the data's end)."""
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        while end >= 0 and deleted[end]:
            end = data.find(b"\n", end + 1)
        end = len(data) if end < 0 else end
        yield pos, end
        pos = end + 1


def _lines(data: bytes):
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        yield pos, end
        pos = end + 1


def _single_call(data: bytes, start: int, end: int) -> bool:
    """Whether [start, end) is one call statement `NAME(...)` with an optional `;`."""
    m = re.compile(rb"\s*[A-Za-z_]\w*\s*\(").match(data, start, end)
    if m is None:
        return False
    close = _closing(data, m.end() - 1)
    tail = re.sub(rb"//[^\n]*", b"", data[close + 1:end]) if close >= 0 else b""
    return 0 <= close < end and tail.strip() in (b"", b";")


def _mode(data: bytes, s: Switch, unbraced: set[int]) -> str:
    """What removing the switch leaves: `block` (its brace block), `unbrace` (the block's content: a
    single call, or everything of an enclosing block that stays, `unbraced` holding the opening
    braces that go; a case's `break;` may follow it), `call` (its body, one call), `statements`."""
    if data[s.body:s.body + 1] == b"{":
        brace = data.rindex(b"}", s.body, s.close)
        if _single_call(data, s.body + 1, brace):
            return "unbrace"
        before = data[:s.start].rstrip()
        _, end = _after_close(data, s)
        after = re.sub(rb"^\s*//\s*NOLINT[^\n]*", b"", data[end:]).lstrip()
        # alone in its block, or followed there only by the `break;` of the case it is (TE's MXFP8
        # quantize launcher): the block's names cannot meet another declaration of that block
        alone = after.startswith(b"}") or re.match(rb"break\s*;\s*}", after) is not None
        if before.endswith(b"{") and alone and len(before) - 1 not in unbraced:
            return "unbrace"
        return "block"
    return "call" if _single_call(data, s.body, s.close) else "statements"


def _with_lint_comment(data: bytes, end: int) -> int:
    """`end`, or the end of its line when only a `// NOLINT` comment follows (the closing's)."""
    eol = data.find(b"\n", end)
    eol = len(data) if eol < 0 else eol
    return eol if re.fullmatch(rb"\s*//\s*NOLINT.*", data[end:eol]) else end


def _after_close(data: bytes, s: Switch) -> tuple[int, int]:
    """The switch's `)` and the end of what goes with it: a `;` right after."""
    end = s.close + 1
    j = end
    while data[j:j + 1] in (b" ", b"\t"):
        j += 1
    if data[j:j + 1] == b";":
        end = j + 1
    return s.close, end
