"""The target tree's own conventions, read at apply time: its `.clang-format`, the clang-format
version its pre-commit config pins, and its license header (the leading comment of a file the rule
names). Nothing of a target's style or license is stored in codemod."""

from __future__ import annotations

import datetime
import difflib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ...errors import ApplyError, RuleError

# Without a .clang-format in the target (golden libraries): the style codemod used before.
FALLBACK_STYLE = (
    "{BasedOnStyle: Google, ColumnLimit: 100, Standard: c++17, DerivePointerAlignment: false, "
    "PointerAlignment: Left}")   # fixed, not derived: clang-format 18 and 21 derive differently
C_FILE = re.compile(r"\.(c|cc|cxx|cpp|cu|cuh|h|hpp)$")
_PIN = re.compile(r"(?:mirrors-clang-format[\s\S]*?rev:\s*['\"]?v?|clang-format==)(\d+\.\d+\.\d+)")


@lru_cache(maxsize=None)
def _version_of(exe: str) -> str | None:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"clang-format version (\d+\.\d+\.\d+)", out)
    return m.group(1) if m else None


def _candidates(major: str | None) -> list[str]:
    """clang-format executables in order of preference: CODEMOD_CLANG_FORMAT, the importable
    `clang-format` wheel, the one beside this interpreter, clang-format-<major>, clang-format."""
    out = []
    if os.environ.get("CODEMOD_CLANG_FORMAT"):
        out.append(os.environ["CODEMOD_CLANG_FORMAT"])
    try:
        import importlib.util

        spec = importlib.util.find_spec("clang_format")
        if spec and spec.origin:
            out.append(str(Path(spec.origin).parent / "data" / "bin" / "clang-format"))
    except (ImportError, ValueError):
        pass
    # NOTE: `.venv/bin/python -m pytest` does not put .venv/bin on PATH, so PATH alone misses it.
    out.append(str(Path(sys.executable).parent / "clang-format"))
    for name in ([f"clang-format-{major}"] if major else []) + ["clang-format"]:
        found = shutil.which(name)
        if found:
            out.append(found)
    return [c for c in dict.fromkeys(out) if Path(c).is_file()]


def find_clang_format(version: str | None = None) -> tuple[str | None, str]:
    """(executable of exactly `version`, or the first one found when `version` is None; None when
    there is none) and the versions found, for messages."""
    cands = _candidates(version.split(".")[0] if version else None)
    found = [(c, _version_of(c)) for c in cands]
    for exe, v in found:
        if v and (version is None or v == version):
            return exe, v
    return None, ", ".join(f"{v} ({e})" for e, v in found) or "none"


@dataclass
class TargetStyle:
    """How generated and edited C++ is formatted for one target tree."""
    exe: str | None              # the clang-format to run (None: --no-format)
    version: str | None          # its version
    style: str                   # the --style argument
    pinned: str | None = None    # the version the target's pre-commit config pins
    source: str = ""             # where the style comes from, for the report
    warning: str | None = None   # set when the pinned version is not installed
    column_limit: int = 100

    def format(self, text: str, filename: str, lines: list[tuple[int, int]] | None = None,
               theirs: frozenset[str] = frozenset()) -> str:
        """`text` formatted as the file `filename`; only `lines` (1-based, inclusive) when given.
        `theirs`: lines (stripped) of the target's own files, whose comments are left as they are."""
        if self.exe is None or not C_FILE.search(filename):
            return text
        cmd = [self.exe, f"--style={self.style}", f"--assume-filename={filename}"]
        cmd += [f"--lines={a}:{b}" for a, b in lines or []]
        proc = subprocess.run(cmd, input=text, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ApplyError(f"clang-format failed on {filename}: {proc.stderr.strip()}")
        return proc.stdout if lines else wrap_comments(proc.stdout, self.column_limit, theirs)


def wrap_comments(text: str, limit: int, theirs: frozenset[str] = frozenset()) -> str:
    """Whole-line `//` comments longer than `limit` columns wrapped at word boundaries (a target
    style may not reflow comments: TE's `ReflowComments: false`), except the target's own lines
    (`theirs`, stripped: moved code stays as the target wrote it)."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        m = re.match(r"(\s*//+ ?)(.*)$", body)
        if len(body) <= limit or not m or " " not in m.group(2).strip() or body.strip() in theirs:
            out.append(line)
            continue
        lead, words = m.group(1), m.group(2).split(" ")
        cur = lead + words[0]
        for w in words[1:]:
            if len(cur) + 1 + len(w) > limit:
                out.append(cur + "\n")
                cur = lead + w
            else:
                cur += " " + w
        out.append(cur + line[len(body):])
    return "".join(out)


def _upwards(start: Path, name: str, stop: Path | None) -> Path | None:
    d = start.resolve()
    while True:
        if (d / name).is_file():
            return d / name
        if d.parent == d or (stop is not None and d == stop.resolve()):
            return None
        d = d.parent


def pinned_version(config: Path) -> str | None:
    """The clang-format version a pre-commit config pins (mirrors-clang-format's rev or a
    `clang-format==X` dependency); None when it pins none."""
    m = _PIN.search(config.read_text())
    return m.group(1) if m else None


def target_style(root: Path, formatted: "bool | TargetStyle" = True) -> TargetStyle:
    """The target's .clang-format (searched from the library root up to its repository root) and
    pinned clang-format version. Without the pinned version installed, the installed clang-format is
    used and `warning` says so (the target's hook may then reformat a few lines). `formatted` may be
    the style itself, found once for the real tree: a regeneration runs in a scratch copy that has
    neither the repository's .clang-format nor its git top (`command._regenerate`)."""
    if isinstance(formatted, TargetStyle):
        return formatted
    top = _repo_top(root)
    style_file = _upwards(root, ".clang-format", top)
    config = _upwards(root, ".pre-commit-config.yaml", top)
    pinned = pinned_version(config) if config else None
    if not formatted:
        return TargetStyle(None, None, "", pinned, "not formatted (--no-format)")
    exe, version = find_clang_format(pinned) if pinned else (None, "")
    warning = None
    if exe is None:
        exe, version = find_clang_format(None)
        if exe is None:
            raise ApplyError("clang-format not found",
                             hint=f"pip install clang-format{'==' + pinned if pinned else ''}, or pass --no-format")
        if pinned:
            warning = (f"the target pins clang-format {pinned} ({config.name}) but {version} is installed: "
                       f"generated and edited lines were formatted with {version}; install the pinned one "
                       f"(pip install clang-format=={pinned}, or CODEMOD_CLANG_FORMAT=/path/to/it) "
                       "before committing, or the target's hook may reformat them")
    if style_file:
        limit = re.search(r"(?m)^ColumnLimit:\s*(\d+)", style_file.read_text())
        return TargetStyle(exe, version, f"file:{style_file}", pinned,
                           f"{style_file.name} of the target, clang-format {version}", warning,
                           int(limit.group(1)) if limit else 80)
    return TargetStyle(exe, version, FALLBACK_STYLE, pinned, f"no .clang-format in the target: {FALLBACK_STYLE}",
                       warning)


@lru_cache(maxsize=None)
def _repo_top(root: Path) -> Path | None:
    try:
        r = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True)
    except OSError:
        return None
    return Path(r.stdout.strip()) if r.returncode == 0 else None


def changed_lines(old: str, new: str) -> list[tuple[int, int]]:
    """Line ranges (1-based, inclusive) of `new` that differ from `old`."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert") and j2 > j1:
            out.append((j1 + 1, j2))
    return out


def format_edits(files: dict[str, tuple[str | None, str]], style: TargetStyle) -> dict[str, tuple[str | None, str]]:
    """Edited C/C++ library files with only their changed lines formatted (untouched code does
    not move), and new files whole (the generated ones are already; a header that device code
    moved into is formatted here), when the target has a .clang-format of its own (a target
    without one has no convention to follow: its sources are left as edited)."""
    if style.exe is None or not style.style.startswith("file:"):
        return files
    out = {}
    # a new file's lines the target already has (device code moved out of a unit) keep their wrapping
    theirs = frozenset(line.strip() for old, _ in files.values() if old is not None for line in old.splitlines()) \
        if any(old is None and C_FILE.search(p) for p, (old, _) in files.items()) else frozenset()
    for path, (old, new) in files.items():
        if old is not None and C_FILE.search(path):
            ranges = changed_lines(old, new)
            if ranges:
                new = _with_file_alignment(style, old).format(new, path, ranges)
        elif old is None and C_FILE.search(path):
            new = style.format(new, path, theirs=theirs)   # a new library file (device code moved out of a unit)
        out[path] = (old, new)
    return {p: v for p, v in out.items() if v[0] != v[1]}


_LEFT = re.compile(r"[\w>][*&]+ [A-Za-z_]")       # `Kernel& k`, `char* p`
_RIGHT = re.compile(r"[\w>] [*&]+[A-Za-z_]")       # `Kernel &k`, `char *p`


def _with_file_alignment(style: TargetStyle, old: str) -> TargetStyle:
    """With `DerivePointerAlignment: true`, clang-format takes `*`/`&` placement from the majority
    of the file: added lines written the other way can flip it, and the target's hook then flags
    the file's untouched lines (TE's util/rtc.cpp writes `Kernel&`; codemod's layer code `Kernel &`).
    The edited lines are formatted with the alignment the original file has (a copy of the style
    with DerivePointerAlignment off)."""
    if not style.style.startswith("file:"):
        return style
    config = Path(style.style[len("file:"):])
    text = config.read_text()
    if not re.search(r"(?m)^DerivePointerAlignment:\s*true", text):
        return style
    left, right = len(_LEFT.findall(old)), len(_RIGHT.findall(old))
    if left == right:
        return style
    fixed = re.sub(r"(?m)^DerivePointerAlignment:.*$", "DerivePointerAlignment: false", text)
    align = "Left" if left > right else "Right"
    fixed = (re.sub(r"(?m)^PointerAlignment:.*$", f"PointerAlignment: {align}", fixed)
             if re.search(r"(?m)^PointerAlignment:", fixed) else fixed.rstrip("\n.") + f"\nPointerAlignment: {align}\n")
    out = _derived_style_file(fixed)
    return TargetStyle(style.exe, style.version, f"file:{out}", style.pinned, style.source, style.warning,
                       style.column_limit)


@lru_cache(maxsize=None)
def _derived_style_file(text: str) -> Path:
    import hashlib
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"codemod-style-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    folder.mkdir(exist_ok=True)
    path = folder / ".clang-format"
    if not path.is_file() or path.read_text() != text:
        tmp = folder / f".clang-format.{os.getpid()}"
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------------------
# License header

_YEAR = re.compile(r"\b((?:19|20)\d\d)(?:\s*-\s*((?:19|20)\d\d))?\b")


def leading_comment(text: str) -> str:
    """The comment lines that open a C/C++ file (block or line comments, up to the first line that
    is neither), without trailing blank lines."""
    lines = text.splitlines(keepends=True)
    out, in_block = [], False
    for line in lines:
        s = line.strip()
        if in_block:
            out.append(line)
            in_block = "*/" not in s
        elif s.startswith("/*"):
            out.append(line)
            in_block = "*/" not in s[2:]
        elif s.startswith("//"):
            out.append(line)
        else:
            break
    return "".join(out)


def license_header(root: Path, source: str, year: str = "keep", today: datetime.date | None = None) -> str:
    """The leading comment of `source` (a file of the target, relative to its library root) to open
    every generated file. `year: current` ends the first year (range) of the copyright line at the
    current year (TE's checker requires `<initial>-<current year>`); `keep` copies it as is."""
    path = root / source
    if not path.resolve().is_relative_to(root.resolve()):
        raise RuleError(f"migrate/license/from: {source!r} leads out of the library root (a symlink to "
                        f"{path.resolve()}); the license header is read from the tree only", where=source,
                        hint="name a file of the target that opens with its license header")
    if not path.is_file():
        raise ApplyError(f"{source}: no such file to take the license header from", where=source,
                         hint="check migrate/license/from in the rule (a file of the target with its header)")
    header = leading_comment(path.read_text())
    if "copyright" not in header.lower():
        raise ApplyError(f"{source}: its leading comment holds no copyright line", where=source,
                         hint="name a file of the target that opens with the license header (migrate/license/from)")
    if year == "current":
        now = (today or datetime.date.today()).year
        lines = header.splitlines(keepends=True)
        for i, line in enumerate(lines):
            m = _YEAR.search(line) if "copyright" in line.lower() else None
            if m:
                first = m.group(1)
                new = str(now) if int(first) >= now else f"{first}-{now}"
                lines[i] = line[:m.start()] + new + line[m.end():]
                break
        header = "".join(lines)
    return header
