"""Compile chosen translation units of a configured build with their own commands (its
compile_commands.json), each to a scratch object, and record the result per unit as JSON: the
host-side proof that a patched library compiles, without building all of it.

    python scripts/compile_units.py --compile-db BUILD/compile_commands.json --json OUT.json \
        [--root SRC] [-j N] FILE...

FILE is a path relative to --root (default: the common prefix of the database's files) or a glob
over those paths (`normalization/*`). Exit 0 when every chosen unit compiled, 1 otherwise, 2 when a
FILE matches no unit.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def _command(entry: dict, obj: str) -> list[str]:
    cmd = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    cmd = list(cmd)
    if "-o" in cmd:
        cmd[cmd.index("-o") + 1] = obj
    else:
        cmd += ["-o", obj]
    return cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compile-db", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--root")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    with open(args.compile_db) as f:
        db = json.load(f)
    paths = [os.path.normpath(os.path.join(e["directory"], e["file"])) for e in db]
    root = os.path.normpath(args.root) if args.root else os.path.commonpath(paths)
    rel = [os.path.relpath(p, root) for p in paths]
    chosen = []
    for pattern in args.files:
        hits = [i for i, r in enumerate(rel) if r == pattern or fnmatch.fnmatch(r, pattern)]
        if not hits:
            print(f"compile_units: {pattern}: no unit in {args.compile_db}", file=sys.stderr)
            return 2
        chosen += [i for i in hits if i not in chosen]

    scratch = tempfile.mkdtemp(prefix="compile_units-")

    def one(i: int) -> dict:
        entry = db[i]
        cmd = _command(entry, os.path.join(scratch, f"{i}.o"))
        start = time.perf_counter()
        run = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        seconds = time.perf_counter() - start
        status = "ok" if run.returncode == 0 else "FAILED"
        print(f"compile_units: {rel[i]}: {status} in {seconds:.1f} s", flush=True)
        return {"file": rel[i], "ok": run.returncode == 0, "seconds": round(seconds, 1),
                "compiler": os.path.basename(cmd[0]),
                "log": (run.stderr or run.stdout)[-4000:] if run.returncode else ""}

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, chosen))
    with open(args.json, "w") as f:
        json.dump({"schema": "compile-units/1", "compile_db": os.path.basename(args.compile_db),
                   "units": results, "ok": all(r["ok"] for r in results)}, f, indent=1)
        f.write("\n")
    failed = [r["file"] for r in results if not r["ok"]]
    print(f"compile_units: {len(results) - len(failed)} of {len(results)} compiled"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
