"""A target repository's own checks on a patched tree: `git apply --check` from the repository root,
its license checker (TE: qa/L0_license/copyright_checker.py, called as qa/L0_license/test.sh does)
and the hooks of its .pre-commit-config.yaml, run directly at their pinned versions (pre-commit
itself would fetch the hook repositories from the network). By hand:
`python -m tests.apply.target_checks REPO PATCH` (REPO: a clean git checkout; it gets patched)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from codemod.apply.emit.style import find_clang_format

# pre-commit-hooks ids -> their module (the console script's entry point)
PRE_COMMIT_HOOKS = {
    "check-merge-conflict": "check_merge_conflict",
    "check-added-large-files": "check_added_large_files",
    "end-of-file-fixer": "end_of_file_fixer",
    "trailing-whitespace": "trailing_whitespace_fixer",
}
PYTHON_ONLY = {"black", "vermin"}    # hooks on Python files only
C_TYPES = re.compile(r"\.(c|cc|cxx|cpp|cu|cuh|h|hpp)$")


@dataclass
class Check:
    name: str
    status: str        # "ok", "failed", "skipped"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.name}: {self.status}" + (f" ({self.detail.strip()[:2000]})" if self.detail else "")


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def _hook_files(hook: dict, files: list[str]) -> list[str]:
    pattern = hook.get("files")
    out = [f for f in files if pattern is None or re.search(pattern, f)]
    if "python" in hook.get("types", []) or hook["id"] in PYTHON_ONLY:
        out = [f for f in out if f.endswith(".py")]
    return out


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def pre_commit_checks(repo: Path, files: list[str]) -> list[Check]:
    """Each hook of the repository's pre-commit config on `files` (paths relative to `repo`)."""
    config = repo / ".pre-commit-config.yaml"
    if not config.is_file():
        return []
    checks = []
    for entry in yaml.safe_load(config.read_text()).get("repos", []):
        url, rev = entry.get("repo", ""), str(entry.get("rev", "")).lstrip("v")
        for hook in entry.get("hooks", []):
            hid = hook["id"]
            mine = _hook_files(hook, files)
            name = f"pre-commit {hid} ({url.rsplit('/', 1)[-1]} {rev})"
            if not mine:
                checks.append(Check(name, "ok", "no file of the patch matches the hook"))
            elif hid in PRE_COMMIT_HOOKS and url.endswith("pre-commit/pre-commit-hooks"):
                have = _version("pre-commit-hooks")
                if have != rev:
                    checks.append(Check(name, "skipped", f"pre-commit-hooks {rev} not installed (found {have})"))
                    continue
                r = _run([sys.executable, "-m", f"pre_commit_hooks.{PRE_COMMIT_HOOKS[hid]}", *hook.get("args", []),
                          *mine], repo)
                checks.append(Check(name, "ok" if r.returncode == 0 else "failed", r.stdout + r.stderr))
            elif hid == "clang-format":
                exe, found = find_clang_format(rev)
                if exe is None:
                    checks.append(Check(name, "skipped", f"clang-format {rev} not installed (found {found})"))
                    continue
                # the hook's entry is `clang-format -i -style=file`: --dry-run reports what -i would change
                r = _run([exe, *hook.get("args", []), "--dry-run", "-Werror", *mine], repo)
                checks.append(Check(name, "ok" if r.returncode == 0 else "failed", r.stderr))
            elif hid in PYTHON_ONLY:
                checks.append(Check(name, "failed", f"{len(mine)} Python files in the patch: no runner here"))
            else:
                checks.append(Check(name, "failed", "unknown hook: add a runner to tests/apply/target_checks.py"))
    return checks


def license_check(repo: Path) -> list[Check]:
    checker = repo / "qa" / "L0_license" / "copyright_checker.py"
    if not checker.is_file():
        return []
    r = _run([sys.executable, str(checker), str(repo)], repo)
    # the checker prints "Entering DIR", "Checking NAME", then a verdict per file
    bad, folder, name = [], "", ""
    for line in (re.sub(r"\x1b\[[0-9;]*m", "", x) for x in r.stdout.splitlines()):
        if line.startswith("Entering "):
            folder = line[len("Entering "):]
        elif line.startswith("Checking "):
            name = line[len("Checking "):]
        elif line.startswith("No "):
            bad.append(f"{Path(folder, name).relative_to(repo)}: {line}")
    return [Check("qa/L0_license copyright_checker.py", "ok" if r.returncode == 0 else "failed", "\n".join(bad))]


def run_checks(repo: Path, patch: Path) -> list[Check]:
    """Apply `patch` to the clean git checkout `repo` from its root, stage it, and run its checks."""
    r = _run(["git", "apply", "--check", str(patch)], repo)
    checks = [Check("git apply --check (repository root)", "ok" if r.returncode == 0 else "failed", r.stderr)]
    if r.returncode != 0:
        return checks
    _run(["git", "apply", str(patch)], repo)
    _run(["git", "add", "-A"], repo)
    files = _run(["git", "diff", "--cached", "--name-only", "--diff-filter=AM"], repo).stdout.split()
    return checks + license_check(repo) + pre_commit_checks(repo, files)


def main(argv: list[str] | None = None) -> int:
    repo, patch = (Path(a).resolve() for a in (argv or sys.argv[1:]))
    checks = run_checks(repo, patch)
    for c in checks:
        print(c)
    return 0 if all(c.status == "ok" for c in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
