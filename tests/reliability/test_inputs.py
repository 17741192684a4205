"""Issue 16: every bad input of the hostile-user run is one line naming the file (and line where
there is one) with exit 2, never an internal error. One test per input."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from .conftest import ACTLIB_RULE, CSV, GOLDEN, LOG

as_root = pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")


def _log_with(tmp_path, line2: list[str], name: str = "bad.ninja_log"):
    lines = LOG.read_text().splitlines()
    path = tmp_path / name
    path.write_text("\n".join([lines[0], "\t".join(line2)] + lines[2:]) + "\n")
    return path


def _csv_with_metric(tmp_path, metric: str):
    lines = CSV.read_text().splitlines()
    row = lines[1].split(",")
    row[-2] = f" {metric} "
    path = tmp_path / f"m_{metric}.csv"
    path.write_text("\n".join([lines[0], ",".join(row)] + lines[2:]) + "\n")
    return path


# --- ninja log, nvcc CSV, impact options ------------------------------------------------------

def test_zero_length_step_alone(cli, tmp_path):
    header = LOG.read_text().splitlines()[0]
    log = tmp_path / "zero.ninja_log"
    log.write_text(f"{header}\n100\t100\t1795990000000000000\tobj/a.o\t1f\n")
    code, out, err = cli("impact", log, "--json", tmp_path / "z.json")
    assert code == 0 and "internal error" not in err, err
    doc = json.loads((tmp_path / "z.json").read_text())
    assert doc["concurrency"]["measured"]["tail"]["full_concurrency"] == 0


def test_negative_start_refused(cli, tmp_path):
    first = LOG.read_text().splitlines()[1].split("\t")
    log = _log_with(tmp_path, ["-9000000000000000000"] + first[1:])
    cli.fails("impact", log, says=(f"{log}:2:", "start/end must be milliseconds"))


def test_start_beyond_2_40_refused(cli, tmp_path):
    first = LOG.read_text().splitlines()[1].split("\t")
    log = _log_with(tmp_path, [first[0], str(2**41)] + first[2:])
    cli.fails("impact", log, says=(f"{log}:2:",))


@pytest.mark.parametrize("metric", ["nan", "inf", "-inf", "-5", "1e400"])
def test_nvcc_metric_refused(cli, tmp_path, metric):
    csv = _csv_with_metric(tmp_path, metric)
    cli.fails("impact", LOG, "--nvcc-time", csv, says=(f"{csv}:2:", "finite time >= 0"))


@pytest.mark.parametrize("text", ["", "source file name , phase name , phase input files , phase output file , "
                                      "arch , tool, metric , unit\n"])
def test_empty_nvcc_csv_refused(cli, tmp_path, text):
    csv = tmp_path / "empty.csv"
    csv.write_text(text)
    cli.fails("impact", LOG, "--nvcc-time", csv, says=(str(csv), "no timing rows"))


@pytest.mark.parametrize("factor", ["nan", "inf", "-1", "1e9"])
def test_scale_out_of_range_refused(cli, tmp_path, factor):
    cli.fails("impact", LOG, "--scale", f"*={factor}", "--json", tmp_path / "s.json", says=("--scale",))
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("alpha", ["-1", "nan", "inf", "101"])
def test_contention_out_of_range_refused(cli, alpha):
    cli.fails("impact", LOG, "--cores", "2", "--contention", alpha, says=("--contention",))


def test_negative_jobs_refused(cli):
    cli.fails("impact", LOG, "--ninja-jobs", "-3", says=("--ninja-jobs",))


def test_unreadable_log_is_a_directory(cli, tmp_path):
    d = tmp_path / "build.ninja_log"
    d.mkdir()
    cli.fails("impact", d, says=(str(d), "cannot read ninja log"))


@as_root
def test_unreadable_log_mode(cli, tmp_path):
    log = tmp_path / "x.ninja_log"
    shutil.copy(LOG, log)
    log.chmod(0)
    cli.fails("impact", log, says=(str(log), "cannot read"))


# --- output paths -------------------------------------------------------------------------------

def test_impact_output_in_missing_folder(cli, tmp_path):
    target = tmp_path / "no" / "such" / "x.json"
    cli.fails("impact", LOG, "--json", target, says=(str(target), "does not exist"))


def test_analyze_output_in_missing_folder_refused_before_the_analysis(cli, lib, tmp_path, monkeypatch):
    import codemod.analysis.analyze as analyze_mod

    def must_not_run(*a, **k):
        raise AssertionError("analysed before checking the output path")

    monkeypatch.setattr(analyze_mod, "analyze", must_not_run)
    target = tmp_path / "no" / "a.json"
    cli.fails("analyze", lib, "-q", "--json", target, says=(str(target),))
    cli.fails("analyze", lib, "-q", "--html", tmp_path / "no" / "a.html", says=("a.html",))


def test_apply_diff_and_report_in_missing_folder(cli, tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(GOLDEN / "actlib" / "input", lib)
    cli.fails("apply", lib, "--target", ACTLIB_RULE, "-q", "--diff", tmp_path / "no" / "x.diff", says=("x.diff",))
    cli.fails("apply", lib, "--target", ACTLIB_RULE, "-q", "--report", tmp_path / "no" / "r.md", says=("r.md",))


def test_output_path_is_a_folder(cli, tmp_path):
    cli.fails("impact", LOG, "--trace", tmp_path, says=("is a folder",))


# --- compile database ---------------------------------------------------------------------------

def _db(tmp_path, doc) -> str:
    path = tmp_path / "compile_commands.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_compile_db_string_arguments_is_one_error(cli, lib, tmp_path):
    db = _db(tmp_path, [{"directory": str(lib), "file": "k.cu", "arguments": "nvcc -Iinc -c k.cu"}])
    cli.fails("analyze", lib, "-q", "--no-cache", "--compile-db", db,
              says=(str(db), "entry 0", "'arguments' is one string"))


def test_compile_db_unterminated_quote(cli, lib, tmp_path):
    db = _db(tmp_path, [{"directory": str(lib), "file": "k.cu", "command": 'nvcc -I"/x -c k.cu'}])
    cli.fails("analyze", lib, "-q", "--no-cache", "--compile-db", db,
              says=(str(db), "entry 0 (k.cu)", "No closing quotation"))


def test_compile_db_deep_nesting(cli, lib, tmp_path):
    db = _db(tmp_path, "[" * 100_000 + "]" * 100_000)
    cli.fails("analyze", lib, "-q", "--compile-db", db, says=(str(db), "nested too deeply"))


def test_compile_db_syntax_error_names_the_line(cli, lib, tmp_path):
    db = _db(tmp_path, '[\n {"directory": "/x",\n  "file": }\n]')
    cli.fails("analyze", lib, "-q", "--compile-db", db, says=(f"{db}:3:",))


@pytest.mark.parametrize("entry, says", [
    ({"directory": 5, "file": "k.cu", "command": "nvcc"}, "'directory' must be a non-empty string"),
    ({"directory": "/x", "file": "k\u0000.cu", "command": "nvcc"}, "NUL"),
    ({"directory": "/x", "file": "k.cu", "arguments": ["nvcc", 3]}, "list of strings"),
    ({"directory": "/x", "file": "k.cu", "command": ["nvcc"]}, "'command' must be a string"),
    ({"directory": "/x", "file": "k.cu"}, "neither 'arguments' nor 'command'"),
    ("k.cu", "expected an object"),
])
def test_compile_db_bad_entry(cli, lib, tmp_path, entry, says):
    db = _db(tmp_path, [entry])
    cli.fails("analyze", lib, "-q", "--compile-db", db, says=(str(db), "entry 0", says))


def test_compile_db_not_utf8(cli, lib, tmp_path):
    db = tmp_path / "compile_commands.json"
    db.write_bytes(b'[\n{"directory": "/caf\xe9"}]')
    cli.fails("analyze", lib, "-q", "--compile-db", db, says=(f"{db}:2:", "not UTF-8"))


def test_verify_compile_db_string_arguments(cli, tmp_path):
    from codemod.errors import ParseError
    from codemod.verify.host import load_units

    db = _db(tmp_path, [{"directory": "/x", "file": "k.cu", "arguments": "nvcc -c k.cu"}])
    with pytest.raises(ParseError, match="'arguments' is one string"):
        load_units(db)


# --- rule files ---------------------------------------------------------------------------------

def test_binary_rule_file(cli, lib, tmp_path):
    rule = tmp_path / "r.yaml"
    rule.write_bytes(b"id: x\n\x00\x01\x89PNG")
    cli.fails("analyze", lib, "-q", "--target", rule, says=(f"{rule}:2:", "binary"))


def test_non_utf8_rule_file(cli, lib, tmp_path):
    rule = tmp_path / "r.yaml"
    rule.write_bytes("id: x\ndescription: caf\u00e9\n".encode("latin-1"))
    cli.fails("analyze", lib, "-q", "--target", rule, says=(f"{rule}:2:", "not UTF-8"))


@as_root
def test_unreadable_rule_file(cli, lib, tmp_path):
    rule = tmp_path / "r.yaml"
    rule.write_text("id: x\n")
    rule.chmod(0)
    cli.fails("analyze", lib, "-q", "--target", rule, says=(str(rule), "cannot read rule"))


# --- apply --------------------------------------------------------------------------------------

@pytest.fixture
def actlib(tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(GOLDEN / "actlib" / "input", lib)
    return lib


def test_non_utf8_edited_header(cli, actlib):
    header = actlib / "cast" / "dispatch.cuh"
    data = header.read_bytes()
    at = data.index(b"\n", data.index(b"\n") + 1) + 1   # third line
    header.write_bytes(data[:at] + b"// caf\xe9\n" + data[at:])
    cli.fails("apply", actlib, "--target", ACTLIB_RULE, "-q", "--no-precheck",
              says=("cast/dispatch.cuh:3:", "not UTF-8"))


def test_missing_cmake_file(cli, actlib, tmp_path):
    rule = tmp_path / "rule.yaml"
    rule.write_text(ACTLIB_RULE.read_text().replace("file: CMakeLists.txt", "file: nope/CMakeLists.txt"))
    cli.fails("apply", actlib, "--target", rule, "-q", "--no-precheck", says=("migrate/cmake/file", "nope/CMakeLists.txt"))


@pytest.mark.parametrize("text", [b"{ nope", b"\xff\xfe{", b"[" * 100_000])
def test_damaged_apply_manifest(cli, actlib, text):
    # the stored manifest (outside the tree: one inside it is never read, tests/apply/test_untrusted_tree.py)
    from codemod.tool_state import manifest_path

    manifest = manifest_path(actlib, "activation")
    manifest.parent.mkdir(parents=True)
    manifest.write_bytes(text)
    cli.fails("apply", actlib, "--target", ACTLIB_RULE, "-q", "--check", says=(str(manifest), "manifest"))


@pytest.mark.parametrize("text", [b"{ nope", b"\xff\xfe{", b"[" * 100_000, b'{"schema": 3}'])
def test_damaged_verify_manifest(cli, actlib, tmp_path, text):
    manifest = tmp_path / "m.json"
    manifest.write_bytes(text)
    cli.fails("verify", actlib, "--manifest", manifest, "--no-host", says=(str(manifest),))


# --- parity -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, says", [
    ("{ nope", ":1: analysis is not JSON"),
    ('{"schema_version": "x"}', "not a codemod analysis"),
    ('{"schema_version": "1.1", "entry_points": 3}', "documented shape"),
    ("[" * 100_000, "nested too deeply"),
])
def test_malformed_parity_analysis(cli, tmp_path, text, says):
    analysis = tmp_path / "analysis.json"
    analysis.write_text(text)
    cli.fails("parity", "generate", GOLDEN / "actlib" / "input", "--target", ACTLIB_RULE, "--analysis", analysis,
              "--profile", "actlib", "-o", tmp_path / "out", says=(str(analysis), says))


def test_malformed_parity_plan(cli, tmp_path):
    driver = tmp_path / "driver"
    driver.mkdir()
    (driver / "plan.json").write_text("{ nope")
    cli.fails("parity", "run", "--driver", driver, "--original", tmp_path, "--migrated", tmp_path,
              "--build-cmd", "true", "--work", tmp_path / "w", "--json", tmp_path / "r.json", says=(str(driver / "plan.json"),))


def test_parity_generate_accepts_the_golden_analysis(cli, tmp_path):
    """The check reads what the plan needs: a golden (normalized, timings dropped) analysis passes."""
    code, _, err = cli("parity", "generate", GOLDEN / "actlib" / "input", "--target", ACTLIB_RULE, "--analysis",
                       GOLDEN / "actlib" / "expected" / "analysis.json", "--profile", "actlib", "-o", tmp_path / "o")
    assert code == 0, err


@pytest.mark.parametrize("text, says", [(b"a: &a [*a]\n", "recursive YAML alias"), (b"\xff\xfe", "not UTF-8"),
                                        (b"x: \x00", "binary")])
def test_bad_parity_profile(cli, tmp_path, text, says):
    profile = tmp_path / "profile.yaml"
    profile.write_bytes(text)
    cli.fails("parity", "generate", GOLDEN / "actlib" / "input", "--target", ACTLIB_RULE, "--analysis",
              GOLDEN / "actlib" / "expected" / "analysis.json", "--profile", profile, "-o", tmp_path / "o",
              says=(str(profile), says))


def test_an_unchecked_file_error_is_one_line(cli, lib, monkeypatch):
    """The CLI's last line for an OSError no command checked (a file vanished, a disk filled): the
    file and the reason; with --debug the traceback."""
    import codemod.analysis.analyze as analyze_mod

    def vanished(*a, **k):
        raise PermissionError(13, "Permission denied", "/lib/k.cu")

    monkeypatch.setattr(analyze_mod, "analyze", vanished)
    cli.fails("analyze", lib, "-q", says=("/lib/k.cu: Permission denied",))
    with pytest.raises(PermissionError):
        cli("--debug", "analyze", lib, "-q")
