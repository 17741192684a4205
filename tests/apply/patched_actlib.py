"""The golden actlib patched by `apply` in a scratch folder, with the string headers its CMake would
configure, for host compiles of the generated stubs (test_cache_keys, test_generated_runtime)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from codemod.apply.command import compute, write_migration
from codemod.apply.golden import GOLDEN
from codemod.apply.base.tree import symbol_for
from codemod.tool_state import manifest_path


# rule text -> (files, plan) of the golden input: the migration is the same for every copy of the
# tree (its manifest and files name no absolute path: the golden expected ones are committed), so
# it is computed once per rule per session.
_COMPUTED: dict[str, tuple] = {}


def patch_actlib(work: Path, rule_text: str | None = None) -> tuple[Path, Path, dict]:
    """(patched tree, folder of string headers, manifest); `rule_text` replaces the golden rule."""
    root = work / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    rule = work / "rule.yaml"
    text = rule_text if rule_text is not None else (GOLDEN / "actlib" / "activation.yaml").read_text()
    rule.write_text(text)
    if text not in _COMPUTED:
        files, _, plan = compute(root, str(rule))
        _COMPUTED[text] = (files, plan)
    files, plan = _COMPUTED[text]
    write_migration(root, dict(files), plan)
    manifest = json.loads(manifest_path(root, "activation").read_text())
    strings = work / "strings"
    strings.mkdir()
    template = (root / "util/string_header.h.in").read_text()
    shipped = {p for k in manifest["kernels"] for p in [k["kernel_string"]["path"], *k["headers"].values()]}
    for path in shipped:
        text = (template.replace("@ACTLIB_STRING_SOURCE@", path).replace("@ACTLIB_STRING_SYMBOL@", symbol_for(path))
                .replace("@ACTLIB_STRING_CONTENT@", (root / path).read_text()))
        (strings / f"{symbol_for(path)}.h").write_text(text)
    return root, strings, manifest


def nvrtc_flags(work: Path, link: bool = False) -> list[str]:
    """nvcc flags for a host compile of the generated stubs (rtc_stubs.h includes nvrtc.h, which the
    toolkit's nvcc may come without: a folder holding a copy), and with `link` the NVRTC library
    (the stubs ask it which archs it compiles for) with its folder as rpath."""
    import pytest

    from codemod.verify import nvrtc

    from .test_rtc_cache import _cuda_include

    inc = _cuda_include()
    if inc is None:
        pytest.skip("no nvrtc.h (pip install nvidia-cuda-nvrtc)")
    folder = work / "nvrtc_include"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(inc / "nvrtc.h", folder / "nvrtc.h")
    flags = ["-I", str(folder)]
    if link:
        try:
            lib = Path(nvrtc.find_library())
        except nvrtc.NvrtcNotFound:
            pytest.skip("no libnvrtc (pip install nvidia-cuda-nvrtc)")
        flags += [f"-L{lib.parent}", f"-l:{lib.name}", f"-Xlinker=-rpath,{lib.parent}"]
    return flags
