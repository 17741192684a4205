"""Analysis + rule + library profile -> the driver plan: which entry points to call, how each
parameter is filled, and the dtype x format x shape grid (grouped-tensor entry points: their own
formats and grouped cases). Plain data, rendered by driver.py."""

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
GROUPED_ROLES = ("input", "output")
GROUPED_SHAPES = ("same", "varying_first", "varying_last")


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
class GroupedCase:
    name: str                  # part of the case id: "same:4x64x256", "varying_first:64+0+33x256"
    shape: str                 # same / varying_first / varying_last (TE's shape representations)
    dims: list[tuple[int, int]]   # (rows, cols) of every group, in order
    logical: tuple[int, int]      # the grouped tensor's 2-D shape: [sum of rows, cols], [rows, sum of cols]


@dataclass
class Grouped:
    """How grouped-tensor entry points are called: output formats x cases (each a list of groups)."""
    tensor_type: str
    formats: list[Format]
    cases: list[GroupedCase]


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
    # Entry points whose tensors are grouped (profile's grouped_tensor_type), called with
    # `grouped` instead of formats x shapes_rc.
    grouped_entries: list[Entry] = field(default_factory=list)
    grouped: Grouped | None = None
    # Entry points that reach a migrated kernel but are not called (profile's not_called, with why).
    not_called: list[dict] = field(default_factory=list)

    def to_json(self) -> str:
        data = asdict(self)
        # NOTE: left out when unused, so the plans of libraries without grouped entries keep their JSON.
        if not self.grouped_entries:
            del data["grouped_entries"], data["grouped"]
        if not self.not_called:
            del data["not_called"]
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


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


def _not_called(profile: Profile, entry: str) -> str | None:
    """The profile's reason for not calling an entry point that reaches a migrated kernel (the
    first `not_called` pattern that matches), else None. Such entries are listed in the plan and
    the result, never dropped silently."""
    for rule in profile.get("not_called", []):
        if not isinstance(rule, dict) or not rule.get("match") or not rule.get("why"):
            raise RuleError("not_called: entries are {match: REGEX, why: TEXT}", where=str(profile.path))
        if re.search(rule["match"], entry):
            return str(rule["why"])
    return None


def _inputs_for(profile: Profile, entry: str) -> list[str]:
    """Input dtypes an entry point is called with: the first `entry_inputs` pattern that matches
    (e.g. a dequantize entry takes FP8 only), else the profile's `input_dtypes`."""
    for rule in profile.get("entry_inputs", []):
        if re.search(rule["match"], entry):
            return list(rule["input_dtypes"])
    return list(profile["input_dtypes"])


def _tensor_kind(profile: Profile, param) -> str | None:
    """"tensor", "grouped" or None for a parameter's base type."""
    if param.base == profile["tensor_type"]:
        return "tensor"
    if profile.get("grouped_tensor_type") and param.base == profile["grouped_tensor_type"]:
        return "grouped"
    return None


def _args(profile: Profile, proto) -> list[Arg]:
    roles, scalars = profile["roles"], profile.get("scalars", {})
    stream = profile["stream_type"]
    args = []
    for p in proto.params:
        if _tensor_kind(profile, p) is not None:
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


def _is_grouped(profile: Profile, proto, args: list[Arg]) -> bool:
    """True when every tensor parameter is grouped; a mix of both handle types is refused."""
    kinds = {_tensor_kind(profile, p) for p in proto.params} - {None}
    if "grouped" not in kinds:
        return False
    if "tensor" in kinds or any(a.role not in GROUPED_ROLES + ("stream", "scalar") for a in args):
        found = ", ".join(f"{p.type} {p.name}" for p in proto.params if _tensor_kind(profile, p))
        raise UnsupportedConstruct(
            f"{proto.name}: a grouped entry point takes grouped inputs and one grouped output only "
            f"(found {found})",
            where=proto.where, hint="leave its kernels out of migrate.kernels, or extend the grouped driver")
    for a in args:
        if a.role in GROUPED_ROLES and a.shape != (1, 1):
            raise UnsupportedConstruct(f"{proto.name}: grouped tensor `{a.name}` cannot take a shape rule",
                                       where=proto.where, hint="narrow the shapes: pattern in the parity profile")
    return True


def _grouped_case(raw: dict, where: str) -> GroupedCase:
    """One `grouped.cases` item -> its groups. same: num_tensors x (rows, cols); varying_first:
    first_dims with a common cols; varying_last: a common rows with last_dims."""
    shape = raw.get("shape")
    try:
        if shape == "same":
            n, rows, cols = int(raw["num_tensors"]), int(raw["rows"]), int(raw["cols"])
            dims = [(rows, cols)] * n
            name = f"same:{n}x{rows}x{cols}"
        elif shape == "varying_first":
            firsts, cols = [int(d) for d in raw["first_dims"]], int(raw["cols"])
            dims = [(r, cols) for r in firsts]
            name = f"varying_first:{'+'.join(map(str, firsts))}x{cols}"
        elif shape == "varying_last":
            rows, lasts = int(raw["rows"]), [int(d) for d in raw["last_dims"]]
            dims = [(rows, c) for c in lasts]
            name = f"varying_last:{rows}x{'+'.join(map(str, lasts))}"
        else:
            raise RuleError(f"grouped case {raw}: shape is one of {', '.join(GROUPED_SHAPES)}", where=where)
    except (KeyError, TypeError, ValueError) as exc:
        raise RuleError(f"grouped case {raw}: missing or invalid {exc}", where=where) from None
    if not dims or any(r < 0 or c < 0 for r, c in dims):
        raise RuleError(f"grouped case {raw}: at least one group, no negative dimension", where=where)
    if shape == "varying_last":
        logical = (dims[0][0], sum(c for _, c in dims))
    else:
        logical = (sum(r for r, _ in dims), dims[0][1])
    return GroupedCase(name, shape, dims, logical)


def _grouped(profile: Profile) -> Grouped:
    raw = profile["grouped"]
    where = str(profile.path)
    formats = [Format(**f) for f in raw.get("formats", [])]
    for f in formats:
        if f.dtype not in profile["dtypes"]:
            raise RuleError(f"grouped format {f.name}: unknown dtype {f.dtype}", where=where)
        if f.scaling != "per_tensor" or not (f.rowwise or f.colwise):
            raise RuleError(f"grouped format {f.name}: per_tensor scaling with rowwise and/or colwise data",
                            where=where)
    cases = [_grouped_case(c, where) for c in raw.get("cases", [])]
    if not formats or not cases:
        raise RuleError("grouped: needs formats and cases", where=where)
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise RuleError(f"grouped cases repeat: {names}", where=where)
    return Grouped(profile["grouped_tensor_type"], formats, cases)


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
    entries, grouped_entries, not_called = [], [], []
    for ep in sorted(analysis["entry_points"], key=lambda e: e["name"]):
        reached = sorted(k for k in ep.get("kernels", {}) if k in migrated)
        if not reached:
            continue
        why = _not_called(profile, ep["name"])
        if why is not None:
            not_called.append({"name": ep["name"], "kernels": reached, "why": why})
            continue
        proto = protos.get(ep["name"])
        if proto is None:
            raise UnsupportedConstruct(f"entry point {ep['name']} is not declared in the profile's headers",
                                       where=f"{ep['file']}:{ep['line']}")
        args = _args(profile, proto)
        (grouped_entries if _is_grouped(profile, proto, args) else entries).append(
            Entry(ep["name"], proto.where, args, reached, _inputs_for(profile, ep["name"])))
    if not entries and not grouped_entries:
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
        input_dtypes=_all_inputs(profile, entries + grouped_entries), formats=formats,
        shapes_rc=[tuple(s) for s in profile["shapes_rc"]], bench_rc=tuple(profile["bench_rc"]),
        step=list(profile.get("step", [])),
        bench_formats=list(profile.get("bench_formats", [f.name for f in formats])), entries=entries,
        compile_verified_only=list(profile.get("compile_verified_only", [])),
        link_libs=list(profile.get("link_libs", [])),
        grouped_entries=grouped_entries, grouped=_grouped(profile) if grouped_entries else None,
        not_called=not_called)
