"""Read the migration manifest `codemod apply` writes (`codemod-manifest/1`, docs/apply.md) into
plain dataclasses: per kernel its program source, in-memory headers, options and variants.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError, VerifyError
from ..tool_state import git_dir, manifest_paths

SCHEMA = "codemod-manifest/1"
MANIFEST_NAME = "codemod_manifest.json"


@dataclass
class Variant:
    name_expression: str
    axes: dict[str, str]
    sites: list[str] = field(default_factory=list)
    outside: bool = False       # launched only by translation units outside the rule's analysis


@dataclass
class ConditionalOption:
    option: str
    cmake_option: str


@dataclass
class KernelEntry:
    """One migrated `__global__` template: everything needed to compile it with NVRTC."""

    id: str
    program_path: str          # relative to the library root; the NVRTC program name
    symbol: str
    headers: dict[str, str]    # include name -> path relative to the library root
    include_cuda_toolkit: bool
    include_cuda_cccl: bool     # the layer also passes the toolkit's include/cccl
    nvrtc_options: list[str]
    conditional_options: list[ConditionalOption]
    sites: list[str]
    variants: list[Variant]
    # compute capability -> the NVRTC target the stubs choose on such a device (rule key
    # migrate.options.arch_targets); other devices compile for sm_<cc>, the layer's default
    arch_targets: dict[int, str] = field(default_factory=dict)
    # macro -> the library's default (rule key migrate.options.build_defines): the stubs pass
    # -DNAME=<the host compile's value>; verify compiles with this one unless told another
    build_defines: dict[str, str] = field(default_factory=dict)
    # macros the build may leave undefined (rule key migrate.options.defined_macros, e.g. NDEBUG):
    # the stubs pass -DNAME=<value> only when the host compile defines it; verify, when told to
    defined_macros: list[str] = field(default_factory=list)

    @property
    def build_macros(self) -> set[str]:
        """Every macro whose value the build gives NVRTC (build_defines and defined_macros)."""
        return set(self.build_defines) | set(self.defined_macros)

    def define_options(self, values: dict[str, str] | None = None) -> list[str]:
        """`-DNAME=VALUE` for each build define, as the stubs pass them: `values` (verify --define)
        over the manifest's defaults; a defined macro only when `values` defines it."""
        values = values or {}
        return ([f"-D{name}={values.get(name, default)}" for name, default in self.build_defines.items()]
                + [f"-D{name}={values[name]}" for name in self.defined_macros if name in values])


@dataclass
class Manifest:
    path: Path                 # the manifest file
    root: Path                 # the library root its paths are relative to
    rule: str
    output_dir: str
    legacy_option: str | None
    kernels: list[KernelEntry]
    overlay: dict[str, str] = field(default_factory=dict)   # path -> text not written yet (apply)
    edited: list[str] = field(default_factory=list)          # library files the patch edits (`files`)

    def read(self, relative: str) -> str:
        """Text of a file named by a manifest path; VerifyError naming the manifest if missing."""
        if relative in self.overlay:
            return self.overlay[relative]
        target = self.root / relative
        # NOTE: a manifest may lie in the tree (an older codemod's): what it names is read from the
        # library root only, or for a `../` path (migrate.repo_root) from its git work tree
        top = self.root.resolve()
        found = git_dir(top) if isinstance(relative, str) and relative.startswith("../") else None
        bound = found[1] if found else top
        if not isinstance(relative, str) or Path(relative).is_absolute() or "\0" in relative \
                or not target.resolve().is_relative_to(bound):
            raise VerifyError(f"the manifest names a file outside the library root: {relative!r}; nothing read",
                              where=str(self.path), hint="re-run `codemod apply --write` on this tree")
        try:
            return target.read_text()
        except OSError as exc:
            raise VerifyError(f"file named by the manifest cannot be read: {relative} ({exc.strerror})",
                              where=str(self.path), hint="re-run `codemod apply --write` on this tree") from None


LEGACY_DEPTH = 4   # folders of an output_dir an older codemod's in-tree manifest is looked for under


def find_manifests(root: Path) -> list[Path]:
    """Every manifest of the library at `root` (one per applied rule), in a stable order: those
    `codemod apply --write` keeps outside the tree (tool_state.manifest_path), then any an older
    codemod wrote into the tree. NOTE: no recursive scan: a folder holding other trees (copies,
    checkouts side by side) must not lend one of their manifests to `root`."""
    return manifest_paths(root) + legacy_manifests(root)


def legacy_manifests(root: Path) -> list[Path]:
    """In-tree manifests of an older codemod: `<output_dir>/codemod_manifest.json` under `root`,
    output_dir at most LEGACY_DEPTH folders deep, kept only where the manifest's own output_dir puts
    it, that is, when it belongs to `root` and not to a tree below it."""
    found = []
    for depth in range(1, LEGACY_DEPTH + 1):
        for path in sorted(root.glob("/".join(["*"] * depth) + "/" + MANIFEST_NAME)):
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                found.append(path)   # damaged: load_manifest says why, naming it
                continue
            output_dir = doc.get("output_dir") if isinstance(doc, dict) else None
            if not isinstance(output_dir, str) or Path(output_dir) == path.parent.relative_to(root):
                found.append(path)   # a malformed one is reported by load_manifest too
    return found


def root_for(path: Path, root: Path) -> Path | None:
    """The library root to read a manifest's paths against: derived from its place (None) when it lies
    in the tree, as an older codemod wrote it; `root` for one kept outside the tree or beside a diff."""
    return None if path.resolve().is_relative_to(root.resolve()) and path.name == MANIFEST_NAME else root


def load_manifest(path: Path, root: Path | None = None) -> Manifest:
    """Parse and check one manifest. The root defaults to the manifest's folder minus `output_dir`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read manifest {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise VerifyError("manifest is not UTF-8 text", where=str(path),
                          hint="restore it from version control, or run `codemod apply` again") from None
    return parse_manifest(text, path, root)


def parse_manifest(text: str, path: Path, root: Path | None = None, overlay: dict[str, str] | None = None) -> Manifest:
    """A manifest from its text (`path`: where it is or will be); `overlay`: files not written yet."""
    where = str(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VerifyError(f"manifest is not JSON: {exc.msg}", where=f"{path}:{exc.lineno}") from None
    except RecursionError:
        raise VerifyError("manifest is nested too deeply", where=where) from None
    except ValueError as exc:  # a number past Python's int-string limit (4,300 digits)
        raise VerifyError(f"manifest is not JSON: {str(exc)[:80]}", where=where) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise VerifyError(f"expected schema {SCHEMA!r}, found {found!r}", where=where,
                          hint="this codemod reads manifests written by the same version of `codemod apply`")
    output_dir = _get(doc, "output_dir", str, where)
    if root is None:
        root = path.parent
        for _ in Path(output_dir).parts:
            root = root.parent
    kernels = [_kernel(k, f"{where}: kernels[{i}]") for i, k in enumerate(_get(doc, "kernels", list, where))]
    return Manifest(path=path, root=root, rule=_get(doc, "rule", str, where), output_dir=output_dir,
                    legacy_option=doc.get("legacy_option"), kernels=kernels, overlay=dict(overlay or {}),
                    edited=sorted(k for k, v in (doc.get("files") or {}).items()
                                  if isinstance(v, dict) and v.get("before") is not None))


def _kernel(doc: dict, where: str) -> KernelEntry:
    if not isinstance(doc, dict):
        raise VerifyError("expected an object", where=where)
    string = _get(doc, "kernel_string", dict, where)
    headers = _get(doc, "headers", dict, where)
    variants = []
    for i, v in enumerate(_get(doc, "variants", list, where)):
        vw = f"{where}.variants[{i}]"
        if not isinstance(v, dict):
            raise VerifyError("expected an object", where=vw)
        variants.append(Variant(name_expression=_get(v, "name_expression", str, vw),
                                axes={str(k): str(x) for k, x in _get(v, "axes", dict, vw).items()},
                                sites=list(v.get("sites", [])), outside=v.get("outside") is True))
    conditional = [ConditionalOption(option=_get(c, "option", str, where), cmake_option=_get(c, "cmake_option", str, where))
                   for c in doc.get("conditional_options", [])]
    return KernelEntry(id=_get(doc, "id", str, where), program_path=_get(string, "path", str, where + ".kernel_string"),
                       symbol=string.get("symbol", ""), headers={str(k): str(v) for k, v in headers.items()},
                       include_cuda_toolkit=bool(doc.get("include_cuda_toolkit", True)),
                       include_cuda_cccl=bool(doc.get("include_cuda_cccl", False)),
                       nvrtc_options=[str(o) for o in doc.get("nvrtc_options", [])],
                       conditional_options=conditional, sites=list(doc.get("sites", [])), variants=variants,
                       arch_targets=_arch_targets(doc.get("arch_targets", {}), where),
                       build_defines=_build_defines(doc.get("build_defines", {}), where),
                       defined_macros=_defined_macros(doc.get("defined_macros", []), where))


def _build_defines(doc, where: str) -> dict[str, str]:
    if not isinstance(doc, dict) or not all(re.fullmatch(r"[A-Za-z_]\w*", str(k)) and isinstance(v, str)
                                            for k, v in doc.items()):
        raise VerifyError("build_defines: expected {macro name: its default value}", where=where)
    return dict(doc)


def _defined_macros(doc, where: str) -> list[str]:
    if not isinstance(doc, list) or not all(isinstance(m, str) and re.fullmatch(r"[A-Za-z_]\w*", m) for m in doc):
        raise VerifyError("defined_macros: expected a list of macro names", where=where)
    return list(doc)


def _arch_targets(doc, where: str) -> dict[int, str]:
    if not isinstance(doc, dict) or not all(str(k).isdigit() and re.fullmatch(r"sm_\d{2,3}[af]?", str(v))
                                            for k, v in doc.items()):
        raise VerifyError("arch_targets: expected {compute capability: sm_NN[a|f]}", where=where)
    return {int(k): str(v) for k, v in doc.items()}


def _get(doc: dict, key: str, kind: type, where: str):
    if key not in doc:
        raise VerifyError(f"missing key {key!r}", where=where, hint=f"see the {SCHEMA} table in docs/apply.md")
    value = doc[key]
    if not isinstance(value, kind):
        raise VerifyError(f"{key!r} should be {kind.__name__}, found {type(value).__name__}", where=where)
    return value
