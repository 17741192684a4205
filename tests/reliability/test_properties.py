"""Issue 16: property-based tests of the input loaders (ninja log, nvcc --time CSV, compile
database, rule files): whatever the input, a loader returns or raises the tool's own error
(codemod.errors.CodemodError), nothing else. Derandomized (a fixed seed per test) so that CI
reruns are reproducible; thousands of examples each, the set within about a minute on 2 cores."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codemod.errors import CodemodError
from codemod.frontend import compile_db
from codemod.frontend.toolchain import flags_from_compile_db
from codemod.impact import ninja_log, nvcc_time
from codemod.rule import load_rule_file

from .conftest import ACTLIB_RULE


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# NOTE: one scratch folder for the file-based loaders; hypothesis runs examples one at a time.
SCRATCH = Path(tempfile.mkdtemp(prefix="codemod-props-"))

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
ints = st.one_of(st.integers(-10, 10**6), st.integers(-2**70, 2**70), st.sampled_from([0, 2**40, 2**63 - 1, -2**63]))
number = st.one_of(ints.map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.sampled_from(["nan", "inf", "-0", "1e400", "", " ", "0x10", "1_000"]), text)


# --- .ninja_log -----------------------------------------------------------------------------------

header = st.one_of(st.sampled_from(["# ninja log v5", "# ninja log v6", "# ninja log v7", "# ninja log v4",
                                    "# ninja log v99", "#ninja log v6 ", ""]), text)
hexhash = st.one_of(st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=16), text)
output = st.one_of(st.sampled_from(["obj/a.o", "obj/b.o", "lib/x.so", "build.ninja", "a.o"]), text)
log_line = st.one_of(
    st.tuples(number, number, number, output, hexhash).map("\t".join),
    st.tuples(ints, ints, ints, output, hexhash).map(lambda t: "\t".join(map(str, t))),
    text,
    st.sampled_from(["# comment", "", "\r", "a\tb", "1\t2\t3\t4\t5\t6"]),
)


@pytest.mark.slow
@_settings(3000)
@given(header, st.lists(log_line, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_ninja_log_parser(first, lines, eol):
    stream = io.StringIO(eol.join([first, *lines]) + eol, newline="")
    try:
        log = ninja_log.parse(stream, "fuzz.ninja_log")
        for b in range(len(log.builds)):
            build = log.build(b)
            for cyc in build.cycles:
                list(cyc.steps())
    except CodemodError:
        pass


@_settings(1000)
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000), st.sampled_from(["a", "b", "c", "d"])),
                min_size=1, max_size=10),
       st.sampled_from([[], ["*=0"], ["*=2"], ["a*=0.5"]]), st.sampled_from([None, 0, 1, 3]))
@pytest.mark.slow
def test_impact_pipeline_on_valid_logs(rows, scale, jobs):
    """Well-formed logs of any shape (zero-length, overlapping, repeated outputs) through the whole
    model: priced, replayed, what-if, strict JSON."""
    from codemod import strict_json
    from codemod.impact.predict import Loaded, analyse, parse_scale

    body = "".join(f"{min(s, e)}\t{max(s, e)}\t0\tobj/{n}.o\t{k:x}\n" for k, (s, e, n) in enumerate(rows))
    try:
        log = ninja_log.parse(io.StringIO("# ninja log v6\n" + body), "fuzz.ninja_log")
        build = log.build(-1)
        offsets = [0]
        for cyc in build.cycles:
            offsets.append(offsets[-1] + cyc.wall_ms)
        steps = ninja_log.StepTable.concat([cyc.steps() for cyc in build.cycles], offsets[:-1])
        loaded = Loaded(log, build, steps, offsets[1:-1], inputs={"log": "fuzz"})
        doc = analyse(loaded, remove=[], scale=parse_scale(scale), jobs=jobs, policy=None, cores=None, alpha=0.0,
                      max_steps=None)
        strict_json.dumps(doc)
    except CodemodError:
        pass


# --- nvcc --time CSV -------------------------------------------------------------------------------

phase = st.one_of(st.sampled_from(["nvcc (driver)", "cicc", "ptxas", "fatbinary", "nvlink", "cudafe++",
                                   "gcc (preprocessing 4)", "gcc (preprocessing 1)", "gcc (compiling)",
                                   "source file name "]), text)
path_field = st.one_of(st.sampled_from(["k.cu", "obj/k.o", "tmp/tmpxft_00001ef7_00000000-5_k.cpp4.ii",
                                        "tmp/tmpxft_0000abcd_00000000-1_k.ptx", "", "a,b"]), text)
unit = st.one_of(st.sampled_from(["ms", "s", " ms ", "us", ""]), text)
csv_row = st.one_of(
    st.tuples(path_field, phase, path_field, path_field, st.sampled_from(["", "sm_90", "compute_90"]),
              st.just("nvcc"), number, unit).map(" , ".join),
    text,
)


@pytest.mark.slow
@_settings(2000)
@given(st.lists(csv_row, max_size=12))
def test_nvcc_csv_parser(rows):
    try:
        invocations, _ = nvcc_time.parse(io.StringIO("\n".join(rows) + "\n"), "fuzz.csv")
        for inv in invocations:
            inv.phase_ms()
            inv.arch_ms()
    except CodemodError:
        pass


# --- compile_commands.json -------------------------------------------------------------------------

scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text)
json_value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(text, inner, max_size=4)), max_leaves=12)
entry = st.fixed_dictionaries(
    {"directory": st.one_of(st.sampled_from([str(SCRATCH), "/", "rel", ""]), json_value),
     "file": st.one_of(st.sampled_from(["k.cu", str(SCRATCH / "k.cu"), "../k.cu", ""]), json_value)},
    optional={"arguments": st.one_of(st.lists(st.one_of(text, st.sampled_from(["-I", "-Iinc", "-DX=1", "-isystem"])),
                                              max_size=6), json_value),
              "command": st.one_of(st.sampled_from(['nvcc -I"a b" -c k.cu', 'nvcc -I"a', "nvcc -Ix -DY k.cu"]), text,
                                   json_value)})
db_doc = st.one_of(st.lists(entry, max_size=4), json_value)


@pytest.mark.slow
@_settings(2000)
@given(st.one_of(db_doc.map(lambda d: json.dumps(d).encode()), st.binary(max_size=64),
                 db_doc.map(lambda d: json.dumps(d)[:-1].encode())))
def test_compile_db_loader(data):
    path = SCRATCH / "compile_commands.json"
    path.write_bytes(data)
    try:
        entries = compile_db.load(path)
        flags_from_compile_db(path, SCRATCH / "k.cu", entries)
    except CodemodError:
        pass


# --- rule files ------------------------------------------------------------------------------------

RULE = yaml.safe_load(ACTLIB_RULE.read_text())


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


RULE_PATHS = [p for p in _paths(RULE) if p]


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


_DELETE = object()
rule_text = st.one_of(
    st.builds(_mutated, st.sampled_from(RULE_PATHS), st.one_of(json_value, st.just(_DELETE))),
    text,
    st.sampled_from(["a: &a [*a]", "- [", "{", "id: [1, 2", "? [a]\n: b", "!!python/object:os.system x", "\t"]),
)


@pytest.mark.slow
@_settings(1200)
@given(st.one_of(rule_text.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=64)))
def test_rule_loader(data):
    path = SCRATCH / "rule.yaml"
    path.write_bytes(data)
    try:
        load_rule_file(path)
    except CodemodError:
        pass


def teardown_module(module):
    for p in SCRATCH.iterdir():
        p.unlink()
    os.rmdir(SCRATCH)
