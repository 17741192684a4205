"""`source-location`, an explained class of `verify --sass`: two kernels' SASS that differ only in how
the code reports where it is (`__LINE__`, `__FILE__`, `__func__` of a device-side error message),
because the migration moved the kernel's lines and NVRTC names files and functions otherwise.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..errors import VerifyError

# Names the compilers give string literals (`$str`, `$str$3`) and `__func__` arrays (`__unnamed_17`);
# numbered per module, so the two sides number them differently.
_STRING_SYMBOL = re.compile(r"\$str(?:\$\d+)?|__unnamed_\d+")
_FUNC_SYMBOL = re.compile(r"__unnamed_\d+")
# The operands that may differ: a constant-bank-4 slot named by its symbol (sass.normalise), or an
# integer immediate.
_VARIABLE = re.compile(r"c\[0x4\]\[(?P<sym>[^\]]+)\]|(?<![\w.\[])(?P<imm>0x[0-9a-f]+)(?![\w.\]])")
_MOV_IMM = re.compile(r"^(?:MOV|IMAD\.MOV\.U32) (?P<reg>R\d+), (?:RZ, RZ, )?0x[0-9a-f]+$")
# Opcodes whose first operand is not a register they write (stores, reductions, control flow).
_NO_DEST = ("ST", "RED", "ATOM", "BRA", "CALL", "RET", "EXIT", "BPT")
_NAME = r"(?:[A-Za-z_]\w*|<unnamed>|operator\W+)"
_QUALIFIED = re.compile(rf"(?:{_NAME}::)+")


class Side(Protocol):
    """What the comparison reads of one side's normalised kernel (sass.Normalised)."""

    lines: list[str]
    encodings: list[tuple[str, ...]]
    texts: list[str]


# ---------------------------------------------------------------------------------------------
# Inputs: line maps, the string constants of a cubin.

def line_map(original: str, migrated: str) -> dict[int, int]:
    """Line L (1-based) of `original` -> the line the same text has in `migrated`, for every line in
    a block difflib matches (lines the migration inserted, removed or changed have no entry)."""
    a, b = original.splitlines(), migrated.splitlines()
    out = {}
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            out[block.a + k + 1] = block.b + k + 1
    return out


_SECTION = re.compile(r"^//-+ (\S+)\s+-+\s*$")
_OBJECT = re.compile(r"^(?P<name>[^\s:]+):\s*$")
_BYTES = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+\.byte\s+(?P<bytes>.*?)\s*$")
_ZERO = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+\.zero\s+(?P<n>\d+)\s*$")


def string_constants(disassembly: str) -> dict[str, bytes]:
    """The compiler-named string constants of a cubin (`$str$N`, `__unnamed_N`) and their bytes, from
    the `.nv.global.init` section of `nvdisasm` output (a symbol holding anything but `.byte` /
    `.zero` data is left out: not a string)."""
    out: dict[str, bytes] = {}
    section, name, data, plain = None, None, bytearray(), True

    def close():
        if name and plain and _STRING_SYMBOL.fullmatch(name):
            out[name] = bytes(data)

    for line in disassembly.splitlines():
        match = _SECTION.match(line)
        if match:
            close()
            section, name = match.group(1), None
            continue
        if section != ".nv.global.init":
            continue
        if (match := _OBJECT.match(line)) is not None:
            close()
            name, data, plain = match["name"], bytearray(), True
        elif (match := _BYTES.match(line)) is not None:
            data += bytes(int(b, 16) for b in match["bytes"].split(","))
        elif (match := _ZERO.match(line)) is not None:
            data += bytes(int(match["n"]))
        elif re.match(r"^\s+/\*[0-9a-f]+\*/\s+\.", line):
            plain = False
    close()
    return out


@dataclass
class LibraryFiles:
    """The two trees a kernel's headers come from: the original (`--static-root`, nvcc's side) and
    the migrated one (read through the manifest), and the kernel's header names (NVRTC's `__FILE__`)
    with their library paths."""

    static_root: Path
    read_migrated: Callable[[str], str]
    names: dict[str, str]              # KernelEntry.headers: include name -> path in the library
    _maps: dict[str, dict[int, int]] = field(default_factory=dict)

    def file_pair(self, static_spelling: str, rtc_spelling: str) -> str | None:
        """The library path both strings name as `__FILE__`: nvcc's, the absolute path of the
        original header under the static root; NVRTC's, the header's name in the program."""
        path = self.names.get(rtc_spelling)
        if path is None or not os.path.isabs(static_spelling):
            return None
        same = os.path.realpath(static_spelling) == os.path.realpath(self.static_root / path)
        return path if same else None

    def line_map(self, path: str) -> dict[int, int]:
        if path not in self._maps:
            try:
                original, migrated = (self.static_root / path).read_text(), self.read_migrated(path)
            except (OSError, VerifyError):    # an unreadable file maps no line
                original = migrated = ""
            self._maps[path] = line_map(original, migrated)
        return self._maps[path]


# ---------------------------------------------------------------------------------------------
# The comparison.

@dataclass
class _Found:
    files: set[str] = field(default_factory=set)               # library paths named as __FILE__
    funcs: set[tuple[str, str]] = field(default_factory=set)
    renamed: set[tuple[str, str]] = field(default_factory=set)
    immediates: list[tuple[int, int, int]] = field(default_factory=list)   # (insn, nvcc, NVRTC)
    loosened: set[int] = field(default_factory=set)            # instructions whose operand word may differ


def _text(data: bytes | None) -> str | None:
    if data is None or not data.endswith(b"\0"):
        return None
    try:
        return data[:-1].decode()
    except UnicodeDecodeError:
        return None


def _func_pair(static: str, rtc: str) -> bool:
    """`__func__` of the same function: nvcc (GNU mode) gives its unqualified name, NVRTC the
    qualified one (`ns::k`, `ns::<unnamed>::k`)."""
    return (re.fullmatch(_NAME, static) is not None and rtc.endswith("::" + static)
            and _QUALIFIED.fullmatch(rtc[: -len(static)]) is not None)


def _strings_match(a: str, b: str, strings: tuple[dict, dict], files: LibraryFiles, found: _Found) -> bool:
    """Two bank-4 symbols of a line pair: both string constants with equal contents, or the same
    file's `__FILE__`, or the same function's `__func__`; other symbols must be equal."""
    if not (_STRING_SYMBOL.fullmatch(a) and _STRING_SYMBOL.fullmatch(b)):
        return a == b
    static, rtc = _text(strings[0].get(a)), _text(strings[1].get(b))
    if static is None or rtc is None:
        return False
    if a != b:
        found.renamed.add((a, b))
    if static == rtc:
        return True
    path = files.file_pair(static, rtc)
    if path is not None:
        found.files.add(path)
        return True
    if _FUNC_SYMBOL.fullmatch(a) and _FUNC_SYMBOL.fullmatch(b) and _func_pair(static, rtc):
        found.funcs.add((static, rtc))
        return True
    return False


def _slot(operand: str, bank4: dict[str, str]) -> str:
    """A bank-4 operand as sass.normalise left it: a symbol, or `RZ` (the zero register: offset 0)."""
    return bank4.get("0x0", operand) if operand == "RZ" else operand


def _scan(static: Side, rtc: Side, strings: tuple[dict, dict], bank4: tuple[dict, dict],
          files: LibraryFiles) -> _Found | None:
    """Every instruction pair: the same text once string symbols and immediates are set aside; the
    string operands paired (_strings_match), the differing immediates collected."""
    if len(static.lines) != len(rtc.lines) or len(static.texts) != len(rtc.texts):
        return None
    found = _Found()
    for a, b in zip(static.lines, rtc.lines):
        if a != b and (a.endswith(":") or a.startswith("<callee ")):
            return None                      # labels and callees are the same on both sides
    for index, (a, b) in enumerate(zip(static.texts, rtc.texts)):
        if _VARIABLE.sub("#", a) != _VARIABLE.sub("#", b):
            return None
        for ma, mb in zip(_VARIABLE.finditer(a), _VARIABLE.finditer(b)):
            if (ma["sym"] is None) != (mb["sym"] is None):
                return None
            if ma["sym"] is not None:
                a_sym, b_sym = _slot(ma["sym"], bank4[0]), _slot(mb["sym"], bank4[1])
                if not _strings_match(a_sym, b_sym, strings, files, found):
                    return None
                found.loosened.add(index)
            elif ma["imm"] != mb["imm"]:
                found.immediates.append((index, int(ma["imm"], 16), int(mb["imm"], 16)))
                found.loosened.add(index)
    return found


def _bank4_index(texts: list[str], index: int) -> str | None:
    """For `MOV Rn, imm` at `index`: `Rn` when the next instruction naming Rn reads it as a bank-4
    index (`LDC.64 R2, c[0x4][Rn]`: the address of a callee such as vprintf, through its slot) and
    the instruction after that naming Rn, if any, overwrites it (the offset is used once)."""
    match = _MOV_IMM.match(texts[index])
    if match is None:
        return None
    reg = re.compile(r"\b" + match["reg"] + r"\b")
    uses = [i for i in range(index + 1, len(texts)) if reg.search(texts[i])]
    if not uses or f"c[0x4][{match['reg']}]" not in texts[uses[0]]:
        return None
    if len(uses) > 1:
        later = texts[uses[1]]
        opcode, _, operands = later.partition(" ")
        first, _, rest = operands.partition(",")
        if opcode.startswith(_NO_DEST) or first.strip() != match["reg"] or reg.search(rest):
            return None
    return match["reg"]


def _encodings_match(static: Side, rtc: Side, loosened: set[int]) -> bool:
    """Equal encodings, except the operand (first) word of the instructions whose operands differ:
    the scheduling word (stall counts, barriers) must be the same everywhere."""
    for index, (a, b) in enumerate(zip(static.encodings, rtc.encodings)):
        if a != b and (index not in loosened or len(a) != len(b) or a[1:] != b[1:]):
            return False
    return True


def compare(static: Side, rtc: Side, strings: tuple[dict[str, bytes], dict[str, bytes]],
            bank4: tuple[dict[str, str], dict[str, str]], files: LibraryFiles) -> str | None:
    """The detail of a `source-location` difference, or None when the kernels differ otherwise.

    Accepted: string operands (by contents, _strings_match); immediates that are a line of a file
    the kernel names as `__FILE__` and that line's place in the migrated file (`line_map`); and the
    constant-bank-4 offset of a slot loaded through a register (_bank4_index) when both slots hold
    the same symbol. At least one location must differ (a line, a file's or a function's spelling):
    renumbered strings and moved slots alone are not one; encodings as _encodings_match.
    """
    found = _scan(static, rtc, strings, bank4, files)
    if found is None:
        return None
    lines, slots = [], []
    for index, a, b in found.immediates:
        path = next((p for p in sorted(found.files) if files.line_map(p).get(a) == b), None)
        if path is not None:
            lines.append((a, b, path))
            continue
        symbol = bank4[0].get(hex(a))
        if _bank4_index(static.texts, index) and symbol is not None and bank4[1].get(hex(b)) == symbol:
            slots.append((a, b, symbol))
            continue
        return None
    if not (lines or found.files or found.funcs) or not _encodings_match(static, rtc, found.loosened):
        return None
    return _detail(found, sorted(set(lines)), sorted(set(slots)))


def _detail(found: _Found, lines: list, slots: list) -> str:
    out = [f"__LINE__ {a} -> {b} in {path}" for a, b, path in lines]
    out += [f"__FILE__ {path}: nvcc's is its absolute path under --static-root, NVRTC's the header name"
            for path in sorted(found.files)]
    out += [f"__func__ {a} -> {b} (NVRTC's __func__ is qualified, nvcc's is not)" for a, b in sorted(found.funcs)]
    if found.renamed:
        out.append("string constants renumbered: " + ", ".join(f"{a} -> {b}" for a, b in sorted(found.renamed)))
    out += [f"constant-bank-4 slot of {sym} {hex(a)} -> {hex(b)} (its offset moved into a register for "
            f"`LDC c[0x4][R]`)" for a, b, sym in slots]
    return "\n".join(out)
