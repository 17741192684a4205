"""`nvrtc_layer.headers`: headers the target's NVRTC layer passes to every program itself (TE's
KernelManager::compile: utils.cuh, util/math.h). A stub that passes one of them again makes NVRTC
refuse the program (NVRTC_ERROR_INVALID_INPUT, seen on the H200: every migrated activation and
router call failed), and verify cannot see it (it compiles each header once), so the stubs leave
them out, and a rule whose kernels mean another file by that name is refused."""

from __future__ import annotations

import re
import shutil

from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = (GOLDEN / "actlib" / "activation.yaml").read_text()
LAYER = "    error_macro: ACTLIB_ERROR\n"


def _apply(tmp_path, headers: str, capsys) -> tuple[int, str, str]:
    assert LAYER in RULE
    rule = tmp_path / "rule.yaml"
    rule.write_text(RULE.replace(LAYER, LAYER + f"    headers: {headers}\n"))
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    diff = tmp_path / "out.diff"
    rc = main(["apply", "--target", str(rule), str(root), "--diff", str(diff), "--no-precheck", "-q"])
    out = capsys.readouterr()
    return rc, diff.read_text() if diff.exists() else "", out.err


def _stub_header_names(diff: str) -> list[list[str]]:
    """Per NVRTC program (kernels.cpp's stubs::Program), or once for all when they share one list
    (`static const std::vector<Header> headers`), the include names the stubs hand to the layer."""
    lists = re.findall(r"static const stubs::Program \w+\{(.*?)\}\};", diff, re.S)
    lists += re.findall(r"static const std::vector<[\w:]+> headers = \{(.*?)\};", diff, re.S)
    return [re.findall(r'\{string_code_\w+, "([^"]+)"\}', block) for block in lists]


def test_layer_headers_are_left_out_of_every_stub(tmp_path, capsys):
    rc, diff, err = _apply(tmp_path, "{math.h: util/math.h}", capsys)
    assert rc == 0, err
    names = _stub_header_names(diff)
    assert names and all(names), diff[:2000]
    assert not any("math.h" in n for n in names)
    for n in names:
        assert len(n) == len(set(n))


def test_without_the_key_the_stubs_pass_the_header(tmp_path, capsys):
    """The same rule without the key: the stubs name math.h (the test above is not vacuous)."""
    rc, diff, err = _apply(tmp_path, "{}", capsys)
    assert rc == 0, err
    assert any("math.h" in n for n in _stub_header_names(diff))


def test_a_layer_header_meaning_another_file_is_refused(tmp_path, capsys):
    rc, diff, err = _apply(tmp_path, "{math.h: util/other_math.h}", capsys)
    assert rc == 2
    assert "include name math.h means util/math.h, but the NVRTC layer passes util/other_math.h" in err
    assert "migrate/nvrtc_layer/headers" in err
    assert diff == ""
