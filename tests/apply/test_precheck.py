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
