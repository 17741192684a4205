"""Minimal `build.ninja` reader for the dependency graph: edges in manifest order (ninja's edge ids),
explicit/implicit/order-only inputs, outputs, pools and depths, phony, generator and restat.

Handles `include`/`subninja` (relative to the top manifest's directory, as ninja resolves them from
the build directory), `$`-escapes, line continuations and variable expansion in paths and bindings.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import IO

from ..errors import ParseError

_VAR = re.compile(r"\$(\{[a-zA-Z0-9_.-]+\}|[a-zA-Z0-9_-]+|.)")

# NOTE: a manifest is bounded: 41 lines of doubling variables (`v1 = $v0$v0`, ...) expand to 2^40
# bytes. TE's build.ninja is a few MB; its longest value a link line of some 100 KB.
MAX_MANIFEST_BYTES = 256 << 20   # read, over every include and subninja
MAX_LINE_BYTES = 16 << 20        # one logical line
MAX_VALUE_BYTES = 16 << 20       # one expanded value
MAX_EXPANDED_BYTES = 256 << 20   # every expanded value together


class _TooLarge(Exception):
    """An expansion past the bounds (turned into a ParseError with its line by `parse`)."""


@dataclass
class Edge:
    id: int
    rule: str
    outputs: list[str]
    inputs: list[str]  # explicit + implicit + order-only: all of them gate the start
    pool: str = ""
    generator: bool = False
    restat: bool = False
    lineno: str = ""

    @property
    def is_phony(self) -> bool:
        return self.rule == "phony"


@dataclass
class Manifest:
    edges: list[Edge] = field(default_factory=list)
    pools: dict[str, int] = field(default_factory=lambda: {"console": 1})
    defaults: list[str] = field(default_factory=list)
    read_bytes: int = field(default=0, repr=False, compare=False)      # bounds: MAX_MANIFEST_BYTES
    expanded_bytes: int = field(default=0, repr=False, compare=False)  # bounds: MAX_EXPANDED_BYTES

    def producers(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.edges:
            for o in e.outputs:
                out[o] = e.id
        return out


def _bounded(stream: IO[str], name: str, manifest: Manifest):
    """The stream's lines, none longer than MAX_LINE_BYTES (read in bounded pieces), at most
    MAX_MANIFEST_BYTES in all."""
    lineno = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        lineno += 1
        manifest.read_bytes += len(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise ParseError(f"line longer than {MAX_LINE_BYTES >> 20} MiB; not a build.ninja", where=f"{name}:{lineno}")
        if manifest.read_bytes > MAX_MANIFEST_BYTES:
            raise ParseError(f"manifest larger than {MAX_MANIFEST_BYTES >> 20} MiB with its includes; "
                             "not a build.ninja", where=f"{name}:{lineno}")
        yield raw


def _logical_lines(stream: IO[str], name: str, manifest: Manifest):
    """Yield (lineno, indent, text) with `$\\n` continuations joined and comments dropped."""
    buf, start, indent = "", 0, 0
    for lineno, raw in enumerate(_bounded(stream, name, manifest), start=1):
        line = raw.rstrip("\r\n")
        if not buf:
            stripped = line.lstrip(" ")
            if not stripped or stripped.startswith("#"):
                continue
            start, indent = lineno, len(line) - len(stripped)
            line = stripped
        else:
            line = line.lstrip(" ")
        # A trailing '$' (not an escaped '$$') continues the line.
        trailing = len(line) - len(line.rstrip("$"))
        if trailing % 2 == 1:
            buf += line[:-1]
            if len(buf) > MAX_LINE_BYTES:
                raise ParseError(f"line longer than {MAX_LINE_BYTES >> 20} MiB; not a build.ninja",
                                 where=f"{name}:{start}")
            continue
        yield start, indent, buf + line
        buf = ""
    if buf:
        yield start, indent, buf


def _expand(text: str, scopes: list[dict[str, str]], manifest: Manifest) -> str:
    """`text` with its variables expanded, its size counted before it is built: _TooLarge past
    MAX_VALUE_BYTES, or past MAX_EXPANDED_BYTES for the manifest."""
    parts, size, pos = [], 0, 0
    for m in _VAR.finditer(text):
        tok = m.group(1)
        if tok in ("$", " ", ":", "\n"):
            value = tok
        else:
            key = tok[1:-1] if tok.startswith("{") else tok
            value = next((scope[key] for scope in scopes if key in scope), "")
        parts += (text[pos:m.start()], value)
        size += m.start() - pos + len(value)
        pos = m.end()
        if size > MAX_VALUE_BYTES:
            raise _TooLarge(f"a value expands to more than {MAX_VALUE_BYTES >> 20} MiB")
    parts.append(text[pos:])
    manifest.expanded_bytes += size + len(text) - pos
    if manifest.expanded_bytes > MAX_EXPANDED_BYTES:
        raise _TooLarge(f"variables expand to more than {MAX_EXPANDED_BYTES >> 20} MiB in all")
    return "".join(parts)


def _split_paths(text: str) -> list[str]:
    """Split on unescaped spaces (`$ ` is a literal space)."""
    out, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "$" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if c == " ":
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(c)
        i += 1
    if cur:
        out.append("".join(cur))
    return out


def _split_colon(text: str) -> tuple[str, str]:
    i = 0
    while i < len(text):
        if text[i] == "$":
            i += 2
            continue
        if text[i] == ":":
            return text[:i], text[i + 1 :]
        i += 1
    raise ValueError("missing ':'")


def parse(stream: IO[str], name: str = "build.ninja", base_dir: str = ".", manifest: Manifest | None = None,
          scope: dict[str, str] | None = None, _depth: int = 0) -> Manifest:
    manifest = manifest or Manifest()
    scope = scope if scope is not None else {}
    rules: dict[str, dict[str, str]] = {"phony": {}}
    lines = list(_logical_lines(stream, name, manifest))
    i = 0
    while i < len(lines):
        lineno, indent, text = lines[i]
        where = f"{name}:{lineno}"
        try:
            i = _statement(lines, i, name, base_dir, manifest, scope, rules, _depth)
        except _TooLarge as exc:
            raise ParseError(f"{exc}; not a build.ninja", where=where,
                             hint="variables that double each other, or a generated file cut wrong") from None
    return manifest


def _statement(lines: list, i: int, name: str, base_dir: str, manifest: Manifest, scope: dict[str, str],
               rules: dict[str, dict[str, str]], _depth: int) -> int:
    """The statement at lines[i] and its indented body; the index of the next statement."""
    lineno, indent, text = lines[i]
    where = f"{name}:{lineno}"
    i += 1
    body: list[tuple[str, str]] = []
    while i < len(lines) and lines[i][1] > 0:
        key, _, value = lines[i][2].partition("=")
        if not _:
            raise ParseError(f"expected 'name = value', found {lines[i][2][:60]!r}", where=f"{name}:{lines[i][0]}")
        body.append((key.strip(), value.strip()))
        i += 1
    if indent:
        raise ParseError(f"unexpected indented line {text[:60]!r}", where=where)
    keyword, _, rest = text.partition(" ")
    if keyword == "rule":
        rules[rest.strip()] = dict(body)
    elif keyword == "pool":
        depth = dict(body).get("depth", "")
        try:
            manifest.pools[rest.strip()] = int(_expand(depth, [scope], manifest))
        except ValueError:
            raise ParseError(f"pool {rest.strip()!r} needs an integer depth, found {depth[:40]!r}", where=where) from None
    elif keyword == "build":
        _parse_build(rest, body, rules, scope, manifest, where)
    elif keyword == "default":
        manifest.defaults += [_expand(p, [scope], manifest) for p in _split_paths(rest)]
    elif keyword in ("include", "subninja"):
        path = os.path.join(base_dir, _expand(rest.strip(), [scope], manifest))
        if _depth > 32:
            raise ParseError("include depth over 32", where=where)
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                sub_scope = scope if keyword == "include" else dict(scope)
                parse(fh, os.path.basename(path), base_dir, manifest, sub_scope, _depth + 1)
        except OSError as exc:
            raise ParseError(f"cannot read {keyword} file {rest.strip()!r}: {exc.strerror}", where=where) from None
    elif "=" in text:
        key, _, value = text.partition("=")
        scope[key.strip()] = _expand(value.strip(), [scope], manifest)
    else:
        raise ParseError(f"unknown statement {keyword[:40]!r}", where=where,
                         hint="expected rule, build, pool, default, include, subninja or a variable")
    return i


def _parse_build(rest: str, body: list[tuple[str, str]], rules: dict[str, dict[str, str]],
                 scope: dict[str, str], manifest: Manifest, where: str) -> None:
    try:
        outs_text, ins_text = _split_colon(rest)
    except ValueError:
        raise ParseError("build statement without ':'", where=where) from None
    out_tokens = _split_paths(outs_text)
    in_tokens = _split_paths(ins_text)
    if not in_tokens:
        raise ParseError("build statement without a rule", where=where)
    rule_name, in_tokens = in_tokens[0], in_tokens[1:]
    if rule_name not in rules:
        raise ParseError(f"unknown rule {rule_name!r}", where=where)
    edge_scope = {k: _expand(v, [scope], manifest) for k, v in body}
    outputs = [_expand(t, [edge_scope, scope], manifest) for t in out_tokens if t != "|"]
    inputs = []
    for t in in_tokens:
        if t in ("|", "||"):
            continue
        if t == "|@":
            break  # validations do not gate the edge
        inputs.append(_expand(t, [edge_scope, scope], manifest))
    rule = rules[rule_name]
    pool = edge_scope.get("pool", _expand(rule.get("pool", ""), [edge_scope, scope], manifest))
    edge = Edge(
        id=len(manifest.edges), rule=rule_name, outputs=outputs, inputs=inputs, pool=pool,
        generator=bool(edge_scope.get("generator", rule.get("generator", ""))),
        restat=bool(edge_scope.get("restat", rule.get("restat", ""))), lineno=where,
    )
    manifest.edges.append(edge)


def parse_path(path: str, display: str | None = None) -> Manifest:
    name = display or os.path.basename(path)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return parse(fh, name, os.path.dirname(path) or ".")
    except OSError as exc:
        raise ParseError(f"cannot read build.ninja: {exc.strerror}", where=name) from None
