"""The analysis pipeline: TUs -> facts (frontend) -> merged call graph -> instantiations -> model."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import time
from collections import defaultdict
from dataclasses import fields
from pathlib import Path

from .. import __version__
from ..errors import ParseError, UsageError
from ..frontend.parse import indexer_hash, parse_all
from ..frontend.toolchain import cache_root, private_dir
from ..model import (SCHEMA_VERSION, Analysis, Axis, Diagnostic, EntryPoint, Kernel, Site,
                     TemplateParam, TranslationUnit, json_fields)
from ..rule import Rule
from ..frontend.treesitter import scan_tree
from .. import strict_json
from .axes import AxisClassifier, classify
from ..text import utf8_name
from .crosscheck import crosscheck
from .instantiate import DEFAULT, UNKNOWN, Instantiator, expansions, label_entry, label_tu, strip_type
from .tags import resolve_tags
from .uncounted import uncounted_launches
from .unreached import unreached_kernels

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
DEFAULT_INCLUDE_DIRS = ("include", ".", "..")


def discover_tus(root: Path, rules: list[Rule]) -> list[str]:
    """TUs under root: the rules' globs, or every source file when no rule is given."""
    all_sources = sorted(
        str(p.relative_to(root)).replace(os.sep, "/")
        for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()
    )
    if not rules:
        return [utf8_name(rel) for rel in all_sources]
    out = []
    for rule in rules:
        for rel in all_sources:
            if any(fnmatch.fnmatch(rel, g) for g in rule.translation_units) and not any(
                fnmatch.fnmatch(rel, g) for g in rule.exclude
            ):
                if rel not in out:
                    out.append(utf8_name(rel))
    return out


def _merge(facts_list: list[dict]) -> tuple[dict, dict, dict, list]:
    kernels, functions, typedefs, global_uses = {}, {}, {}, []
    for facts in facts_list:
        for u in facts.get("global_uses", []):
            if u not in global_uses:
                global_uses.append(u)
        typedefs.update(facts.get("typedefs", {}))
        for usr, k in facts.get("kernels", {}).items():
            have = kernels.setdefault(usr, k)
            extra = [f for f in k.get("def_files", ()) if f not in have.get("def_files", ())]
            if extra:   # every file holding a body of it (a template defined alike in two units)
                kernels[usr] = {**have, "def_files": [*have.get("def_files", ()), *extra]}
        for usr, fn in facts.get("functions", {}).items():
            if usr not in functions:
                functions[usr] = {**fn, "sites": {key: {**s, "copies": list(s["copies"])} for key, s in fn["sites"].items()}}
                continue
            dst = functions[usr]["sites"]
            for key, s in fn["sites"].items():
                if key not in dst:
                    dst[key] = {**s, "copies": list(s["copies"])}
                else:
                    for c in s["copies"]:
                        if c not in dst[key]["copies"]:
                            dst[key]["copies"].append(c)
    return kernels, functions, typedefs, global_uses


def analyze(root: Path, rules: list[Rule], compile_db: Path | None = None, jobs: int | None = None,
            use_cache: bool = True, progress=None) -> Analysis:
    started = time.perf_counter()
    spelled = Path(root)
    if not spelled.is_dir():
        raise UsageError(f"no such directory: {spelled}", hint="pass the library's source directory, e.g. transformer_engine/common")
    # NOTE: from here on the root is absolute, symlinks resolved: `.` and `..` have no name to put
    # in the report, and a relative root means another folder wherever the working directory is
    # not the caller's (DIR as spelled is only shown).
    root = spelled.resolve()
    tus = discover_tus(root, rules)
    if not tus:
        what = ", ".join(g for r in rules for g in r.translation_units) or "*.cu/*.cpp"
        raise UsageError(f"no translation units matching {what} under {spelled}",
                         hint="check the directory, or the rule's analyze/translation_units")
    include_dirs = []
    for r in rules:
        include_dirs += [d for d in r.include_dirs if d not in include_dirs]
    include_dirs = include_dirs or list(DEFAULT_INCLUDE_DIRS)
    flags = [f"-I{(root / d).resolve()}" for d in include_dirs]
    for r in rules:
        flags += [f"-D{d}" for d in r.defines]
    if progress:
        progress(f"analyzing {len(tus)} translation units under {spelled}")
    scans = _Scans(root)
    facts_list, stats = parse_all(root, tus, flags, compile_db=compile_db, jobs=jobs, use_cache=use_cache,
                                  progress=progress, on_parse_start=scans.scan_all)
    failed = [f for f in facts_list if f.get("load_failed")]
    if failed and len(failed) == len(facts_list):
        # Nothing loaded is no analysis: an empty report with one error per TU would read as a library
        # without kernels.
        raise ParseError(f"libclang could not load any of the {len(tus)} translation units under {spelled}: "
                         f"{failed[0]['tu']}: {failed[0].get('load_error', 'no reason given')}",
                         hint="check libclang (scripts/setup.sh) and the flags from --compile-db or the rule's "
                              "analyze section")
    # The analysis is a pure function of the facts (whose closures carry the hash of every project
    # file they read), the rules and this code: reuse it when all of those are unchanged.
    key = _result_key(facts_list, rules, root)
    cached = cache_root() / "analysis" / f"{key}.json"
    if use_cache and stats.get("parsed", 0) == 0 and cached.is_file():
        try:
            result = Analysis.from_json(json.loads(cached.read_text()))
            result.stats = {**stats, "analysis_from_cache": True, "seconds": round(time.perf_counter() - started, 2)}
            return result
        except (ValueError, TypeError, KeyError):
            pass
    analysis_started = time.perf_counter()
    result = _analyze_facts(root, rules, tus, facts_list, stats, started, scans)
    stats["analysis_seconds"] = round(time.perf_counter() - analysis_started, 2)
    private_dir(cached.parent)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(dumps(result))
    os.replace(tmp, cached)
    return result


def dumps(result: Analysis, indent: int | None = None) -> str:
    """`json.dumps(result.to_json())` without `asdict`'s deep copy (1.3 s -> 0.25 s on all of TE's
    common)."""
    return strict_json.dumps(result, "analysis", indent=indent, default=_fields)


def _fields(o) -> dict:
    """A dataclass as to_json writes it."""
    return json_fields(type(o), {f.name: getattr(o, f.name) for f in fields(o)})


def _result_key(facts_list: list[dict], rules: list[Rule], root: Path) -> str:
    here = Path(__file__).resolve().parent
    code = hashlib.sha256()
    for p in sorted([*here.glob("*.py"), here.parent / "model.py", here.parent / "frontend" / "treesitter.py"]):
        code.update(p.read_bytes())
    # NOTE: facts are keyed by their files' hashes, not their content: the indexer's own code is
    # part of this key too, or facts made by other frontend code would meet a cached analysis.
    data = [__version__, code.hexdigest(), indexer_hash(), root.name, [r.raw for r in rules], [r.entry_points for r in rules],
            [r.translation_units for r in rules], [r.exclude for r in rules],
            sorted((f["tu"], sorted(f.get("closure", {}).items())) for f in facts_list)]
    return hashlib.sha256(json.dumps(data, default=str, sort_keys=True).encode()).hexdigest()


class _Scans:
    """tree-sitter scans for the cross-check. When clang has work to do, every source under the
    root is scanned while the workers build the PCHs (off the critical path that the analysis is
    on); the files of clang's closure not scanned by then are scanned when asked for."""

    def __init__(self, root: Path):
        self.root = root
        self.done: dict = {}

    def scan_all(self) -> None:
        self.done = scan_tree(self.root)

    def of(self, files: list[str]) -> dict:
        missing = [f for f in files if f not in self.done]
        self.done.update(scan_tree(self.root, missing))
        return {f: self.done[f] for f in files}


def _body_arch_guards(kernels: list[Kernel], scanned: dict) -> None:
    """Kernel.body_arch_min and body_arch_range from tree-sitter's definitions (clang parses the host side, where an
    `#if __CUDA_ARCH__` body is gone): the definition at the kernel's position, else every
    definition of its name, which must agree."""
    defs = defaultdict(list)
    for scan in scanned.values():
        for kd in scan.kernels:
            if kd.is_definition:
                defs[kd.name].append(kd)
    for k in kernels:
        found = [d for d in defs.get(k.name, []) if d.file == k.file and d.line == k.line] or defs.get(k.name, [])
        arch = {d.body_arch_min for d in found}
        if len(arch) == 1:
            k.body_arch_min = arch.pop()
        bounds = {d.body_arch_range for d in found}
        if len(bounds) == 1 and (b := bounds.pop()) is not None:
            k.body_arch_range = list(b)


def _includes_of(root: Path, rules: list[Rule]):
    """tu -> the project files it includes (repo paths), from the frontend's include graph, built
    on first use: only a call into another TU's main file asks."""
    from ..frontend.parse import IncludeGraph

    top = root.resolve()
    dirs = tuple((top / d).resolve() for r in rules for d in r.include_dirs)
    graph: list[IncludeGraph] = []
    cache: dict[str, set[str]] = {}

    def includes(tu: str) -> set[str]:
        if tu not in cache:
            if not graph:
                graph.append(IncludeGraph(top))
            seen, _ = graph[0].closure((top / tu).resolve(), dirs)
            cache[tu] = {p.relative_to(top).as_posix() for p in seen if p.is_relative_to(top)} - {tu}
        return cache[tu]
    return includes


def _merge_classes(facts_list: list[dict]) -> dict[str, dict]:
    """Class facts (member constants, template parameters, bases) of every TU: first one wins (a
    class is the same in every TU that includes its header)."""
    classes: dict[str, dict] = {}
    for facts in facts_list:
        for name, c in facts.get("classes", {}).items():
            classes.setdefault(name, c)
    return classes


def _analyze_facts(root: Path, rules: list[Rule], tus: list[str], facts_list: list[dict], stats: dict,
                   started: float, scans: _Scans) -> Analysis:
    """The stages, in order: entry points, symbolic instantiation, sites (with their axes), kernel
    table, entry point and TU tables, cross-check, totals."""
    kernels_raw, functions, typedefs, global_uses = _merge(facts_list)
    resolve_tags(functions)
    stats["tus"] = len(tus)
    tu_set = set(tus)
    entries, entry_info = _entry_points(functions, rules, tu_set)
    explicit = _explicit_instantiations(global_uses, functions, kernels_raw, rules, tu_set)
    entry_info.update({label: info for label, info, _ in explicit})
    entry_file = {name: fn["file"] for name, fn in entry_info.items()}
    includes = _includes_of(root, rules)
    inst = Instantiator(functions, typedefs, tu_set, entry_file, includes, _merge_classes(facts_list))
    inst.add_tables(global_uses)
    inst.ev.sizes = {t: n for facts in facts_list for t, n in facts.get("type_sizes", {}).items()}
    inst.add_registrations(global_uses)
    seeds = [(u["function"], inst.explicit_env(functions[u["function"]], u["targs"]), label)
             for label, _, u in explicit if u.get("function")]
    inst.run(entries, seeds)
    explicit_envs: dict[str, list] = defaultdict(list)
    for usr, env, label in seeds:
        explicit_envs[usr].append((label, env))
    classifier = AxisClassifier(functions, {**entries, **{usr: label for usr, _, label in seeds}}, explicit_envs)
    canon, kid = _canonical_kernels(kernels_raw)
    sites, diags, kernel_tuples = _sites(functions, kernels_raw, canon, kid, inst, classifier)
    sites += _table_sites(global_uses, kid)
    sites += _explicit_kernel_sites(explicit, kernels_raw, canon, kid, inst, kernel_tuples)
    kernels = _kernels(kernels_raw, canon, kid, sites, kernel_tuples, entry_file)
    eps, tu_models = _entry_and_tu_models(facts_list, entry_info, kernel_tuples, kid, entry_file, diags)
    for usr in sorted(inst.truncated):
        fn = functions[usr]
        diags.append(Diagnostic("CM1004", "warning", f"more than the analysed maximum of instantiations of {fn['qualname']}; "
                                "fan-out is a lower bound", fn["file"], fn["line"]))
    cross, scanned = _crosscheck(facts_list, sites, kernels_raw, kernels, scans)
    diags += cross
    unreached = unreached_kernels(root, kernels_raw, canon, kid, functions, set(inst.envs), sites, scanned)
    refs = {u["file"]: u["names"] for u in global_uses if u.get("kind") == "namespace_refs"}
    diags += uncounted_launches(kernels, sites, unreached, tu_models, includes, refs)
    tu_models.sort(key=lambda t: (-t.instantiations, t.file))
    sites.sort(key=lambda s: (s.file, s.line, s.col))
    diags = _dedupe(_third_party(diags))
    totals = _totals(tu_models, eps, kernels, sites, kernels_raw, diags)
    stats["seconds"] = round(time.perf_counter() - started, 2)
    return Analysis(schema_version=SCHEMA_VERSION, tool_version=__version__, root=root.name,
                    target=",".join(r.id for r in rules) or None, translation_units=tu_models,
                    entry_points=eps, kernels=kernels, sites=sites, diagnostics=diags, totals=totals, stats=stats,
                    unreached=unreached)


def _entry_points(functions: dict, rules: list[Rule], tu_set: set[str]) -> tuple[dict[str, str], dict[str, dict]]:
    """The rule's regex over non-template, non-static functions defined in the TUs themselves, not
    members of a class template: (usr -> qualified name, qualified name -> function facts)."""
    patterns = [r.entry_regex() for r in rules] or [re.compile(r".*")]
    entries: dict[str, str] = {}
    entry_info: dict[str, dict] = {}
    for usr, fn in functions.items():
        internal = fn["static"] or fn.get("templated")
        if fn["file"] in tu_set and not fn["is_template"] and not internal and any(p.search(fn["name"]) for p in patterns):
            entries[usr] = fn["qualname"]
            entry_info[fn["qualname"]] = fn
    return entries, entry_info


def _explicit_instantiations(global_uses: list[dict], functions: dict, kernels_raw: dict, rules: list[Rule],
                             tu_set: set[str]) -> list[tuple[str, dict, dict]]:
    """Explicit instantiation definitions in the TUs (`template void f<A, B>(...);`, `template
    __global__ void k<A>(...);`), each an entry point named `f<A, B>` in the TU that spells it:
    (label, entry facts, the recorded use). A host template's is matched by the rules' entry-point
    regex on its name; a kernel's is always one (the TU compiles it whatever calls it)."""
    patterns = [r.entry_regex() for r in rules] or [re.compile(r".*")]
    out, seen = [], set()
    for u in global_uses:
        if u.get("kind") != "explicit_instantiation" or u["file"] not in tu_set:
            continue
        target = functions.get(u.get("function")) if u.get("function") else kernels_raw.get(u.get("kernel"))
        if target is None or u.get("function") and not any(p.search(target["name"]) for p in patterns):
            continue
        label = f"{target['qualname']}<{', '.join(u['targs'])}>"
        if (label, u["file"]) in seen:
            continue
        seen.add((label, u["file"]))
        out.append((label, {**target, "qualname": label, "file": u["file"], "line": u["line"], "explicit": True}, u))
    return out


def _explicit_kernel_sites(explicit: list, kernels_raw: dict, canon: dict, kid: dict, inst: Instantiator,
                           kernel_tuples: dict) -> list[Site]:
    """`template __global__ void k<A, 4>(...);`: a use of the kernel whose one variant is the
    spelled arguments (then the kernel's defaults), compiled by the TU that spells it."""
    sites = []
    for label, _, u in explicit:
        kusr = u.get("kernel")
        if kusr is None:
            continue
        kusr = canon.get(kusr, kusr)
        k = kernels_raw[kusr]
        env = inst.explicit_env({"tparams": k["params"]}, u["targs"])
        t = tuple(strip_type(env[p["name"]]) if p["kind"] == "type" else env[p["name"]] for p in k["params"])
        kernel_tuples[kusr][t].add(label)
        axes = [Axis(param=p["name"], kind=p["kind"], arg=a, binding="constant", discoverable=False,
                     reason="spelled in an explicit instantiation", domain=[v])
                for p, a, v in zip(k["params"], list(u["targs"]) + [""] * len(k["params"]), t)]
        sites.append(Site(id=f"{u['file']}:{u['line']}:{u['col']}", kind="use", api="explicit_instantiation",
                          kernel=kid[kusr], kernels=[kid[kusr]], function="(namespace scope)", file=u["file"],
                          line=u["line"], col=u["col"], axes=axes, instantiations=1, entry_points=[label],
                          variants=[{"kernel": kid[kusr], "args": list(t), "entry_points": [label]}]))
    return sites


def _canonical_kernels(kernels_raw: dict) -> tuple[dict[str, str], dict[str, str]]:
    """Overloads of one kernel name (SFINAE variants) are one kernel: the first declaration stands
    for the overload set. Returns (usr -> canonical usr, usr -> kernel id)."""
    canon: dict[str, str] = {}
    first: dict[str, str] = {}
    for usr, k in sorted(kernels_raw.items(), key=lambda kv: (kv[1]["file"] or "", kv[1]["line"])):
        canon[usr] = first.setdefault(k["qualname"], usr)
    kid = {usr: k["qualname"] for usr, k in kernels_raw.items()}
    return canon, kid


def _sibling_args(functions: dict) -> dict[tuple, set]:
    """Literal arguments that differ between sibling launches of one kernel in one function are
    chosen by a runtime branch (e.g. the aligned/unaligned variants of a vectorized kernel)."""
    sibling_args: dict[tuple, set] = defaultdict(set)
    for fn in functions.values():
        for s in fn["sites"].values():
            if s["kind"] in ("launch", "variable") and s.get("kernel") and s.get("targs"):
                for i, a in enumerate(s["targs"]):
                    sibling_args[(fn["usr"], s["kernel"], i)].add(a)
    return sibling_args


def _sites(functions: dict, kernels_raw: dict, canon: dict, kid: dict, inst: Instantiator,
           classifier: AxisClassifier) -> tuple[list[Site], list[Diagnostic], dict]:
    """Every launch and use site of the walked functions, with its instantiations and axes; the
    diagnostics they raise; and kernel usr -> argument tuple -> entry labels."""
    sibling_args = _sibling_args(functions)
    kernel_tuples: dict[str, dict[tuple, set]] = defaultdict(lambda: defaultdict(set))
    sites: list[Site] = []
    diags: list[Diagnostic] = []
    for fn in functions.values():
        for key, s in sorted(fn["sites"].items()):
            if s["kind"] not in ("launch", "use"):
                continue
            site_id = f"{s['file']}:{s['line']}:{s['col']}"
            branches = sorted({b for c in s["copies"] for b in c.get("branches", [])}, key=lambda b: (len(b), b))
            site = Site(id=site_id, kind=s["kind"], api=s.get("api", "<<<>>>"), kernel=None,
                        function=fn["qualname"], file=s["file"], line=s["line"], col=s["col"],
                        via=s.get("via"), in_macro_body=s.get("in_macro_body", False),
                        expansions=sum(len(expansions(c)) for c in s["copies"]), branches=branches)
            reached = fn["usr"] in inst.envs
            kusrs = list(dict.fromkeys(canon.get(u, u) for u in (s.get("kernels") or ([s["kernel"]] if s.get("kernel") else []))))
            wrapper = s.get("param") is not None and not kusrs and not s.get("lambda")
            if wrapper:   # a launch wrapper's kernel parameter: the kernels its callers pass
                kusrs = sorted(u for u in inst.param_kernels(fn, s["param"]) if u in kernels_raw)
                if not kusrs and s.get("param_only"):
                    continue   # an API call on a template-typed parameter no caller binds to a kernel
            if not kusrs:
                site.note = s.get("unresolved") or "kernel not resolved"
                diags.append(Diagnostic("CM1001", "warning", f"launch through an unresolved kernel expression ({site.note}); "
                                        "left static", s["file"], s["line"], s["col"]))
                sites.append(site)
                continue
            if s.get("in_macro_body"):
                diags.append(Diagnostic("CM1002", "warning", "kernel use spelled inside a macro body: analysed, "
                                        "but apply will not rewrite it", s["file"], s["line"], s["col"]))
            for kusr in kusrs:
                k = kernels_raw.get(kusr)
                if k is None:
                    continue
                # NOTE: a variable may hold different kernels; the site lists the first, the
                # kernel table lists the site under each.
                site.kernel = site.kernel or kid[kusr]
                site.kernels = sorted({*site.kernels, kid[kusr]})
                labelled = inst.kernel_tuples(fn, s, k) if reached else {}
                for t, labels in labelled.items():
                    # NOTE: a TU that sees only the kernel's declaration (bitsandbytes' ops.cu
                    # launching what kernels.cu instantiates) compiles no instantiation of it
                    compiled = {e for e in labels if not k.get("def_files") or any(inst._sees(e, f) for f in k["def_files"])}
                    if compiled:
                        kernel_tuples[kusr][t] |= compiled
                tuples = {t: {label_entry(e) for e in labels} for t, labels in labelled.items()}
                site.instantiations += len(tuples)
                site.variants += [{"kernel": kid[kusr], "args": list(t), "entry_points": sorted(es)}
                                  for t, es in sorted(tuples.items())]
                site.entry_points = sorted({*site.entry_points, *(e for ents in tuples.values() for e in ents)})
                if s.get("table"):
                    src_sites = [t for t in inst.tables.get(s["via"], []) if t.get("kernel") == kusr]
                elif wrapper:
                    src_sites = [v for _, v in inst.passing_sites(fn["usr"], s["param"], kusr)]
                elif s.get("via"):
                    src_sites = [v for v in fn["sites"].values()
                                 if v["kind"] == "variable" and v.get("var") == s["via"] and v.get("lambda") == s.get("lambda")
                                 and canon.get(v.get("kernel")) == kusr]
                else:
                    src_sites = [s]
                site.axes += _axes(fn, s, k, kusr, src_sites, tuples, branches, sibling_args, classifier,
                                   callers=dict((id(v), f) for f, v in inst.passing_sites(fn["usr"], s["param"], kusr))
                                   if wrapper else None)
                if reached and UNKNOWN in {v for t in tuples for v in t}:
                    diags.append(Diagnostic("CM1003", "warning", f"some template arguments of {kid[kusr]} could not be "
                                            "determined statically", s["file"], s["line"], s["col"]))
                diags += _unfolded(k, kid[kusr], tuples, s)
            if s.get("lambda"):
                site.generic_lambda = _generic_lambda(fn, s, inst, kernels_raw, canon, kid, reached)
                site.helper = s.get("helper")
                site.helper_uses = s.get("helper_uses")
            if not reached:
                site.note = "not reached from the entry points"
            sites.append(site)
    return sites, diags, kernel_tuples


_LITERAL = re.compile(r"-?\d+|true|false|(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def _unfolded(k: dict, kernel_id: str, tuples: dict, s: dict) -> list[Diagnostic]:
    """CM1005 per value parameter whose argument stayed an expression after constant folding
    (a call of a constexpr function, a member constant, sizeof of a type clang did not size): the
    variant has no canonical spelling until the rule names the value."""
    out = []
    for i, p in enumerate(k["params"]):
        if p["kind"] != "value":
            continue
        bad = sorted({t[i] for t in tuples if t[i] not in (UNKNOWN, DEFAULT) and not _LITERAL.fullmatch(t[i])})
        if bad:
            names = sorted({n for b in bad for n in re.findall(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*", b)
                            if n not in ("sizeof", "static_cast", "std", "true", "false")})
            out.append(Diagnostic("CM1005", "warning", f"template argument {p['name']} of {kernel_id} is not a constant "
                                  f"the analysis can evaluate: `{bad[0]}`" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
                                  + "; give the value of " + (", ".join(f"`{n}`" for n in names[:4]) or "the expression")
                                  + " in the rule's migrate/names/values", s["file"], s["line"], s["col"]))
    return out


def _generic_lambda(fn: dict, s: dict, inst: Instantiator, kernels_raw: dict, canon: dict, kid: dict,
                    reached: bool) -> dict:
    """A site through a generic lambda's `auto` parameter: the lambda, its passing sites (each
    with its template arguments, the conditions and bindings around it and its own fan-out) and
    the lambda's other sites through the same parameter."""
    lam = s["lambda"]
    passing = []
    for v in sorted((v for v in fn["sites"].values() if v["kind"] == "variable" and v.get("lambda") == lam),
                    key=lambda v: (v["line"], v["col"])):
        kusr = canon.get(v.get("kernel"), v.get("kernel"))
        k = kernels_raw.get(kusr)
        tuples = inst.kernel_tuples(fn, {**v, "via": None}, k) if (reached and k is not None) else {}
        bindings: dict = {}
        for c in v["copies"]:
            bindings.update(c.get("bindings", {}))
        passing.append({"id": f"{v['file']}:{v['line']}:{v['col']}", "file": v["file"], "line": v["line"], "col": v["col"],
                        "kernel": kid.get(kusr), "callee_text": v.get("callee_text"), "targs": v.get("targs") or [],
                        "branches": sorted({b for c in v["copies"] for b in c.get("branches", [])}),
                        "constexpr": sorted({b for c in v["copies"] for b in c.get("constexpr", [])}),
                        "bindings": {n: {x: b[x] for x in ("value", "values", "kind", "macro") if b.get(x) is not None}
                                     for n, b in sorted(bindings.items())},
                        "instantiations": len(tuples)})
    uses = sorted(f"{o['file']}:{o['line']}:{o['col']}" for o in fn["sites"].values()
                  if o is not s and o["kind"] in ("launch", "use") and o.get("lambda") == lam)
    out = {"name": lam["name"], "param": lam["param"], "file": lam["file"], "line": lam["line"], "col": lam["col"],
           "function_template_params": [p["name"] for p in fn.get("tparams", [])],
           "passing_sites": passing, "sites": uses}
    if s["kind"] == "launch" and s.get("config") is not None:
        out["launch"] = {"config": s["config"], "args": s.get("args", [])}
    return out


def _axes(fn: dict, s: dict, k: dict, kusr: str, src_sites: list[dict], tuples: dict, branches: list[str],
          sibling_args: dict, classifier: AxisClassifier, callers: dict | None = None) -> list[Axis]:
    """One axis per template parameter of kernel `k` at site `s`: the spelled argument, where its
    values come from (`src_sites`: the site, the variable assignments or table entries that name
    the kernel, or the calls passing it to a launch wrapper, whose functions `callers` gives by
    `id(site)`), its domain and its binding class."""
    axes = []
    for i, p in enumerate(k["params"]):
        args = sorted({(src.get("targs") or [])[i] for src in src_sites if i < len(src.get("targs") or [])})
        arg = " | ".join(args)
        domain = sorted({t[i] for t in tuples})
        sources = frozenset()
        deduced: set[tuple[int, str]] = set()
        for src in src_sites:
            stargs = src.get("targs") or []
            for c in src["copies"]:
                if i < len(stargs):
                    sources |= classifier.origins(stargs[i], (callers or {}).get(id(src), fn), c.get("bindings", {}))
                    continue
                # deduced from the launch arguments: inherit the origins of their types
                for j, (kp, at) in enumerate(zip(k.get("fn_params", []), c.get("arg_types") or [])):
                    if strip_type(kp["type"]) == p["name"]:
                        sources |= classifier.origins(strip_type(at), fn, c.get("bindings", {}))
                        deduced.add((j, strip_type(at)))
        if not sources:
            sources = frozenset({("constant", DEFAULT)} if p.get("default")
                                else {("unresolved", "not deducible from the launch")})
        varies = len(args) > 1 or any(len(sibling_args.get((f["usr"], kusr, i), ())) > 1
                                      for f in ([fn] if not callers else callers.values()))
        site_branches = list(branches)
        if s.get("table"):
            site_branches.append(f"the index into '{s['via']}'")
        elif s.get("lambda") and len(args) > 1:
            conds = sorted({b for src in src_sites for c in src["copies"] for b in c.get("branches", [])})
            site_branches.append(f"which kernel is passed to the generic lambda '{s['lambda']['name']}'"
                                 + (f" ({'; '.join(conds)})" if conds else ""))
        elif callers and len(args) > 1:
            site_branches.append(f"which kernel is passed to the launch wrapper's parameter '{s['via']}'")
        elif s.get("via") and len(args) > 1:
            site_branches.append(f"which kernel '{s['via']}' holds (conditional initialization)")
        binding, disc, reason = classify(sources, domain, varies, site_branches)
        if deduced:
            # the argument type as spelled in the enclosing scope, and which launch argument it
            # comes from: what a rewrite passes explicitly
            (j, spelled), *_ = sorted(deduced)
            deduced_from = {"argument": j, "type": spelled}
        else:
            deduced_from = None
        axes.append(Axis(param=p["name"] or f"(unnamed #{i})", kind=p["kind"], arg=arg, binding=binding,
                         deduced_from=deduced_from,
                         discoverable=disc, reason=reason,
                         sources=[{"class": c, "detail": d} for c, d in sorted(sources)],
                         domain=domain))
    return axes


def _table_sites(global_uses: list[dict], kid: dict) -> list[Site]:
    """Kernel pointers stored in namespace-scope tables are host uses too."""
    sites = []
    for u in global_uses:
        if u.get("api") == "table" and u.get("kernel") in kid:
            sites.append(Site(id=f"{u['file']}:{u['line']}:{u['col']}", kind="use", api="table", kernel=kid[u["kernel"]],
                              function="(namespace scope)", file=u["file"], line=u["line"], col=u["col"], via=u["var"],
                              in_macro_body=u.get("in_macro_body", False), note=f"entry of table '{u['var']}'"))
    return sites


def _kernels(kernels_raw: dict, canon: dict, kid: dict, sites: list[Site], kernel_tuples: dict,
             entry_file: dict) -> list[Kernel]:
    """The kernel table: every kernel with a site, largest fan-out first."""
    kernels: list[Kernel] = []
    sites_by_kernel = defaultdict(list)
    for st in sites:
        for kname in (st.kernels or ([st.kernel] if st.kernel else [])):
            sites_by_kernel[kname].append(st)
    for usr, k in kernels_raw.items():
        if canon[usr] != usr:
            continue
        name = kid[usr]
        ksites = sites_by_kernel.get(name, [])
        if not ksites:
            continue
        tuples = kernel_tuples.get(usr, {})
        tus_count: dict[str, set] = defaultdict(set)
        ents = set()
        for t, es in tuples.items():
            for e in es:
                ents.add(label_entry(e))
                tus_count[label_tu(e, entry_file)].add(t)
        structural = [p["name"] for i, p in enumerate(k["params"])
                      if all((st.axes[i].binding == "constant") for st in ksites if len(st.axes) > i)]
        disc = all(ax.binding != "unresolved" for st in ksites for ax in st.axes) and all(st.kernel for st in ksites)
        kernels.append(Kernel(id=name, name=k["name"], file=k["file"], line=k["line"], is_template=k["is_template"],
                              params=[TemplateParam(p["name"], p["kind"], p.get("type"), p.get("enum")) for p in k["params"]],
                              sites=[st.id for st in ksites], instantiations=len(tuples),
                              tus={tu: len(v) for tu, v in sorted(tus_count.items())}, entry_points=sorted(ents),
                              discoverable=disc, structural_params=structural))
    kernels.sort(key=lambda k: (-k.instantiations, k.id))
    return kernels


def _entry_and_tu_models(facts_list: list[dict], entry_info: dict, kernel_tuples: dict, kid: dict,
                         entry_file: dict, diags: list[Diagnostic]) -> tuple[list[EntryPoint], list[TranslationUnit]]:
    """Fan-out per entry point and per TU (where it is compiled); the parse diagnostics are added
    to `diags`."""
    per_entry: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    per_tu: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))   # where it is compiled
    for usr, tuples in kernel_tuples.items():
        for t, es in tuples.items():
            for e in es:
                per_entry[label_entry(e)][kid[usr]].add(t)
                per_tu[label_tu(e, entry_file)][kid[usr]].add(t)
    eps = []
    for name, fn in sorted(entry_info.items(), key=lambda kv: (kv[1]["file"], kv[1]["line"])):
        ks = per_entry.get(name, {})
        eps.append(EntryPoint(name=name, file=fn["file"], line=fn["line"],
                              kernels={k: len(v) for k, v in sorted(ks.items())},
                              instantiations=sum(len(v) for v in ks.values())))
    tu_models = []
    for facts in facts_list:
        members = facts.get("members", [facts["tu"]])
        # Diagnostics of a shared parse are charged to the TU whose file they are in, else the first.
        charged: dict[str, int] = defaultdict(int)
        for d in facts["diagnostics"]:
            if d["severity"] in ("error", "fatal") and not _outside_root(d.get("file")):
                charged[d["file"] if d["file"] in members else members[0]] += d["count"]
        for tu in members:
            tu_eps = [e.name for e in eps if e.file == tu]
            ks = per_tu.get(tu, {})
            tu_models.append(TranslationUnit(file=tu, entry_points=tu_eps, kernels={k: len(v) for k, v in sorted(ks.items())},
                                             instantiations=sum(len(v) for v in ks.values()),
                                             parse_seconds=round(facts.get("parse_seconds", 0.0) / len(members), 3),
                                             errors=charged.get(tu, 0), from_cache=bool(facts.get("from_cache"))))
        for d in facts["diagnostics"]:
            diags.append(Diagnostic(d.get("id", "CM0101"), "error" if d["severity"] in ("error", "fatal") else d["severity"],
                                    d["message"], d.get("file"), d.get("line"), d.get("col"), d.get("count", 1)))
    return eps, tu_models


def _crosscheck(facts_list: list[dict], sites: list[Site], kernels_raw: dict, kernels: list[Kernel],
                scans: _Scans) -> tuple[list[Diagnostic], dict]:
    """Spelled launch sites and __global__ templates against tree-sitter (the other parser); sets
    each kernel's `body_arch_min` from the same scan. Returns the diagnostics and the scans."""
    closure = sorted({rel for facts in facts_list for rel in facts.get("closure", {})})
    clang_sites = [{"file": st.file, "line": st.line, "col": st.col, "kind": st.kind, "kernel": st.kernel,
                    "in_macro_body": st.in_macro_body} for st in sites]
    clang_kernels = [{"name": k["qualname"], "file": k["file"], "line": k["line"], "is_template": k["is_template"]}
                     for k in kernels_raw.values()]
    scanned = scans.of(closure)
    diags = [Diagnostic(**d) for d in crosscheck(scanned, clang_sites, clang_kernels, files=closure)]
    _body_arch_guards(kernels, scanned)
    return diags, scanned


def _totals(tu_models, eps, kernels, sites, kernels_raw, diags) -> dict:
    return {
        "translation_units": len(tu_models),
        "entry_points": len(eps),
        "kernels": len(kernels),
        "kernel_templates": sum(1 for k in kernels if k.is_template),
        "launch_sites": sum(1 for s in sites if s.kind == "launch"),
        "use_sites": sum(1 for s in sites if s.kind == "use"),
        "instantiations": sum(k.instantiations for k in kernels),
        "declared_kernel_templates": len({k["qualname"] for k in kernels_raw.values() if k["is_template"]}),
        "declared_non_template_kernels": len({k["qualname"] for k in kernels_raw.values() if not k["is_template"]}),
        "runtime_discoverable_kernels": sum(1 for k in kernels if k.discoverable),
        "errors": sum(1 for d in diags if d.severity == "error"),
        "warnings": sum(1 for d in diags if d.severity == "warning"),
    }


def _outside_root(file: str | None) -> bool:
    """A diagnostic's file outside the library root: the frontend spells those absolute (in-library
    files are relative to the root)."""
    return bool(file) and Path(file).is_absolute()


_NOT_FOUND = re.compile(r"'([^']+)' file not found")


def _include_root(file: str) -> str:
    """The include dir a third-party header hangs under: its deepest `include` ancestor, else its folder."""
    path = Path(file)
    return str(next((a for a in path.parents if a.name == "include"), path.parent))


def _third_party(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Clang errors located in headers outside the library root (cuDNN, NCCL, CCCL, ...) replaced by
    one CM0103 warning per include dir: the count, the headers, the first error, and the include path
    that would let clang parse them. They do not make the library's analysis an error."""
    outside: dict[str, list[Diagnostic]] = defaultdict(list)
    kept = []
    for d in diags:
        if d.severity == "error" and d.id == "CM0101" and _outside_root(d.file):
            outside[_include_root(d.file)].append(d)
        else:
            kept.append(d)
    for folder, group in sorted(outside.items()):
        group.sort(key=lambda d: (d.file, d.line or 0, d.col or 0))
        first = group[0]
        count = sum(d.count for d in group)
        headers = sorted({Path(d.file).relative_to(folder).as_posix() if Path(d.file).is_relative_to(folder)
                          else Path(d.file).name for d in group})
        wanted = sorted({m for d in group for m in _NOT_FOUND.findall(d.message)})
        fix = (f"add the include dir holding {', '.join(wanted)}" if wanted else
               "give analyze the include dirs and defines the library's build uses with them")
        shown = ", ".join(headers[:3]) + (f" and {len(headers) - 3} more" if len(headers) > 3 else "")
        kept.append(Diagnostic(
            "CM0103", "warning",
            f"{count} clang error(s) in {len(headers)} third-party header(s) under {folder} ({shown}), outside the "
            f"library: not counted as the library's errors; code using these headers may be analysed incompletely. "
            f"First: {Path(first.file).name}:{first.line}: {first.message}. To parse them, {fix} (--compile-db of "
            "the library's build, or the rule's analyze.include_dirs)",
            first.file, first.line, first.col, count))
    return kept


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen = {}
    for d in diags:
        key = (d.id, d.message, d.file, d.line, d.col)
        if key in seen:
            seen[key].count += d.count
        else:
            seen[key] = d
    return sorted(seen.values(), key=lambda d: (d.severity != "error", d.file or "", d.line or 0, d.id))
