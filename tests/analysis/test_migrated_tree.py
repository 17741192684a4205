"""A migrated tree analyses without errors before it is built: the string headers CMake makes at
build time (`string_code_*.h`) are stubbed with their one declaration, so a second rule (or
`apply --check`) on a patched tree does not see parse errors the build would not have."""

import shutil
from pathlib import Path

import pytest

from codemod.analysis.analyze import analyze
from codemod.apply.command import compute
from codemod.apply.write.patch import write_all
from codemod.frontend.toolchain import stub_text
from codemod.rule import load_rule_file

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actlib"


def test_string_header_stub_declares_its_symbol():
    assert "static constexpr char string_code_ops_rtc_k_cu[] = \"\";" in stub_text("string_code_ops_rtc_k_cu.h")
    assert "char" not in stub_text("cudnn.h")


@pytest.mark.slow
def test_patched_tree_has_no_parse_errors(tmp_path):
    root = tmp_path / "lib"
    shutil.copytree(GOLDEN / "input", root)
    rule = GOLDEN / "activation.yaml"
    files, _, plan = compute(root, str(rule))
    assert plan is not None and plan.kernels
    write_all(root, files)
    result = analyze(root, [load_rule_file(rule)], use_cache=False)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert not errors, errors[:3]
