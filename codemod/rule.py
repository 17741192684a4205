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


def load_rule_file(path: Path) -> Rule:
    try:
        text = path.read_text()
    except OSError as exc:
        raise RuleError(f"cannot read rule: {exc.strerror}", where=str(path)) from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise RuleError(f"invalid YAML: {getattr(exc, 'problem', exc)}", where=where) from None
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
        raise RuleError(f"{field_name}: {err.message}", where=f"{path}:{line}",
                        hint="see docs/rules.md for the rule format")
    a = data["analyze"]
    try:
        re.compile(a["entry_points"])
    except re.error as exc:
        raise RuleError(f"analyze/entry_points: bad regex: {exc}", where=f"{path}:{_line_of(node, ['analyze', 'entry_points'])}") from None
    return Rule(id=data["id"], description=data["description"], path=path,
                translation_units=a["translation_units"], entry_points=a["entry_points"],
                exclude=a.get("exclude", []), include_dirs=a.get("include_dirs", []),
                defines=a.get("defines", []), expect=a.get("expect", {}), raw=data)


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
