"""The NVRTC options a program may carry when they come from data (a recorded list, a rule): the
allow-list, in one place. Options are data we chose: the rules' own options and the ones the
generated code and the layer add, never one that names a file NVRTC writes or reads (`--time`,
`--create-pch`, `--use-pch`, `--pch-dir`, `--fdevice-time-trace`, `-o`, `-include`, ptxas'...).

Used by the rule loader; `for_template()` is the same policy
as plain lists for the generated runtime's check of `*_RTC_CACHE_WARM` lists."""

from __future__ import annotations

import posixpath
import re

from .text import printable

# NVRTC's automatic precompiled headers and -minimal: what the layer added to every program before
# issue 29 (docs/rtc_cache.md); the cold-compile bench still measures them (bench/nvrtc_cold.py).
PCH_OPTIONS = ("-pch", "-pch-messages=false", "-pch-verbose=false")
MINIMAL_OPTIONS = ("-minimal",)
LAYER_OPTIONS = PCH_OPTIONS + MINIMAL_OPTIONS

# Options without a value that change code generation only.
FLAGS = frozenset({
    *LAYER_OPTIONS,
    "--use_fast_math", "-use_fast_math", "-default-device", "--device-int128", "-device-int128",
    "--extra-device-vectorization", "-extra-device-vectorization", "-lineinfo", "--generate-line-info",
    "-dw", "-w", "--disable-warnings", "-restrict", "--restrict", "-G", "--device-debug",
    "-rdc=true", "-rdc=false", "--relocatable-device-code=true", "--relocatable-device-code=false",
    "-dlto", "--dlink-time-opt", "-ewp", "--extensible-whole-program",
    "--expt-relaxed-constexpr", "-expt-relaxed-constexpr", "--expt-extended-lambda", "-expt-extended-lambda",
    "--no-source-include", "-no-source-include",
})

_ARCH = r"(?:sm|compute)_[0-9]{2,3}[af]?"
_BOOL = r"(?:true|false)"
_MACRO = r"[A-Za-z_][A-Za-z0-9_]*"
# Options with a value: the spelling before the value, and what the value may be (whole match).
VALUED = (
    ("--gpu-architecture=", _ARCH),
    ("-arch=", _ARCH),
    ("--std=", r"c\+\+(?:03|11|14|17|20|23)"),
    ("-std=", r"c\+\+(?:03|11|14|17|20|23)"),
    # NOTE: a macro's value is program text, never a path NVRTC opens; printable ASCII, no quotes
    ("-D", _MACRO + r"(?:=[!#-&(-~]*)?"),
    ("--define-macro=", _MACRO + r"(?:=[!#-&(-~]*)?"),
    ("-U", _MACRO),
    ("--undefine-macro=", _MACRO),
    ("-fmad=", _BOOL), ("--fmad=", _BOOL), ("-ftz=", _BOOL), ("--ftz=", _BOOL),
    ("-prec-div=", _BOOL), ("--prec-div=", _BOOL), ("-prec-sqrt=", _BOOL), ("--prec-sqrt=", _BOOL),
    ("-dopt=", r"(?:on|off)"), ("--dopt=", r"(?:on|off)"),
    ("-maxrregcount=", r"[0-9]{1,4}"), ("--maxrregcount=", r"[0-9]{1,4}"),
    ("-O", r"[0-3]"),
    ("-frandom-seed=", r"[A-Za-z0-9_]{1,32}"),  # the layer's tests: identical cubins from two arms
)

# The toolkit's headers: the layer passes its include folders (`-I<toolkit>/include`). Accepted as
# an absolute, normalised folder here.
INCLUDE_PREFIXES = ("--include-path=", "-I")

# Named in the refusal: options that make NVRTC write or read a file (the reason they are refused).
FILE_OPTIONS = ("--time", "-time", "--create-pch", "-create-pch", "--use-pch", "-use-pch", "--pch-dir",
                "-pch-dir", "--fdevice-time-trace", "-fdevice-time-trace", "-o", "--output-file", "-include",
                "--pre-include", "-isystem", "--system-include", "-Xptxas", "--ptxas-options", "-Xnvvm",
                "--nvvm-options")

_VALUED = [(prefix, re.compile(value)) for prefix, value in VALUED]
_INCLUDE_DIR = re.compile(r"/[A-Za-z0-9_.+@/-]*")


def include_dir(option: str) -> str | None:
    """The folder of an include option (`-I/x`, `--include-path=/x`), else None."""
    for prefix in INCLUDE_PREFIXES:
        if option.startswith(prefix):
            return option[len(prefix):]
    return None


def allowed(option: str) -> bool:
    """Whether `option` (one argv string) is on the allow-list."""
    if option in FLAGS:
        return True
    folder = include_dir(option)
    if folder is not None:
        return bool(_INCLUDE_DIR.fullmatch(folder)) and posixpath.normpath(folder) == folder.rstrip("/") \
            and ".." not in folder.split("/")
    return any(option.startswith(prefix) and value.fullmatch(option[len(prefix):]) for prefix, value in _VALUED)


def refused(options) -> list[str]:
    """The options of `options` that are not on the allow-list, in order (non-strings included)."""
    return [o for o in options if not isinstance(o, str) or not allowed(o)]


def describe(options: list) -> str:
    """The refused options for a one-line error: printable, each at most 80 characters."""
    shown = [printable(o if isinstance(o, str) else repr(o), 80) for o in options[:8]]
    more = f" and {len(options) - 8} more" if len(options) > 8 else ""
    writes = any(isinstance(o, str) and o.split("=")[0].startswith(FILE_OPTIONS) for o in options)
    why = " (names a file NVRTC would write or read)" if writes else ""
    return ", ".join(shown) + more + why


def for_template() -> dict:
    """The policy as plain data for a generated C++ check: exact flags, (prefix, value regex) pairs
    (ECMAScript-compatible), and the include prefixes."""
    return {"flags": sorted(FLAGS), "valued": [list(v) for v in VALUED], "include_prefixes": list(INCLUDE_PREFIXES),
            "include_dir": _INCLUDE_DIR.pattern}
