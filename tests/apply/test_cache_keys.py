"""Cache keys of the generated stubs, over the whole golden domain: the patched actlib's kernels.h
is compiled on the host with nvcc (fixtures/cache_labels.cu) and prints every variant's label.
No two variants share a key, every axis value and NVRTC option is in it, and its source hash is
FNV-1a over the program and every header of the rule (one list for all its programs), so changing
any source byte changes the key."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.apply.golden import GOLDEN

from .patched_actlib import nvrtc_flags, patch_actlib

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (host compile of the stubs)")]


OWN_KERNEL, OWN_OPTION = "actlib::cast_fp8_kernel", "-default-device"


def _fnv1a(parts: list[bytes]) -> int:
    h = 1469598103934665603
    for part in parts:
        for byte in part:
            h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def _fast_math_variants() -> set[tuple[str, tuple]]:
    """(kernel id, axis values) of the variants whose entry points are all in activation/*.cu."""
    from codemod.apply.emit.option_scope import _matches

    from .patched_actlib import _COMPUTED

    plan = next(p for _, p in _COMPUTED.values() if OWN_KERNEL in p.spec.options["kernels"])   # this module's rule
    files = {e.name: e.file for e in plan.plan.entry_points}
    return {(kp.kernel.id, tuple(v.axes.values())) for kp in plan.kernels for v in kp.variants
            if v.entry_points and all(_matches(files.get(e, ""), ["activation/*.cu"]) for e in v.entry_points)}


@pytest.fixture(scope="module")
def labels(tmp_path_factory) -> tuple[dict, dict[str, list[str]], Path]:
    """(manifest, fast-math option 0/1 -> the label printed for each manifest variant in manifest
    order, the patched tree)."""
    work = tmp_path_factory.mktemp("keys")
    # The golden rule, plus an NVRTC option of one kernel only (migrate.options.kernels).
    text = (GOLDEN / "actlib" / "activation.yaml").read_text()
    assert "    conditional:\n" in text
    root, strings, manifest = patch_actlib(work, text.replace(
        "    conditional:\n", f"    kernels: {{{OWN_KERNEL}: [{OWN_OPTION}]}}\n    conditional:\n", 1))
    (work / "variants.inc").write_text("".join(
        f"LABEL({k['id'].split('::')[-1]}, {', '.join(v['axes'].values())})\n"
        for k in manifest["kernels"] for v in k["variants"]))
    builds = {}
    for fast in ("0", "1"):
        exe = work / f"labels_{fast}"
        builds[fast] = (exe, subprocess.Popen(
            ["nvcc", "-std=c++17", "-I", str(root), "-I", str(root / "include"), "-I", str(strings),
             "-I", str(work), *nvrtc_flags(work, link=True), "-DACTLIB_BUILD_LEGACY_STATIC_ACTIVATION=0",
             f"-DACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH={fast}", str(HERE / "fixtures/cache_labels.cu"),
             str(root / "rtc/activation/kernels.cpp"),
             "-o", str(exe)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    out = {}
    for fast, (exe, proc) in builds.items():
        log, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, log[-4000:]
        out[fast] = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    return manifest, out, root


def test_no_two_variants_share_a_key(labels):
    manifest, out, _ = labels
    total = sum(len(k["variants"]) for k in manifest["kernels"])
    assert total == 384
    for fast in ("0", "1"):
        assert len(out[fast]) == total and len(set(out[fast])) == total


def test_key_is_kernel_every_axis_options_and_source_hash(labels):
    manifest, out, root = labels
    # the stubs pass the toolkit's CUDA_VERSION (cuda.h of the nvcc that built them) to NVRTC
    cv = re.search(r",-DCUDA_VERSION=(\d+)", out["0"][0])
    assert cv is not None and int(cv.group(1)) >= 12000
    cv = cv.group(0)
    scoped = _fast_math_variants()
    i = 0
    # kernels.cpp hands every program the rule's one header list (the union, by include name)
    shared = sorted({name: path for k in manifest["kernels"] for name, path in k["headers"].items()}.items())
    for k in manifest["kernels"]:
        program = (root / k["kernel_string"]["path"]).read_bytes()
        parts = [program] + [b for name, path in shared for b in (name.encode(), (root / path).read_bytes())]
        # FNV-1a's steps are bijections of its state: any one-byte change of the program or of a
        # header gives another hash, hence another key
        src = f",src={_fnv1a(parts)}"
        own = f",{OWN_OPTION}" if k["id"] == OWN_KERNEL else ""
        assert k["nvrtc_options"] == ["--std=c++17"] + ([OWN_OPTION] if own else [])
        for v in k["variants"]:
            axes = "".join(f",{param}={value}" for param, value in v["axes"].items())
            assert out["0"][i] == f"{k['id']}{axes},--std=c++17{cv}{own}{src}"
            # another NVRTC option (the fast-math CMake option ON, for the variants the activation
            # units instantiate: options.conditional[].sources) is another key, after the kernel's own
            fast = ",--use_fast_math" if (k["id"], tuple(v["axes"].values())) in scoped else ""
            assert out["1"][i] == f"{k['id']}{axes},--std=c++17{cv}{own}{fast}{src}"
            i += 1
    assert scoped and len(scoped) < i          # some variants get it, the cast entry points' do not
    assert any(k["id"] == OWN_KERNEL for k in manifest["kernels"])

