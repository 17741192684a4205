"""apply compiles every generated kernel string with NVRTC before writing: a rule that drags
host-only code into a kernel string is refused with the include path, and nothing is written."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = str(GOLDEN / "actlib" / "activation.yaml")


def _nvrtc_available() -> bool:
    from codemod.verify import nvrtc

    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFound:
        return False
    return True


def _digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not _nvrtc_available(), reason="needs NVRTC (the nvidia-cuda-nvrtc wheel)")
def test_a_kernel_string_reaching_a_host_header_is_refused_and_nothing_written(tmp_path, capsys):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    math_h = root / "util" / "math.h"
    # nvcc is happy with <cuda.h>; NVRTC is not (it wants <stdlib.h>)
    math_h.write_text(math_h.read_text().replace("#define ACTLIB_UTIL_MATH_H_\n",
                                                     "#define ACTLIB_UTIL_MATH_H_\n#include <cuda.h>\n", 1))
    assert "#include <cuda.h>" in math_h.read_text()
    before = _digest(root)
    assert main(["apply", "--target", RULE, str(root), "--write", "-q"]) == 2
    err = capsys.readouterr().err
    assert "generated kernel string(s) do not compile under NVRTC; nothing written" in err
    assert 'wants "stdlib.h"' in err and "math.h:5 includes cuda.h" in err
    assert "--no-precheck" in err
    assert _digest(root) == before
    assert main(["apply", "--target", RULE, str(root), "--write", "-q", "--no-precheck"]) == 0
    assert _digest(root) != before


@pytest.mark.slow
@pytest.mark.skipif(not _nvrtc_available(), reason="needs NVRTC (the nvidia-cuda-nvrtc wheel)")
@pytest.mark.parametrize("hidden", ["cuda.h", "util/host_api.h"])
def test_host_includes_hide_an_include_from_nvrtc(tmp_path, capsys, hidden):
    """`kernel_strings.host_includes` names an include (as spelled, or the library file it resolves
    to): apply guards it with `#ifndef __CUDACC_RTC__` in the shipped header, the kernel strings no
    longer reach it, and the precheck passes."""
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    (root / "util" / "host_api.h").write_text("#pragma once\n#include <cuda.h>\n#include <string>\n")
    math_h = root / "util" / "math.h"
    math_h.write_text(math_h.read_text().replace(
        "#define ACTLIB_UTIL_MATH_H_\n", "#define ACTLIB_UTIL_MATH_H_\n#include <cuda.h>\n#include \"host_api.h\"\n"
        if hidden != "cuda.h" else "#define ACTLIB_UTIL_MATH_H_\n#include <cuda.h>\n", 1))
    if hidden != "cuda.h":     # only the library header reaches <cuda.h>
        math_h.write_text(math_h.read_text().replace("#include <cuda.h>\n", "", 1))
    rule = tmp_path / "rule.yaml"
    text = (GOLDEN / "actlib" / "activation.yaml").read_text()
    assert "  kernel_strings:\n" in text
    rule.write_text(text.replace("  kernel_strings:\n", f"  kernel_strings:\n    host_includes: [{hidden}]\n", 1))
    assert main(["apply", "--target", str(rule), str(root), "--write", "-q"]) == 0, capsys.readouterr().err
    patched = math_h.read_text()
    spelled = "<cuda.h>" if hidden == "cuda.h" else '"host_api.h"'
    assert f"#ifndef __CUDACC_RTC__\n#include {spelled}\n#endif  // __CUDACC_RTC__\n" in patched
    from codemod.tool_state import manifest_path

    import json

    doc = json.loads(manifest_path(root, "activation").read_text())
    assert not any("host_api.h" in name or "host_api.h" in path                 # not an NVRTC header
                   for k in doc["kernels"] for name, path in k["headers"].items())
    # A second apply finds nothing to do (the guard is recognised as the library's own).
    assert main(["apply", "--target", str(rule), str(root), "--check", "-q"]) == 0
