"""A header NVRTC cannot open: the report says which file wanted it and how the kernel string
reaches that file (NVRTC's log names only the file), and the hint tells a toolkit header's host
include from a missing bundled header."""

from codemod.verify.programs import Program, include_chain
from codemod.verify.report import hint_for


def _program(headers: dict[str, str]) -> Program:
    return Program(kernel="k", arch="sm_90", config="default", name="rtc/k.cu",
                   source='// generated\n#include "lib/k.cuh"\n', headers=headers, options=[],
                   include_cuda=True, include_cccl=False, variants=[], variants_total=0)


def test_a_toolkit_header_wanting_a_host_header_is_traced_to_the_bundled_include():
    program = _program({"lib/k.cuh": '#pragma once\n#include "lib/tma.cuh"\n',
                        "lib/tma.cuh": "#pragma once\n\n#include <cuda.h>\n"})
    log = '/opt/cuda/include/cuda.h(56): catastrophic error: cannot open source file "stdlib.h"\n'
    chain = include_chain(log, program)
    assert chain.splitlines()[1:] == [
        '/opt/cuda/include/cuda.h (not bundled: from the CUDA include dirs) wants "stdlib.h"; the kernel '
        "string reaches it through:",
        "  rtc/k.cu:2 includes lib/k.cuh",
        "  lib/k.cuh:2 includes lib/tma.cuh",
        "  lib/tma.cuh:3 includes cuda.h"]
    assert "host header that NVRTC does not provide" in hint_for(log + chain)


def test_a_missing_header_wanted_by_a_bundled_one_keeps_the_bundling_hint():
    program = _program({"lib/k.cuh": '#include "lib/gone.h"\n'})
    log = 'lib/k.cuh(1): catastrophic error: cannot open source file "lib/gone.h"\n'
    chain = include_chain(log, program)
    assert '(a bundled header) wants "lib/gone.h"' in chain and "rtc/k.cu:2 includes lib/k.cuh" in chain
    assert hint_for(log + chain).startswith("a header is neither bundled")
    assert include_chain("error: expected a ;\n", program) == ""
