"""DIR given relative to the working directory: the same analysis as DIR given absolute, whatever
the spelling, and whatever the working directory of the parser processes."""

import os
from pathlib import Path

import pytest

from codemod.analysis.analyze import analyze
from codemod.analysis.golden import REPO, normalized
from codemod.cli import main
from codemod.frontend import parse
from codemod.rule import load_rule_file

ACTLIB = REPO / "golden" / "actlib"


@pytest.fixture(scope="module")
def rules():
    return [load_rule_file(ACTLIB / "activation.yaml")]


@pytest.fixture(scope="module")
def absolute(rules):
    return normalized(analyze(ACTLIB / "input", rules, use_cache=False))


@pytest.mark.parametrize("cwd, spelled", [
    (ACTLIB, "input"),                         # from a parent
    (REPO / "golden", "actlib/./input/"),
    (ACTLIB / "input", "."),                   # from the library root itself
    (ACTLIB / "input" / "activation", ".."),   # from a folder below it
])
def test_relative_dir_gives_the_absolute_analysis(rules, absolute, monkeypatch, cwd, spelled):
    monkeypatch.chdir(cwd)
    got = normalized(analyze(Path(spelled), rules, use_cache=False))
    assert got["root"] == "input"
    assert got == absolute


def test_parse_does_not_depend_on_the_working_directory(rules, absolute, monkeypatch):
    """A parser whose working directory is not the caller's (a fork server started elsewhere, a
    library that changes it) parses the same: a job carries everything it reads absolute."""
    monkeypatch.chdir(ACTLIB)   # restored after the test, whatever the parse changes
    run_job = parse._run_job

    def run_job_elsewhere(job):
        os.chdir("/")
        return run_job(job)

    monkeypatch.setattr(parse, "_run_job", run_job_elsewhere)
    assert normalized(analyze(Path("input"), rules, jobs=1, use_cache=False)) == absolute


def test_cli_analyze_dot(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(ACTLIB / "input")
    out = tmp_path / "a.json"
    assert main(["analyze", ".", "--target", str(ACTLIB / "activation.yaml"), "-q", "--no-cache",
                 "--json", str(out)]) == 0
    report = capsys.readouterr().out
    assert report.startswith("codemod analyze input --target activation\n")
    assert '"root": "input"' in out.read_text()


def test_no_translation_unit_loaded_is_a_one_line_error(monkeypatch, capsys):
    """A parse that loads nothing is no analysis: exit 2 with the reason, never a near-empty report."""
    from codemod.frontend import clang_index

    def refuse(*args, **kwargs):
        raise clang_index.ci.TranslationUnitLoadError("Error parsing translation unit.")

    monkeypatch.setattr(clang_index, "parse_tu", refuse)
    code = main(["analyze", str(ACTLIB / "input"), "--target", str(ACTLIB / "activation.yaml"), "-q",
                 "--no-cache", "-j", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "libclang could not load any of the 5 translation units" in err and "Traceback" not in err
