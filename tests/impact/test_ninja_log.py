"""`.ninja_log` parser: versions, hash widths, builds, recompaction, multi-output steps, diagnostics."""

from __future__ import annotations

import io
import re

import pytest

from codemod.errors import ParseError
from codemod.impact import ninja_log

from .conftest import GOLDEN, TE


def parse_file(path):
    return ninja_log.parse_path(str(path), path.name)


def test_v5_three_builds_appended():
    log = parse_file(GOLDEN / "logs" / "v5_three_builds.ninja_log")
    assert log.version == 5
    assert len(log.lines) == 12
    assert not log.recompacted
    assert [len(b.cycles) for b in log.builds] == [1, 1, 1]
    steps = [b.cycles[0].steps() for b in log.builds]
    assert [len(s) for s in steps] == [5, 2, 2]
    custom = steps[0][0]
    assert custom.outputs == ["gen1.h", "gen2.h", "/src/proj/build/gen1.h", "/src/proj/build/gen2.h"]
    assert [s.name for s in steps[2]] == ["CMakeFiles/p.dir/src/c.cpp.o", "libp.so"]
    assert [b.cycles[0].wall_ms for b in log.builds] == [1964, 1204, 73]


def test_recompacted_log_is_history_not_builds():
    log = parse_file(GOLDEN / "logs" / "v5_recompacted.ninja_log")
    assert len(log.lines) == 8
    assert log.builds == []
    assert len(log.history_lines) == 8
    assert any("recompacted" in w and ":2-9:" in w for w in log.warnings), log.warnings
    with pytest.raises(ParseError, match="no build can be recovered"):
        log.build()


def test_build_appended_after_recompaction_is_found():
    log = parse_file(GOLDEN / "logs" / "v5_recompacted_then_build.ninja_log")
    assert len(log.history_lines) == 8
    assert len(log.builds) == 1
    assert [s.name for s in log.build().cycles[0].steps()] == ["CMakeFiles/p.dir/src/a.cu.o", "libp.so"]


def test_v6_keeps_first_entry_and_short_hashes():
    log = parse_file(GOLDEN / "logs" / "v6_one_build.ninja_log")
    assert log.version == 6
    assert [ln.output for ln in log.lines] == ["obj/first.o", "obj/second.o", "libx.so"]
    assert [ln.cmdhash for ln in log.lines] == ["1f", "d0a943c555974e1", "0123456789abcdef"]
    assert len(log.builds) == 1


def test_v7_scheduling_sample():
    log = parse_file(GOLDEN / "sched" / "ninja_1.13.2.ninja_log")
    assert (log.version, len(log.lines), len(log.builds)) == (7, 7, 1)


def test_regeneration_gives_one_build_of_two_cycles():
    log = parse_file(GOLDEN / "logs" / "v7_regen.ninja_log")
    assert len(log.builds) == 1
    assert [[ln.output for ln in c.lines] for c in log.build().cycles] == [["build.ninja"], ["gen1.h", "obj/a.o"]]


def test_te_log_one_build_98_steps():
    log = parse_file(TE / "te_sm90_j16.ninja_log")
    assert (log.version, len(log.builds), log.warnings) == (7, 1, [])
    steps = log.build().cycles[0].steps()
    assert len(steps) == 98
    assert sum(s.elapsed_ms for s in steps) == 5413770
    assert max(s.end_ms for s in steps) == 556275


def test_path_with_spaces_and_300k_path():
    long = "d/" + "x" * 300_000 + ".o"
    text = f"# ninja log v7\n0\t10\t0\tdir with space/a b.o\tab\n0\t20\t0\t{long}\tcd\n"
    log = ninja_log.parse(io.StringIO(text), "mem")
    assert [ln.output for ln in log.lines] == ["dir with space/a b.o", long]


def test_short_and_comment_lines_are_skipped_like_ninja():
    text = "# ninja log v5\n# ninja log v5\n0\t10\t0\ta.o\n1\t5\t0\tb.o\tff\n"
    log = ninja_log.parse(io.StringIO(text), "mem")
    assert [ln.output for ln in log.lines] == ["b.o"]
    assert log.warnings == ["mem:3: fewer than 5 fields; skipped as ninja does"]


@pytest.mark.parametrize(
    "body, message",
    [
        ("0\tx\t0\ta.o\tff\n", r"^mem:3: start/end/mtime must be integers"),
        ("0\t10\t0\ta.o\tzz\n", r"^mem:3: command hash must be hex"),
        ("20\t10\t0\ta.o\tff\n", r"^mem:3: end 10 ms is before start 20 ms"),
        ("0\t10\t0\ta.o\tff\textra\n", r"^mem:3: expected 5 tab-separated fields, found 6"),
    ],
)
def test_malformed_line_names_file_and_line(body, message):
    text = "# ninja log v7\n0\t1\t0\tok.o\tab\n" + body
    with pytest.raises(ParseError) as info:
        ninja_log.parse(io.StringIO(text), "mem")
    assert re.match(message, info.value.render()), info.value.render()


@pytest.mark.parametrize("header, message", [("# ninja log v4\n", "v4 is not supported"), ("hello\n", "not a .ninja_log")])
def test_bad_header(header, message):
    with pytest.raises(ParseError, match=message) as info:
        ninja_log.parse(io.StringIO(header), "mem")
    assert info.value.where == "mem:1"


def test_newer_version_warns_and_reads():
    log = ninja_log.parse(io.StringIO("# ninja log v8\n0\t1\t0\ta.o\tab\n"), "mem")
    assert len(log.lines) == 1 and "newer than v7" in log.warnings[0]


def test_column_reader_agrees_with_line_reader():
    body = "".join(f"{i * 10}\t{i * 10 + 7}\t{1700000000000000000 + i}\tobj/f{i}.o\t{i:x}F\n" for i in range(50))
    fast = ninja_log.parse(io.StringIO("# ninja log v7\n" + body), "x.ninja_log")
    # a blank line sends the reader down the line-by-line path; line numbers shift by one after it
    slow = ninja_log.parse(io.StringIO("# ninja log v7\n\n" + body), "x.ninja_log")
    assert [ln._replace(lineno=ln.lineno + 1) for ln in fast.lines] == slow.lines
    assert fast.lines[0].cmdhash == "0f" and fast.lines[-1].lineno == 51


def test_gzip_compressed_log_reads_like_the_plain_one(tmp_path):
    import gzip

    plain = GOLDEN / "logs" / "v5_three_builds.ninja_log"
    packed = tmp_path / "v5.ninja_log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    steps = [[(s.name, s.start_ms, s.end_ms) for s in b.cycles[0].steps()] for b in parse_file(plain).builds]
    assert steps == [[(s.name, s.start_ms, s.end_ms) for s in b.cycles[0].steps()]
                     for b in parse_file(packed).builds]
    truncated = tmp_path / "cut.ninja_log.gz"
    truncated.write_bytes(gzip.compress(plain.read_bytes())[:40])
    with pytest.raises(ParseError, match="cannot read ninja log"):
        parse_file(truncated)
