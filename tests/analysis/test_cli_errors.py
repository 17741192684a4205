"""Bad input gets a one-line error or a diagnostic and a documented exit code, never a traceback."""

import json
import shutil

from codemod.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_directory(capsys, tmp_path):
    code, out, err = run(capsys, "analyze", str(tmp_path / "nope"))
    assert code == 2
    assert err.strip().count("\n") == 0 and "no such directory" in err
    assert "Traceback" not in err + out


def test_unknown_target(capsys, tmp_path):
    code, _, err = run(capsys, "analyze", str(tmp_path), "--target", "no_such_rule")
    assert code == 2
    assert "unknown target 'no_such_rule'" in err and "activation" in err
    assert "Traceback" not in err


def test_unreadable_compile_db(capsys, tmp_path):
    src = tmp_path / "lib"
    src.mkdir()
    (src / "k.cu").write_text("__global__ void k() {}\nvoid entry() { k<<<1, 1>>>(); }\n")
    db = tmp_path / "compile_commands.json"
    db.write_text("{ not json")
    code, _, err = run(capsys, "analyze", str(src), "--compile-db", str(db), "-q")
    assert code == 2
    assert "cannot read compile database" in err and str(db) in err
    code, _, err = run(capsys, "analyze", str(src), "--compile-db", str(tmp_path / "missing.json"), "-q")
    assert code == 2 and "compile database not found" in err


def test_syntax_error_is_a_diagnostic(capsys, tmp_path):
    src = tmp_path / "lib"
    src.mkdir()
    (src / "good.cu").write_text("template <typename T> __global__ void k(T *p) { p[0] = 1; }\n"
                                 "void entry_good(float *p) { k<float><<<1, 1>>>(p); }\n")
    (src / "bad.cu").write_text("void entry_bad( {\n  this is not C++;\n}\n")
    out_json = tmp_path / "a.json"
    code, out, err = run(capsys, "analyze", str(src), "-q", "--json", str(out_json))
    assert code == 1  # analysis done, with error-level diagnostics
    assert "Traceback" not in err + out
    doc = json.loads(out_json.read_text())
    errors = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert errors and all(d["file"] == "bad.cu" and d["line"] for d in errors)
    # the analysis went on: the good TU's kernel is there
    assert [k["name"] for k in doc["kernels"]] == ["k"]
    assert doc["kernels"][0]["instantiations"] == 1


def test_debug_shows_traceback_for_internal_errors(capsys, tmp_path, monkeypatch):
    import codemod.analysis.analyze as analyze_mod

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(analyze_mod, "analyze", boom)
    code, _, err = run(capsys, "analyze", str(tmp_path))
    assert code == 2 and "internal error: RuntimeError: boom (rerun with --debug)" in err
