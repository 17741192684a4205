"""Property-based tests of the input loaders (issues 16 and 33). Each asserts the property itself,
not only that nothing but `CodemodError` is raised:

- nvcc --time CSV: a metric is accepted exactly when it is a finite time >= 0, and read unchanged;
- ninja log: every accepted line's start/end are milliseconds in [0, 2^40), end >= start; a line
  with a time outside is refused;
- strict JSON: `dumps` refuses exactly the documents holding a non-finite float, and what it writes
  reads back equal; `loads` refuses duplicate keys, NaN/Infinity and huge integers;
- rule YAML: an alias tree expanding past MAX_RULE_NODES is refused, a small one is read;
- compile database: a `command` made by quoting arguments splits back into them (shlex round trip);
- journals, verify manifests (fuzzed): never an error other than CodemodError (a
  ValueError for the journal's parser), and what is accepted names no path outside the tree.

docs/reliability.md ("Property tests and mutants") lists the mutants these kill. Derandomized (a
fixed seed per test) so that CI reruns are reproducible; a few seconds per test on 2 cores."""

from __future__ import annotations

import io
import json
import math
import os
import shlex
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from codemod import nvrtc_options, strict_json
from codemod.errors import CodemodError, OutputError, ParseError, RuleError, UsageError
from codemod.frontend import compile_db
from codemod.frontend.toolchain import flags_from_compile_db
from codemod.impact import ninja_log, nvcc_time
from codemod.rule import MAX_RULE_NODES, load_rule_file

from .conftest import ACTLIB_RULE, CSV


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


# NOTE: one scratch folder for the file-based loaders; hypothesis runs examples one at a time.
SCRATCH = Path(tempfile.mkdtemp(prefix="codemod-props-"))

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
floats = st.floats(allow_nan=True, allow_infinity=True)


# --- nvcc --time CSV: NaN and negative metrics ------------------------------------------------------

CSV_ROW = CSV.read_text().splitlines()[1].split(",")


@_settings(400)
@given(st.one_of(floats, st.integers(-10**6, 10**6).map(float)), st.sampled_from(["ms", "s"]),
       st.sampled_from([repr, str, lambda v: f"{v:.3f}" if math.isfinite(v) else str(v)]))
def test_nvcc_metric_accepted_iff_finite_and_non_negative(value, unit, spell):
    row = list(CSV_ROW)
    row[-2], row[-1] = f" {spell(value)} ", f" {unit}"
    metric = float(row[-2])
    try:
        got = nvcc_time.parse_row(",".join(row), 2, "p.csv")
    except ParseError:
        assert not (math.isfinite(metric) and metric >= 0), (metric, "refused")
        return
    assert math.isfinite(metric) and metric >= 0, (metric, "accepted")
    assert got.ms == (metric if unit == "ms" else metric * 1000.0)
    assert math.isfinite(got.ms) and got.ms >= 0


# --- ninja log: times -----------------------------------------------------------------------------

times = st.one_of(st.integers(0, 10**6), st.integers(-2**41, 2**41), st.sampled_from([-1, 0, 2**40 - 1, 2**40]))
row = st.tuples(times, times, st.integers(0, 2**62), st.sampled_from(["obj/a.o", "obj/b.o", "lib/x.so"]),
                st.sampled_from(["1f", "2e", "ab"]))


@_settings(400)
@given(st.lists(row, min_size=1, max_size=8), st.sampled_from(["# ninja log v5", "# ninja log v6", "# ninja log v7"]))
def test_ninja_log_times_are_milliseconds_in_range(rows, header):
    body = "".join(f"{s}\t{e}\t{m}\t{o}\t{h}\n" for s, e, m, o, h in rows)
    in_range = all(0 <= s <= e < 2**40 for s, e, *_ in rows)
    try:
        log = ninja_log.parse(io.StringIO(header + "\n" + body, newline=""), "p.ninja_log")
    except ParseError:
        assert not in_range, rows
        return
    assert in_range, rows
    t = log.table
    assert len(t) == len(rows)
    assert (t.start_ms >= 0).all() and (t.end_ms >= t.start_ms).all() and (t.end_ms < 2**40).all()


# --- any input to the log loaders: the tool's own error or a checked result ----------------------------

number = st.one_of(st.integers(-2**70, 2**70).map(str), floats.map(repr),
                   st.sampled_from(["nan", "inf", "-0", "1e400", "", " ", "0x10", "1_000"]), text)
log_header = st.one_of(st.sampled_from(["# ninja log v5", "# ninja log v6", "# ninja log v7", "# ninja log v4",
                                        "# ninja log v99", ""]), text)
log_line = st.one_of(st.tuples(number, number, number, text, text).map("\t".join), text,
                     st.sampled_from(["# comment", "", "\r", "a\tb", "1\t2\t3\t4\t5\t6"]))


@_settings(600)
@given(log_header, st.lists(log_line, max_size=10), st.sampled_from(["\n", "\r\n"]))
def test_ninja_log_parser_any_input(first, lines, eol):
    try:
        log = ninja_log.parse(io.StringIO(eol.join([first, *lines]) + eol, newline=""), "fuzz.ninja_log")
    except ParseError:
        return
    t = log.table
    assert (t.start_ms >= 0).all() and (t.end_ms >= t.start_ms).all() and (t.end_ms < 2**40).all()
    for b in range(len(log.builds)):
        for cyc in log.build(b).cycles:
            steps = cyc.steps()
            assert all(0 <= s.elapsed_ms < 2**40 for s in steps)


@_settings(300)
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000), st.sampled_from(["a", "b", "c", "d"])),
                min_size=1, max_size=10),
       st.sampled_from([[], ["*=0"], ["*=2"], ["a*=0.5"]]), st.sampled_from([None, 0, 1, 3]))
def test_impact_pipeline_on_valid_logs(rows, scale, jobs):
    """Well-formed logs of any shape (zero-length, overlapping, repeated outputs) through the whole
    model: priced, replayed, what-if; the document is strict JSON (no error of any kind)."""
    from codemod.impact.predict import Loaded, analyse, parse_scale

    body = "".join(f"{min(s, e)}\t{max(s, e)}\t0\tobj/{n}.o\t{k:x}\n" for k, (s, e, n) in enumerate(rows))
    log = ninja_log.parse(io.StringIO("# ninja log v6\n" + body), "fuzz.ninja_log")
    build = log.build(-1)
    offsets = [0]
    for cyc in build.cycles:
        offsets.append(offsets[-1] + cyc.wall_ms)
    steps = ninja_log.StepTable.concat([cyc.steps() for cyc in build.cycles], offsets[:-1])
    loaded = Loaded(log, build, steps, offsets[1:-1], inputs={"log": "fuzz"})
    try:
        doc = analyse(loaded, remove=[], scale=parse_scale(scale), jobs=jobs, policy=None, cores=None, alpha=0.0,
                      max_steps=None)
    except UsageError as exc:  # a what-if glob matching no step of this log is the user's error
        assert "no step matches" in exc.message and scale == ["a*=0.5"], exc.message  # names are obj/...
        return
    json.loads(strict_json.dumps(doc), parse_constant=lambda c: pytest.fail(f"wrote {c}"))


phase = st.one_of(st.sampled_from(["nvcc (driver)", "cicc", "ptxas", "fatbinary", "gcc (compiling)",
                                   "source file name "]), text)
csv_row = st.one_of(st.tuples(text, phase, text, text, st.sampled_from(["", "sm_90"]), st.just("nvcc"), number,
                              st.sampled_from(["ms", "s", "us", ""])).map(" , ".join), text)


@_settings(600)
@given(st.lists(csv_row, max_size=10))
def test_nvcc_csv_parser_any_input(rows):
    try:
        invocations, _ = nvcc_time.parse(io.StringIO("\n".join(rows) + "\n"), "fuzz.csv")
    except ParseError:
        return
    for inv in invocations:
        assert all(math.isfinite(v) and v >= 0 for v in inv.phase_ms().values())
        assert all(math.isfinite(v) and v >= 0 for v in inv.arch_ms().values())


# --- strict JSON ------------------------------------------------------------------------------------

scalar = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), floats, text)
json_doc = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(text, inner, max_size=4)), max_leaves=12)


def _non_finite(doc) -> bool:
    if isinstance(doc, float):
        return not math.isfinite(doc)
    if isinstance(doc, dict):
        return any(map(_non_finite, doc.values()))
    if isinstance(doc, list):
        return any(map(_non_finite, doc))
    return False


def _equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a == 0 and b == 0)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_equal, a, b))
    return a == b and type(a) is type(b)


@_settings(200)
@given(json_doc)
def test_strict_dumps_refuses_exactly_non_finite_numbers(doc):
    try:
        out = strict_json.dumps(doc, "fuzz")
    except OutputError:
        assert _non_finite(doc)
        return
    assert not _non_finite(doc)
    assert _equal(json.loads(out, parse_constant=lambda c: pytest.fail(f"wrote {c}")), doc)


@_settings(100)
@given(st.dictionaries(st.text(max_size=8), scalar.filter(lambda v: not _non_finite(v)), min_size=1, max_size=5),
       st.data())
def test_strict_loads_refuses_duplicates_and_non_json_numbers(doc, data):
    text_ = strict_json.dumps(doc)
    assert _equal(strict_json.loads(text_), doc)
    key = data.draw(st.sampled_from(sorted(doc)))
    dup = text_[:-1] + ", " + json.dumps(key) + ": 1}"
    with pytest.raises(ValueError, match="duplicate key"):
        strict_json.loads(dup)
    for bad in ("NaN", "Infinity", "-Infinity", "1e400", "9" * 5000):
        with pytest.raises(ValueError):
            strict_json.loads(text_[:-1] + ', "zz_extra": ' + bad + "}")


# --- rule YAML bounds ---------------------------------------------------------------------------------

RULE = yaml.safe_load(ACTLIB_RULE.read_text())


def _alias_tree(fanout: int, depth: int) -> str:
    lines = ['a0: &a0 ["x"]']
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * fanout) + "]" for k in range(1, depth + 1)]
    return "\n".join(lines) + "\n"


@_settings(60)
@given(st.integers(1, 12), st.integers(1, 9))
def test_yaml_alias_expansion_bounded(fanout, depth):
    expanded = sum(fanout ** k for k in range(depth + 1))  # the last anchor's list nodes, once per use
    path = SCRATCH / "alias.yaml"
    path.write_text(ACTLIB_RULE.read_text() + "anchors:\n" + "".join(
        "  " + line + "\n" for line in _alias_tree(fanout, depth).splitlines()))
    try:
        load_rule_file(path)
        refused_for_size = False
    except RuleError as exc:
        refused_for_size = "expands to more than" in exc.message
        assert refused_for_size or "anchors" in exc.message, exc.message   # else only the unknown key
    if expanded > MAX_RULE_NODES:
        assert refused_for_size, (fanout, depth, expanded)
    # NOTE: every anchor counted with its subtree, plus the rule's own nodes (a few hundred)
    if 4 * expanded + 5000 < MAX_RULE_NODES:
        assert not refused_for_size, (fanout, depth, expanded)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


RULE_PATHS = [p for p in _paths(RULE) if p]
_DELETE = object()


def _mutated(where: tuple, value) -> str:
    doc = json.loads(json.dumps(RULE))
    node = doc
    for k in where[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[where[-1]]
    else:
        node[where[-1]] = value
    return yaml.safe_dump(doc)


rule_text = st.one_of(
    st.builds(_mutated, st.sampled_from(RULE_PATHS), st.one_of(json_doc.filter(lambda d: not _non_finite(d)),
                                                                st.just(_DELETE))),
    text,
    st.sampled_from(["a: &a [*a]", "- [", "{", "id: [1, 2", "? [a]\n: b", "!!python/object:os.system x", "\t"]),
)


@_settings(150)
@given(st.one_of(rule_text.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=64)))
def test_rule_loader_any_input(data):
    path = SCRATCH / "rule.yaml"
    path.write_bytes(data)
    try:
        rule = load_rule_file(path)
    except RuleError as exc:
        assert exc.where is None or exc.where.startswith(str(path)), exc.where
        return
    assert isinstance(rule.id, str) and rule.entry_regex() is not None
    opts = (rule.raw.get("migrate") or {}).get("options") or {}
    assert nvrtc_options.refused(opts.get("always", [])) == []


# --- compile database: quote splitting ----------------------------------------------------------------

arg = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=12)


@_settings(400)
@given(st.lists(arg, min_size=1, max_size=6))
def test_command_quoting_round_trips(args):
    entry = compile_db.CompileEntry(0, "/d", "k.cu", None, shlex.join(args))
    assert entry.argv("db.json") == args


@_settings(300)
@given(st.lists(arg, min_size=1, max_size=4), st.sampled_from(['"', "'"]))
def test_unterminated_quote_refused(args, quote):
    entry = compile_db.CompileEntry(0, "/d", "k.cu", None, shlex.join(args) + f" {quote}open")
    with pytest.raises(ParseError, match="cannot split"):
        entry.argv("db.json")


json_value = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), text),
                          lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
                          max_leaves=12)
entry = st.fixed_dictionaries(
    {"directory": st.one_of(st.sampled_from([str(SCRATCH), "/", "rel", ""]), json_value),
     "file": st.one_of(st.sampled_from(["k.cu", str(SCRATCH / "k.cu"), "../k.cu", ""]), json_value)},
    optional={"arguments": st.one_of(st.lists(st.one_of(text, st.sampled_from(["-I", "-Iinc", "-DX=1"])), max_size=6),
                                     json_value),
              "command": st.one_of(st.sampled_from(['nvcc -I"a b" -c k.cu', 'nvcc -I"a', "nvcc -Ix -DY k.cu"]), text,
                                   json_value)})


@_settings(150)
@given(st.one_of(st.lists(entry, max_size=4).map(lambda d: json.dumps(d).encode()), st.binary(max_size=64)))
def test_compile_db_entries_are_checked(data):
    path = SCRATCH / "compile_commands.json"
    path.write_bytes(data)
    try:
        entries = compile_db.load(path)
    except ParseError:
        return
    for e in entries:
        assert isinstance(e.directory, str) and e.directory and "\0" not in e.directory
        assert isinstance(e.file, str) and e.file and "\0" not in e.file
        assert e.arguments is not None or e.command is not None
        assert e.arguments is None or all(isinstance(a, str) for a in e.arguments)
    try:
        flags_from_compile_db(path, SCRATCH / "k.cu", entries)
    except CodemodError:
        pass


hexd = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)


# --- journals and manifests (fuzz) ----------------------------------------------------------------

path_text = st.one_of(st.sampled_from(["a.cu", "backup/0", "d/b.h", "../x", "/etc/passwd", "a/../../b", "", ".", "a\\..\\b"]), text)
file_entry = st.fixed_dictionaries(
    {"path": st.one_of(path_text, json_value), "tmp": st.one_of(path_text, json_value),
     "old": st.one_of(st.none(), hexd, json_value), "new": st.one_of(st.none(), hexd, json_value),
     "mode": st.one_of(st.none(), st.integers(-10, 0o10000), st.sampled_from([0o4755, 0o644]), json_value),
     "backup": st.one_of(st.none(), st.sampled_from(["backups/0", "../../x"]), path_text)})
journal = st.fixed_dictionaries(
    {"schema": st.one_of(st.just("codemod-journal/1"), text),
     "files": st.one_of(st.lists(file_entry, max_size=4), json_value)},
    optional={"dirs": st.one_of(st.lists(path_text, max_size=3), json_value), "pid": json_value})


def _inside(base: str, rel: str) -> bool:
    full = os.path.normpath(os.path.join(base, rel))
    return full == base or full.startswith(base + os.sep)


def _as_written(path: str, old: bool, mode) -> dict:
    """An entry as `transaction` writes it for `path` (its temp file, hashes, backup), whatever the path."""
    from codemod.apply.write.journal import _tmp_of

    return {"path": path, "tmp": _tmp_of(path) if isinstance(path, str) else path, "old": "0" * 64 if old else None,
            "new": "1" * 64, "mode": mode, "backup": "backup/0" if old else None}


written = st.builds(_as_written, path_text, st.booleans(), st.one_of(st.none(), st.integers(-1, 2**33)))
journal_as_written = st.fixed_dictionaries(
    {"schema": st.just("codemod-journal/1"), "files": st.lists(written, max_size=3)},
    optional={"dirs": st.lists(path_text, max_size=2)})
JOURNAL_STATE = SCRATCH / "state"
JOURNAL_TREE = SCRATCH / "tree"


@_settings(300)
@given(st.one_of(journal.map(lambda j: json.dumps(j).encode()), journal_as_written.map(lambda j: json.dumps(j).encode()),
                 st.binary(max_size=64)))
def test_journals_fuzzed_name_no_path_outside_the_tree(data):
    """Through the journal's own reader (apply/write/journal.py: read, then every field checked against
    the tree and the state folder): an ApplyError, or a record whose every path stays inside."""
    from codemod.apply.write import journal as journal_mod
    from codemod.errors import ApplyError

    (JOURNAL_STATE / "backup").mkdir(parents=True, exist_ok=True)
    (JOURNAL_STATE / "backup" / "0").write_bytes(b"x")
    JOURNAL_TREE.mkdir(exist_ok=True)
    (JOURNAL_TREE / "a.cu").write_bytes(b"x")
    st = journal_mod.State(JOURNAL_STATE, JOURNAL_TREE)
    st.journal.write_bytes(data)
    try:
        record = journal_mod._read_journal(st)
    except ApplyError:
        return
    base, folder = str(JOURNAL_TREE), str(JOURNAL_STATE)
    for e in record["files"]:
        within = folder if e.get("area") == "state" else base
        assert _inside(within, e["path"]) and _inside(within, e["tmp"])
        assert e["backup"] is None or _inside(folder, e["backup"])
        assert e["mode"] is None or (type(e["mode"]) is int and 0 <= e["mode"] < 1 << 32)   # an st_mode
    assert all(_inside(base, d) for d in record.get("dirs", []))


manifest_doc = st.fixed_dictionaries(
    {"schema": st.one_of(st.just("codemod-manifest/1"), text)},
    optional={"rule": st.one_of(st.just("activation"), json_value), "edited": json_value,
              "kernels": json_value, "files": json_value, "generated": json_value})


@_settings(200)
@given(st.one_of(manifest_doc.map(json.dumps), st.text(max_size=64)))
def test_verify_manifests_fuzzed(text_):
    from codemod.verify.manifest import parse_manifest

    try:
        parse_manifest(text_, SCRATCH / "m.json", SCRATCH)
    except CodemodError:
        pass


def teardown_module(module):
    import shutil

    shutil.rmtree(SCRATCH, ignore_errors=True)
