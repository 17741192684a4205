"""Analysis + rule + library profile -> the driver plan: which entry points to call, how each
parameter is filled (roles, or a `calls` spec: tensors with shapes as expressions, scalars, variants),
and the dtype x format x shape grid (grouped-tensor entry points: their own formats and grouped
cases). Plain data, rendered by driver.py."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path


from ..errors import RuleError, UnsupportedConstruct, UsageError
from ..rule import load_yaml
from .. import strict_json
from ..apply.base.c_api import prototypes

PROFILES_DIR = Path(__file__).resolve().parent / "libraries"
TENSOR_ROLES = ("input", "output", "dbias", "workspace")
CALL_SPEC_KEYS = {"match", "formats", "shapes_rc", "scalars", "tensors", "variants", "cross"}
INTEGER_KINDS = ("byte", "int16", "int32", "int64")
TENSOR_SPEC_KEYS = {"role", "dims", "dtype", "fill", "zero", "absent", "nullptr"}
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
    value: str = ""            # scalars: a C++ literal or an expression of R, C
    # Tensors of a `calls` spec (empty otherwise): 1 or 2 C++ expressions of the case's R and C
    # and the entry's scalars; the dtype ("" = the case's input dtype for inputs, the case's
    # format for outputs); an input's fill; an output zeroed instead of poisoned (accumulates);
    # `absent` = a handle without buffers, `null` = a null handle.
    dims: list[str] = field(default_factory=list)
    dtype: str = ""
    fill: str = ""
    fill_arg: str = ""         # distinct: the exclusive bound (an expression); values: C++ floats
    zero: bool = False
    absent: bool = False
    null: bool = False


@dataclass
class Entry:
    name: str
    where: str                 # header:line of the prototype
    args: list[Arg]
    kernels: list[str]         # migrated kernels it reaches (from the analysis)
    inputs: list[str] = field(default_factory=list)   # input dtypes it is called with
    # The name cases carry: the function, or "function/variant" for a `calls` variant.
    label: str = ""
    variant: str = ""
    formats: list[str] = field(default_factory=list)  # output formats it is called with (all if empty)
    shapes: list[int] = field(default_factory=list)   # indices into the plan's shapes_rc (all if empty)


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
    # Entry points whose definition takes another handle type than the header declares (both
    # `void *` typedefs, so C accepts it): the driver follows the definition, and says so.
    header_mismatches: list[dict] = field(default_factory=list)

    def case_counts(self) -> dict[str, int]:
        """Cases the driver runs per plain entry (its label): inputs x formats x shapes x 2 value
        sets (random, edge); grouped entries: inputs x grouped formats x grouped cases x 2."""
        counts = {e.label or e.name: len(e.inputs) * len(e.formats or self.formats)
                  * len(e.shapes or self.shapes_rc) * 2 for e in self.entries}
        for e in self.grouped_entries:
            counts[e.label or e.name] = len(e.inputs) * len(self.grouped.formats) * len(self.grouped.cases) * 2
        return counts

    def to_json(self) -> str:
        data = asdict(self)
        # NOTE: left out when unused, so the plans of libraries without grouped entries keep their JSON.
        if not self.grouped_entries:
            del data["grouped_entries"], data["grouped"]
        if not self.not_called:
            del data["not_called"]
        if not self.header_mismatches:
            del data["header_mismatches"]
        return strict_json.dumps(data, "parity plan", indent=2, sort_keys=True) + "\n"


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
    data = load_yaml(path, "parity profile")
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


def _kernels_not_run(profile: Profile) -> list[dict]:
    """`kernels_not_run: [{match: REGEX, why: TEXT}]`: migrated kernels the profile's GPU cannot
    run (e.g. sm_100-only instructions). An entry point that reaches only such kernels is listed
    in not_called with the reason."""
    rules = profile.get("kernels_not_run", [])
    for rule in rules:
        if not isinstance(rule, dict) or not rule.get("match") or not rule.get("why"):
            raise RuleError("kernels_not_run: entries are {match: REGEX, why: TEXT}", where=str(profile.path))
    return rules


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


def _args(profile: Profile, proto, variant: "Variant | None" = None) -> list[Arg]:
    """One Arg per parameter: tensors by role (or by the entry's `calls` spec and variant),
    the stream, scalars (variant, then spec, then the profile's `scalars`)."""
    roles, scalars = profile["roles"], dict(profile.get("scalars", {}))
    if variant is not None:
        scalars.update(variant.scalars)
    stream = profile["stream_type"]
    scalar_names = {p.name for p in proto.params if _tensor_kind(profile, p) is None and p.base != stream}
    args = []
    for p in proto.params:
        if _tensor_kind(profile, p) is not None:
            spec = variant.tensors.get(p.name, {}) if variant is not None else {}
            role = spec.get("role") or roles.get(p.name)
            if role not in TENSOR_ROLES:
                raise UnsupportedConstruct(
                    f"{proto.name}: tensor parameter `{p.name}` has no role in the parity profile",
                    where=proto.where, hint=f"add `{p.name}: input|output|dbias|workspace` under roles:, "
                                            "or under the entry's calls: tensors:")
            if set(spec) - {"role"}:
                args.append(_spec_arg(profile, proto, p.name, role, spec, scalar_names))
            else:
                args.append(Arg(p.name, role, _shape_for(profile, proto.name, p.name)))
        elif p.base == stream:
            args.append(Arg(p.name, "stream"))
        elif p.name in scalars:
            value = str(scalars[p.name])
            if variant is not None and p.name in variant.scalars:
                _check_expr(value, set(), proto, f"scalar {p.name}", literal_ok=True)
            args.append(Arg(p.name, "scalar", value=value))
        else:
            raise UnsupportedConstruct(f"{proto.name}: parameter `{p.type} {p.name}` cannot be filled",
                                       where=proto.where, hint="add it under scalars: in the parity profile")
    outputs = [a for a in args if a.role == "output"]
    if variant is None or not variant.spec:
        if len(outputs) != 1:
            raise UnsupportedConstruct(f"{proto.name}: expected exactly one output tensor", where=proto.where)
    elif not outputs or sum(1 for a in outputs if not a.dtype and not a.null and not a.absent) > 1:
        raise UnsupportedConstruct(f"{proto.name}: a calls spec needs at least one output tensor and at "
                                   "most one that takes the case's format (no dtype:)", where=proto.where)
    return args


_IDENT = re.compile(r"[A-Za-z_]\w*")
_EXPR = re.compile(r"^(?:\s|[A-Za-z_]\w*|\d+(?:\.\d+)?[fu]?|[-+*/%()<>?:=!&|])*$")


def _check_expr(expr: str, names: set[str], proto, what: str, literal_ok: bool = False) -> None:
    """A shape, bound or scalar expression: numbers, operators and the names it may use."""
    if not _EXPR.match(expr):
        raise RuleError(f"{proto.name}: {what} `{expr}` is not an expression of R, C and the entry's scalars",
                        where=proto.where)
    if literal_ok:
        return
    unknown = sorted({m for m in _IDENT.findall(expr) if m not in names and m not in ("static_cast", "size_t", "int")})
    if unknown:
        raise RuleError(f"{proto.name}: {what} `{expr}` names {', '.join(unknown)}",
                        where=proto.where, hint="use R, C (the case's shape) and the entry's scalar parameters")


def _spec_arg(profile: Profile, proto, name: str, role: str, spec: dict, scalar_names: set[str]) -> Arg:
    """A tensor of a `calls` spec: dims, dtype, fill, zero, absent, null (docs/parity.md)."""
    unknown = set(spec) - TENSOR_SPEC_KEYS
    if unknown:
        raise RuleError(f"{proto.name}: tensor `{name}` has unknown keys {sorted(unknown)} "
                        f"(known: {', '.join(sorted(TENSOR_SPEC_KEYS))})", where=str(profile.path))
    if role not in ("input", "output"):
        raise UnsupportedConstruct(f"{proto.name}: tensor `{name}`: a calls spec fills inputs and outputs only",
                                   where=proto.where)
    arg = Arg(name, role, absent=bool(spec.get("absent")), null=bool(spec.get("nullptr")))
    if arg.absent or arg.null:
        return arg
    names = {"R", "C"} | scalar_names
    dims = [str(d) for d in spec.get("dims", [])]
    if not 1 <= len(dims) <= 2:
        raise RuleError(f"{proto.name}: tensor `{name}` needs dims: [ROWS] or [ROWS, COLS]", where=str(profile.path))
    for d in dims:
        _check_expr(d, names, proto, f"dims of `{name}`")
    arg.dims = dims
    arg.dtype = str(spec.get("dtype", ""))   # "input": the case's input dtype (also for outputs)
    if arg.dtype and arg.dtype != "input" and arg.dtype not in profile["dtypes"]:
        raise RuleError(f"{proto.name}: tensor `{name}`: unknown dtype {arg.dtype}", where=str(profile.path))
    arg.zero = bool(spec.get("zero"))
    fill = spec.get("fill", "random")
    if role == "output" and "fill" in spec:
        raise RuleError(f"{proto.name}: output `{name}` cannot take fill: (outputs are poisoned, or zero: true)",
                        where=str(profile.path))
    if isinstance(fill, dict) and list(fill) == ["distinct"]:
        arg.fill, arg.fill_arg = "distinct", str(fill["distinct"])
        _check_expr(arg.fill_arg, names, proto, f"distinct bound of `{name}`")
    elif isinstance(fill, dict) and list(fill) == ["values"]:
        try:
            arg.fill, arg.fill_arg = "values", ", ".join(f"{float(v)!r}f" for v in fill["values"])
        except (TypeError, ValueError):
            raise RuleError(f"{proto.name}: fill values of `{name}` must be numbers", where=str(profile.path)) from None
    elif fill in ("random", "mask01", "bits"):
        arg.fill = fill if role == "input" else ""
        kind = profile["dtypes"].get(arg.dtype, ("", 0, ""))[2]
        if arg.fill == "random" and kind in INTEGER_KINDS:
            raise RuleError(f"{proto.name}: {arg.dtype} input `{name}` needs fill: mask01, bits, {{distinct: BOUND}} "
                            "or {values: [...]} (random values are floats with NaN and infinities)",
                            where=str(profile.path))
    else:
        raise RuleError(f"{proto.name}: tensor `{name}`: fill is random, mask01, bits, {{distinct: EXPR}} or "
                        f"{{values: [...]}}, found {fill!r}", where=str(profile.path))
    return arg


@dataclass
class Variant:
    name: str
    scalars: dict
    tensors: dict              # parameter -> its tensor spec (the spec's, updated by the variant's)
    spec: bool = True          # False: no calls spec (the profile's roles and shapes)


def _calls_spec(profile: Profile, entry: str) -> dict | None:
    """The first `calls` spec whose pattern matches the entry point, else None."""
    for spec in profile.get("calls", []):
        if not isinstance(spec, dict) or not spec.get("match"):
            raise RuleError("calls: entries are mappings with a match: REGEX", where=str(profile.path))
        unknown = set(spec) - CALL_SPEC_KEYS
        if unknown:
            raise RuleError(f"calls {spec['match']}: unknown keys {sorted(unknown)} "
                            f"(known: {', '.join(sorted(CALL_SPEC_KEYS))})", where=str(profile.path))
        if re.search(spec["match"], entry):
            return spec
    return None


def _variants(profile: Profile, spec: dict | None) -> list[Variant]:
    """A spec's variants x its cross list (names joined with '+'), each with its scalars and
    tensor specs merged over the spec's; one unnamed variant when it lists none."""
    if spec is None:
        return [Variant("", {}, {}, spec=False)]
    base = spec.get("variants") or [{}]
    cross = spec.get("cross") or [{}]
    out = []
    for v in base:
        for x in cross:
            for part in (v, x):
                if not isinstance(part, dict) or set(part) - {"name", "scalars", "tensors"}:
                    raise RuleError(f"calls {spec['match']}: a variant is {{name, scalars, tensors}}, found {part!r}",
                                    where=str(profile.path))
            name = "+".join(str(n) for n in (v.get("name", ""), x.get("name", "")) if n)
            if not re.fullmatch(r"[A-Za-z0-9_+]*", name):
                raise RuleError(f"calls {spec['match']}: variant name {name!r}: letters, digits and _ only",
                                where=str(profile.path))
            scalars = {**spec.get("scalars", {}), **v.get("scalars", {}), **x.get("scalars", {})}
            tensors = {k: dict(t) for k, t in spec.get("tensors", {}).items()}
            for part in (v, x):
                for k, t in part.get("tensors", {}).items():
                    tensors[k] = {**tensors.get(k, {}), **t}
            out.append(Variant(name, scalars, tensors))
    names = [v.name for v in out]
    if len(out) > 1 and (len(set(names)) != len(names) or "" in names):
        raise RuleError(f"calls {spec['match']}: variants need distinct names, found {names}", where=str(profile.path))
    return out


def _follow_definition(profile: Profile, proto, library_root: Path, ep: dict, mismatches: list[dict]):
    """The entry point's prototype as its definition (the analysis' file:line) spells it, when that
    differs from the header's in which parameters are tensor handles of which kind (TE d0067d0
    declares `nvte_group_dgelu(..., NVTETensor output, ...)` and defines it with an
    `NVTEGroupedTensor output`: one `void *`, so both compile, and the definition is what runs).
    Anything else (names, order, count) keeps the header's prototype."""
    path = library_root / ep.get("file", "")
    if not ep.get("file") or not path.is_file():
        return proto
    defined = prototypes(path, ep["file"], kind="function_definition").get(proto.name)
    if defined is None or len(defined.params) != len(proto.params):
        return proto
    kinds = [(_tensor_kind(profile, a), _tensor_kind(profile, b)) for a, b in zip(proto.params, defined.params)]
    if all(a == b for a, b in kinds) or any(a is None or b is None for a, b in kinds if a != b):
        return proto
    mismatches.append({"name": proto.name, "header": proto.where, "definition": defined.where,
                       "parameters": [f"{a.type} {a.name} -> {b.type} {b.name}"
                                      for a, b in zip(proto.params, defined.params) if a.type != b.type]})
    return defined


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
    formats = [Format(**f) for f in profile["formats"]]
    default_formats = [f.name for f in formats]
    formats += [Format(**f) for f in profile.get("call_formats", [])]   # for calls specs only
    by_name = {f.name: f for f in formats}
    for f in formats:
        if f.dtype not in profile["dtypes"]:
            raise RuleError(f"format {f.name}: unknown dtype {f.dtype}", where=str(profile.path))
    shapes_rc = [tuple(s) for s in profile["shapes_rc"]]
    default_shapes = list(range(len(shapes_rc)))
    not_run = _kernels_not_run(profile)
    entries, grouped_entries, not_called, header_mismatches = [], [], [], []
    for ep in sorted(analysis["entry_points"], key=lambda e: e["name"]):
        reached = sorted(k for k in ep.get("kernels", {}) if k in migrated)
        if not reached:
            continue
        why = _not_called(profile, ep["name"])
        runnable = [k for k in reached if not any(re.search(r["match"], k) for r in not_run)]
        if why is None and not runnable:
            why = "; ".join(dict.fromkeys(r["why"] for k in reached for r in not_run if re.search(r["match"], k)))
        if why is not None:
            not_called.append({"name": ep["name"], "kernels": reached, "why": why})
            continue
        proto = protos.get(ep["name"])
        if proto is None:
            raise UnsupportedConstruct(f"entry point {ep['name']} is not declared in the profile's headers",
                                       where=f"{ep['file']}:{ep['line']}")
        proto = _follow_definition(profile, proto, library_root, ep, header_mismatches)
        spec = _calls_spec(profile, ep["name"])
        entry_formats, entry_shapes = default_formats, default_shapes
        if spec is not None:
            entry_formats = [str(f) for f in spec.get("formats", default_formats)]
            for f in entry_formats:
                if f not in by_name:
                    raise RuleError(f"calls {spec['match']}: unknown format {f}", where=str(profile.path))
            if "shapes_rc" in spec:
                entry_shapes = []
                for rc in spec["shapes_rc"]:
                    if tuple(rc) not in shapes_rc:
                        shapes_rc.append(tuple(rc))
                    entry_shapes.append(shapes_rc.index(tuple(rc)))
        for variant in _variants(profile, spec):
            args = _args(profile, proto, variant)
            label = f"{ep['name']}/{variant.name}" if variant.name else ep["name"]
            entry = Entry(ep["name"], proto.where, args, reached, _inputs_for(profile, ep["name"]), label=label,
                          variant=variant.name, formats=list(entry_formats), shapes=list(entry_shapes))
            if _is_grouped(profile, proto, args):
                if spec is not None:
                    raise UnsupportedConstruct(f"{proto.name}: grouped entry points take no calls spec",
                                               where=proto.where)
                grouped_entries.append(entry)
            else:
                entries.append(entry)
    if len(formats) > 64 or len(shapes_rc) > 64:
        raise RuleError("the driver takes at most 64 formats and 64 shapes (entry masks)", where=str(profile.path))
    if not entries and not grouped_entries:
        if not_called:
            by_why: dict[str, list[str]] = {}
            for n in not_called:
                by_why.setdefault(n["why"], []).append(n["name"])
            raise UsageError("no entry point reaching a migrated kernel can be called: "
                             + "; ".join(f"{', '.join(names)}: {why}" for why, names in by_why.items()),
                             hint="these kernels are compile-verified only (codemod verify)")
        raise UsageError("no entry point of the analysis reaches a migrated kernel",
                         hint="analyze the TUs whose entry points launch them too, e.g. "
                              "`codemod analyze DIR --target RULE --target cast --json A.json`")
    return Plan(
        library=profile["library"], rule=rule.get("id", "?"), binding=profile["binding"],
        tensor_type=profile["tensor_type"], includes=includes,
        include_dirs=list(profile.get("include_dirs", [])), library_file=profile["library_file"],
        link_name=profile["link_name"],
        dtypes={k: tuple(v) for k, v in profile["dtypes"].items()},
        input_dtypes=_all_inputs(profile, entries + grouped_entries), formats=formats,
        shapes_rc=shapes_rc, bench_rc=tuple(profile["bench_rc"]),
        step=list(profile.get("step", [])),
        bench_formats=list(profile.get("bench_formats", [f.name for f in formats])), entries=entries,
        compile_verified_only=list(profile.get("compile_verified_only", []))
        + [f"{k}: {r['why']}" for k in sorted(migrated) for r in not_run if re.search(r["match"], k)],
        link_libs=list(profile.get("link_libs", [])),
        grouped_entries=grouped_entries, grouped=_grouped(profile) if grouped_entries else None,
        not_called=not_called, header_mismatches=header_mismatches)
