"""A ctypes binding to NVRTC: find libnvrtc (pip wheel or toolkit), compile one program with
in-memory headers and name expressions, and report log, lowered names, output sizes and time.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import VerifyError

# Hopper, Blackwell datacenter (arch-specific) and Blackwell consumer: issue 14, acceptance 2.
ARCHS = ("sm_90", "sm_100a", "sm_120")
BASE_OPTIONS = ("--std=c++17",)
NVRTC_SUCCESS = 0
LOG_HEAD_LINES = 12

# Wheel layouts, newest first: nvidia-cuda-nvrtc 13.x (nvidia/cu13), 12.x (nvidia/cuda_nvrtc).
_WHEEL_LIBS = ("cu13/lib/libnvrtc.so.13", "cu12/lib/libnvrtc.so.12", "cuda_nvrtc/lib/libnvrtc.so.12")
_WHEEL_INCLUDES = {"cu13": ("cu13/include",), "cu12": ("cu12/include",),
                   "cuda_nvrtc": ("cuda_runtime/include", "cuda_nvrtc/include", "cuda_cccl/include")}


class NvrtcNotFound(VerifyError):
    """libnvrtc could not be located or loaded."""


def arch_options(arch: str) -> list[str]:
    """`sm_90` -> ['--gpu-architecture=sm_90']; SASS (cubin) for a real arch, PTX for compute_XX."""
    if not (arch.startswith("sm_") or arch.startswith("compute_")):
        raise VerifyError(f"unknown GPU architecture {arch!r}", hint="use a name like sm_90 or sm_100a")
    return [f"--gpu-architecture={arch}"]


_DIAG = re.compile(r"(^|: )(catastrophic error|error|warning|Remark)\b")


def _errors_first(lines: list[str]) -> list[str]:
    """The log's diagnostics (a line naming error/warning and the lines below it), error blocks
    first, each group in log order."""
    blocks: list[list[str]] = []
    for line in lines:
        if _DIAG.search(line) or not blocks:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    errors: list[list[str]] = []
    rest: list[list[str]] = []
    for b in blocks:
        m = _DIAG.search(b[0])
        (errors if m and m.group(2).endswith("error") else rest).append(b)
    return [line for b in errors + rest for line in b]


@dataclass
class CompileResult:
    """What one NVRTC program gave: `ok` means it compiled and every name expression lowered."""

    name: str
    arch: str
    compiled: bool
    log: str
    lowered: dict[str, str] = field(default_factory=dict)
    unlowered: list[str] = field(default_factory=list)
    cubin_size: int = 0
    ptx_size: int = 0
    cubin: bytes | None = None  # with keep_cubin
    ptx: str | None = None      # with keep_cubin (verify --sass reads it to name a known difference)
    seconds: float = 0.0        # wall time of nvrtcCreateProgram .. nvrtcCompileProgram
    cpu_seconds: float = 0.0    # process CPU time over the same span (robust on a loaded host)
    options: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.compiled and not self.unlowered

    def log_head(self, lines: int = LOG_HEAD_LINES) -> str:
        """The log's first lines, errors before warnings (a failed compile often warns first)."""
        kept = [line for line in _errors_first(self.log.splitlines()) if line.strip()]
        text = "\n".join(kept[:lines])
        if len(kept) > lines:
            text += f"\n... ({len(kept) - lines} more log lines)"
        return text

    def describe(self) -> str:
        """One paragraph naming the program, the arch and what went wrong."""
        if self.ok:
            return f"{self.name} [{self.arch}]: ok ({len(self.lowered)} names, {self.seconds:.2f} s)"
        if not self.compiled:
            return f"{self.name} [{self.arch}]: NVRTC compile failed:\n{self.log_head()}"
        return (f"{self.name} [{self.arch}]: nvrtcGetLoweredName failed for "
                f"{len(self.unlowered)} name expression(s): {', '.join(self.unlowered[:5])}")

    def check(self) -> "CompileResult":
        """Raise VerifyError naming the program and showing the log head unless ok."""
        if not self.ok:
            raise VerifyError(self.describe(), where=self.name,
                              hint="fix the kernel string or the name expression, then rerun `codemod verify`")
        return self

    def to_json(self) -> dict:
        return {"name": self.name, "arch": self.arch, "ok": self.ok, "compiled": self.compiled,
                "seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3), "cubin_size": self.cubin_size,
                "ptx_size": self.ptx_size, "lowered": self.lowered, "unlowered": self.unlowered,
                "log": self.log}


class Nvrtc:
    """A loaded libnvrtc. Use `load()`; one instance per process."""

    def __init__(self, library: Path):
        self.path = library
        # NOTE: libnvrtc dlopens libnvrtc-builtins by soname; the wheel's directory is on no
        # search path, so load it first (RTLD_GLOBAL) and the dlopen finds it already loaded.
        for builtins in sorted(glob.glob(str(library.parent / "libnvrtc-builtins.so.*"))):
            if ".alt." not in builtins:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
        try:
            self._lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise NvrtcNotFound(f"cannot load {library}: {exc}", hint=_INSTALL_HINT) from None
        self._declare()
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)
        self.include_dirs = _include_dirs_for(library)

    def _declare(self) -> None:
        lib, p, c, i, s = self._lib, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
        sigs = {
            "nvrtcVersion": [ctypes.POINTER(i), ctypes.POINTER(i)],
            "nvrtcGetNumSupportedArchs": [ctypes.POINTER(i)],
            "nvrtcGetSupportedArchs": [ctypes.POINTER(i)],
            "nvrtcCreateProgram": [ctypes.POINTER(p), c, c, i, ctypes.POINTER(c), ctypes.POINTER(c)],
            "nvrtcDestroyProgram": [ctypes.POINTER(p)],
            "nvrtcAddNameExpression": [p, c],
            "nvrtcCompileProgram": [p, i, ctypes.POINTER(c)],
            "nvrtcGetProgramLogSize": [p, ctypes.POINTER(s)],
            "nvrtcGetProgramLog": [p, c],
            "nvrtcGetCUBINSize": [p, ctypes.POINTER(s)],
            "nvrtcGetCUBIN": [p, c],
            "nvrtcGetPTXSize": [p, ctypes.POINTER(s)],
            "nvrtcGetPTX": [p, c],
            "nvrtcGetLoweredName": [p, c, ctypes.POINTER(c)],
        }
        for fn, argtypes in sigs.items():
            getattr(lib, fn).argtypes = argtypes
            getattr(lib, fn).restype = i
        lib.nvrtcGetErrorString.argtypes = [i]
        lib.nvrtcGetErrorString.restype = c

    def error_string(self, code: int) -> str:
        return self._lib.nvrtcGetErrorString(code).decode()

    def supported_archs(self) -> list[int]:
        n = ctypes.c_int()
        self._lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
        archs = (ctypes.c_int * n.value)()
        self._lib.nvrtcGetSupportedArchs(archs)
        return list(archs)

    def default_options(self, options=(), include_cuda: bool = True, include_cccl: bool = True) -> list[str]:
        """`--std=c++17` unless `options` choose a standard, and `-I` for the CUDA headers (their
        `cccl/` folder only with include_cccl: a library's layer may not pass it)."""
        base = [] if any(o.startswith(("--std", "-std")) for o in options) else list(BASE_OPTIONS)
        dirs = [d for d in self.include_dirs if include_cccl or d.name != "cccl"] if include_cuda else []
        return base + [f"-I{d}" for d in dirs]

    def compile(self, source: str, name: str, headers: dict[str, str] | None = None,
                options: list[str] | tuple[str, ...] = (), name_expressions: list[str] | tuple[str, ...] = (),
                arch: str = "sm_90", include_cuda: bool = True, include_cccl: bool = True,
                keep_cubin: bool = False, exact: bool = False) -> CompileResult:
        """Compile one program for `arch` with every name expression added (`keep_cubin`: the
        result holds the cubin's bytes).

        `options` follow `--std=c++17 -I<CUDA headers> --gpu-architecture=<arch>`; with `exact`,
        `options` are all the options (a layer's recorded ones: `codemod warm`). A failed compile
        is a result with `compiled=False` and the log, never an exception.
        """
        headers = headers or {}
        all_options = list(options) if exact else (
            self.default_options(options, include_cuda, include_cccl) + arch_options(arch) + list(options))
        lib = self._lib
        prog = ctypes.c_void_p()
        names = (ctypes.c_char_p * len(headers))(*[k.encode() for k in headers])
        texts = (ctypes.c_char_p * len(headers))(*[v.encode() for v in headers.values()])
        start, cpu_start = time.perf_counter(), time.process_time()
        self._call("nvrtcCreateProgram", ctypes.byref(prog), source.encode(), name.encode(),
                   len(headers), texts, names)
        try:
            for expr in name_expressions:
                self._call("nvrtcAddNameExpression", prog, expr.encode())
            argv = (ctypes.c_char_p * len(all_options))(*[o.encode() for o in all_options])
            rc = lib.nvrtcCompileProgram(prog, len(all_options), argv)
            seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
            log = self._log(prog)
            result = CompileResult(name=name, arch=arch, compiled=rc == NVRTC_SUCCESS, log=log,
                                   seconds=seconds, cpu_seconds=cpu_seconds, options=all_options)
            if rc != NVRTC_SUCCESS:
                if not log.strip():
                    result.log = self.error_string(rc)
                return result
            result.cubin_size = self._size(lib.nvrtcGetCUBINSize, prog)
            if keep_cubin and result.cubin_size:
                buf = ctypes.create_string_buffer(result.cubin_size)
                self._call("nvrtcGetCUBIN", prog, buf)
                result.cubin = buf.raw
            result.ptx_size = self._size(lib.nvrtcGetPTXSize, prog)
            if keep_cubin and result.ptx_size:
                buf = ctypes.create_string_buffer(result.ptx_size)
                self._call("nvrtcGetPTX", prog, buf)
                result.ptx = buf.value.decode(errors="replace")
            for expr in name_expressions:
                lowered = ctypes.c_char_p()
                if lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(lowered)) == NVRTC_SUCCESS and lowered.value:
                    result.lowered[expr] = lowered.value.decode()
                else:
                    result.unlowered.append(expr)
            return result
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def _call(self, fn: str, *args) -> None:
        rc = getattr(self._lib, fn)(*args)
        if rc != NVRTC_SUCCESS:
            raise VerifyError(f"{fn} failed: {self.error_string(rc)}")

    def _log(self, prog) -> str:
        size = ctypes.c_size_t()
        if self._lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)) != NVRTC_SUCCESS or size.value <= 1:
            return ""
        buf = ctypes.create_string_buffer(size.value)
        self._lib.nvrtcGetProgramLog(prog, buf)
        return buf.value.decode(errors="replace")

    @staticmethod
    def _size(getter, prog) -> int:
        size = ctypes.c_size_t()
        return size.value if getter(prog, ctypes.byref(size)) == NVRTC_SUCCESS else 0


_INSTALL_HINT = ("install the wheel with `pip install nvidia-cuda-nvrtc==13.0.88`, or point "
                 "CODEMOD_NVRTC_LIB at a libnvrtc.so")


def _nvidia_package_dirs() -> list[Path]:
    """Directories of the `nvidia` namespace package (where NVIDIA's pip wheels install)."""
    dirs = []
    for entry in sys.path:
        candidate = Path(entry or ".") / "nvidia"
        if candidate.is_dir() and candidate not in dirs:
            dirs.append(candidate)
    return dirs


def _toolkit_roots() -> list[Path]:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    return [Path(r) for r in roots if r]


def find_library() -> Path:
    """CODEMOD_NVRTC_LIB, else the nvidia-cuda-nvrtc wheel, else a CUDA toolkit; NvrtcNotFound if none."""
    explicit = os.environ.get("CODEMOD_NVRTC_LIB")
    if explicit:
        if not Path(explicit).is_file():
            raise NvrtcNotFound(f"CODEMOD_NVRTC_LIB={explicit} is not a file", hint=_INSTALL_HINT)
        return Path(explicit)
    searched = []
    for base in _nvidia_package_dirs():
        for rel in _WHEEL_LIBS:
            searched.append(str(base / rel))
            if (base / rel).is_file():
                return base / rel
    for root in _toolkit_roots():
        for lib in sorted(glob.glob(str(root / "lib64" / "libnvrtc.so.*")), reverse=True):
            if "builtins" not in lib and ".alt." not in lib:
                return Path(lib)
        searched.append(str(root / "lib64" / "libnvrtc.so.*"))
    raise NvrtcNotFound("libnvrtc not found (looked in the nvidia-cuda-nvrtc wheel and CUDA toolkits: "
                        + ", ".join(searched[:4]) + (", ..." if len(searched) > 4 else "") + ")",
                        hint=_INSTALL_HINT)


def _include_dirs_for(library: Path) -> list[Path]:
    """CUDA headers that match the library: the wheel's include tree (plus cccl), or the toolkit's."""
    lib_dir = library.parent
    nvidia = lib_dir.parent.parent
    flavour = lib_dir.parent.name
    if flavour in _WHEEL_INCLUDES:
        roots = [nvidia / rel for rel in _WHEEL_INCLUDES[flavour]]
    else:
        roots = [lib_dir.parent / "include"]
    dirs = []
    for root in roots:
        if root.is_dir():
            dirs.append(root)
            if (root / "cccl").is_dir():
                dirs.append(root / "cccl")
    return dirs


_LOADED: Nvrtc | None = None


def load(library: Path | None = None) -> Nvrtc:
    """The process's NVRTC, loaded on first use."""
    global _LOADED
    if _LOADED is None or (library is not None and _LOADED.path != library):
        _LOADED = Nvrtc(library or find_library())
    return _LOADED


def compile(source: str, name: str, headers: dict[str, str] | None = None,
            options: list[str] | tuple[str, ...] = (), name_expressions: list[str] | tuple[str, ...] = (),
            arch: str = "sm_90", include_cuda: bool = True, include_cccl: bool = True,
            keep_cubin: bool = False) -> CompileResult:
    """Compile with the process's NVRTC; see `Nvrtc.compile`."""
    return load().compile(source, name, headers, options, name_expressions, arch=arch, include_cuda=include_cuda,
                          include_cccl=include_cccl, keep_cubin=keep_cubin)
