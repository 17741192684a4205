"""One-off: SASS equivalence of TE's migrated kernels, one rule at a time (docs/results/te_sass*).

Applies rules/RULE.yaml (default: activation) to a scratch copy of $TE_SOURCE_DIR (without its
submodules), then runs `codemod verify --sass` with TE's own Release flags and, as the static side,
the original checkout, or the patched copy for a rule that moves kernels out of a .cu (`--static
patched`: the original has no header to include; the moved code is compared with the .cu it left,
line by line, and what differs is recorded). Usage (from the repository root):

    TE_SOURCE_DIR=/path/to/TransformerEngine python scripts/te_sass.py [--arch sm_90 --arch sm_100a]
        [--kernel ID ... --name te_sass_blackwell]   # only those kernels, into docs/results/NAME.json
        [--rule transpose --static patched --name te_sass_transpose]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codemod import strict_json  # noqa: E402
from codemod.cli import main  # noqa: E402

# TE's CMakeLists (transformer_engine/common) for a Release build: CMAKE_CUDA_STANDARD 17,
# --expt-relaxed-constexpr and -O3 in CMAKE_CUDA_FLAGS, -O3 -DNDEBUG from the Release flags, the
# public compile definitions; include dirs: common/include and common/.. (the `transformer_engine`
# folder). The common folder itself is added by verify (-I<static root>). NDEBUG reaches the NVRTC
# side as `verify --define NDEBUG=1` (the rules' options.defined_macros), as TE's Release stubs pass it.
TE_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-O3", "-DNDEBUG", "-DNVTE_BUILD_NUM_PHILOX_ROUNDS=10",
            "-DNV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING"]
# util/logging.h includes these host-only headers for its error macros; this machine has no
# cuBLAS / cuDNN / NCCL. Empty stand-ins let the static unit parse; device code cannot see them.
HOST_STUBS = ("cublas_v2.h", "cudnn.h", "nccl.h")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True).stdout.strip()


def te_commit(te: Path, given: str) -> str:
    """--te-commit when given (a copy committed anew has its own commits), else the checkout's own
    commit; a checkout inside another repository (no .git) needs --te-commit."""
    if given:
        return given
    if git("rev-parse", "--show-toplevel", cwd=te) == str(te.resolve()):
        return git("rev-parse", "--short", "HEAD", cwd=te)
    return given or "unknown"


CLASSES = {
    "identical": "the same SASS, encodings and resources",
    "identical-modulo-names": "the same code; the kernel's mangled name differs in one 64-bit integer typedef "
                              "(`int64_t` is `long` under nvcc, `long long` under NVRTC), or in the name of its "
                              "anonymous namespace (each front end spells it from its own translation unit)",
    "shared-pointer-width": "nvcc's PTX addresses a `__shared__` variable with 32-bit shared-window pointers, "
                            "NVRTC 13.0's with 64-bit generic ones; the rest of the kernel's PTX (every "
                            "non-integer instruction and float constant) is the same",
    "source-location": "only where a device-side error message says it is: `__LINE__` moved by the lines the "
                       "migration inserted above the kernel, `__FILE__` (absolute path vs header name) and "
                       "`__func__` (bare under nvcc, qualified under NVRTC) spelled otherwise",
    "relocation": "a field the loader patches (a constant-bank slot) at another offset",
}

# Lines of a moved header that are apply's own, not device code of the unit: the header's comment,
# guard and include block, the stub include.
_OWN_LINE = re.compile(r"^(#\s*(ifndef|ifdef|define|endif|include|if|else)\b|//)")


def moved_code_check(patched: Path, original: Path) -> list[dict]:
    """For each `<stem>_kernels.cuh` apply wrote next to a unit (device code moved out of the .cu):
    its code lines (stripped, apply's own comment, guard and include lines aside) that the
    original unit does not hold. The static side compiles the moved code; these lines are where it
    is not the original's."""
    out = []
    for header in sorted(patched.rglob("*_kernels.cuh")):
        rel = header.relative_to(patched)
        unit = original / rel.parent / (rel.name[: -len("_kernels.cuh")] + ".cu")
        if not unit.is_file() or (original / rel).exists():
            continue
        held = collections.Counter(line.strip() for line in unit.read_text().splitlines())
        code = [line.strip() for line in header.read_text().splitlines() if line.strip()]
        code = [line for line in code if not _OWN_LINE.match(line)]
        out.append({"header": str(rel), "unit": str(rel.parent / unit.name), "code_lines": len(code),
                    "not_in_unit": [line for line in code if held[line] == 0]})
    return out


def _summary(variants: list[dict]) -> str:
    """'3 identical, 2 shared-pointer-width' for one program's variants."""
    counts: dict[str, int] = {}
    for v in variants:
        key = v["status"] if v["status"] != "different" else (v["classification"] or v["status"])
        if v["status"] == "different" and not v.get("explained"):
            key = f"{key} UNEXPLAINED"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def render_markdown(r: dict, name: str) -> str:
    """docs/results/NAME.md from the JSON this script writes."""
    s = r["sass"]
    c, tools = s["counts"], s["tools"]
    rows: dict[tuple[str, str], dict[str, list]] = {}
    for p in s["programs"]:
        rows.setdefault((p["kernel"], p["config"]), {}).setdefault(p["arch"], []).extend(p["variants"])
    archs = r["archs"]
    rule = Path(r["rule"]).stem
    patched = r.get("static_side", "original") == "patched"
    options = (["--rule", rule] if rule != "activation" else []) + (["--static", "patched"] if patched else [])
    configs = sorted({config for _, config in rows})
    static_side = ("the patched copy as the static side (the rule moves the kernels out of their .cu into "
                   "`<stem>_kernels.cuh`, which the original does not have; below, how the moved code "
                   "differs from the original's)" if patched else "the original checkout as the static side")
    lines = [
        f"# TE {rule} rule: SASS equivalence of every migrated kernel, nvcc static build vs NVRTC", "",
        f"TE {r['te_commit']}, `{r['rule']}` applied to a scratch copy, then `codemod verify --sass` (codemod "
        f"{r['codemod_commit']}) with {static_side}; {r['machine']}; {r['date']}. "
        f"Machine-readable: `{name}.json` (every variant: symbol, verdict, class, diff excerpt). Reproduce: "
        "`TE_SOURCE_DIR=<TE checkout> python scripts/te_sass.py --te-commit d0067d0 "
        + " ".join(options + ["--name", name]) + "`.", "",
        f"- **Toolchains**: nvcc {tools['nvcc_version']} (static side), NVRTC {tools['nvrtc_version']}, "
        f"disassembler {tools['nvdisasm_version']}; same release: {tools['same_release']}.",
        "- **Static side**: one nvcc unit per kernel, arch and option set including the kernel's "
        + ("headers in the patched copy (the moved `<stem>_kernels.cuh`)" if patched else "original headers")
        + " (and what the rule's `include_first` puts before them), taking each covered variant's "
        "address; flags: `" + " ".join(r["static_flags"]) + "`"
        + (" (+ `--use_fast_math` for the fast-math set)." if len(configs) > 1 else "."),
        "- **NVRTC side**: the kernel strings, headers and options of the manifest, as the stubs pass them for "
        "a Release build (`--define NDEBUG=1`: the rules' `options.defined_macros`; nvcc gets the same value).",
        f"- **Cover**: the greedy cover of every axis value per kernel; "
        + ("both option sets" if len(configs) > 1 else "the rule's one option set (no conditional options)")
        + f"; {', '.join(archs)}.", "",
        "## Result", "",
        f"**{c['compared']} variant-arch pairs: {c['identical']} identical, {c['identical-modulo-names']} identical "
        f"modulo names, {c['different-explained']} different with the cause named, "
        f"{c['different-unexplained']} unexplained, {c['error']} errors** (verify exit {r['verify_exit_code']}; "
        f"NVRTC programs all compiled: {r['nvrtc_programs_ok']}). SASS part {s['seconds']:.0f} s, NVRTC "
        f"{r['nvrtc_seconds']:.0f} s summed.", "",
        "| kernel | option set | variants | " + " | ".join(archs) + " |",
        "|---|---|---:|" + "---|" * len(archs),
    ]
    short = collections.Counter(kernel.split("::")[-1] for kernel in {k for k, _ in rows})
    for (kernel, config), by_arch in rows.items():
        n = max(len(v) for v in by_arch.values())
        cfg = "default" if config == "default" else "fast math"
        shown = kernel.split("::")[-1]
        if short[shown] > 1:   # two kernels of one name in different namespaces
            shown = kernel.removeprefix("transformer_engine::")
        lines.append(f"| `{shown}` | {cfg} | {n} | "
                     + " | ".join(_summary(by_arch.get(a, [])) for a in archs) + " |")
    lines += ["", "## The classes", ""]
    seen = {v["classification"] or v["status"] for p in s["programs"] for v in p["variants"]} \
        | {v["status"] for p in s["programs"] for v in p["variants"]}
    lines += [f"- **{k}**: {text}." for k, text in CLASSES.items() if k in seen or k == "identical"]
    lines += ["", "docs/verify.md (SASS equivalence) says what each class checks and what it does not.", ""]
    for title, text in r.get("notes", {}).items():   # written by hand into the JSON, after the run
        lines += [f"## {title}", "", text, ""]
    if r.get("moved_code"):
        lines += ["## The static side's code against the original", "",
                  "The static unit includes the headers apply wrote (`<stem>_kernels.cuh`: the unit's device code "
                  "moved out of the .cu). Their code lines (apply's own comment, guard and include lines aside) "
                  "that the original unit does not hold, stripped of indentation:", "",
                  "| moved header | from | code lines | not in the original unit |", "|---|---|---:|---|"]
        for m in r["moved_code"]:
            differ = "<br>".join(f"`{line}`" for line in m["not_in_unit"]) or "none"
            lines.append(f"| `{m['header']}` | `{m['unit']}` | {m['code_lines']} | {differ} |")
        lines.append("")
    return "\n".join(lines)


def main_script(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", action="append", default=[])
    parser.add_argument("--rule", default="activation", help="rules/RULE.yaml, applied with --target RULE")
    parser.add_argument("--static", choices=("original", "patched"), default="original",
                        help="static side: the original checkout, or the patched copy (kernels moved out of a .cu)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "results")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--kernel", action="append", default=[], help="only this migrated kernel id (repeatable)")
    parser.add_argument("--name", default="te_sass", help="result file stem under --out")
    parser.add_argument("--markdown", type=Path, metavar="JSON",
                        help="only write the markdown beside JSON (a result this script wrote)")
    parser.add_argument("--te-commit", default=os.environ.get("TE_COMMIT", ""),
                        help="TE commit to record when the checkout is not a git repository of its own")
    args = parser.parse_args(argv)
    if args.markdown:
        args.markdown.with_suffix(".md").write_text(render_markdown(json.loads(args.markdown.read_text()),
                                                                    args.markdown.stem))
        print(f"wrote {args.markdown.with_suffix('.md')}")
        return 0
    te = Path(os.environ.get("TE_SOURCE_DIR", ""))
    if not (te / "transformer_engine" / "common").is_dir():
        print("set TE_SOURCE_DIR to a TransformerEngine checkout", file=sys.stderr)
        return 2
    archs = args.arch or ["sm_90", "sm_100a"]
    original = (te / "transformer_engine" / "common").resolve()
    from codemod.verify import nvrtc

    lib = nvrtc.load()
    with tempfile.TemporaryDirectory(prefix="te-sass-") as tmp:
        work = Path(tmp)
        common = work / "transformer_engine" / "common"
        # the whole checkout but its submodules: the rule also edits and reads files above the library
        # (docs/envvars.rst, tests/cpp/operator, the style file)
        shutil.copytree(te, work, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".git", "3rdparty", "build", "*.so"))
        git("init", "-q", cwd=work)
        git("add", "-A", cwd=work)
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=work)
        if main(["apply", "--target", args.rule, str(common), "--write", "-q"]) != 0:
            return 1
        moved = moved_code_check(common, original)
        # the static root and the include dirs of its headers: one tree, never a mix (a patched
        # header includes `common/common.h`, which must be the patched one)
        static = original if args.static == "original" else common
        stubs = work / "host-stubs"
        stubs.mkdir()
        for name in HOST_STUBS:
            (stubs / name).write_text("/* empty: host-only API, unused by device code */\n")
        # util/logging.h also includes <nvrtc.h>: the NVRTC wheel's own header.
        header = next(d / "nvrtc.h" for d in lib.include_dirs if (d / "nvrtc.h").is_file())
        shutil.copy(header, stubs / "nvrtc.h")
        flags = TE_FLAGS + [f"-I{static / 'include'}", f"-I{static.parent}", f"-I{stubs}"]
        report = work / "verify.json"
        argv = ["verify", str(common), "--no-host", "--sass", "--static-root", str(static), "-j", str(args.jobs),
                "-q", "--json", str(report), "--define", "NDEBUG=1"] + [f"--arch={a}" for a in archs] + [f"--sass-flag={f}" for f in flags] \
            + [f"--kernel={k}" for k in args.kernel]
        rc = main(argv)
        doc = json.loads(report.read_text())
    sass = doc["sass"]
    root = "$TE_SOURCE_DIR" if args.static == "original" else "<patched copy>"
    sass["static_root"] = sass["static_root"].replace(str(static.parent.parent), root)
    for program in sass["programs"]:
        program["nvcc_command"] = program["nvcc_command"].replace(str(static.parent.parent), root)
        program["nvcc_command"] = program["nvcc_command"].replace(tmp, "<tmp>")
    result = {
        "schema": "codemod-te-sass/1",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"CPU machine ({os.cpu_count()} cores, {platform.machine()}), no GPU",
        "codemod_commit": git("rev-parse", "--short", "HEAD", cwd=REPO),
        "te_commit": te_commit(te, args.te_commit),
        "rule": f"rules/{args.rule}.yaml",
        "static_side": args.static,
        "moved_code": moved,
        "archs": archs,
        **({"kernels": args.kernel} if args.kernel else {}),
        "static_flags": TE_FLAGS
        + [f"-I{root}/transformer_engine/common/include", f"-I{root}/transformer_engine",
           "-I<host stubs: empty " + ", ".join(HOST_STUBS) + "; the NVRTC wheel's nvrtc.h>"],
        "verify_exit_code": rc,
        "nvrtc_programs_ok": all(p["ok"] for p in doc["programs"]),
        "nvrtc_seconds": round(sum(p["seconds"] for p in doc["programs"]), 1),
        "sass": sass,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(strict_json.dumps(result, "TE SASS result", indent=1) + "\n")
    (args.out / f"{args.name}.md").write_text(render_markdown(result, args.name))
    print(f"wrote {args.out / f'{args.name}.json'} and .md: {sass['counts']} (verify exit {rc})")
    return 0


if __name__ == "__main__":
    sys.exit(main_script())
