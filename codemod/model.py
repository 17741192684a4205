"""The analysis model: plain dataclasses that serialize to the documented JSON (docs/analysis-schema.md).

Nothing downstream re-parses source: apply, reports and the impact join read this model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SCHEMA_VERSION = "1.2"

# Binding classes of a template argument at a launch site (docs/analysis-schema.md).
RUNTIME_CLASSES = ("type_switch", "value_switch", "entry_param", "runtime_branch", "derived")
STRUCTURAL_CLASSES = ("constant", "unresolved")


@dataclass
class TemplateParam:
    name: str
    kind: str                     # type | value | function_pointer | template
    type: str | None = None       # for value / function_pointer parameters
    enum: str | None = None       # value parameters of an enumeration type: its qualified name


@dataclass
class Axis:
    param: str
    kind: str
    arg: str                      # the argument as spelled at the site ('' when deduced)
    binding: str                  # one of RUNTIME_CLASSES + STRUCTURAL_CLASSES
    discoverable: bool
    reason: str
    sources: list[dict] = field(default_factory=list)  # macro / entry point / branch details
    domain: list[str] = field(default_factory=list)
    # for a parameter deduced from the launch's arguments: {"argument": index, "type": the
    # argument's type as spelled in the enclosing scope, cv/pointer stripped}
    deduced_from: dict | None = None


@dataclass
class Site:
    id: str                       # file:line:col of the spelled expression
    kind: str                     # launch | use
    api: str                      # <<<>>> | cudaLaunchKernelEx | cudaFuncSetAttribute | occupancy | table ...
    kernel: str | None            # kernel id (qualified name) or None when unresolved
    function: str                 # enclosing function (qualified name)
    file: str
    line: int
    col: int
    via: str | None = None        # variable holding the kernel (`auto kernel = k<...>`)
    in_macro_body: bool = False
    expansions: int = 1           # macro-expanded copies of this spelled site
    branches: list[str] = field(default_factory=list)
    axes: list[Axis] = field(default_factory=list)
    instantiations: int = 0
    entry_points: list[str] = field(default_factory=list)
    note: str | None = None
    kernels: list[str] = field(default_factory=list)  # every kernel the site may launch
    # The joint argument tuples that occur (in the order of the kernel's params), with the entry
    # points reaching each: the exact variant set, not the product of the axis domains.
    variants: list[dict] = field(default_factory=list)
    # A site through a generic lambda's `auto` parameter (`auto launch = [&](auto kernel) {...};
    # launch(k<...>);`): the lambda, its passing sites and its other sites (docs/analysis.md).
    generic_lambda: dict | None = None
    helper: str | None = None     # api "helper": the function the lambda passes the kernel to
    helper_uses: list[dict] | None = None  # and where it hands the kernel to a CUDA API


@dataclass
class Kernel:
    id: str                       # qualified name
    name: str
    file: str
    line: int
    is_template: bool
    params: list[TemplateParam]
    sites: list[str] = field(default_factory=list)
    instantiations: int = 0
    tus: dict[str, int] = field(default_factory=dict)
    entry_points: list[str] = field(default_factory=list)
    discoverable: bool = True
    structural_params: list[str] = field(default_factory=list)
    # The body is one `#if __CUDA_ARCH__ >= N` block: builds for older archs compile it empty
    # (the impact model weighs those instantiations 0). In the JSON only where known.
    body_arch_min: int | None = None
    # The body is one `#if` that also bounds __CUDA_ARCH__ from above: [low or None, N]; builds
    # outside it compile it empty. In the JSON only where known.
    body_arch_range: list | None = None


@dataclass
class EntryPoint:
    name: str
    file: str
    line: int
    kernels: dict[str, int] = field(default_factory=dict)   # kernel id -> instantiations reached
    instantiations: int = 0


@dataclass
class TranslationUnit:
    file: str
    entry_points: list[str]
    kernels: dict[str, int]
    instantiations: int
    parse_seconds: float
    errors: int
    from_cache: bool = False
    price: dict | None = None     # filled when build logs are given


@dataclass
class Diagnostic:
    id: str
    severity: str                 # error | warning | note
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    count: int = 1


@dataclass
class Unreached:
    """A kernel declared in the analysed TUs' closure that no entry point reaches."""
    kernel: str                   # qualified name
    file: str
    line: int
    is_template: bool
    reason: str                   # no_entry_point | unrecognised_form | named_in_string | not_launched
    detail: str                   # the reason in words, with file:line
    where: list[str] = field(default_factory=list)   # the file:line it names


# Keys the JSON holds only where they have a value (None is left out): TemplateParam.enum,
# Kernel.body_arch_min, Kernel.body_arch_range, Site.generic_lambda, Site.helper, Site.helper_uses.
OPTIONAL_KEYS = {TemplateParam: ("enum",), Kernel: ("body_arch_min", "body_arch_range"), Site: ("generic_lambda", "helper", "helper_uses")}


def json_fields(cls: type, d: dict) -> dict:
    """An instance's fields `d` as the JSON holds them: `cls`'s optional keys dropped when None."""
    for key in OPTIONAL_KEYS.get(cls, ()):
        if d.get(key) is None:
            d.pop(key, None)
    return d


@dataclass
class Analysis:
    schema_version: str
    tool_version: str
    root: str
    target: str | None
    translation_units: list[TranslationUnit]
    entry_points: list[EntryPoint]
    kernels: list[Kernel]
    sites: list[Site]
    diagnostics: list[Diagnostic]
    totals: dict
    stats: dict = field(default_factory=dict)
    impact: dict | None = None
    unreached: list[Unreached] = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        for k in d["kernels"]:
            k["params"] = [json_fields(TemplateParam, p) for p in k["params"]]
            json_fields(Kernel, k)
        for s in d["sites"]:
            json_fields(Site, s)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Analysis":
        d = dict(d)
        d["translation_units"] = [TranslationUnit(**x) for x in d["translation_units"]]
        d["entry_points"] = [EntryPoint(**x) for x in d["entry_points"]]
        d["kernels"] = [Kernel(**{**x, "params": [TemplateParam(**p) for p in x["params"]]}) for x in d["kernels"]]
        d["sites"] = [Site(**{**x, "axes": [Axis(**a) for a in x["axes"]]}) for x in d["sites"]]
        d["diagnostics"] = [Diagnostic(**x) for x in d["diagnostics"]]
        d["unreached"] = [Unreached(**x) for x in d.get("unreached", [])]
        return cls(**d)
