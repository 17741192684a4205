"""Symbolic instantiation: which template arguments reach each function and each kernel launch.

libclang does not walk template instantiations, so bindings are propagated here: an entry point
starts with an empty environment; each call site binds the callee's template parameters from its
explicit arguments (or by deduction from argument types), evaluated under the caller's
environment and the per-expansion bindings of type-switch macros. A launch site's set of argument
tuples is its instantiation fan-out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from functools import lru_cache

from ..frontend.source_text import normalize, read_template_id, substitute, tokens
from .consteval import fold_text
from .tags import TAG_VALUE

MAX_ENVS_PER_FUNCTION = 50_000
UNKNOWN = "?"
DEFAULT = "(default)"  # a defaulted template parameter nobody passes (e.g. an enable_if_t<...> = 0)
_CV = re.compile(r"\b(const|volatile|struct|class|typename)\b|[&*]")


@lru_cache(maxsize=None)
def strip_type(text: str) -> str:
    """`const T *` -> `T`: the part of a parameter type that deduction binds."""
    return normalize(_CV.sub(" ", text or ""))


def expansions(copy: dict) -> list[dict]:
    """The per-expansion views of a recorded copy: one per combination of multi-valued bindings.

    The indexer walks the arms of a type-switch macro once and records every arm's value; this
    multiplies them back out. Views share arg types and constexpr conditions with the copy.
    """
    cached = copy.get("_views")
    if cached is not None:
        return cached
    bindings = copy.get("bindings", {})
    multi = [(n, b) for n, b in bindings.items() if len(b.get("values") or ()) > 1]
    views = []
    if not multi:
        views.append(copy)
    else:
        from itertools import product

        for combo in product(*[list(enumerate(b["values"])) for _, b in multi]):
            nb = dict(bindings)
            for (n, b), (i, v) in zip(multi, combo):
                nb[n] = {**b, "value": v, "values": None}
                if b.get("enumerators"):     # the arm's own enumerator (an enumeration constant)
                    nb[n]["enumerator"] = b["enumerators"][i]
            views.append({**copy, "bindings": nb, "_views": None})
    copy["_views"] = views
    return views


# A launch wrapper's kernel parameter I in an environment: `@argI` -> "usr<US>targ<US>targ".
ARG = "@arg"
US = "\x1f"


def _key(env: dict) -> tuple:
    return tuple(sorted(env.items()))


_NAME = re.compile(r"[A-Za-z_]\w*")


class Evaluator:
    def __init__(self, typedefs: dict[str, str], classes: dict[str, dict] | None = None):
        self.typedefs = typedefs
        self.sizes: dict[str, int] = {}   # canonical type -> sizeof (clang's), for folding
        self.members = MemberConstants(classes or {}, typedefs)
        self._names: dict[str, frozenset] = {}
        self._parts: dict[tuple, tuple] = {}
        self._memo: dict[tuple, str] = {}

    def _names_in(self, text: str) -> frozenset:
        names = self._names.get(text)
        if names is None:
            names = self._names[text] = frozenset(_NAME.findall(text))
        return names

    def _closure_parts(self, text: str, bindings: dict) -> tuple[tuple, tuple]:
        """What `text`'s value depends on besides the environment: the bindings reachable from it
        (followed through their values), and the other names, which the environment may hold.
        Both are fixed for one bindings dict (a recorded copy's), so they are worked out once."""
        key = (text, id(bindings) if bindings else 0)
        got = self._parts.get(key)
        if got is None or (bindings and got[0] is not bindings):
            bound, free, todo, seen = [], [], [text], set()
            while todo:
                for n in self._names_in(todo.pop()):
                    if n in seen:
                        continue
                    seen.add(n)
                    if n in bindings:
                        v = bindings[n]["value"]
                        bound.append((n, v, bindings[n].get("enumerator")))
                        todo.append(v)
                    else:
                        free.append(n)
            # the dict is kept with its parts, so its id cannot be reused while they are cached
            got = self._parts[key] = (bindings, tuple(sorted(bound)), tuple(sorted(free)))
        return got[1], got[2]

    def evaluate(self, text: str, env: dict, bindings: dict) -> str:
        # Everything the result depends on: the values of the names reachable from `text`.
        bound, free = self._closure_parts(text, bindings)
        key = (text, bound, tuple((n, env[n]) for n in free if n in env))
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = fold_text(self._evaluate(text, env, bindings), self.sizes)
        return got

    def _evaluate(self, text: str, env: dict, bindings: dict) -> str:
        def lookup(name: str):
            bare = name.lstrip(":")
            if name.startswith("::"):  # spelled from the global scope: a namespace-scope name
                return self.typedefs.get(bare)
            if bare in bindings:
                # an enumeration constant nested in a larger text (`Config<kMode, true>`) keeps its
                # enumerator: a number is no argument of an enumeration parameter
                return bindings[bare].get("enumerator") or bindings[bare]["value"]
            if bare in env:
                return env[bare]
            if bare in self.typedefs:
                return self.typedefs[bare]
            head, sep, rest = bare.partition("::")
            if sep:  # `KT::THREADS_PER_WARP` with KT bound: the bound class, then its member
                got = bindings[head]["value"] if head in bindings else env.get(head)
                if got is not None:
                    return f"{got}::{rest}"
            return None

        whole = bindings.get(text.strip()) if bindings else None
        if whole is not None and "enumerator" in whole:
            return whole["value"]      # a whole argument: its number (apply casts it to the parameter's type)
        if "\\" in text:  # a line continuation left in an argument spelled in a #define
            text = normalize(text.replace("\\", " "))
        return self.members.resolve(TAG_VALUE.sub(r"\1", substitute(text, lookup)))


class MemberConstants:
    """`ns::Traits<A, B>::N` -> its value, from the class facts of the frontend (`traits.py`):
    the member's initializer with the template parameters bound (defaults included), looked up in
    the bases when the class does not declare it, folded when it is an integer expression."""

    MAX_DEPTH = 8

    def __init__(self, classes: dict[str, dict], typedefs: dict[str, str] | None = None):
        self.classes = classes
        self.typedefs = typedefs or {}  # namespace-scope constants a member or a default names
        bare: dict[str, list[str]] = defaultdict(list)
        for q in classes:
            bare[q.rsplit("::", 1)[-1]].append(q)
        self._bare = {b: qs[0] for b, qs in bare.items() if len(qs) == 1}
        self._memo: dict[tuple[str, str], str | None] = {}

    def _facts(self, name: str) -> dict | None:
        name = name.lstrip(":")
        return self.classes.get(name) or self.classes.get(self._bare.get(name.rsplit("::", 1)[-1], ""))

    def resolve(self, text: str) -> str:
        """Every `Class<...>::MEMBER` in `text` whose value is known, replaced by it."""
        if "::" not in text or not self.classes:
            return text
        toks = tokens(text)
        i, changed = 1, False
        while i + 1 < len(toks):
            if toks[i] == "::" and _NAME.fullmatch(toks[i + 1]):
                start = _class_start(toks, i)
                if start is not None:
                    value = self.value("".join(_spaced(toks[start:i])), toks[i + 1])
                    if value is not None:
                        toks[start:i + 2] = [value]
                        i, changed = start + 1, True
                        continue
            i += 1
        return normalize(" ".join(toks)) if changed else text

    def value(self, cls: str, member: str, depth: int = 0) -> str | None:
        key = (cls, member)
        if key not in self._memo:
            self._memo[key] = None if depth > self.MAX_DEPTH else self._value(cls, member, depth)
        return self._memo[key]

    def _value(self, cls: str, member: str, depth: int) -> str | None:
        got = read_template_id(cls, 0)
        facts = self._facts(got[0]) if got else None
        if facts is None:
            return None
        args = got[1] or []
        env: dict[str, str] = {}
        for i, p in enumerate(facts["params"]):
            if i < len(args):
                env[p["name"]] = args[i]
            elif p.get("default") is not None:
                env[p["name"]] = substitute(p["default"], lambda n: env.get(n, self.typedefs.get(n)))
            else:
                return None

        def lookup(name: str):
            if name in env:
                return env[name]
            if name in facts["constants"] and name != member:
                return self.value(cls, name, depth + 1)
            return self.typedefs.get(name)

        if member in facts["constants"]:
            return fold_text(self.resolve(substitute(facts["constants"][member], lookup)))
        for base in facts["bases"]:
            got = self.value(normalize(substitute(base, env.get)), member, depth + 1)
            if got is not None:
                return got
        return None


def _class_start(toks: list[str], i: int) -> int | None:
    """Index of the first token of the class expression that ends before `toks[i]` (a `::`):
    `ns::C<...>` or `ns::C`."""
    j = i - 1
    if toks[j] in (">", ">>"):
        depth = 0
        while j >= 0:
            if toks[j] in (">", ">>"):
                depth += len(toks[j])
            elif toks[j] == "<":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        j -= 1
    if j < 0 or not _NAME.fullmatch(toks[j]):
        return None
    while j >= 2 and toks[j - 1] == "::" and _NAME.fullmatch(toks[j - 2]):
        j -= 2
    if j >= 1 and toks[j - 1] == "::":
        j -= 1
    return j


def _spaced(toks: list[str]) -> list[str]:
    """Tokens to join: a space between two words (`unsigned int`)."""
    out: list[str] = []
    for t in toks:
        if out and re.match(r"\w", out[-1][-1:]) and re.match(r"\w", t[:1]):
            out.append(" ")
        out.append(t)
    return out


_SIZEOF = {"float": 4, "double": 8, "__half": 2, "__nv_bfloat16": 2, "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
           "__nv_fp8_e8m0": 1, "__nv_fp4_e2m1": 1, "int": 4, "unsigned int": 4, "char": 1, "short": 2,
           "long": 8, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
           "int64_t": 8, "uint64_t": 8, "size_t": 8, "bool": 1}
_IS_SAME = re.compile(r"(?:::)?std::is_same(?:_v<(?P<a>[^<>]*(?:<[^<>]*>[^<>]*)*)>|<(?P<b>[^<>]*(?:<[^<>]*>[^<>]*)*)>::value)")
_SIZEOF_RE = re.compile(r"sizeof\(([^()]*)\)")
_SAFE = re.compile(r"^[\s\d()!&|=<>+\-*/%TrueFalsenotandor]*$")


def eval_condition(text: str) -> bool | None:
    """Evaluate a substituted constant condition; None when it is not understood (kept)."""
    def same(m):
        args = m.group("a") or m.group("b")
        parts = [normalize(x) for x in args.split(",")] if args else []
        return "true" if len(parts) == 2 and parts[0] == parts[1] else ("false" if len(parts) == 2 else m.group(0))

    t = _IS_SAME.sub(same, text)
    t = _SIZEOF_RE.sub(lambda m: str(_SIZEOF.get(normalize(m.group(1)), m.group(0))), t)
    t = re.sub(r"\btrue\b", " True ", t)
    t = re.sub(r"\bfalse\b", " False ", t)
    t = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", t)
    t = t.replace("&&", " and ").replace("||", " or ")
    t = re.sub(r"!(?!=)", " not ", t)
    if not _SAFE.match(t):
        return None
    try:
        return bool(eval(t, {"__builtins__": {}}, {}))  # noqa: S307 - only literals and operators pass _SAFE
    except Exception:  # noqa: BLE001
        return None


TU_MARK = "\t"   # a walk label "entry<TAB>tu": the entry point's instantiations happen in another TU


def label_entry(label: str) -> str:
    """The entry point a walk label stands for."""
    return label.split(TU_MARK, 1)[0]


def label_tu(label: str, entry_files: dict[str, str]) -> str:
    """The TU that compiles what a walk label reaches: the entry point's own, unless the walk went
    through a function defined in another TU (an explicit instantiation there)."""
    entry, _, tu = label.partition(TU_MARK)
    return tu or entry_files[entry]


def _bare_type(text: str) -> str:
    t = re.sub(r"\b(const|volatile|struct|class|enum|typename)\b", " ", text or "")
    return re.sub(r"\s+|&+$", "", t.strip()).rstrip("&")


def _types_match(callee: dict, arg_types: list[str]) -> bool:
    """Every parameter of `callee` that names none of its template parameters has exactly the
    argument's type (cv, references and elaborations aside); dependent ones match anything."""
    tnames = {p["name"] for p in callee["tparams"]}
    for p, a in zip(callee["params"], arg_types):
        pt = _bare_type(p["type"])
        if not a or set(_NAME.findall(pt)) & tnames or "type-parameter" in pt:
            continue
        if pt != _bare_type(a):
            return False
    return True


def _sfinae(param: dict) -> bool:
    """A defaulted parameter that only enables an overload (`std::enable_if_t<C, int> = 0`,
    `typename = std::enable_if_t<C>`): no argument of its own, counted as `(default)`."""
    return "enable_if" in (param.get("default_text") or "") or "enable_if" in (param.get("type") or "")


class Instantiator:
    def __init__(self, functions: dict[str, dict], typedefs: dict[str, str],
                 tu_files: set[str] | None = None, entry_files: dict[str, str] | None = None,
                 includes: Callable[[str], set[str]] | None = None, classes: dict[str, dict] | None = None):
        """`tu_files` (the analysed TUs' main files) and `entry_files` (entry point -> file): a call
        from one TU to a function template defined in another TU's main file cannot instantiate it
        there (the definition is not visible); the other TU does, through an explicit
        instantiation. Labels of such walks name that TU (`label_tu`). `includes(tu)`: the files a
        TU includes; a TU's main file that another TU includes (a unity build) is compiled there."""
        self.functions = functions
        self.tu_files = tu_files or set()
        self.entry_files = entry_files or {}
        self.includes = includes or (lambda tu: set())
        self.ev = Evaluator(typedefs, classes)
        # registry class -> the functions registered in it (REGISTER(...) at namespace scope)
        self.registries: dict[str, list[str]] = defaultdict(list)
        # usr -> env key -> [env, set(entry names)]
        self.envs: dict[str, dict[tuple, list]] = defaultdict(dict)
        self.truncated: set[str] = set()
        self.tables: dict[str, list[dict]] = defaultdict(list)  # namespace-scope kernel tables
        self._passing: dict | None = None   # (wrapper usr, argument index) -> passing sites

    def add_tables(self, global_uses: list[dict]) -> None:
        for u in global_uses:
            if u.get("api") == "table" and u not in self.tables[u["var"]]:
                self.tables[u["var"]].append({**u, "copies": [{"bindings": {}}]})

    def add_registrations(self, global_uses: list[dict]) -> None:
        """Functions stored in a registry by static registration objects: a call of the registry's
        lookup reaches each of them (`registry_edges`)."""
        for u in global_uses:
            if u.get("kind") == "registration" and u["function"] not in self.registries[u["registry"]]:
                self.registries[u["registry"]].append(u["function"])

    def registry_edges(self, site: dict) -> list[str]:
        """A call of a member of a registry class (its lookup) reaches every function registered
        in that registry: the registration macro's arguments are bound in each of them."""
        if not self.registries:
            return []
        out: list[str] = []
        for name in site.get("callee_names", ()):
            owner = name.rsplit("::", 1)[0]
            for usr in self.registries.get(owner, ()):
                if usr in self.functions and usr not in out:
                    out.append(usr)
        return out

    def _pick_callees(self, site: dict, copy: dict, env: dict | None = None) -> list[dict]:
        cands = [self.functions[u] for u in site.get("callees", []) if u in self.functions]
        if len(cands) <= 1:
            return cands
        args = copy.get("arg_types") or []
        ntargs = len(site.get("targs") or [])
        fit = [c for c in cands if len(c["params"]) == len(args) and len(c["tparams"]) >= ntargs] or cands
        if len(fit) > 1:
            # overloads by parameter type (`launch(float *, int)` / `launch(double *, int)` called
            # from dependent code, where clang names every overload): those whose every concrete
            # parameter type is the argument's, when there are such; else all (conversions)
            if env:   # the caller's template parameters in the argument types, bound
                args = [self.ev.evaluate(a, env, copy.get("bindings", {})) if a else a for a in args]
            exact = [c for c in fit if _types_match(c, args)]
            fit = exact or fit
        return fit

    def bind(self, callee: dict, site: dict, copy: dict, env: dict) -> dict:
        bindings = copy.get("bindings", {})
        targs = site.get("targs") or []
        tparams = callee["tparams"]
        cenv = {}
        for i, p in enumerate(tparams):
            if i < len(targs):
                cenv[p["name"]] = self.ev.evaluate(targs[i], env, bindings)
        names = {p["name"] for p in tparams}
        for param, at in zip(callee["params"], copy.get("arg_types") or []):
            pname = strip_type(param["type"])
            if pname in names and pname not in cenv and at:
                cenv[pname] = self.ev.evaluate(strip_type(at), env, bindings)
        self._bind_defaults(tparams, cenv, env)
        for p in tparams:
            cenv.setdefault(p["name"], UNKNOWN)
        return cenv

    def _bind_defaults(self, tparams: list[dict], cenv: dict, env: dict) -> None:
        """Parameters nobody passed take their default, evaluated with the parameters before them
        (`bool FUSED = false`, `int N = 2 * M`)."""
        for p in tparams:
            if p["name"] not in cenv and p.get("default_text") is not None:
                cenv[p["name"]] = self.ev.evaluate(p["default_text"], {**env, **cenv}, {})

    def explicit_env(self, fn: dict, targs: list[str]) -> dict:
        """The environment an explicit instantiation (`template void f<A, B>(...);`) gives a
        function template: its arguments in order, then the defaults."""
        cenv = {p["name"]: self.ev.evaluate(a, {}, {}) for p, a in zip(fn["tparams"], targs)}
        self._bind_defaults(fn["tparams"], cenv, {})
        for p in fn["tparams"]:
            cenv.setdefault(p["name"], UNKNOWN)
        return cenv

    def run(self, entries: dict[str, str], seeds: list[tuple[str, dict, str]] = ()) -> None:
        """entries: function usr -> entry point name; seeds: (function usr, environment, entry
        point name) of explicit instantiations, walked from their bound environment."""
        work = [(usr, {}, {name}) for usr, name in entries.items()]
        work += [(usr, dict(env), {name}) for usr, env, name in seeds]
        # A function reached again in an environment it has had, by new entry points, passes
        # them on to the same callee environments: those are bound once.
        calls: dict[tuple, list[tuple[str, dict]]] = {}
        while work:
            usr, env, ents = work.pop()
            table = self.envs[usr]
            k = _key(env)
            rec = table.get(k)
            if rec is not None:
                new = ents - rec[1]
                if not new:
                    continue
                rec[1] |= new
                ents = new
            else:
                if len(table) >= MAX_ENVS_PER_FUNCTION:
                    self.truncated.add(usr)
                    continue
                table[k] = [env, set(ents)]
            bound = calls.get((usr, k))
            if bound is None:
                bound = calls[(usr, k)] = self._calls(usr, env)
            for callee, cenv in bound:
                labels = self._relabel(callee, ents)
                if labels:
                    work.append((callee, cenv, labels))

    def _relabel(self, callee: str, ents: set[str]) -> set[str]:
        """Labels passed to `callee`: re-attributed to the callee's TU when it is defined in the
        main file of a TU other than the one compiling the caller."""
        fn = self.functions.get(callee)
        cfile = fn["file"] if fn is not None else None
        if cfile not in self.tu_files:
            if fn is None or not fn["is_template"]:
                return set(ents)
            # NOTE: a template whose definition the caller's TU does not include is only
            # declared there (`template <typename T> void f_cuda(P &);` in a binding .cpp): that
            # TU instantiates nothing; the TUs with its explicit instantiations do.
            return {e for e in ents if self._sees(e, cfile)}
        out = set()
        for e in ents:
            entry = label_entry(e)
            tu = label_tu(e, self.entry_files)
            if tu == cfile or cfile in self.includes(tu):
                out.add(e)
            else:   # back in the entry point's own TU: the plain label again
                out.add(entry if self.entry_files.get(entry) == cfile else f"{entry}{TU_MARK}{cfile}")
        return out

    def _sees(self, label: str, cfile: str | None) -> bool:
        """Whether the TU compiling `label`'s walk includes `cfile` (True when that TU is unknown)."""
        entry, _, tu = label.partition(TU_MARK)
        tu = tu or self.entry_files.get(entry)
        return tu is None or cfile is None or tu == cfile or cfile in self.includes(tu)

    def _calls(self, usr: str, env: dict) -> list[tuple[str, dict]]:
        """(callee, callee environment) of every live call in a function under `env`."""
        fn = self.functions.get(usr)
        if fn is None:
            return []
        out = []
        passed = self._passed(fn)
        for site in fn["sites"].values():
            if site["kind"] != "call":
                continue
            kernels_passed = passed.get(site.get("call_at"))
            for copy in (v for c in site["copies"] for v in expansions(c)):
                if not self.live(copy, env):
                    continue
                for callee in self._pick_callees(site, copy, env):
                    cenv = self.bind(callee, site, copy, env)
                    if not kernels_passed:
                        out.append((callee["usr"], cenv))
                        continue
                    for extra in self._kernel_args(kernels_passed, env):
                        out.append((callee["usr"], {**cenv, **extra}))
                for usr in self.registry_edges(site):
                    out.append((usr, {}))
        return out

    # -- launch wrappers (recognizers/wrappers.py) ----------------------------------------------
    def _passed(self, fn: dict) -> dict[str, list[dict]]:
        """call position -> the kernels passed in that call (passing sites, `wrapper_arg`)."""
        out: dict[str, list[dict]] = defaultdict(list)
        for s in fn["sites"].values():
            if s["kind"] == "variable" and s.get("wrapper_arg") is not None:
                out[s["call_at"]].append(s)
        return out

    def _kernel_args(self, passing: list[dict], env: dict) -> list[dict]:
        """The environments' additions a call passing kernels makes: `@argI` -> the kernel and its
        template arguments evaluated here (`usr<US>arg<US>arg`), one environment per combination."""
        options: dict[int, set[str]] = defaultdict(set)
        for s in passing:
            i = s["wrapper_arg"]
            if s.get("from_param") is not None:
                got = env.get(f"{ARG}{s['from_param']}")
                if got:
                    options[i].add(got)
                continue
            for copy in (v for c in s["copies"] for v in expansions(c)):
                if self.live(copy, env):
                    b = copy.get("bindings", {})
                    options[i].add(US.join([s["kernel"], *(self.ev.evaluate(t, env, b) for t in s.get("targs") or [])]))
        combos: list[dict] = [{}]
        for i, values in sorted(options.items()):
            combos = [{**c, f"{ARG}{i}": v} for c in combos for v in sorted(values)]
        return combos

    def passing_sites(self, callee: str, index: int, kernel: str) -> list[tuple[dict, dict]]:
        """(caller, passing site) of every call that passes `kernel` as argument `index` of `callee`."""
        if self._passing is None:
            self._passing = defaultdict(list)
            for fn in self.functions.values():
                calls = {s.get("call_at"): s for s in fn["sites"].values() if s["kind"] == "call"}
                for s in fn["sites"].values():
                    if s["kind"] == "variable" and s.get("wrapper_arg") is not None and s.get("kernel"):
                        for c in calls.get(s["call_at"], {}).get("callees", ()):
                            self._passing[(c, s["wrapper_arg"])].append((fn, s))
        return [(f, s) for f, s in self._passing.get((callee, index), []) if s["kernel"] == kernel]

    def param_kernels(self, fn: dict, index: int) -> dict[str, list[tuple[list[str], set]]]:
        """The kernels a wrapper's parameter `index` holds: kernel usr -> [(spelled arguments,
        entry labels)] over the wrapper's environments."""
        out: dict[str, list] = defaultdict(list)
        for env, ents in self.envs.get(fn["usr"], {}).values():
            got = env.get(f"{ARG}{index}")
            if got:
                usr, *args = got.split(US)
                out[usr].append((args, ents))
        return out

    def live(self, copy: dict, env: dict) -> bool:
        """False when an `if constexpr` on the path is false for this environment."""
        for cond in copy.get("constexpr", ()):
            if eval_condition(self.ev.evaluate(cond, env, copy.get("bindings", {}))) is False:
                return False
        return True

    # -- launch sites --------------------------------------------------------------------------
    def kernel_tuples(self, fn: dict, site: dict, kernel: dict) -> dict[tuple, set]:
        """Argument tuples of a launch/use site: tuple -> entry points that reach it."""
        out: dict[tuple, set] = defaultdict(set)
        envs = self.envs.get(fn["usr"], {})
        if site.get("table") and site.get("via") in self.tables:
            sources = [t for t in self.tables[site["via"]] if t.get("kernel") == kernel["usr"]]
        elif site.get("via"):
            sources = [s for s in fn["sites"].values() if s["kind"] == "variable" and s.get("var") == site["via"]
                       and s.get("lambda") == site.get("lambda")
                       and (s.get("kernel") == kernel["usr"] or s.get("callee_text", "").split("::")[-1] == kernel["name"])]
        else:
            sources = [site]
        params = kernel["params"]
        if site.get("param") is not None and not site.get("kernel") and not site.get("lambda"):
            # a launch wrapper's parameter: the kernels its callers pass (param_kernels)
            for usr, uses in self.param_kernels(fn, site["param"]).items():
                if usr != kernel["usr"]:
                    continue
                for args, ents in uses:
                    vals = {p["name"]: a for p, a in zip(params, args)}
                    if len(vals) < len(params):
                        self._bind_defaults([p for p in params if not _sfinae(p)], vals, {})
                    out[tuple(vals.get(p["name"], DEFAULT if p.get("default") else UNKNOWN) for p in params)] |= ents
            return out
        for env, ents in envs.values():
            for src in sources:
                targs = src.get("targs") or []
                for copy in (v for c in src["copies"] for v in expansions(c)):
                    if not self.live(copy, env):
                        continue
                    b = copy.get("bindings", {})
                    vals = {}
                    for i, p in enumerate(params):
                        if i < len(targs):
                            vals[p["name"]] = self.ev.evaluate(targs[i], env, b)
                    # deduction from the launch arguments (kernel<<<...>>>(args)) for the rest
                    if len(vals) < len(params) and not site.get("via"):
                        kparams = kernel.get("fn_params", [])
                        for kp, at in zip(kparams, copy.get("arg_types") or []):
                            pname = strip_type(kp["type"])
                            if pname in {p["name"] for p in params} and pname not in vals and at:
                                vals[pname] = self.ev.evaluate(strip_type(at), env, b)
                    if len(vals) < len(params):
                        self._bind_defaults([p for p in params if not _sfinae(p)], vals, env)
                    out[tuple(vals.get(p["name"], DEFAULT if p.get("default") else UNKNOWN) for p in params)] |= ents
        return out
