"""The rule's `migrate:` section as typed data (validated by the schema in rule.py first)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from ...errors import RuleError, UsageError
from ...rule import Rule, _line_of
from . import shared_variables


# sizeof of the CUDA toolkit's and C++'s arithmetic types (fixed by their ABI, not by a library).
BUILTIN_SIZES = {
    "float": 4, "double": 8, "half": 2, "__half": 2, "nv_bfloat16": 2, "__nv_bfloat16": 2,
    "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1, "__nv_fp8_e8m0": 1, "__nv_fp4x2_e2m1": 1,
    "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
    "int64_t": 8, "uint64_t": 8, "int": 4, "bool": 1, "char": 1,
}


@dataclass
class MigrateSpec:
    rule_id: str
    output_dir: str
    namespace: str
    kernels: list[str]
    translation_units: list[str]
    stub_includes: list[str]
    names: dict
    types: dict
    kernel_strings: dict
    layer: dict
    options: dict
    cmake: dict
    include_dirs: list[str] = field(default_factory=list)
    license: dict | None = None
    raw: dict = field(default_factory=dict)
    repo_root: str = "."        # the repository root as seen from the library root
    docs: dict = field(default_factory=dict)
    library: str = ""           # the rule's `library` key (include guards without a convention to follow)

    def repo_path(self, path: str) -> str:
        """A path relative to `repo_root` as a path relative to the library root (`../../docs/x`)."""
        return posixpath.normpath(posixpath.join(self.repo_root, path))

    def repo_files(self) -> list[str]:
        """The library-root-relative paths of the files outside `output_dir` the rule's docs edit."""
        envvars = self.docs.get("envvars")
        test = self.raw.get("tests", {}).get("operator")
        setup = self.raw.get("setuptools")
        return ([self.repo_path(envvars["file"])] if envvars else []) + \
            ([self.repo_path(test["cmake"])] if test else []) + ([self.repo_path(setup["file"])] if setup else []) + \
            [self.repo_path(page) for page in self.docs.get("api", [])]

    @property
    def legacy_option(self) -> str:
        return (self.cmake or self.raw["setuptools"])["legacy_option"]

    def type_sizes(self) -> dict[str, int]:
        """C++ type or alias -> sizeof, for arguments like `32/sizeof(T)`: the CUDA and C++
        arithmetic types' sizes, reached through the dtype table's aliases too."""
        out = dict(BUILTIN_SIZES)
        for c in self.types["cases"].values():
            if c.get("alias") and c["type"] in BUILTIN_SIZES:
                out[c["alias"]] = BUILTIN_SIZES[c["type"]]
        return out

    def aliases(self) -> dict[str, str]:
        """Type alias -> C++ type (`fp32` -> `float`), from the dtype table."""
        return {c["alias"]: c["type"] for c in self.types["cases"].values() if c.get("alias")}


def _kernel_options(rule: Rule, m: dict) -> dict[str, list[str]]:
    """`options.kernels`: NVRTC options of one kernel only (after `always`), keyed by a kernel of
    `kernels`."""
    per = dict(m.get("options", {}).get("kernels", {}))
    unknown = sorted(k for k in per if k not in m["kernels"])
    if unknown:
        raise RuleError(f"migrate.options.kernels names {', '.join(unknown)}, not in migrate.kernels",
                        where=str(rule.path), hint="key it by a kernel id listed under migrate.kernels")
    return {k: list(v) for k, v in per.items()}


def _tree_paths(m: dict):
    """(key path under migrate, value) of every rule key naming a file or folder of the library tree
    that apply writes or reads as part of it. Not here: `host_includes` and the shims' `include`
    (include names as spelled, matched, never opened as paths)."""
    yield ["output_dir"], m["output_dir"]
    for key in ("translation_units", "stub_includes"):
        for i, v in enumerate(m.get(key, [])):
            yield [key, i], v
    ks = m.get("kernel_strings", {})
    for i, v in enumerate(ks.get("replace_with_prelude", [])):
        yield ["kernel_strings", "replace_with_prelude", i], v
    for header, path in ks.get("move_to", {}).items():
        yield ["kernel_strings", "move_to", header], path
    for kernel, paths in ks.get("include_first", {}).items():
        for i, v in enumerate(paths):
            yield ["kernel_strings", "include_first", kernel, i], v
    for name in ks.get("shims", {}):
        yield ["kernel_strings", "shims", name], name      # written to <output_dir>/shims/<name>
    for key in ("header", "error_header", "source"):
        if key in m["nvrtc_layer"]:
            yield ["nvrtc_layer", key], m["nvrtc_layer"][key]
    for name, path in m["nvrtc_layer"].get("headers", {}).items():
        yield ["nvrtc_layer", "headers", name], path
    for key in ("header",):
        if key in m["nvrtc_layer"].get("cache", {}):
            yield ["nvrtc_layer", "cache", key], m["nvrtc_layer"]["cache"][key]
    if "cmake" in m:
        yield ["cmake", "file"], m["cmake"]["file"]
    if "setuptools" in m:
        yield ["setuptools", "file"], m["setuptools"]["file"]                # below repo_root
    for i, entry in enumerate(m.get("device_pass", [])):
        key = "unit" if "unit" in entry else "header"
        yield ["device_pass", i, key], entry[key]
    license = m.get("license")
    if isinstance(license, dict) and isinstance(license.get("from"), str):
        yield ["license", "from"], license["from"]                           # read into every generated file
    if "envvars" in m.get("docs", {}):
        yield ["docs", "envvars", "file"], m["docs"]["envvars"]["file"]     # below repo_root
    test = m.get("tests", {}).get("operator")
    if test:
        for key in ("file", "cmake"):
            yield ["tests", "operator", key], test[key]                     # below repo_root
        for i, v in enumerate(test.get("api_headers", [])):
            yield ["tests", "operator", "api_headers", i], v


def _escape(value: str) -> str | None:
    """Why a rule path would leave the library root, or None."""
    v = value.replace("\\", "/")
    if v.startswith(("/", "~")) or re.match(r"[A-Za-z]:/", v):
        return "an absolute path"
    if ".." in v.split("/"):
        return "a path with a `..` component"
    if "\0" in v:
        return "a path with a NUL byte"
    return None


def check_paths(rule: Rule, m: dict) -> None:
    """Every path key of `migrate:` stays inside the library root: `..` and absolute paths are refused
    at load, naming the rule file, line and key (the write checks resolved paths again)."""
    for key, value in _tree_paths(m):
        why = _escape(value)
        if why is None:
            continue
        line = None
        if rule.path is not None:
            import yaml

            try:
                line = _line_of(yaml.compose(rule.path.read_text()), ["migrate", *key])
            except (OSError, yaml.YAMLError):
                line = None
        name = "migrate/" + "/".join(str(k) for k in key)
        raise RuleError(f"{name}: {value!r} is {why}; paths in a rule stay inside the library root",
                        where=f"{rule.path}:{line}" if line else (str(rule.path) if rule.path else None),
                        hint="write it relative to the library root, without `..`")


def _check_c_shims(rule: Rule, m: dict) -> None:
    """A shim without `include` is a C header NVRTC lacks (`stdint.h`, which the toolkit's cuda.h
    includes): codemod defines its `global_names` itself, at global scope; std names and names
    codemod has no definition for need a libcu++ `include`."""
    from ..base.stdshim import DEFINITIONS

    for name, shim in m.get("kernel_strings", {}).get("shims", {}).items():
        if "include" in shim:
            continue
        bad = list(shim.get("std_names", [])) + [n for n in shim.get("global_names", []) if n not in DEFINITIONS]
        if bad:
            raise RuleError(f"migrate/kernel_strings/shims/{name}: {', '.join(bad)} need a libcu++ `include` "
                            "(a shim without one defines only global names codemod knows)",
                            where=str(rule.path) if rule.path else None,
                            hint="add include: cuda/std/<header>, or list only names of codemod/apply/stdshim.py")


def _check_include_first(rule: Rule, m: dict) -> None:
    """`kernel_strings.include_first` is keyed by kernels of `kernels`."""
    unknown = sorted(k for k in m.get("kernel_strings", {}).get("include_first", {}) if k not in m["kernels"])
    if unknown:
        raise RuleError(f"migrate.kernel_strings.include_first names {', '.join(unknown)}, not in migrate.kernels",
                        where=str(rule.path), hint="key it by a kernel id listed under migrate.kernels")


def _check_move_to(rule: Rule, m: dict) -> None:
    """`kernel_strings.move_to` is keyed by headers of `replace_with_prelude`, each to a header of
    its own."""
    ks = m.get("kernel_strings", {})
    move_to = ks.get("move_to", {})
    unknown = sorted(h for h in move_to if h not in ks.get("replace_with_prelude", []))
    if unknown:
        raise RuleError(f"migrate.kernel_strings.move_to names {', '.join(unknown)}, not in replace_with_prelude",
                        where=str(rule.path), hint="key it by a header the prelude replaces")
    if len(set(move_to.values())) != len(move_to) or set(move_to.values()) & set(move_to):
        raise RuleError("migrate.kernel_strings.move_to: each replaced header needs a new header of its own",
                        where=str(rule.path))


def migrate_spec(rule: Rule) -> MigrateSpec:
    m = rule.raw.get("migrate")
    if not m:
        raise RuleError(f"rule '{rule.id}' has no migrate: section", where=str(rule.path),
                        hint="see docs/rules.md, section migrate")
    check_paths(rule, m)
    _check_include_first(rule, m)
    _check_move_to(rule, m)
    _check_c_shims(rule, m)
    shared_variables.check_rule(rule.path, m)
    return MigrateSpec(
        rule_id=rule.id, output_dir=m["output_dir"].strip("/"), namespace=m["namespace"],
        kernels=list(m["kernels"]), translation_units=list(m["translation_units"]),
        stub_includes=list(m.get("stub_includes", [])), names=m.get("names", {}), types=m["types"],
        kernel_strings=m.get("kernel_strings", {}),
        # disable_env optional (the templates test it); a created layer passes <CUDA include>/cccl
        layer={"disable_env": None, **({"cuda_includes_cccl": True} if "create" in m["nvrtc_layer"] else {}),
               **m["nvrtc_layer"]},
        options={"always": m.get("options", {}).get("always", []),
                 "conditional": m.get("options", {}).get("conditional", []),
                 "kernels": _kernel_options(rule, m),
                 "arch_targets": {int(k): v for k, v in sorted(m.get("options", {}).get("arch_targets", {}).items(),
                                                               key=lambda kv: int(kv[0]))},
                 "build_defines": list(m.get("options", {}).get("build_defines", [])),
                 "defined_macros": list(m.get("options", {}).get("defined_macros", []))},
        cmake=m.get("cmake", {}), include_dirs=list(rule.raw.get("analyze", {}).get("include_dirs", [])),
        license=m.get("license"), raw=m, repo_root=m.get("repo_root", "."), docs=dict(m.get("docs", {})),
        library=str(rule.raw.get("library", "")))


def selected(kernel_id: str, names: list[str] | None) -> bool:
    """A kernel is named on the command line by its id or its unqualified name."""
    return bool(names) and (kernel_id in names or kernel_id.split("::")[-1] in names)


def check_selection(spec: MigrateSpec, only: list[str] | None, exclude: list[str] | None) -> None:
    """A name given to --only/--exclude that matches no kernel of the rule is a usage error."""
    unknown = [k for k in (only or []) + (exclude or []) if not any(selected(r, [k]) for r in spec.kernels)]
    if unknown:
        raise UsageError(f"--only/--exclude name kernels the rule does not migrate: {', '.join(unknown)}",
                         hint="the rule's kernels: " + ", ".join(spec.kernels))
