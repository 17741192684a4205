"""The verify report: one table row per kernel (and option set) with a column per arch, the host
compile, every failure with its log head, a summary line; and the `codemod-verify/1` JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .host import HostReport
from .programs import ProgramResult

SCHEMA = "codemod-verify/1"


@dataclass
class VerifyReport:
    manifests: list[str]
    archs: list[str]
    all_variants: bool
    nvrtc_version: str
    jobs: int
    programs: list[ProgramResult]
    host: HostReport
    seconds: float
    kernels: int = 0
    variants_total: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.programs) and self.host.ok

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "ok": self.ok, "manifests": self.manifests, "archs": self.archs,
                "all_variants": self.all_variants, "nvrtc_version": self.nvrtc_version, "jobs": self.jobs,
                "seconds": round(self.seconds, 3), "kernels": self.kernels, "variants_total": self.variants_total,
                "programs": [p.to_json() for p in self.programs], "host": self.host.to_json(), "notes": self.notes}


_REASONS = {"lowered_name": "nvrtcGetLoweredName failed", "variant": "NVRTC compile failed",
            "compile": "NVRTC compile failed"}


def hint_for(log: str) -> str:
    """The next step for failures whose cause is known from the log."""
    match = re.search(r"unrecognized option (\S+)", log)
    if match:
        return (f"NVRTC does not accept {match.group(1)} (an nvcc-only option); "
                "drop it from the rule's NVRTC options and re-run `codemod apply`")
    if "cannot open source file" in log and "(not bundled: from the CUDA include dirs) wants" in log:
        return ("a CUDA toolkit header wants a host header that NVRTC does not provide: keep that include "
                "out of the kernel string (a rule shim for it, a `__CUDACC_RTC__` guard, or the kernel's "
                "device code in a header of its own)")
    if "cannot open source file" in log:
        return "a header is neither bundled in the manifest's `headers` nor in the CUDA include dirs"
    if "host functions are not allowed in JIT mode" in log or "__host__ function is not allowed" in log:
        return "host-only code reached the kernel string; guard it with `#ifndef __CUDACC_RTC__`"
    return ""


def _cell(result: ProgramResult | None) -> str:
    if result is None:
        return "-"
    target = f" as {result.target}" if result.target else ""   # the rule's arch_targets chose it
    if result.ok:
        return f"ok {result.seconds:.2f} s{target}"
    return f"FAIL ({len(result.failures) + (1 if result.unisolated else 0)}) {result.seconds:.2f} s{target}"


def render(report: VerifyReport, verbose: bool = False) -> str:
    lines = []
    rows: dict[tuple[str, str], dict[str, ProgramResult]] = {}
    for result in report.programs:
        rows.setdefault((result.kernel, result.config), {})[result.arch] = result
    header = ["kernel", "variants"] + report.archs
    table = [header]
    for (kernel, config), by_arch in rows.items():
        any_result = next(iter(by_arch.values()))
        name = kernel if config == "default" else f"  {kernel} ({config})"
        table.append([name, f"{any_result.variants}/{any_result.variants_total}"]
                     + [_cell(by_arch.get(a)) for a in report.archs])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())

    if verbose and report.programs:
        lines.append("")
        lines.append("NVRTC programs, slowest first (wall s, CPU s):")
        for p in sorted(report.programs, key=lambda p: (-p.seconds, p.kernel, p.arch, p.config)):
            config = "" if p.config == "default" else f" ({p.config})"
            lines.append(f"  {p.seconds:8.2f} {p.cpu_seconds:8.2f}  {p.kernel}{config} {p.arch}: {p.variants} variant(s) "
                         + ("ok" if p.ok else "FAILED"))

    host = report.host
    lines.append("")
    if host.status == "skipped":
        lines.append(f"host code: skipped: {host.reason}")
    elif host.status == "environment" and not host.results:
        lines.append(f"host code: NOT CHECKED, the build environment stopped it: {host.reason.splitlines()[0].rstrip(':')}")
    elif not host.results:
        lines.append(f"host code: FAILED: {host.reason.splitlines()[0].rstrip(':')}")
    else:
        configured = f", CMake configure {host.configure_seconds:.1f} s" if host.configure_seconds else ""
        lines.append(f"host code ({host.compiler}{configured}):")
        width = max(len(r.file) for r in host.results)
        for r in host.results:
            lines.append(f"  {r.file.ljust(width)}  {'ok' if r.ok else 'FAIL'} {r.seconds:.1f} s")

    failures = [(p, f) for p in report.programs for f in p.failures]
    if failures or host.status == "failed":
        lines.append("")
        lines.append("failures:")
    # The same failure usually repeats for every arch, option set and variant: print each log once.
    grouped: dict[tuple, tuple[list, list]] = {}
    for program, failure in failures:
        variants, where = grouped.setdefault((program.kernel, failure.reason, failure.log_head), ([], []))
        config = "" if program.config == "default" else f" {program.config}"
        if f"{program.arch}{config}" not in where:
            where.append(f"{program.arch}{config}")
        if failure.variant not in variants:
            variants.append(failure.variant)
    for (kernel, reason, log_head), (variants, where) in grouped.items():
        head = f"- {kernel} [{', '.join(where)}]: "
        if variants == [None]:
            lines.append(head + f"kernel string (without any name expression): {_REASONS[reason]}")
        elif len(variants) == 1:
            lines.append(head + f"variant {variants[0]}: {_REASONS[reason]}")
        else:
            lines.append(head + f"{_REASONS[reason]} for {len(variants)} variants, with the same log:")
            lines.extend(f"    variant {v}" for v in variants)
        lines.extend("    " + line for line in log_head.splitlines())
        hint = hint_for(log_head)
        if hint:
            lines.append(f"    hint: {hint}")
    for program in report.programs:
        if program.unisolated:
            lines.append(f"- {program.kernel} [{program.arch}]: {program.unisolated} more variant(s) in failing "
                         f"groups not isolated (first {len(program.failures)} shown)")
    if host.status == "failed" and not host.results:
        reason = host.reason.splitlines()
        lines.append(f"- host: {reason[0]}")
        lines.extend("    " + line for line in reason[1:])
    if host.status == "failed":
        for r in host.results:
            if not r.ok:
                lines.append(f"- host {r.file}: compile failed")
                lines.extend("    " + line for line in r.log_head.splitlines())
    if host.status == "environment":
        lines.append("")
        lines.append("build environment (not the generated code):")
        if host.missing:
            lines.append(f"- missing: {', '.join(host.missing)}")
        if host.results:
            lines.extend(f"- host {r.file}: stopped at a missing header" for r in host.results if not r.ok)
            first = next(r for r in host.results if not r.ok)
            lines.extend("    " + line for line in first.log_head.splitlines())
        else:
            lines.extend("    " + line for line in host.reason.splitlines()[1:])
        lines.append(f"- remedy: {host.remedy}")
    for note in report.notes:
        lines.append(f"note: {note}")
    lines.append("")
    lines.append(summary(report))
    return "\n".join(lines)


def summary(report: VerifyReport) -> str:
    checked = sum(p.variants for p in report.programs if p.config == "default" and p.arch == report.archs[0])
    how = "every variant" if report.all_variants else "greedy cover of every axis value; --all-variants for all"
    failed = [p for p in report.programs if not p.ok]
    kernels = (f"verify: {report.kernels} kernel(s), {checked} of {report.variants_total} variants ({how}), "
               f"{len(report.programs)} NVRTC program(s) for {', '.join(report.archs)}")
    nvrtc = f"{len(failed)} FAILED" if failed else "all compiled"
    lacking = ", ".join(report.host.missing) or "see above"
    host = {"passed": f"host: {len(report.host.results)} unit(s) compiled", "skipped": "host: skipped",
            "failed": "host: FAILED", "environment": f"host: not checked (build environment: {lacking})"
            }[report.host.status]
    slowest = max(report.programs, key=lambda p: p.seconds, default=None)
    slow = f" (slowest {slowest.kernel} {slowest.arch} {slowest.seconds:.1f} s)" if slowest and len(report.programs) > 1 else ""
    line = f"{kernels}: {nvrtc}{slow}; {host}; {report.seconds:.1f} s"
    generated_ok = not failed and report.host.status != "failed"
    if generated_ok and report.host.status == "environment":
        line += (". The generated code compiled with NVRTC; the host check needs the build environment fixed "
                 "(see `build environment` above) and `codemod verify` rerun")
    elif not report.ok:
        line += ". Fix the generated code (or the rule) and rerun `codemod verify`"
    return line
