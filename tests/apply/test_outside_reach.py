"""Verified domain = run-time domain (issue 15, acceptance 5): a translation unit outside the rule's
analysis that launches a migrated kernel through a rewritten site with arguments the stubs can name
reaches NVRTC at run time, so its variants are in the manifest (`"outside": true`) and verify
compiles each of them; one whose arguments the stubs cannot name keeps the static kernel and is
not listed. Golden actlib with one more unit; TE's nvte_group_quantize case in test_te_apply.py."""

from __future__ import annotations

import json
import shutil

import pytest

from codemod.apply.command import compute, write_migration
from codemod.apply.golden import GOLDEN
from codemod.cli import main
from codemod.tool_state import manifest_path

RULE = str(GOLDEN / "actlib" / "activation.yaml")
# GELU with nvec = 2 and fp32 in and out: gelu and Empty are in the stubs' domain (the rule's
# entry points use them), the joint tuple is not among the analysed variants (they use nvec 4).
OUTSIDE_UNIT = """\
// Outside the activation rule's translation units: a narrow GELU through the shared launcher.
#include "../common.h"
#include "../util/math.h"
#include "../util/vectorized_pointwise.h"

void actlib_narrow_gelu(const ActlibTensor input, ActlibTensor output, cudaStream_t stream) {
  using namespace actlib;
  Tensor in = view(input);
  Tensor out = view(output);
  launch_unary<2, Empty, gelu<fp32, Empty>, fp32, fp32>(in, out, Empty{}, stream);
}
"""
NEW = "&::actlib::unary_kernel<2, true, float, ::actlib::Empty, &::actlib::gelu<float, ::actlib::Empty>, float, float>"


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    root = tmp_path_factory.mktemp("reach") / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    (root / "narrow").mkdir()
    (root / "narrow" / "narrow_gelu.cu").write_text(OUTSIDE_UNIT)
    files, report, plan = compute(root, RULE)
    write_migration(root, files, plan)
    return root, plan, json.loads(manifest_path(root, "activation").read_text())


def test_outside_variants_in_the_domain_are_in_the_manifest(patched):
    root, plan, doc = patched
    assert sorted(plan.outside_units) == ["dequantize/dequantize.cu", "narrow/narrow_gelu.cu"]
    unary = next(k for k in doc["kernels"] if k["id"] == "actlib::unary_kernel")
    outside = [v for v in unary["variants"] if v.get("outside")]
    assert sorted(v["name_expression"] for v in outside) == sorted([NEW, NEW.replace("<2, true", "<2, false")])
    assert all(v["sites"] for v in outside)
    # the analysed variants are unchanged, and none of dequantize.cu's (its functor has no spelling)
    assert len(unary["variants"]) - len(outside) == len(plan.kernels[-1].variants)
    assert not any("dequant" in v["name_expression"] for v in unary["variants"])


def test_the_golden_migration_lists_no_outside_variant():
    """The golden's only outside unit (dequantize.cu) uses a functor the stubs cannot name."""
    doc = json.loads((GOLDEN / "actlib" / "expected" / "apply.manifest.json").read_text())
    assert not any(v.get("outside") for k in doc["kernels"] for v in k["variants"])


def test_verify_compiles_every_outside_variant(patched, tmp_path):
    from codemod.verify import nvrtc, programs
    from codemod.verify.manifest import load_manifest

    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFound as exc:
        pytest.skip(f"NVRTC not available: {exc.render()}")
    root, _, _ = patched
    manifest = load_manifest(manifest_path(root, "activation"), root)
    planned = [p for p in programs.plan([manifest], ["sm_90"]) if p.kernel == "actlib::unary_kernel"]
    # both outside variants, each compiled itself: a cover of axis values alone needs only one (nvec 2)
    both = {NEW, NEW.replace("<2, true", "<2, false")}
    assert planned and all(both <= set(p.variants) for p in planned)
    out = tmp_path / "verify.json"
    assert main(["verify", str(root), "--no-host", "--arch", "sm_90", "--kernel", "actlib::unary_kernel",
                 "-j", "1", "-q", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["programs"] and all(p["ok"] for p in report["programs"])
