"""Host compile: the minilib fixture configured with CMake, generated and rewritten units chosen
from its compile database and compiled with its flags; skips when no nvcc exists."""

from __future__ import annotations

import json
import shutil

import pytest

from codemod.cli import main
from codemod.verify.host import HostUnit, _scratch_command, find_nvcc

needs_toolchain = pytest.mark.skipif(find_nvcc() is None or shutil.which("cmake") is None,
                                     reason="host compile needs nvcc and cmake")


@pytest.mark.slow
@needs_toolchain
def test_host_units_compile_with_library_flags(minilib, tmp_path, capsys):
    out = tmp_path / "verify.json"
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q", "--json", str(out)])
    assert rc == 0, capsys.readouterr().out
    host = json.loads(out.read_text())["host"]
    assert host["status"] == "passed"
    # the stub (inside output_dir) and the TU including the rewritten launcher, nothing else
    assert sorted(u["file"] for u in host["units"]) == ["ops/launch.cu", "rtc/scale/scale_stub.cpp"]


@pytest.mark.slow
@needs_toolchain
def test_host_failure_names_the_unit(minilib, capsys):
    stub = minilib / "rtc/scale/scale_stub.cpp"
    stub.write_text(stub.read_text().replace("return names", "return nams"))
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "- host rtc/scale/scale_stub.cpp: compile failed" in out
    assert "nams" in out


def test_no_nvcc_skips_host_with_reason(minilib, monkeypatch, capsys):
    monkeypatch.setattr("codemod.verify.host.find_nvcc", lambda explicit=None: None)
    rc = main(["verify", str(minilib), "--arch", "sm_90", "-q"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "host code: skipped: no nvcc found" in out


def test_scratch_command_replaces_output_and_drops_dependency_files(tmp_path):
    unit = HostUnit(file="a.cu", directory=str(tmp_path),
                    arguments=["nvcc", "-MD", "-MT", "a.o", "-MF", "a.d", "-x", "cu", "-c", "a.cu", "-o", "a.o"])
    assert _scratch_command(unit, tmp_path / "x.o") == ["nvcc", "-x", "cu", "-c", "a.cu", "-o", str(tmp_path / "x.o")]


def test_units_are_selected_through_quoted_and_angle_includes(tmp_path):
    """A unit reaching a rewritten site through `"..."` and `<...>` includes (with its own -I) is
    compiled; one that does not, is not; generated units always are."""
    from types import SimpleNamespace

    from codemod.verify.host import select_units

    root = tmp_path / "lib"
    for rel, text in {"src/a.cu": '#include "inc/b.h"\n', "src/inc/b.h": "#include <lib/site.h>\n",
                      "include/lib/site.h": "// rewritten launch site\n", "src/d.cu": '#include "inc/other.h"\n',
                      "src/inc/other.h": "#include <vector>\n", "rtc/stub.cpp": "\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    manifest = SimpleNamespace(root=root, output_dir="rtc", edited=[],
                               kernels=[SimpleNamespace(sites=["include/lib/site.h:1:1"])])

    def unit(rel):
        return HostUnit(file=rel, arguments=["nvcc", "-I", str(root / "include"), "-c", rel], directory=str(root))

    chosen = select_units([unit("src/a.cu"), unit("src/d.cu"), unit("rtc/stub.cpp")], [manifest])
    assert [u.file for u in chosen] == ["src/a.cu", "rtc/stub.cpp"]
    no_dirs = HostUnit(file="src/a.cu", arguments=["nvcc", "-c", "src/a.cu"], directory=str(root))
    assert select_units([no_dirs], [manifest]) == []        # <lib/site.h> is not reachable without -I
    # a file the patch edited (the NVRTC layer's header, here other.h) selects its includers too
    manifest.edited = ["src/inc/other.h"]
    chosen = select_units([unit("src/a.cu"), unit("src/d.cu"), unit("rtc/stub.cpp")], [manifest])
    assert [u.file for u in chosen] == ["src/a.cu", "src/d.cu", "rtc/stub.cpp"]
    manifest.edited = ["src/d.cu"]                            # and an edited unit itself
    assert [u.file for u in select_units([unit("src/d.cu")], [manifest])] == ["src/d.cu"]
