"""Rules: declarative targets (rules/<id>.yaml), schema-validated with file:line errors."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from .errors import RuleError

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


@dataclass
class Rule:
    id: str
    description: str
    path: Path | None
    translation_units: list[str]
    entry_points: str
    exclude: list[str] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    expect: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)

    def entry_regex(self) -> re.Pattern:
        return re.compile(self.entry_points)


def _schema() -> dict:
    return json.loads(resources.files("codemod").joinpath("schemas/rule.schema.json").read_text())


def _line_of(node, path) -> int | None:
    """Line (1-based) of the YAML node at a jsonschema error path."""
    for key in path:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if k.value == key:
                    nxt = v
                    break
            if nxt is None:
                return node.start_mark.line + 1
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
    return node.start_mark.line + 1 if node is not None else None


# NOTE: a rule is a few hundred lines; the bounds keep a hostile file (an alias bomb: nine
# aliases of nine aliases ... expand to 10^9 nodes) from costing minutes and gigabytes.
MAX_RULE_BYTES = 1 << 20
MAX_RULE_NODES = 100_000  # nodes once every alias is expanded
MAX_RULE_DEPTH = 64       # nested mappings/sequences (a rule uses 5)
# NOTE: the depth is checked on libyaml's event stream (iterative, in C) before composing: PyYAML's
# composer recurses, and 1000 nested brackets already take seconds to fail.
_EVENTS = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_rule_text(path: Path, what: str = "rule") -> str:
    """The text of a rule file (`what`: the kind of file, for errors): at most MAX_RULE_BYTES of
    UTF-8, no NUL bytes; else a RuleError."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_RULE_BYTES + 1)
    except OSError as exc:
        raise RuleError(f"cannot read {what}: {exc.strerror}", where=str(path)) from None
    if len(data) > MAX_RULE_BYTES:
        raise RuleError(f"{what} file is larger than {MAX_RULE_BYTES >> 20} MiB", where=str(path),
                        hint="a rule is a small YAML file; see docs/rules.md")
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise RuleError(f"{what} file is binary (holds a NUL byte), expected YAML text", where=f"{path}:{line}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RuleError(f"{what} file is not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded",
                        where=f"{path}:{line}", hint=f"save the {what} as UTF-8") from None


def _expanded_size(root: yaml.Node, path: Path) -> int:
    """Nodes of the document with every alias expanded (shared nodes counted once per use),
    without expanding it; a RuleError past MAX_RULE_NODES or for a recursive alias."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise RuleError("recursive YAML alias", where=f"{path}:{node.start_mark.line + 1}")
        active.add(key)
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_RULE_NODES:
                raise RuleError(f"YAML expands to more than {MAX_RULE_NODES} nodes (aliases)",
                                where=f"{path}:{child.start_mark.line + 1}",
                                hint="a rule needs no deep aliases; write the values out")
        active.discard(key)
        sizes[key] = total
        return total

    return size(root)


def _check_depth(text: str, path: Path) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=_EVENTS):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_RULE_DEPTH:
                raise RuleError(f"YAML is nested more than {MAX_RULE_DEPTH} levels deep",
                                where=f"{path}:{event.start_mark.line + 1}")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _compose(text: str, path: Path) -> tuple[yaml.Node | None, object]:
    """The YAML node tree (for line numbers) and the data built from it, bounded."""
    loader = None
    try:
        _check_depth(text, path)
        loader = yaml.SafeLoader(text)  # NOTE: it refuses control characters already here
        node = loader.get_single_node()
        if node is None:
            return None, None
        _expanded_size(node, path)
        return node, loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise RuleError(f"invalid YAML: {getattr(exc, 'problem', exc)}", where=where) from None
    except RecursionError:
        raise RuleError("YAML is nested too deeply", where=str(path)) from None
    except ValueError as exc:  # an integer past Python's int-string limit (4,300 digits)
        raise RuleError(f"invalid YAML: {str(exc)[:80]}", where=str(path)) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: Path, what: str):
    """A YAML configuration file (`what`: e.g. "parity profile") with a rule's bounds; else a RuleError."""
    return _compose(read_rule_text(path, what), path)[1]


def load_rule_file(path: Path) -> Rule:
    node, data = _compose(read_rule_text(path), path)
    if not isinstance(data, dict):
        raise RuleError("a rule must be a mapping", where=f"{path}:1")
    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        path_ = list(err.path)
        extra = re.findall(r"'([^']+)' (?:was|were) unexpected", err.message)
        if err.validator == "additionalProperties" and extra:
            path_.append(extra[0])  # point at the unexpected key itself
        line = _line_of(node, path_)
        field_name = "/".join(str(p) for p in err.path) or "(top level)"
        message = err.message
        if err.validator == "pattern" and "description" in err.schema:
            # NOTE: the patterns keep rule text that reaches generated C++/CMake from injecting code
            message = f"{err.instance!r} is not {err.schema['description']}"
        raise RuleError(f"{field_name}: {message}", where=f"{path}:{line}",
                        hint="see docs/rules.md for the rule format")
    _check_options(data, node, path)
    a = data["analyze"]
    try:
        re.compile(a["entry_points"])
    except re.error as exc:
        raise RuleError(f"analyze/entry_points: bad regex: {exc}", where=f"{path}:{_line_of(node, ['analyze', 'entry_points'])}") from None
    return Rule(id=data["id"], description=data["description"], path=path,
                translation_units=a["translation_units"], entry_points=a["entry_points"],
                exclude=a.get("exclude", []), include_dirs=a.get("include_dirs", []),
                defines=a.get("defines", []), expect=a.get("expect", {}), raw=data)


def _check_options(data: dict, node, path: Path) -> None:
    """migrate.options hold NVRTC options from the allow-list only (codemod.nvrtc_options): a rule
    is data too, and its options reach NVRTC in every process that loads the library."""
    from . import nvrtc_options

    opts = (data.get("migrate") or {}).get("options") or {}
    found = [(["always", k], o) for k, o in enumerate(opts.get("always", []))]
    found += [(["conditional", k, "option"], c["option"]) for k, c in enumerate(opts.get("conditional", []))]
    found += [(["kernels", name, k], o) for name, os_ in (opts.get("kernels") or {}).items() for k, o in enumerate(os_)]
    for where, option in found:
        if nvrtc_options.refused([option]):
            line = _line_of(node, ["migrate", "options", *where])
            raise RuleError(f"migrate/options: option not allowed: {nvrtc_options.describe([option])}",
                            where=f"{path}:{line}", hint="NVRTC options from codemod.nvrtc_options only (docs/rules.md)")


def available_rules(rules_dir: Path = RULES_DIR) -> list[str]:
    return sorted(p.stem for p in rules_dir.glob("*.yaml"))


def load_rule(name: str, rules_dir: Path = RULES_DIR) -> Rule:
    """A target by name (rules/<name>.yaml) or a path to a rule file."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return load_rule_file(p)
    path = rules_dir / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(available_rules(rules_dir)) or "none"
        raise RuleError(f"unknown target '{name}'", hint=f"known targets: {known}; or pass a rule file path")
    return load_rule_file(path)
