"""A migration landed as a series of pull requests, measured: `python scripts/pr_series.py REPO LIB STEP...`.

REPO is a git work tree whose HEAD is the library as it was before any migration (a scratch copy:
commits are added to it); LIB the library root inside it (where `codemod apply` runs). Each STEP is
`RULE` or `RULE=K1,K2,...` (kernel ids): the first step of a rule applies it (`--only` the kernels,
if given) and commits its parts one pull request each, in the order a maintainer merges them (the
NVRTC layer part, then the disk cache part where apply writes one, then the kernels); a later step
of the same rule is `--update` (`--only` all the kernels its steps named so far, or the whole rule
for a bare RULE) committed as one more pull request. Every patch is applied with `git apply` from
the repository root, as a pull request's diff is. After the last step, `codemod apply --check` of
every rule reads the migration from git history alone (no manifest is kept).

Prints JSON: per commit the lines added, moved and reviewable (scripts/pr_lines.py), each rule's
--check exit code, and the whole series."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=series", "-c", "user.email=series@example.invalid", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout


def codemod(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True)


def commit(repo: Path, patch: Path, message: str) -> bool:
    if not patch.is_file() or not patch.stat().st_size:
        return False
    git(repo, "apply", str(patch))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return True


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    repo, lib = Path(argv[0]).resolve(), Path(argv[0]).resolve() / argv[1]
    steps = [(s.split("=", 1)[0], s.split("=", 1)[1].split(",") if "=" in s else None) for s in argv[2:]]
    named: dict[str, list[str] | None] = {}
    help_text = codemod("apply", "--help").stdout
    failures = []
    with tempfile.TemporaryDirectory(prefix="pr-series-") as tmp:
        for n, (rule, kernels) in enumerate(steps):
            out = Path(tmp) / f"{n}-{rule}"
            only = [] if kernels is None else ["--only", *((named.get(rule) or []) + kernels)]
            if rule not in named:
                parts = [("kernels", out.with_suffix(".diff"))]
                args = ["--diff", str(parts[0][1]), "--layer-diff", str(out.with_suffix(".layer.diff"))]
                parts.insert(0, ("NVRTC layer", out.with_suffix(".layer.diff")))
                if "--cache-diff" in help_text:
                    args += ["--cache-diff", str(out.with_suffix(".cache.diff"))]
                    parts.insert(1, ("disk cache", out.with_suffix(".cache.diff")))
                proc = codemod("apply", "--target", rule, str(lib), *args, *only, "--no-precheck", "-q")
            else:
                parts = [("update", out.with_suffix(".diff"))]
                proc = codemod("apply", "--target", rule, str(lib), "--update", "--diff", str(parts[0][1]), *only,
                               "--no-precheck", "-q")
            if proc.returncode != 0:
                failures.append(dict(step=n, rule=rule, code=proc.returncode, said=proc.stderr.strip()[-2000:]))
                break
            what = f" ({len(kernels)} kernel(s))" if kernels else ""
            for part, patch in parts:
                commit(repo, patch, f"{rule}: {part}{what}")
            named[rule] = None if kernels is None or (rule in named and named[rule] is None) \
                else (named.get(rule) or []) + kernels
        checks = {}
        for rule, kernels in named.items():
            only = [] if kernels is None else ["--only", *kernels]
            proc = codemod("apply", "--target", rule, str(lib), "--check", "-q", *only)
            checks[rule] = dict(code=proc.returncode, said=(proc.stdout + proc.stderr).strip()[-600:])
    lines = json.loads(subprocess.run([sys.executable, str(HERE / "pr_lines.py"), str(repo)], check=True,
                                      capture_output=True, text=True).stdout)
    series = dict(added=sum(c["added"] for c in lines), moved=sum(c["moved"] for c in lines),
                  reviewable=sum(c["reviewable"] for c in lines),
                  largest_pr=max((c["reviewable"] for c in lines), default=0))
    json.dump(dict(steps=argv[2:], commits=lines, checks=checks, series=series, failures=failures),
              sys.stdout, indent=1)
    print()
    return 1 if failures or any(c["code"] != 0 for c in checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
