"""Review by change set (`codemod apply --interactive`): one change set per migrated kernel (its
kernel string, stub, launch rewrites, guards and CMake lines), summarised and accepted or declined
one by one. The accepted set then goes through the same plan as `--only`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from ..errors import UsageError
from .emit.generate import generate
from .emit.texts import apply_edits
from .write.patch import line_counts, unified_diff
from .plan.plan import Plan

DECLINED = "declined interactively"
NOT_REVIEWED = "declined interactively (not reviewed: quit before it)"

HELP = """y - migrate this kernel
n - leave this kernel static
a - migrate this kernel and all the remaining ones
d - show this change set's diff, then ask again
q - quit: leave this kernel and all the remaining ones static (earlier answers stand)
? - this help"""

KEYS = "ynadq"


@dataclass
class FileChange:
    path: str
    added: int
    removed: int
    new: bool
    shared: bool = False      # other change sets touch this file too


@dataclass
class ChangeSetView:
    """One kernel's change set, as if it were migrated alone."""
    kernel: str
    variants: int
    sites: int
    instantiations: int
    files: list[FileChange] = field(default_factory=list)
    diff: str = ""

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)


def change_sets(root: Path, plan: Plan, version: str, formatted: bool = True) -> list[ChangeSetView]:
    """One view per kernel of the plan: the patch of that kernel alone, with per-file line counts;
    files that several change sets touch (the stubs, CMake, shared headers) are marked."""
    views = []
    for kp in plan.kernels:
        alone = replace(plan, kernels=[kp], skipped=[], removed_instantiations=kp.kernel.instantiations)
        files = apply_edits(root, generate(root, alone, version, formatted)[1])
        view = ChangeSetView(kp.kernel.id, len(kp.variants), sum(1 for s in kp.sites if s.kind == "launch"),
                             kp.kernel.instantiations, diff=unified_diff(files))
        for path, (old, new) in files.items():
            view.files.append(FileChange(path, *line_counts(old, new), new=old is None))
        views.append(view)
    touched: dict[str, int] = {}
    for v in views:
        for f in v.files:
            touched[f.path] = touched.get(f.path, 0) + 1
    for v in views:
        for f in v.files:
            f.shared = touched[f.path] > 1
    return views


def render_summary(view: ChangeSetView, index: int, total: int) -> str:
    lines = [f"change set {index}/{total}: {view.kernel}: {view.variants} variants, {view.sites} launch "
             f"site{'s' if view.sites != 1 else ''}, {view.instantiations} static instantiations removed"]
    width = max(len(f.path) for f in view.files) if view.files else 0
    for f in view.files:
        counts = f"+{f.added}" + (f" -{f.removed}" if f.removed else "")
        lines.append(f"  {'new ' if f.new else 'edit'}  {f.path:<{width}}  {counts:>12}"
                     + ("  (shared)" if f.shared else ""))
    lines.append(f"  {len(view.files)} files, +{view.added} -{view.removed} if migrated alone"
                 + ("; (shared) files also change with other change sets" if any(f.shared for f in view.files) else ""))
    return "\n".join(lines)


class Answers:
    """Where the answers come from: a terminal (an unknown key shows the help and asks again) or a
    script given with --answers (one key per line, blank lines and `#` comments skipped; an unknown
    key is an error). The prompts, summaries and diffs go to `out` either way."""

    def __init__(self, source: TextIO, out: TextIO, scripted: bool):
        self.source, self.out, self.scripted = source, out, scripted
        self.line = 0

    def ask(self, prompt: str, kernel: str) -> str:
        while True:
            self.out.write(f"{prompt} [y,n,a,d,q,?] ")
            self.out.flush()
            raw = self.source.readline()
            self.line += 1
            if not raw:
                self.out.write("\n")
                raise UsageError(f"no answer for {kernel}: the answers ended; nothing was written",
                                 hint="answer every change set with y/n/a/d/q, or choose with --only/--exclude")
            key = raw.strip().lower()
            if self.scripted:
                if not key or key.startswith("#"):
                    continue
                self.out.write(key + "\n")
                if key not in KEYS:
                    raise UsageError(f"answer {key!r} (line {self.line}) for {kernel} is not one of y/n/a/d/q; "
                                     "nothing was written")
                return key
            if key in KEYS:
                return key
            self.out.write(HELP + "\n")


def review(views: list[ChangeSetView], answers: Answers) -> dict[str, str]:
    """Kernel id -> why it stays static, for every change set not accepted."""
    out = answers.out
    declined: dict[str, str] = {}
    accept_rest = quit_ = False
    for i, view in enumerate(views, 1):
        if accept_rest:
            continue
        if quit_:
            declined[view.kernel] = NOT_REVIEWED
            continue
        out.write(render_summary(view, i, len(views)) + "\n")
        while True:
            key = answers.ask(f"Migrate {view.kernel}?", view.kernel)
            if key != "d":
                break
            out.write(view.diff)
        if key == "n":
            declined[view.kernel] = DECLINED
        elif key == "q":
            declined[view.kernel] = DECLINED
            quit_ = True
        elif key == "a":
            accept_rest = True
    accepted = len(views) - len(declined)
    out.write(f"review: {accepted} of {len(views)} change sets accepted"
              + (f", {len(declined)} declined" if declined else "") + "\n")
    out.flush()
    return declined
