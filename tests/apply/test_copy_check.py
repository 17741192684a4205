"""The prelude's copies cannot drift (issue 15, acceptance 3): kernels.h holds a static_assert per
copied declaration that the embedded text of its header still contains it (copy_check.h.j2), so a
changed header stops the build. Compiled with the host C++ compiler."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from codemod.apply.generate import COPY_HASH_BASE, copy_hash, render

DECL = "template <typename T>\nstruct is_fp8 : std::false_type {};"
HEADER = f"// lib/common.h\nnamespace lib {{\nusing fp32 = float;\n\n{DECL}\n}}  // namespace lib\n"


def _string_header(name: str, text: str) -> str:
    """What the library's string-header mechanism (TE: make_string_header_from_file) writes."""
    return f'static constexpr char {name}[]\n  = R"__STRING_DELIM__({text})__STRING_DELIM__";\n'


def _compile(tmp_path, header_text: str) -> subprocess.CompletedProcess:
    length, h = copy_hash(DECL)
    check = render("copy_check.h.j2", namespace="lib::rtc", copy_hash_base=COPY_HASH_BASE, copy_checks=[dict(
        file="common.h", symbol="string_code_common_h", prelude="rtc/prelude/common.h", name="is_fp8",
        length=length, hash=h)])
    src = tmp_path / "check.cpp"
    src.write_text(_string_header("string_code_common_h", header_text) + check + "int main() { return 0; }\n")
    return subprocess.run(["g++", "-std=c++17", "-fsyntax-only", str(src)], capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_an_unchanged_copy_compiles_and_a_changed_header_stops_the_build(tmp_path):
    assert _compile(tmp_path, HEADER).returncode == 0
    assert _compile(tmp_path, "// moved to the end\n" + HEADER).returncode == 0       # elsewhere in it: fine
    r = _compile(tmp_path, HEADER.replace("std::false_type", "std::true_type"))
    assert r.returncode != 0
    assert "rtc/prelude/common.h copies is_fp8 from common.h, which changed it: re-run codemod apply" in r.stderr
    assert _compile(tmp_path, "#").returncode != 0                                       # shorter than the copy
    # the analysis' stub of a string header CMake has not made yet is an empty string: let through
    assert _compile(tmp_path, "").returncode == 0
