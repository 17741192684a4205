"""Benchmark: the TU walk on one generated TU of N functions in one `extern "C"` block (issue 33:
10k/20k/40k took 19/79/277 s of CPU, one `clang_getCursor` per function).

    .venv/bin/python bench/analyze_functions.py [--n 10000 20000 40000] [--no-baseline]

Per N: the CPU seconds of the parse (libclang) and of the walk (`index_tu`), with the current code
and, as the baseline in the same run, with the two lookups it replaced, restored here for the
measurement only: `clang_getCursor` at each position for a macro invocation, and a search for a
launch's `<<<` to the end of the file. The facts of both must be equal. Writes bench/results/analyze_functions.{json,txt}.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import clang.cindex as ci  # noqa: E402

from codemod.frontend import locations  # noqa: E402
from codemod.frontend.clang_index import index_tu, parse_tu  # noqa: E402
from codemod.frontend.cursors import CK  # noqa: E402
from codemod.frontend.recognizers import launches  # noqa: E402
from codemod.frontend.toolchain import make_toolchain  # noqa: E402


def tu_text(n: int) -> str:
    """N C API functions in one `extern "C"` block, each launching a kernel through a macro (the
    shape of a library's API file), so that every function asks for a macro invocation."""
    head = ("#define LAUNCH(K, P) K<float><<<1, 1>>>(P)\n"
            "template <typename T> __global__ void k(T *p) { p[0] = 1; }\n"
            'extern "C" {\n')
    return head + "".join(f"void api_{i}(float *p) {{ LAUNCH(k, p); }}\n" for i in range(n)) + "}\n"


def legacy_macro_instantiation(self, fname: str, off: int):
    """The lookup before issue 33: `clang_getCursor` at the position (the baseline)."""
    if not self.files.in_project(fname):
        return None
    f = self.tu.get_file(fname)
    c = ci.Cursor.from_location(self.tu, ci.SourceLocation.from_offset(self.tu, f, off))
    if c is None or c.kind != CK.MACRO_INSTANTIATION:
        return None
    mf, line, _, moff = self.file_loc(c.location)
    if moff != off:
        return None
    m = {"name": c.spelling, "file": mf, "line": line, "offset": moff}
    d = c.referenced
    if d is not None and d.kind == CK.MACRO_DEFINITION:
        df, _, _, doff = self.file_loc(d.extent.start)
        _, _, _, dend = self.file_loc(d.extent.end)
        if df and self.files.in_project(df):
            m["def"] = (df, doff, dend)
    return m


def legacy_chevron_texts(text: str, off: int):
    """The search before issue 33: `<<<` anywhere after `off` (the baseline)."""
    i = text.find("<<<", off)
    j = text.find(">>>", i + 3) if i >= 0 else -1
    if i < 0 or j < 0 or text.find(";", off, i) >= 0:
        return None
    return current_chevron_texts(text, off)


current_chevron_texts = launches.chevron_texts


def measure(root: Path, flags: list[str], baseline: bool) -> tuple[dict, dict]:
    current = locations.Locator._macro_instantiation
    if baseline:
        locations.Locator._macro_instantiation = legacy_macro_instantiation
        launches.chevron_texts = legacy_chevron_texts
    try:
        c0 = time.process_time()
        tu, _ = parse_tu(root / "api.cu", root, flags)
        c1 = time.process_time()
        facts = index_tu(tu, root)
        c2 = time.process_time()
    finally:
        locations.Locator._macro_instantiation = current
        launches.chevron_texts = current_chevron_texts
    sites = sum(len(f["sites"]) for f in facts["functions"].values())
    return ({"parse_cpu_s": round(c1 - c0, 2), "walk_cpu_s": round(c2 - c1, 2), "total_cpu_s": round(c2 - c0, 2),
             "functions": len(facts["functions"]), "sites": sites}, facts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[10000, 20000, 40000])
    ap.add_argument("--no-baseline", action="store_true", help="measure the current lookup only")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "analyze_functions")
    args = ap.parse_args()
    flags = make_toolchain([]).base_flags()
    rows = []
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "api.cu").write_text(tu_text(n))
            after, facts = measure(root, flags, baseline=False)
            row = {"n": n, "after": after, "load": round(os.getloadavg()[0], 2)}
            if not args.no_baseline:
                before, old = measure(root, flags, baseline=True)
                row["before"] = before
                row["same_facts"] = json.dumps(old, sort_keys=True) == json.dumps(facts, sort_keys=True)
        rows.append(row)
        print(json.dumps(row), flush=True)
    doc = {"bench": "analyze_functions", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
           "target": "40k functions <= 30 s CPU", "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"{'N':>6}  {'before walk s':>13}  {'after walk s':>12}  {'after total s':>13}  same facts"]
    for r in rows:
        b = r.get("before", {})
        lines.append(f"{r['n']:>6}  {b.get('walk_cpu_s', '-'):>13}  {r['after']['walk_cpu_s']:>12}  "
                     f"{r['after']['total_cpu_s']:>13}  {r.get('same_facts', '-')}")
    args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
