"""`codemod verify` end to end on the minilib fixture: table, JSON, exit codes, failure messages
that name kernel, variant, arch and the NVRTC log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemod.cli import main

MANIFEST = Path("rtc/scale/codemod_manifest.json")


def _edit_manifest(root: Path, edit) -> None:
    path = root / MANIFEST
    doc = json.loads(path.read_text())
    edit(doc["kernels"][0])
    path.write_text(json.dumps(doc))


def test_passes_with_cover_and_writes_json(minilib, tmp_path, capsys):
    out = tmp_path / "verify.json"
    rc = main(["verify", str(minilib), "--no-host", "-j", "2", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.out
    assert "mini::scale_kernel" in captured.out
    assert "3/12" in captured.out  # 3 dtypes x 2 ops x 2 clamp -> the cover needs 3
    assert "all compiled" in captured.out.splitlines()[-1]
    assert "verify: [6/6]" in captured.err  # progress on stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "codemod-verify/1" and doc["ok"] is True
    assert doc["archs"] == ["sm_90", "sm_100a", "sm_120"]
    # default and MINILIB_FAST_MATH=ON for each arch
    assert sorted((p["arch"], p["config"]) for p in doc["programs"]) == [
        ("sm_100a", "MINILIB_FAST_MATH=ON"), ("sm_100a", "default"),
        ("sm_120", "MINILIB_FAST_MATH=ON"), ("sm_120", "default"),
        ("sm_90", "MINILIB_FAST_MATH=ON"), ("sm_90", "default")]
    assert all(p["variants"] == 3 and p["cubin_size"] > 0 for p in doc["programs"])
    assert doc["host"]["status"] == "skipped"


def test_all_variants_and_single_arch(minilib, tmp_path, capsys):
    out = tmp_path / "verify.json"
    rc = main(["verify", str(minilib), "--no-host", "--all-variants", "--arch", "sm_90", "-j", "1",
               "--json", str(out), "-q"])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert [p["variants"] for p in doc["programs"]] == [12, 12]
    assert {p["arch"] for p in doc["programs"]} == {"sm_90"}
    assert capsys.readouterr().err == ""


def test_bad_variant_is_isolated_and_named(minilib, capsys):
    def break_one(kernel):
        kernel["conditional_options"] = []
        variant = kernel["variants"][5]
        variant["name_expression"] = variant["name_expression"].replace("&::mini::negate", "&::mini::negat")
    _edit_manifest(minilib, break_one)
    rc = main(["verify", str(minilib), "--no-host", "--all-variants", "-j", "2", "-q"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL" in out
    failure = [line for line in out.splitlines() if line.startswith("- ")]
    assert len(failure) == 1  # one failure, shown once for every arch
    assert "mini::scale_kernel [sm_90, sm_100a, sm_120]" in failure[0]
    assert "&::mini::negat," in failure[0] and "NVRTC compile failed" in failure[0]
    assert 'namespace "mini" has no member "negat"' in out
    assert "rerun `codemod verify`" in out.splitlines()[-1]


def test_broken_kernel_string_shows_log(minilib, capsys):
    source = minilib / "rtc/scale/scale_kernel.cu"
    source.write_text(source.read_text().replace("if (i >= n) return;", "if (i >= n) return"))
    rc = main(["verify", str(minilib), "--no-host", "--arch", "sm_100a", "-j", "1", "-q"])
    out = capsys.readouterr().out
    assert rc == 1
    # The body only fails when instantiated: every covered variant fails with one log, shown once.
    assert "mini::scale_kernel [sm_100a, sm_100a MINILIB_FAST_MATH=ON]: NVRTC compile failed for 3 variants" in out
    assert out.count("variant &::mini::scale_kernel<") == 3
    assert out.count('rtc/scale/scale_kernel.cu(13): error: type name is not allowed') == 1


def test_nvcc_only_option_gets_a_hint(minilib, capsys):
    _edit_manifest(minilib, lambda k: k["nvrtc_options"].append("--expt-relaxed-constexpr"))
    rc = main(["verify", str(minilib), "--no-host", "--arch", "sm_90", "-j", "1", "-q"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "unrecognized option --expt-relaxed-constexpr" in out
    assert "hint: NVRTC does not accept --expt-relaxed-constexpr" in out


def test_missing_header_file_is_a_verify_error(minilib, capsys):
    (minilib / "ops/ops.h").unlink()
    rc = main(["verify", str(minilib), "--no-host", "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "ops/ops.h" in err and "codemod_manifest.json" in err


@pytest.mark.parametrize("argv, message", [
    (["--arch", "sm_42"], "sm_42 is not supported"),
    (["--arch", "volta"], "unknown architecture"),
    (["--kernel", "mini::nope"], "unknown kernel id"),
    (["-j", "0"], "--jobs must be at least 1"),
])
def test_usage_errors_exit_2(minilib, capsys, argv, message):
    rc = main(["verify", str(minilib), "--no-host", "-q", *argv])
    assert rc == 2
    assert message in capsys.readouterr().err


def test_no_manifest_exit_2(tmp_path, capsys):
    rc = main(["verify", str(tmp_path)])
    assert rc == 2
    assert "codemod apply" in capsys.readouterr().err


def test_wrong_schema_exit_2(minilib, capsys):
    path = minilib / MANIFEST
    path.write_text(path.read_text().replace("codemod-manifest/1", "codemod-manifest/9"))
    rc = main(["verify", str(minilib), "--no-host", "-q"])
    assert rc == 2
    assert "codemod-manifest/9" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["absolute", "dotdot", "symlink"])
def test_a_manifest_naming_a_file_outside_the_root_reads_nothing(minilib, tmp_path, capsys, where):
    # the manifest lies in the tree: what it names must not load a file from outside it (issue 33)
    secret = tmp_path / "secret.h"
    secret.write_text("#error secret key 1234\n")
    (minilib / "inside.h").symlink_to(secret)
    path = {"absolute": str(secret), "dotdot": "../secret.h", "symlink": "inside.h"}[where]
    _edit_manifest(minilib, lambda kernel: kernel["kernel_string"].update(path=path))
    rc = main(["verify", str(minilib), "--no-host", "-j", "1"])
    out, err = capsys.readouterr()
    assert rc == 2 and "secret key" not in out + err
    assert err.startswith(f"codemod: error: {minilib / MANIFEST}: the manifest names a file outside the library root")
