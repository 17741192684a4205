"""The pinned clang recipe for parsing CUDA without a CUDA toolkit install.

libclang (PyPI) ships no resource headers, so they come from Debian's libclang-common-16-dev
(major <= libclang's 18); CUDA headers come from the nvidia-cuda-* wheels. Details: docs/frontend.md.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..tool_state import private_dir  # noqa: F401  (the cache folders' maker; callers import it here)
from . import compile_db

# Headers clang's CUDA wrapper includes unconditionally that CUDA >= 13 (or a runtime-only
# install) no longer ships; empty stubs are enough for analysis.
WRAPPER_STUBS = ("texture_fetch_functions.h", "curand_mtgp32_kernel.h")

# NOTE: libclang 18 knows no Blackwell arch and treats CUDA 13 as an unknown SDK version, which
# silently switches launches to the pre-9.2 `cudaConfigureCall` ABI; pinning the SDK version the
# frontend reports keeps `<<<>>>` lowered to `__cudaPushCallConfiguration`.
ANALYSIS_ARCH = "sm_90a"
SDK_VERSION = "12.3"

DEFAULT_FLAGS = (
    "-x", "cuda", "-std=c++17", "-ferror-limit=0", "--cuda-device-only",
    f"--cuda-gpu-arch={ANALYSIS_ARCH}", "-nocudalib",
    "-Xclang", f"-target-sdk-version={SDK_VERSION}",
    # Analysis only (kernel text is always copied from files): clang rejects under-aligned
    # `alignas(64) CUtensorMap` that nvcc and gcc accept.
    "-Dalignas(x)=",
    "-Wno-unknown-cuda-version",
    # Only errors become facts; without warnings clang also skips its flow analyses (~10% of a parse).
    "-w",
)

# NOTE: libclang never walks template instantiations, yet clang spends most of a heavy TU's parse
# instantiating them (27.6 s -> 3.9 s for TE's 16 activation TUs). The analysis instantiates
# symbolically instead, so clang is stopped at depth 1; the one "exceeded maximum depth" fatal
# error this causes is expected and dropped (docs/frontend.md; tests compare both modes).
FAST_FLAGS = (f"-ftemplate-depth={os.environ.get('CODEMOD_TEMPLATE_DEPTH', '20')}",)
DEPTH_DIAGNOSTIC = "recursive template instantiation exceeded maximum depth"


def fast_mode() -> bool:
    return os.environ.get("CODEMOD_FULL_INSTANTIATION", "") in ("", "0")


def cache_root() -> Path:
    env = os.environ.get("CODEMOD_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "codemod"


def _site_dirs() -> list[Path]:
    import site

    dirs = [Path(p) for p in site.getsitepackages()] + [Path(site.getusersitepackages())]
    dirs += [Path(p) for p in sys.path if p.endswith("site-packages")]
    seen, out = set(), []
    for d in dirs:
        if d not in seen and d.is_dir():
            seen.add(d)
            out.append(d)
    return out


def find_resource_dir() -> Path:
    """Clang resource dir holding `include/__clang_cuda_runtime_wrapper.h`, major <= 18."""
    candidates = []
    env = os.environ.get("CODEMOD_CLANG_RESOURCE_DIR")
    if env:
        candidates.append(Path(env))
    repo_cache = Path(__file__).resolve().parents[2] / ".codemod-cache" / "clang-resource"
    for major in (16, 17, 18, 15, 14):
        candidates.append(Path(f"/usr/lib/llvm-{major}/lib/clang/{major}"))
        candidates.append(repo_cache / f"usr/lib/llvm-{major}/lib/clang/{major}")
    for c in candidates:
        if (c / "include" / "__clang_cuda_runtime_wrapper.h").is_file():
            return c
    raise UsageError(
        "clang resource headers for CUDA not found",
        hint="run scripts/setup.sh (installs Debian's libclang-common-16-dev) or set "
        "CODEMOD_CLANG_RESOURCE_DIR to a clang <= 18 resource dir",
    )


def find_cuda_include() -> Path:
    """CUDA headers: $CODEMOD_CUDA_INCLUDE, else the nvidia-cuda-runtime wheel, else /usr/local/cuda."""
    env = os.environ.get("CODEMOD_CUDA_INCLUDE")
    candidates = [Path(env)] if env else []
    for sp in _site_dirs():
        candidates += sorted(Path(p) for p in glob.glob(str(sp / "nvidia" / "cu*" / "include")))
    candidates.append(Path("/usr/local/cuda/include"))
    for c in candidates:
        if (c / "cuda_runtime.h").is_file() and (c / "crt" / "host_defines.h").is_file():
            return c
    raise UsageError(
        "CUDA headers not found",
        hint="pip install the nvidia-cuda-runtime and nvidia-cuda-crt wheels (scripts/setup.sh) "
        "or set CODEMOD_CUDA_INCLUDE",
    )


_STRING_HEADER = re.compile(r"(?:.*/)?(string_code_\w+)\.h")


def stub_text(header: str) -> str:
    """What a missing header is replaced by. A build-generated string header (`string_code_X.h`,
    written by CMake's make_string_header_from_file in a migrated tree) declares its one symbol, so
    a migrated tree analyses without errors before it is built (as an empty string, which
    the copy checks of kernels.h let through); any other header is empty."""
    m = _STRING_HEADER.fullmatch(header)
    if m:
        return f"/* stub written by codemod: string header made at build time */\nstatic constexpr char {m.group(1)}[] = \"\";\n"
    return "/* empty stub written by codemod: header not available for analysis */\n"


@dataclass
class Toolchain:
    resource_dir: Path
    cuda_include: Path
    cuda_root: Path
    stub_dir: Path
    stubs: list[str] = field(default_factory=list)

    def base_flags(self) -> list[str]:
        flags = list(DEFAULT_FLAGS) + (list(FAST_FLAGS) if fast_mode() else [])
        flags += [f"--cuda-path={self.cuda_root}", "-resource-dir", str(self.resource_dir)]
        # Stubs come last (-idirafter): a real header anywhere on the path always wins.
        flags += [f"-isystem{self.cuda_include}"]
        cccl = self.cuda_include / "cccl"
        if cccl.is_dir():
            flags.append(f"-isystem{cccl}")
        flags.append(f"-idirafter{self.stub_dir}")
        return flags

    def fingerprint(self) -> str:
        """Part of every cache key: anything that changes how a file parses."""
        import clang.cindex  # noqa: F401

        data = [str(self.resource_dir), str(self.cuda_include), sorted(self.stubs), [stub_text(h) for h in sorted(self.stubs)],
                DEFAULT_FLAGS, fast_mode(), FAST_FLAGS, DEPTH_DIAGNOSTIC]   # the dropped diagnostic shapes the facts
        return hashlib.sha256(json.dumps(data, default=str).encode()).hexdigest()[:16]

    def add_stub(self, header: str) -> None:
        path = self.stub_dir / header
        path.parent.mkdir(parents=True, exist_ok=True)
        text = stub_text(header)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        if header not in self.stubs:
            self.stubs.append(header)


def make_toolchain(extra_stubs: list[str] | tuple[str, ...] = ()) -> Toolchain:
    resource = find_resource_dir()
    include = find_cuda_include()
    root = private_dir(cache_root() / "toolchain")
    # clang wants a CUDA install root with bin/ and nvvm/libdevice; the wheels have only include/.
    cuda_root = root / "cuda-root"
    (cuda_root / "bin").mkdir(parents=True, exist_ok=True)
    (cuda_root / "nvvm" / "libdevice").mkdir(parents=True, exist_ok=True)
    link = cuda_root / "include"
    if link.is_symlink() and Path(os.readlink(link)) != include:
        link.unlink()
    if not link.exists():
        link.symlink_to(include, target_is_directory=True)
    # One stub dir per stub set, so a header stubbed in one run never leaks silently into another.
    names = sorted({*WRAPPER_STUBS, *extra_stubs})
    tag = hashlib.sha256("\n".join(names).encode()).hexdigest()[:10]
    tc = Toolchain(resource, include, cuda_root, root / f"stubs-{tag}")
    for header in names:
        tc.add_stub(header)
    return tc


# Flags from a compile database that carry meaning for parsing; everything else (nvcc codegen
# options, -o, -c, arch lists) is dropped.
_KEEP_PREFIX = ("-I", "-D", "-U", "-isystem", "-include")


def with_standard(flags: list[str], std: str | None) -> list[str]:
    """`flags` with their language standard replaced by `std` (`-std=c++20`), when given."""
    if not std:
        return list(flags)
    return [std if f.startswith("-std=") else f for f in flags]


def flags_from_compile_db(db_path: Path, source: Path,
                          entries: list[compile_db.CompileEntry] | None = None) -> list[str] | None:
    """Include/define flags of `source` from compile_commands.json, or None if not listed.
    `entries`: the database already loaded (compile_db.load), to read it once for many sources."""
    if entries is None:
        entries = compile_db.load(db_path)
    entry = compile_db.find(entries, source)
    if entry is None:
        return None
    directory = Path(entry.directory)
    argv = entry.argv(str(db_path))
    std = compile_db.standard_flag(argv)
    out, i = ([std] if std else []), 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-std=") or a.startswith("--std") or a == "-std":
            i += 2 if a in ("-std", "--std") else 1
            continue   # the standard is read once above, in clang's spelling
        if a in ("-I", "-D", "-U", "-isystem", "-include") and i + 1 < len(argv):
            a, i = a + argv[i + 1], i + 1
        if a.startswith(_KEEP_PREFIX):
            if a.startswith("-I") and not os.path.isabs(a[2:]):
                a = "-I" + str(directory / a[2:])
            if a.startswith("-isystem") and not os.path.isabs(a[8:]):
                a = "-isystem" + str(directory / a[8:])
            out.append(a)
        i += 1
    return out
