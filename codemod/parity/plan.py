"""Analysis + rule + library profile -> the driver plan: which entry points to call, how each
parameter is filled, and the dtype x format x shape grid. Plain data, rendered by driver.py."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ..errors import RuleError, UnsupportedConstruct, UsageError
from .api import prototypes

PROFILES_DIR = Path(__file__).resolve().parent / "libraries"
TENSOR_ROLES = ("input", "output", "dbias", "workspace")


@dataclass
class Format:
    name: str
    dtype: str
    scaling: str
    amax: bool = False
    scale: bool = False
    rowwise: bool = True
    colwise: bool = False


@dataclass
class Arg:
    name: str
    role: str                  # input / output / dbias / workspace / scalar / stream
    shape: tuple[int, int] = (1, 1)   # multipliers of the case's (R, C)
    value: str = ""            # scalars: a C++ literal


@dataclass
class Entry:
    name: str
    where: str                 # header:line of the prototype
    args: list[Arg]
    kernels: list[str]         # migrated kernels it reaches (from the analysis)
    inputs: list[str] = field(default_factory=list)   # input dtypes it is called with


@dataclass
class Plan:
    library: str
    rule: str
    binding: str
    tensor_type: str
    includes: list[str]
    include_dirs: list[str]
    library_file: str
    link_name: str
    dtypes: dict[str, tuple[str, int, str]]
    input_dtypes: list[str]
    formats: list[Format]
    shapes_rc: list[tuple[int, int]]
    bench_rc: tuple[int, int]
    step: list[dict]
    bench_formats: list[str]
    entries: list[Entry]
    compile_verified_only: list[str] = field(default_factory=list)
    # Libraries the library itself leaves to its loader (TE: NVRTC and the driver API, which its
    # Python package loads): the driver links them explicitly.
    link_libs: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


@dataclass
class Profile:
    path: Path
    data: dict

    def __getitem__(self, key):
        if key not in self.data:
            raise RuleError(f"parity profile has no `{key}`", where=str(self.path))
        return self.data[key]

    def get(self, key, default=None):
        return self.data.get(key, default)


def load_profile(name_or_path: str) -> Profile:
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
        raise UsageError(f"no parity profile `{name_or_path}`", hint=f"known: {known}, or a .yaml path")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise RuleError(f"invalid YAML: {exc}", where=str(path)) from None
    if not isinstance(data, dict):
        raise RuleError("a parity profile is a mapping", where=str(path))
    return Profile(path, data)


def _shape_for(profile: Profile, entry: str, param: str) -> tuple[int, int]:
    for rule in profile.get("shapes", []):
        if re.search(rule["match"], entry):
            if param in rule["params"]:
                return tuple(rule["params"][param])
            break
    return (1, 1)


def _all_inputs(profile: Profile, entries: list[Entry]) -> list[str]:
    """The driver's input dtype table: the profile's list, then any an entry adds (appended, so
    indices, and with them the case seeds, of the common ones do not move)."""
    out = list(profile["input_dtypes"])
    for e in entries:
        out += [d for d in e.inputs if d not in out]
    for d in out:
        if d not in profile["dtypes"]:
            raise RuleError(f"input dtype {d} is not in the profile's dtypes", where=str(profile.path))
    return out


def _inputs_for(profile: Profile, entry: str) -> list[str]:
    """Input dtypes an entry point is called with: the first `entry_inputs` pattern that matches
    (e.g. a dequantize entry takes FP8 only), else the profile's `input_dtypes`."""
    for rule in profile.get("entry_inputs", []):
        if re.search(rule["match"], entry):
            return list(rule["input_dtypes"])
    return list(profile["input_dtypes"])


def _args(profile: Profile, proto) -> list[Arg]:
    roles, scalars = profile["roles"], profile.get("scalars", {})
    tensor, stream = profile["tensor_type"], profile["stream_type"]
    args = []
    for p in proto.params:
        if p.base == tensor:
            role = roles.get(p.name)
            if role not in TENSOR_ROLES:
                raise UnsupportedConstruct(
                    f"{proto.name}: tensor parameter `{p.name}` has no role in the parity profile",
                    where=proto.where, hint=f"add `{p.name}: input|output|dbias|workspace` under roles:")
            args.append(Arg(p.name, role, _shape_for(profile, proto.name, p.name)))
        elif p.base == stream:
            args.append(Arg(p.name, "stream"))
        elif p.name in scalars:
            args.append(Arg(p.name, "scalar", value=str(scalars[p.name])))
        else:
            raise UnsupportedConstruct(f"{proto.name}: parameter `{p.type} {p.name}` cannot be filled",
                                       where=proto.where, hint="add it under scalars: in the parity profile")
    if sum(a.role == "output" for a in args) != 1:
        raise UnsupportedConstruct(f"{proto.name}: expected exactly one output tensor", where=proto.where)
    return args


def build_plan(analysis: dict, rule: dict, profile: Profile, library_root: Path) -> Plan:
    """`analysis`: the `codemod analyze --json` document; `rule`: the rule file's mapping."""
    migrated = set(rule.get("migrate", {}).get("kernels", []))
    if not migrated:
        raise RuleError("the rule has no migrate.kernels: nothing to compare")
    protos = {}
    includes = []
    for header in profile["headers"]:
        path = library_root / header
        if not path.is_file():
            raise UsageError(f"header {header} not found under {library_root}")
        protos.update(prototypes(path, header))
        rel = header
        for inc in profile.get("include_dirs", []):
            if header.startswith(inc.rstrip("/") + "/"):
                rel = header[len(inc.rstrip("/")) + 1:]
                break
        includes.append(rel)
    entries = []
    for ep in sorted(analysis["entry_points"], key=lambda e: e["name"]):
        reached = sorted(k for k in ep.get("kernels", {}) if k in migrated)
        if not reached:
            continue
        proto = protos.get(ep["name"])
        if proto is None:
            raise UnsupportedConstruct(f"entry point {ep['name']} is not declared in the profile's headers",
                                       where=f"{ep['file']}:{ep['line']}")
        entries.append(Entry(ep["name"], proto.where, _args(profile, proto), reached,
                             _inputs_for(profile, ep["name"])))
    if not entries:
        raise UsageError("no entry point of the analysis reaches a migrated kernel")
    formats = [Format(**f) for f in profile["formats"]]
    for f in formats:
        if f.dtype not in profile["dtypes"]:
            raise RuleError(f"format {f.name}: unknown dtype {f.dtype}", where=str(profile.path))
    return Plan(
        library=profile["library"], rule=rule.get("id", "?"), binding=profile["binding"],
        tensor_type=profile["tensor_type"], includes=includes,
        include_dirs=list(profile.get("include_dirs", [])), library_file=profile["library_file"],
        link_name=profile["link_name"],
        dtypes={k: tuple(v) for k, v in profile["dtypes"].items()},
        input_dtypes=_all_inputs(profile, entries), formats=formats,
        shapes_rc=[tuple(s) for s in profile["shapes_rc"]], bench_rc=tuple(profile["bench_rc"]),
        step=list(profile.get("step", [])),
        bench_formats=list(profile.get("bench_formats", [f.name for f in formats])), entries=entries,
        compile_verified_only=list(profile.get("compile_verified_only", [])),
        link_libs=list(profile.get("link_libs", [])))
