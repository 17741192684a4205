"""SASS equivalence (`codemod verify --sass`): each covered variant compiled statically with nvcc
and as the NVRTC program, both cubins disassembled, each kernel's SASS compared modulo names and
layout (normalisations: docs/verify.md, "SASS equivalence").
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from ..errors import VerifyError
from .manifest import KernelEntry, Manifest
from .programs import Program, ProgramResult
from .source_location import LibraryFiles, string_constants
from .source_location import compare as compare_source_location

SCHEMA = "codemod-verify-sass/1"
TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "verify"
DIFF_LINES = 16

# Differences whose cause is established (docs/verify.md): the field a loader patches, the
# width of shared-memory addresses (nvcc's PTX uses 32-bit shared-window pointers, NVRTC's 64-bit
# generic ones), named only when the two PTX show exactly that for the kernel, and where the code
# says it is (__LINE__ / __FILE__ / __func__ of an error message: source_location.py).
EXPLAINED = {"relocation", "shared-pointer-width", "source-location"}

# Flags of a compile-database unit that change device code or how the header parses; everything
# else (outputs, dependency files, arch lists, host-only options) is dropped.
_KEEP_WITH_ARG = {"-I", "-isystem", "-D", "-U", "-include", "--include-path", "--define-macro",
                  "--undefine-macro", "--pre-include", "-Xptxas", "--ptxas-options", "-maxrregcount",
                  "--maxrregcount"}
_KEEP_PREFIX = ("-I", "-D", "-U", "-isystem", "-std=", "--std=", "-O", "--expt-", "-Xptxas=",
                "--ptxas-options=", "-maxrregcount=", "--maxrregcount=", "--use_fast_math", "-use_fast_math",
                "--ftz=", "--prec-div=", "--prec-sqrt=", "--fmad=", "-ftz=", "-prec-div=", "-prec-sqrt=",
                "-fmad=", "-G", "-lineinfo", "--generate-line-info", "-g", "--extended-lambda",
                "--relaxed-constexpr", "-rdc", "--relocatable-device-code", "-dopt")


@dataclass
class Tools:
    """The binaries of one comparison and their versions (major.minor must match for equivalence)."""

    nvcc: str
    nvdisasm: str
    cuobjdump: str
    nvcc_version: str        # "13.0.88"
    nvrtc_version: str       # "13.0"
    disassembler_version: str

    @property
    def same_release(self) -> bool:
        return ".".join(self.nvcc_version.split(".")[:2]) == self.nvrtc_version

    def to_json(self) -> dict:
        return {"nvcc": Path(self.nvcc).name, "nvcc_version": self.nvcc_version, "nvrtc_version": self.nvrtc_version,
                "nvdisasm_version": self.disassembler_version, "same_release": self.same_release}


def find_tool(name: str) -> str | None:
    """$CODEMOD_<NAME>, the nvidia-cuda-<name> wheel (nvidia/cu13/bin), PATH, then a CUDA toolkit."""
    candidates = [os.environ.get(f"CODEMOD_{name.upper()}")]
    candidates += [str(Path(p) / "nvidia" / flavour / "bin" / name) for p in sys.path
                   for flavour in ("cu13", f"cuda_{name}")]
    candidates.append(shutil.which(name))
    candidates += [str(Path(r) / "bin" / name) for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                                                          "/usr/local/cuda") if r]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def tool_version(path: str) -> str:
    """'13.0.88' from `--version` ("Cuda compilation tools, release 13.0, V13.0.88")."""
    proc = subprocess.run([path, "--version"], capture_output=True, text=True)
    match = re.search(r"release \d+\.\d+, V(\d+\.\d+\.\d+)", proc.stdout)
    return match.group(1) if match else "unknown"


def find_tools(nvcc: str | None, nvrtc_version: str) -> Tools:
    from .host import find_nvcc

    compiler = find_nvcc(nvcc)
    missing = [n for n, p in (("nvcc", compiler), ("nvdisasm", find_tool("nvdisasm")),
                              ("cuobjdump", find_tool("cuobjdump"))) if p is None]
    if missing:
        raise VerifyError(f"--sass needs {', '.join(missing)}, not found",
                          hint="pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump (pyproject.toml), "
                               "a CUDA toolkit for nvcc, or set CODEMOD_NVDISASM / CODEMOD_CUOBJDUMP / --nvcc")
    disasm = find_tool("nvdisasm")
    return Tools(nvcc=compiler, nvdisasm=disasm, cuobjdump=find_tool("cuobjdump"),
                 nvcc_version=tool_version(compiler), nvrtc_version=nvrtc_version,
                 disassembler_version=tool_version(disasm))


# ---------------------------------------------------------------------------------------------
# Disassembly: nvdisasm -hex text -> per-function instruction lists, normalised.

_SECTION = re.compile(r"^//-+ (\S+)\s+-+\s*$")
_INSTR = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?P<text>.*?)\s*;\s*(?:/\* (?P<enc>0x[0-9a-f]+) \*/)?\s*$")
_ENC_ONLY = re.compile(r"^\s+/\* (?P<enc>0x[0-9a-f]+) \*/\s*$")
_LABEL_DEF = re.compile(r"^(?P<name>[^\s:]+):\s*$")
_LOCAL_LABEL = re.compile(r"\.L_x_\d+|\.L_\d+")
_INTERNAL_SUB = re.compile(r"\$__internal_\d+_\$")
_TU_LOCAL = re.compile(r"(\d+)_INTERNAL_")
_CBANK4 = re.compile(r"c\[0x4\]\[(0x[0-9a-f]+)\]")
_DWORD = re.compile(r"^\s+/\*(?P<off>[0-9a-f]+)\*/\s+\.dword\s+(?P<sym>\S+)")
_SYMBOL = re.compile(r"(?<![\w$.])(?:_Z(?:[\w$]|<tu>)+|\$[\w$]+)")
_RELOC_HINT = re.compile(r"`\(|@\(|c\[0x[34]\]")


@dataclass
class Instruction:
    text: str
    encoding: tuple[str, ...]


@dataclass
class Function:
    """One `.text.<symbol>` section: labels and instructions in order, plus the callees it names."""

    symbol: str
    lines: list[tuple[str, str]]          # ("label", name) or ("insn", index)
    instructions: list[Instruction]
    info: list[str] = field(default_factory=list)   # its `.nv.info.<symbol>` section, raw


def sections(disassembly: str) -> dict[str, list[str]]:
    """nvdisasm output split at its `//---- <section> ----` banners."""
    out: dict[str, list[str]] = {}
    current = None
    for line in disassembly.splitlines():
        match = _SECTION.match(line)
        if match:
            current = match.group(1)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def parse_functions(disassembly: str) -> tuple[dict[str, Function], dict[str, str]]:
    """Functions by symbol, and the constant bank 4 table (offset -> symbol) of the module."""
    secs = sections(disassembly)
    bank4 = {}
    for line in secs.get(".nv.constant4", []):
        match = _DWORD.match(line)
        if match:
            bank4[hex(int(match["off"], 16))] = match["sym"]
    functions = {}
    for name, lines in secs.items():
        if not name.startswith(".text."):
            continue
        symbol = name[len(".text."):]
        fn = Function(symbol=symbol, lines=[], instructions=[], info=secs.get(f".nv.info.{symbol}", []))
        for line in lines:
            insn = _INSTR.match(line)
            if insn:
                fn.instructions.append(Instruction(insn["text"], (insn["enc"],) if insn["enc"] else ()))
                fn.lines.append(("insn", str(len(fn.instructions) - 1)))
                continue
            enc = _ENC_ONLY.match(line)
            if enc and fn.instructions:
                fn.instructions[-1].encoding += (enc["enc"],)
                continue
            label = _LABEL_DEF.match(line)
            # NOTE: `<symbol>:` and `.text.<symbol>:` mark the entry; their order differs between
            # nvcc and NVRTC cubins (symbol binding), so only local labels and subroutines count.
            if label and label["name"] not in (symbol, name):
                fn.lines.append(("label", label["name"]))
        functions[symbol] = fn
    return functions, bank4


def _strip_tu_local(text: str) -> str:
    """`52_INTERNAL_<hash>_15_unary_kernel_cu_<hash>_11610` (length-prefixed, per-TU) -> `<tu>`."""
    out, pos = [], 0
    for match in _TU_LOCAL.finditer(text):
        if match.start() < pos:
            continue
        length = int(match.group(1))
        start = match.start(1)
        end = match.end(1) + length
        out.append(text[pos:start] + "<tu>")
        pos = end
    out.append(text[pos:])
    return "".join(out)


@dataclass
class Normalised:
    lines: list[str]                      # labels and instruction texts, normalised
    encodings: list[tuple[str, ...]]      # per instruction
    texts: list[str]                      # per instruction, normalised
    info: list[str]

    def names_erased(self) -> list[str]:
        """The lines with every remaining symbol replaced by its order of first appearance."""
        seen: dict[str, str] = {}

        def sub(match: re.Match) -> str:
            return seen.setdefault(match.group(0), f"<sym{len(seen)}>")
        return [_SYMBOL.sub(sub, line) for line in self.lines]


def normalise(fn: Function, bank4: dict[str, str], functions: dict[str, Function] | None = None) -> Normalised:
    """The function's SASS as comparable lines (see docs/verify.md for each step and why).

    Callees in other `.text` sections (non-inlined device functions) follow the caller, once each,
    in call order.
    """
    order = [fn]
    if functions:
        i = 0
        while i < len(order):
            for insn in order[i].instructions:
                for target in re.findall(r"`\(([^)]+)\)", insn.text):
                    callee = functions.get(target)
                    if callee is not None and callee not in order:
                        order.append(callee)
            i += 1
    labels: dict[str, str] = {}
    subs: dict[str, str] = {}

    def rename(text: str, own: str) -> str:
        text = _LOCAL_LABEL.sub(lambda m: labels.setdefault(m.group(0), f".L{len(labels)}"), text)
        text = _INTERNAL_SUB.sub(lambda m: subs.setdefault(m.group(0), f"$__internal_{len(subs)}_$"), text)
        text = _CBANK4.sub(lambda m: f"c[0x4][{bank4.get(hex(int(m.group(1), 16)), m.group(1))}]", text)
        text = text.replace(own, "<kernel>") if own else text
        return _strip_tu_local(text)

    lines, encodings, texts = [], [], []
    for index, part in enumerate(order):
        own = fn.symbol
        if index:
            lines.append(f"<callee {rename(part.symbol, own)}>")
        for kind, value in part.lines:
            if kind == "label":
                lines.append(rename(value, own) + ":")
            else:
                insn = part.instructions[int(value)]
                text = " ".join(rename(insn.text, own).split())
                lines.append(text)
                texts.append(text)
                encodings.append(insn.encoding)
    info = [rename(" ".join(line.split()), fn.symbol) for line in fn.info
            if line.strip() and not line.lstrip().startswith("//")]
    info = [re.sub(r"^/\*[0-9a-f]+\*/ ", "", line) for line in info]
    return Normalised(lines=lines, encodings=encodings, texts=texts, info=info)


_RES = re.compile(r"Function (?P<name>\S+):\s*\n\s*(?P<res>REG:.*)")


def resource_usage(cuobjdump: str, cubin: Path) -> dict[str, str]:
    """Per function `REG:n STACK:n SHARED:n LOCAL:n CONSTANT[0]:n ...` from `cuobjdump -res-usage`."""
    proc = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True)
    return {m["name"]: " ".join(m["res"].split()) for m in _RES.finditer(proc.stdout)}


# ---------------------------------------------------------------------------------------------
# Comparison.

@dataclass
class VariantResult:
    kernel: str
    arch: str
    config: str
    variant: str                 # name expression
    symbol: str                  # lowered (mangled) name
    status: str                  # identical, identical-modulo-names, different, error
    classification: str = ""     # for different / error: code, encoding, relocation, resources, attributes,
                                 # missing, toolchain, shared-pointer-width, source-location, nvcc, nvrtc
    explained: bool = False
    detail: str = ""             # diff excerpt or log head
    instructions: int = 0

    @property
    def ok(self) -> bool:
        return self.status in ("identical", "identical-modulo-names") or self.explained

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "arch": self.arch, "config": self.config, "variant": self.variant,
                "symbol": self.symbol, "status": self.status, "classification": self.classification,
                "explained": self.explained, "instructions": self.instructions, "detail": self.detail}


def _diff(a: list[str], b: list[str], lines: int = DIFF_LINES) -> str:
    out = list(difflib.unified_diff(a, b, "nvcc", "nvrtc", lineterm="", n=1))
    text = "\n".join(out[:lines])
    return text + (f"\n... ({len(out) - lines} more diff lines)" if len(out) > lines else "")


def compare_function(static: Normalised, rtc: Normalised, static_res: str, rtc_res: str,
                     same_release: bool = True) -> tuple[str, str, str]:
    """(status, classification, detail) for one kernel's two normalised disassemblies."""
    if static.lines != rtc.lines:
        if static.names_erased() == rtc.names_erased():
            renamed = sorted({(a, b) for a, b in zip(static.lines, rtc.lines) if a != b})
            return "identical-modulo-names", "names", _diff(static.lines, rtc.lines) if renamed else ""
        return "different", "code" if same_release else "toolchain", _diff(static.lines, rtc.lines)
    if static.encodings != rtc.encodings:
        differing = [i for i, (a, b) in enumerate(zip(static.encodings, rtc.encodings)) if a != b]
        detail = "\n".join(f"{static.texts[i]}\n  nvcc  {' '.join(static.encodings[i])}\n"
                           f"  nvrtc {' '.join(rtc.encodings[i])}" for i in differing[:4])
        if all(_RELOC_HINT.search(static.texts[i]) for i in differing):
            return "different", "relocation", detail
        return "different", "encoding" if same_release else "toolchain", detail
    if static_res != rtc_res:
        return "different", "resources" if same_release else "toolchain", f"nvcc  {static_res}\nnvrtc {rtc_res}"
    if static.info != rtc.info:
        return "different", "attributes" if same_release else "toolchain", _diff(static.info, rtc.info)
    return "identical", "", ""


def source_location(static: Normalised, rtc: Normalised, static_res: str, rtc_res: str,
                    static_consts: tuple[dict, dict], rtc_consts: tuple[dict, dict], files: LibraryFiles) -> str | None:
    """The detail of a `source-location` difference (source_location.compare) of a kernel whose
    resources and attributes are the same; `*_consts`: (bank 4, string constants) of each cubin."""
    if static_res != rtc_res or static.info != rtc.info:
        return None
    return compare_source_location(static, rtc, (static_consts[1], rtc_consts[1]),
                                   (static_consts[0], rtc_consts[0]), files)


_SHARED_DECL = re.compile(r"^\s*(?:\.extern\s+)?\.shared\s+[^;]*?\s([\w$]+)\s*(?:\[[^\]]*\])?\s*;", re.M)


def _entry_body(ptx: str, symbol: str) -> str:
    """The parameters and body of `.entry <symbol>(...) {...}` in a PTX module ('' if absent), up to
    the brace that closes the body: inline asm blocks nest braces, some with `}` at the start of a
    line (cuda_fp16.hpp's `{abs.f16 %rs1,%rs2;\n}`), so the first such line is not the end."""
    start = re.search(r"\.entry\s+" + re.escape(symbol) + r"\s*\(", ptx)
    if start is None:
        return ""
    params_end = ptx.find(")", start.end())
    depth, i = 0, ptx.find("{", params_end if params_end >= 0 else start.end())
    while 0 <= i < len(ptx):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        if depth == 0:
            return ptx[start.end(): i]
        i += 1
    return ptx[start.end():]


_PTX_INSN = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)\s*([^;]*);", re.M)
_INT_TYPES = (".u8", ".s8", ".b8", ".u16", ".s16", ".b16", ".u32", ".s32", ".b32", ".u64", ".s64", ".b64", ".pred")
_IMMEDIATE = re.compile(r"0[fd][0-9A-Fa-f]+|-?\d+")


def ptx_work(ptx: str, symbol: str) -> list[str]:
    """The kernel's PTX less its integer arithmetic, as a sorted list of `opcode immediates`.

    Kept: global/shared/local loads and stores, atomics, shuffles, barriers, calls, float math and
    conversions, with their immediate operands (float constants). Dropped: pure integer ops, moves,
    address conversions and parameter loads: address and index arithmetic, the part whose width
    differs (and how a compiler spells `i * 4`: a shift or a wide multiply).
    """
    work = []
    for op, operands in _PTX_INSN.findall(_entry_body(ptx, symbol)):
        if op.startswith(("mov", "cvta", "ld.param")):
            continue
        floating = re.search(r"\.(f16|bf16|f32|f64|e4m3|e5m2|e2m1|f16x2|bf16x2)", op)
        if op.endswith(_INT_TYPES) and not floating and not op.startswith(("ld", "st", "atom", "red", "shfl")):
            continue
        immediates = [t for t in (t.strip() for t in operands.split(",")) if _IMMEDIATE.fullmatch(t)]
        work.append(f"{op} {' '.join(immediates)}".strip())
    return sorted(work)


def _kernel_token(ptx: str, symbol: str) -> str:
    """The PTX with the kernel's mangled name (without `_Z`) replaced by one token, so that the
    kernel and its function-local statics (`_ZZ<kernel>E<n>name`) match across sides whose names
    for the kernel differ (lp64_twin)."""
    return ptx.replace(symbol[2:], "CODEMODKERNEL") if symbol.startswith("_Z") else ptx


def shared_width_names(static_ptx: str, rtc_ptx: str, symbol: str, rtc_symbol: str | None = None) -> list[str]:
    """Shared variables the kernel addresses as 32-bit in nvcc's PTX and only as 64-bit in NVRTC's
    (`rtc_symbol`: NVRTC's name of the kernel when it differs, see lp64_twin)."""
    rtc_symbol = rtc_symbol or symbol
    static_ptx, rtc_ptx = _kernel_token(static_ptx, symbol), _kernel_token(rtc_ptx, rtc_symbol)
    token = "_ZCODEMODKERNEL" if symbol.startswith("_Z") else symbol
    static_body = _entry_body(static_ptx, token)
    rtc_body = _entry_body(rtc_ptx, token if rtc_symbol.startswith("_Z") else rtc_symbol)
    names = set(_SHARED_DECL.findall(static_ptx)) | set(_SHARED_DECL.findall(rtc_ptx))
    found = []
    for name in sorted(names):
        static32 = re.search(r"mov\.u32\s+%r\d+,\s*" + re.escape(name) + r"\b", static_body)
        rtc64 = re.search(r"mov\.u64\s+%rd\d+,\s*" + re.escape(name) + r"\b", rtc_body)
        rtc32 = re.search(r"mov\.u32\s+%r\d+,\s*" + re.escape(name) + r"\b", rtc_body)
        if static32 and rtc64 and not rtc32:
            found.append(name.replace("CODEMODKERNEL", symbol[2:]))
    return found


def ptx_work_difference(static_ptx: str, rtc_ptx: str, symbol: str, rtc_symbol: str | None = None) -> str:
    """'' when the kernels' non-integer PTX (ptx_work) is the same, else the op counts that differ."""
    a, b = Counter(ptx_work(static_ptx, symbol)), Counter(ptx_work(rtc_ptx, rtc_symbol or symbol))
    if a == b:
        return ""
    more = ", ".join(f"{op} x{n}" for op, n in sorted((a - b).items())[:6])
    fewer = ", ".join(f"{op} x{n}" for op, n in sorted((b - a).items())[:6])
    return f"only in nvcc's PTX: {more or '-'}; only in NVRTC's: {fewer or '-'}"


def shared_pointer_width(static_ptx: str, rtc_ptx: str, symbol: str) -> list[str]:
    """shared_width_names, when that is the only difference: the non-integer PTX is the same."""
    if not _entry_body(static_ptx, symbol) or ptx_work_difference(static_ptx, rtc_ptx, symbol):
        return []
    return shared_width_names(static_ptx, rtc_ptx, symbol)


# ---------------------------------------------------------------------------------------------
# The static side: a generated .cu compiled with nvcc.

_LP64_TWINS = {("l", "x"), ("x", "l"), ("m", "y"), ("y", "m")}


def lp64_twin(symbol: str, functions: dict) -> str | None:
    """The one function whose mangled name differs from `symbol` only in builtin-type codes
    `l`/`x` (long / long long) or `m`/`y` (their unsigned forms): one 64-bit integer typedef
    (int64_t, uint64_t) resolved to another type by another header set (libcu++ under NVRTC,
    glibc under nvcc); the same kernel, named differently."""
    found = [name for name in functions if len(name) == len(symbol) and name != symbol
             and all(a == b or (a, b) in _LP64_TWINS for a, b in zip(name, symbol))]
    return found[0] if len(found) == 1 else None


_ANONYMOUS = re.compile(r"(\d+)_GLOBAL__N_")


def _anonymous_key(name: str) -> str:
    """The mangled name with each anonymous namespace's source name (`<len>_GLOBAL__N_...`, which
    the front end spells from the translation unit: its file name, a hash, under nvcc the first
    external function's name) replaced by one placeholder."""
    out, at = [], 0
    for match in _ANONYMOUS.finditer(name):
        if match.start() < at:
            continue
        end = match.start(1) + len(match.group(1)) + int(match.group(1))
        out += [name[at:match.start()], "<anon>"]
        at = end
    return "".join(out) + name[at:]


def anonymous_twin(symbol: str, functions: dict) -> str | None:
    """The one function whose mangled name differs from `symbol` only in the source names of
    anonymous namespaces: a kernel in `namespace { }` is mangled with its translation unit (nvcc's
    static unit vs NVRTC's program); the same kernel, named differently."""
    if "_GLOBAL__N_" not in symbol:
        return None
    key = _anonymous_key(symbol)
    found = [name for name in functions if name != symbol and "_GLOBAL__N_" in name and _anonymous_key(name) == key]
    return found[0] if len(found) == 1 else None


def original_headers(kernel: KernelEntry, source: str) -> list[str]:
    """Manifest paths of the headers the kernel string includes that are the library's own files
    (not a prelude or shim written by apply): what the static translation unit includes. A program
    that is the kernel's own header (apply writes no file only including it) is that header."""
    if kernel.headers.get(kernel.program_path) == kernel.program_path:
        return [kernel.program_path]
    out = []
    for match in re.finditer(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', source, re.M):
        name = match.group(1)
        if kernel.headers.get(name) == name:
            out.append(name)
    return out


def render_static(kernel: KernelEntry, headers: list[str], expressions: list[str]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.get_template("sass_static.cu.j2").render(kernel_id=kernel.id, headers=headers,
                                                       expressions=expressions)


def gencode(arch: str) -> list[str]:
    """`sm_100a` -> `-gencode arch=compute_100a,code=sm_100a`: SASS only, as NVRTC's cubin."""
    return ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]


def device_flags(arguments: list[str], drop: set[str]) -> list[str]:
    """Flags of a compile-database command that matter for device code (see _KEEP_*); `drop`:
    options the comparison sets itself per option set (e.g. --use_fast_math)."""
    out, it = [], iter(arguments[1:])
    for arg in it:
        if arg in drop:
            continue
        if arg in _KEEP_WITH_ARG:
            value = next(it, None)
            if value is not None:
                out += [arg, value]
        elif arg.startswith(_KEEP_PREFIX) and not arg.startswith(("-o", "-MF", "-MD", "-MM")):
            out.append(arg)
    return out


@dataclass
class StaticFlags:
    """Where the static compile's flags come from: a compile-database unit, or -I<root> + extras."""

    root: Path
    extra: list[str]
    units: list = field(default_factory=list)   # host.HostUnit from --compile-db

    def for_kernel(self, kernel: KernelEntry, headers: list[str], drop: set[str]) -> tuple[list[str], str]:
        """(flags, source description) for one kernel's static compile."""
        base = [f"-I{self.root}"]
        if self.units:
            targets = {(self.root / h).resolve() for h in headers}
            unit = _unit_including(self.units, targets)
            if unit is not None:
                flags = device_flags(unit.arguments, drop)
                flags = [_absolute(f, unit.directory) for f in flags]
                return base + flags + self.extra, f"compile database: {unit.file}"
        return base + self.extra, "-I<root>" + (" + --sass-flag" if self.extra else "")


def _absolute(flag: str, directory: str) -> str:
    for prefix in ("-I", "-isystem"):
        if flag.startswith(prefix) and len(flag) > len(prefix) and not os.path.isabs(flag[len(prefix):]):
            return prefix + str(Path(directory, flag[len(prefix):]))
    return flag


def _unit_including(units, targets: set[Path]):
    from ..frontend.parse import IncludeGraph
    from .host import _include_dirs

    graphs: dict[Path, IncludeGraph] = {}
    for unit in sorted(units, key=lambda u: u.file):
        path = Path(unit.directory, unit.file).resolve()
        root = path.parent
        graph = graphs.setdefault(root, IncludeGraph(root))
        if graph.closure(path, tuple(_include_dirs(unit)))[0] & targets:
            return unit
    return None


def compile_static(nvcc: str, source: str, flags: list[str], arch: str, work: Path) -> tuple[bytes | None, str, list[str]]:
    """(cubin or None, log, command) for the generated static unit."""
    unit = work / "static.cu"
    unit.write_text(source)
    cubin = work / "static.cubin"
    cmd = [nvcc, "-cubin", *gencode(arch), *flags, str(unit), "-o", str(cubin)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    if proc.returncode != 0 or not cubin.is_file():
        return None, proc.stderr + proc.stdout, cmd
    return cubin.read_bytes(), proc.stderr, cmd


@dataclass
class SassJob:
    program: Program
    result: ProgramResult
    kernel: KernelEntry
    manifest: Manifest


@dataclass
class SassProgram:
    """One kernel x arch x option set: its variants' results, the nvcc command, the times."""

    kernel: str
    arch: str
    config: str
    flags_source: str
    command: str
    variants: list[VariantResult]
    nvcc_seconds: float = 0.0
    compare_seconds: float = 0.0

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "arch": self.arch, "config": self.config, "flags_source": self.flags_source,
                "nvcc_command": self.command, "nvcc_seconds": round(self.nvcc_seconds, 3),
                "compare_seconds": round(self.compare_seconds, 3), "variants": [v.to_json() for v in self.variants]}


def _head(text: str, lines: int = 12) -> str:
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[:lines]) + (f"\n... ({len(kept) - lines} more lines)" if len(kept) > lines else "")


def _macro(option: str) -> str:
    """-DNAME=VALUE / -DNAME -> NAME."""
    return option[2:].split("=", 1)[0]


def run_job(job: SassJob, tools: Tools, flags: StaticFlags, static_root: Path) -> SassProgram:
    program, result, kernel = job.program, job.result, job.kernel
    drop = {c.option for c in kernel.conditional_options}
    source = job.manifest.read(kernel.program_path)
    headers = original_headers(kernel, source)
    library = LibraryFiles(static_root, job.manifest.read, kernel.headers)
    out = SassProgram(kernel=program.kernel, arch=program.arch, config=program.config, flags_source="",
                      command="", variants=[])

    def every(status: str, cls: str, detail: str) -> SassProgram:
        out.variants = [VariantResult(program.kernel, program.arch, program.config, v,
                                      result.lowered.get(v, ""), status, cls, False, detail)
                        for v in program.variants]
        return out

    if not result.ok or result.cubin is None:
        log = "\n".join(f.log_head for f in result.failures) or "no cubin"
        return every("error", "nvrtc", _head(log))
    if not headers:
        return every("error", "nvcc", "the kernel string includes no original header of the library "
                                      "(kernel defined in the string itself): no static side to compare")
    extra_options = [o for o in program.options if o in drop]
    # the build's macros (options.build_defines and defined_macros, `verify --define`) as the NVRTC
    # side got them; a compile database's own -D of the same macro gives way (a defined macro such
    # as NDEBUG that verify was not given is then undefined on both sides)
    build = [o for o in program.options if o.startswith("-D") and _macro(o) in kernel.build_macros]
    base, out.flags_source = flags.for_kernel(kernel, headers, drop)
    base = [f for f in base if not (f.startswith("-D") and _macro(f) in kernel.build_macros)]
    static_flags = base + extra_options + build
    text = render_static(kernel, [str((static_root / h).resolve()) for h in headers], program.variants)
    with tempfile.TemporaryDirectory(prefix="codemod-sass-") as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        cubin, log, cmd = compile_static(tools.nvcc, text, static_flags, program.target, work)
        out.nvcc_seconds = time.perf_counter() - start
        out.command = shlex.join([Path(cmd[0]).name] + [c.replace(tmp, "<tmp>") for c in cmd[1:]])
        if cubin is None:
            return every("error", "nvcc", _head(log))
        start = time.perf_counter()
        (work / "nvrtc.cubin").write_bytes(result.cubin)
        ptx_cache: list[str] = []

        def static_ptx() -> str:
            """nvcc's PTX of the same unit, compiled once and only when a difference needs it."""
            if not ptx_cache:
                ptx = work / "static.ptx"
                subprocess.run([tools.nvcc, "-ptx", f"-arch=compute_{program.target[3:]}", *static_flags,
                                str(work / "static.cu"), "-o", str(ptx)], capture_output=True, cwd=work)
                ptx_cache.append(ptx.read_text() if ptx.is_file() else "")
            return ptx_cache[0]
        sides = {}
        for side, path in (("nvcc", work / "static.cubin"), ("nvrtc", work / "nvrtc.cubin")):
            proc = subprocess.run([tools.nvdisasm, "-hex", str(path)], capture_output=True, text=True)
            if proc.returncode != 0:
                return every("error", "disassembler", _head(proc.stderr))
            functions, bank4 = parse_functions(proc.stdout)
            sides[side] = (functions, bank4, resource_usage(tools.cuobjdump, path),
                           string_constants(proc.stdout))
        for variant in program.variants:
            symbol = result.lowered.get(variant, "")
            res = VariantResult(program.kernel, program.arch, program.config, variant, symbol, "identical")
            static_symbol = symbol
            if symbol not in sides["nvcc"][0]:
                static_symbol = (lp64_twin(symbol, sides["nvcc"][0]) or anonymous_twin(symbol, sides["nvcc"][0])
                                 or symbol)
            missing = [side for side, name in (("nvcc", static_symbol), ("nvrtc", symbol)) if name not in sides[side][0]]
            if missing:
                res.status, res.classification = "different", "missing"
                res.detail = f"{symbol or variant} not in the {' and '.join(missing)} cubin"
                out.variants.append(res)
                continue
            (sf, sb, sr, ss), (rf, rb, rr, rs) = sides["nvcc"], sides["nvrtc"]
            static_norm = normalise(sf[static_symbol], sb, sf)
            rtc_norm = normalise(rf[symbol], rb, rf)
            res.instructions = len(rtc_norm.texts)
            res.status, res.classification, res.detail = compare_function(
                static_norm, rtc_norm, sr.get(static_symbol, ""), rr.get(symbol, ""), tools.same_release)
            if res.classification == "code":
                located = source_location(static_norm, rtc_norm, sr.get(static_symbol, ""), rr.get(symbol, ""),
                                          (sb, ss), (rb, rs), library)
                if located:
                    res.classification, res.detail = "source-location", located + "\nthe SASS:\n" + res.detail
            if static_symbol != symbol:
                note = (f"nvcc's symbol is {static_symbol}: the same kernel with `long` where NVRTC has "
                        "`long long` (LP64 64-bit integer typedefs, e.g. int64_t, from different headers)")
                if _anonymous_key(static_symbol) == _anonymous_key(symbol):
                    note = (f"nvcc's symbol is {static_symbol}: the same kernel in an anonymous namespace, "
                            "whose mangled name each front end spells from its own translation unit")
                if res.status == "identical":
                    res.status, res.classification = "identical-modulo-names", "names"
                res.detail = note + ("\n" + res.detail if res.detail else "")
            if res.status == "different" and res.classification in ("code", "resources", "attributes"):
                static, rtc = static_ptx(), result.ptx or ""
                names = shared_width_names(static, rtc, static_symbol, symbol)
                if names:
                    beyond = ptx_work_difference(static, rtc, static_symbol, symbol)
                    if not beyond:
                        res.classification = "shared-pointer-width"
                    res.detail = (f"nvcc's PTX addresses {', '.join(names)} with 32-bit shared pointers, NVRTC's "
                                  "with 64-bit generic ones; "
                                  + (f"the PTX also differs beyond address arithmetic ({beyond}); " if beyond else "")
                                  + "the SASS:\n" + res.detail)
            res.explained = res.status == "different" and res.classification in EXPLAINED
            out.variants.append(res)
        out.compare_seconds = time.perf_counter() - start
    return out


@dataclass
class SassReport:
    tools: Tools
    archs: list[str]
    programs: list[SassProgram]
    static_root: str
    seconds: float = 0.0

    @property
    def variants(self) -> list[VariantResult]:
        return [v for p in self.programs for v in p.variants]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.variants)

    def counts(self) -> dict[str, int]:
        out = {"compared": 0, "identical": 0, "identical-modulo-names": 0, "different-explained": 0,
               "different-unexplained": 0, "error": 0}
        for v in self.variants:
            out["compared"] += 1
            if v.status == "different":
                out["different-explained" if v.explained else "different-unexplained"] += 1
            else:
                out[v.status] += 1
        return out

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "ok": self.ok, "tools": self.tools.to_json(), "archs": self.archs,
                "static_root": self.static_root, "counts": self.counts(), "seconds": round(self.seconds, 3),
                "programs": [p.to_json() for p in self.programs]}


def compare_all(jobs: list[SassJob], tools: Tools, flags: StaticFlags, static_root: Path, archs: list[str],
                workers: int, progress: Callable[[str], None] | None = None) -> SassReport:
    """Compile every job's static side (threads: nvcc is a subprocess) and compare."""
    start = time.perf_counter()
    done = 0

    def one(job: SassJob) -> SassProgram:
        nonlocal done
        program = run_job(job, tools, flags, static_root)
        done += 1
        if progress:
            same = sum(v.ok for v in program.variants)
            progress(f"verify --sass: [{done}/{len(jobs)}] {job.program.label}: {same}/{len(program.variants)} "
                     f"equivalent (nvcc {program.nvcc_seconds:.1f} s)")
        return program

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        programs = list(pool.map(one, jobs))
    return SassReport(tools=tools, archs=archs, programs=programs, static_root=str(static_root),
                      seconds=time.perf_counter() - start)


def render(report: SassReport) -> str:
    """Table (kernel x option set rows, an arch per column), the differences with their diffs, a summary."""
    t = report.tools
    lines = [f"SASS equivalence: nvcc {t.nvcc_version} vs NVRTC {t.nvrtc_version} (nvdisasm {t.disassembler_version})"]
    if not t.same_release:
        lines.append(f"note: nvcc {t.nvcc_version} and NVRTC {t.nvrtc_version} are different releases: "
                     "a difference cannot be called equivalent or not; use the same major.minor")
    rows: dict[tuple[str, str], dict[str, SassProgram]] = {}
    for p in report.programs:
        rows.setdefault((p.kernel, p.config), {})[p.arch] = p
    table = [["kernel", *report.archs]]
    for (kernel, config), by_arch in rows.items():
        name = kernel if config == "default" else f"  {kernel} ({config})"
        cells = []
        for arch in report.archs:
            p = by_arch.get(arch)
            if p is None:
                cells.append("-")
                continue
            same = sum(v.status in ("identical", "identical-modulo-names") for v in p.variants)
            explained = sum(v.explained for v in p.variants)
            bad = len(p.variants) - same - explained
            cell = f"{same}/{len(p.variants)} identical"
            if explained:
                cell += f", {explained} explained"
            if bad:
                cell += f", {bad} DIFFERENT"
            cells.append(cell)
        table.append([name, *cells])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    notable = [v for v in report.variants if v.status not in ("identical",)]
    if notable:
        lines.append("")
        lines.append("differences:")
    for v in notable:
        config = "" if v.config == "default" else f" {v.config}"
        verdict = {"identical-modulo-names": "identical modulo names", "error": "ERROR"}.get(v.status, "different")
        tag = "explained" if v.explained else ("" if v.ok else "UNEXPLAINED")
        lines.append(f"- {v.kernel} [{v.arch}{config}] {v.variant}: {verdict}"
                     + (f" ({v.classification}{', ' + tag if tag else ''})" if v.classification else ""))
        lines.extend("    " + line for line in v.detail.splitlines())
    c = report.counts()
    lines.append("")
    lines.append(f"verify --sass: {c['compared']} variant-arch pair(s) compared for {', '.join(report.archs)}: "
                 f"{c['identical']} identical, {c['identical-modulo-names']} identical modulo names, "
                 f"{c['different-explained']} different (explained), {c['different-unexplained']} different "
                 f"(unexplained), {c['error']} error(s); {report.seconds:.1f} s")
    return "\n".join(lines)
