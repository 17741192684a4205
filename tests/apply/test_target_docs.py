"""The migration's edits of the target's docs. The envvar page (migrate.docs.envvars): the sentence
of the disable switch's entry that the migration makes untrue goes (`drops`: TE's "Existing
transpose operations select their static fallback automatically.", once its general transpose
kernels are compiled by NVRTC too), and a page that no longer says it stops apply. The API pages
(migrate.docs.api): a header move_to creates is rendered after the one its definitions left."""

from __future__ import annotations

import shutil

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.errors import ApplyError

UNTRUE = "Transposes fall back to their static kernels."


def _tulib(tmp_path, drops: str | None, page_says: bool = True):
    root = tmp_path / "tulib"
    shutil.copytree(GOLDEN / "tulib" / "input", root)
    page = root / "docs" / "envvars.rst"
    text = page.read_text()
    said = "   :Description: Disable runtime compilation with NVRTC."
    assert said in text
    if page_says:
        page.write_text(text.replace(said, f"{said} {UNTRUE}"))
    rule = (GOLDEN / "tulib" / "rule.yaml").read_text()
    old = "    envvars: {file: docs/envvars.rst, after: TULIB_CUDA_ARCHS}"
    assert old in rule
    if drops is not None:
        rule = rule.replace(old, f"    envvars: {{file: docs/envvars.rst, after: TULIB_CUDA_ARCHS, drops: {drops}}}")
    (tmp_path / "rule.yaml").write_text(rule)
    return root, tmp_path / "rule.yaml"


def _entry(text: str) -> str:
    start = text.index(".. envvar:: TULIB_DISABLE_NVRTC")
    end = text.find("\n\n", text.index(":Description:", start))
    return text[start:end if end >= 0 else len(text)]


def test_the_untrue_sentence_goes_and_the_rules_is_added(tmp_path):
    root, rule = _tulib(tmp_path, UNTRUE)
    files, _, _ = compute(root, str(rule), version="v")
    entry = _entry(files["docs/envvars.rst"][1])
    assert UNTRUE not in entry
    assert ":Description: Disable runtime compilation with NVRTC. When set to ``1``" in entry
    assert "fall back to their build-time instantiations only when" in entry


def test_without_drops_the_page_keeps_the_sentence(tmp_path):
    root, rule = _tulib(tmp_path, None)
    files, _, _ = compute(root, str(rule), version="v")
    assert UNTRUE in _entry(files["docs/envvars.rst"][1])


def test_a_page_that_no_longer_says_it_stops_apply(tmp_path):
    root, rule = _tulib(tmp_path, UNTRUE, page_says=False)
    with pytest.raises(ApplyError) as err:
        compute(root, str(rule), version="v")
    assert "drops" in str(err.value) and UNTRUE in str(err.value)


# ---- the API reference (migrate.docs.api) ---------------------------------------------------------

def _buildlib(tmp_path, api: list[str] | None):
    """golden buildlib (move_to takes include/buildlib/quant.h's rounding enum into a new
    include/buildlib/rounding.h) with a Sphinx page rendering quant.h."""
    root = tmp_path / "buildlib"
    shutil.copytree(GOLDEN / "buildlib" / "input", root)
    (root / "docs").mkdir()
    (root / "docs" / "quant.rst").write_text("quant.h\n=======\n\n.. doxygenfile:: quant.h\n")
    rule = (GOLDEN / "buildlib" / "rule.yaml").read_text()
    if api is not None:
        assert "\nmigrate:\n" in rule
        rule = rule.replace("\nmigrate:\n", f"\nmigrate:\n  docs:\n    api: {api}\n", 1)
    (tmp_path / "rule.yaml").write_text(rule)
    return root, tmp_path / "rule.yaml"


def test_a_header_move_to_creates_is_rendered_after_the_one_its_definitions_left(tmp_path):
    root, rule = _buildlib(tmp_path, ["docs/quant.rst"])
    files, _, _ = compute(root, str(rule), version="v")
    assert "include/buildlib/rounding.h" in files                      # created by move_to
    assert files["docs/quant.rst"][1] == "quant.h\n=======\n\n.. doxygenfile:: quant.h\n\n.. doxygenfile:: rounding.h\n"


def test_without_api_pages_the_docs_are_left_alone(tmp_path):
    root, rule = _buildlib(tmp_path, None)
    files, _, _ = compute(root, str(rule), version="v")
    assert "docs/quant.rst" not in files


def test_a_missing_api_page_stops_apply(tmp_path):
    root, rule = _buildlib(tmp_path, ["docs/missing.rst"])
    with pytest.raises(ApplyError) as err:
        compute(root, str(rule), version="v")
    assert "docs/missing.rst" in str(err.value)
