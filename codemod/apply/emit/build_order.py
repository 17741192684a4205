"""The build-order edit (`migrate.cmake.build_order`, `apply --build-log`): each TU's compile time
after the migration, predicted from a ninja log, and the N longest listed first in the target's
CMake source list when a replay of ninja's scheduling predicts a shorter build (docs/apply.md)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ApplyError, RuleError
from ..base import cmake_lists
from ..base.changeset import ChangeSet, Edit
from .generate import render
from ..base.stacking import mark

# Emit the edit only when the replay predicts the wall to fall by at least this share: below it the
# gain is inside the run-to-run noise of a real build (docs/results/te_build.md: 2-3% on one machine).
HELP_THRESHOLD = 0.01


@dataclass
class Listed:
    path: str  # as the CMake list spells it (relative to the CMake file's folder)
    step: str  # the ninja output
    seconds: float  # predicted compile time after the migration
    measured_s: float
    migrated: bool
    unfinished: bool = False  # still compiling when the build stopped: nvcc --time's phases so far


@dataclass
class BuildOrder:
    """What apply found and decided; `emitted` says whether the diff holds the edit, `reason` why not."""

    variable: str
    log: str
    nvcc_time: list[str]
    jobs: int = 0
    jobs_source: str = ""
    policy: str = ""
    policy_source: str = ""
    measured_wall_s: float = 0.0
    replayed_wall_s: float = 0.0
    without_s: float | None = None
    with_s: float | None = None
    critical_without: str | None = None
    critical_with: str | None = None
    listed: list[Listed] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # diagnostics: TUs that could not be listed
    emitted: bool = False
    reason: str = ""
    at_line: int = 0  # the add_library line the edit precedes
    at_byte: int = 0  # where that line starts in the CMake file
    migrated_log: str = ""  # the stub source that shows the log is of a migrated build (times kept)

    @property
    def gain_pct(self) -> float | None:
        if self.without_s is None or self.with_s is None or not self.without_s:
            return None
        return round(100.0 * (self.without_s - self.with_s) / self.without_s, 1)


def settings(spec) -> dict | None:
    """The rule's `migrate.cmake.build_order` (None when the rule does not opt in); the schema
    checked its shape, this checks what the schema cannot."""
    order = spec.cmake.get("build_order")
    if order is None:
        return None
    if order["variable"] == spec.cmake["target"]:
        raise RuleError(f"migrate/cmake/build_order/variable: '{order['variable']}' is the target, not a "
                        "source list", hint="name the list variable add_library() expands, e.g. "
                                            "transformer_engine_SOURCES")
    return order


def list_variable(spec) -> str:
    """The list the generated block sets (one per target: a second apply recognises its own block)."""
    return f"{spec.cmake['target']}_longest_sources"


def _object_source(name: str, target: str) -> str | None:
    """`CMakeFiles/<target>.dir/<path>.o` (under any build subfolder) -> `<path>`; None otherwise."""
    m = re.search(r"(?:^|/)CMakeFiles/" + re.escape(target) + r"\.dir/(.+)\.(?:o|obj)$", name)
    return m.group(1) if m else None


def check_cmake(root: Path, spec, variable: str) -> tuple[bytes, cmake_lists.Command, dict[str, tuple[str, int]]]:
    """(file bytes, the add_library command, literal entries of the variable's lists); refuses a
    CMake file without the variable, without add_library(<target> ...), or whose add_library does
    not expand the variable (reordering it would change nothing)."""
    path, target = spec.cmake["file"], spec.cmake["target"]
    data = (root / path).read_bytes()
    cmds = cmake_lists.commands(data)
    lib = cmake_lists.add_library(cmds, target)
    hint = "check migrate/cmake/build_order in the rule, or run without --build-log"
    if lib is None:
        raise ApplyError(f"no add_library({target} ...) to put the build order before; nothing written",
                         where=path, hint=hint)
    if not cmake_lists.defines(cmds, variable):
        raise ApplyError(f"no set({variable} ...) or list(... {variable} ...): the build-order variable is "
                         "not a list of this file; nothing written", where=path, hint=hint)
    if f"${{{variable}}}" not in [a.text for a in lib.args]:
        raise ApplyError(f"add_library({target} ...) at line {lib.line} does not expand ${{{variable}}}: "
                         "reordering that list would not change the build; nothing written",
                         where=f"{path}:{lib.line}", hint=hint)
    return data, lib, cmake_lists.list_entries(cmds, variable)


def plan(root: Path, spec, analysis, kernel_ids: set[str], build_log: Path, nvcc_times: list[Path],
         jobs: int | None = None, policy: str | None = None, cmake=None) -> BuildOrder:
    """The build order for `analysis` migrated as the plan says (`kernel_ids`). `cmake`: what
    check_cmake returned for this tree (checked here when not given). The prediction itself
    (analysis.impact, the what-if `analyze` prices: pricing.attach_impact) is made whether or not the
    rule opts in; the TUs' predicted durations and both walls are that what-if's."""
    from ...analysis.pricing import attach_impact
    from ...impact.predict import load
    from ...impact.predict import predict as predict_what_if

    loaded = load(str(build_log), [str(p) for p in nvcc_times])
    scales = attach_impact(analysis, build_log, nvcc_times, kernel_ids, jobs=jobs, policy=policy, loaded=loaded)
    order = settings(spec)
    bo = BuildOrder(order["variable"] if order else "", Path(build_log).name, [Path(p).name for p in nvcc_times])
    if order is None:
        bo.reason = "the rule has no migrate.cmake.build_order (docs/rules.md): the source lists are left as they are"
        return bo
    variable = order["variable"]
    data, lib, entries = cmake or check_cmake(root, spec, variable)
    bo.at_line, bo.at_byte = lib.line, data.rfind(b"\n", 0, lib.start) + 1
    block = f"list(PREPEND {variable} ${{{list_variable(spec)}}})"
    if block in data.decode(errors="replace"):
        bo.reason = f"already in {spec.cmake['file']}: `{block}`"
        return bo

    # one model everywhere: the headline what-if (instantiation_share) prices each TU
    scale = scales["instantiation_share"]
    migrated = set(analysis.impact.get("migrated_tus", []))
    unpriced = analysis.impact.get("unpriced_tus", [])
    if migrated and not scale:
        bo.reason = ("no compile-time prediction for the migrated TUs (the instantiation_share model needs nvcc "
                     "--time phases: pass --nvcc-time)")
        return bo

    what_if = analysis.impact["what_if"]
    cmake_dir = posixpath.dirname(spec.cmake["file"])
    stub = posixpath.relpath(posixpath.join(spec.output_dir, "kernels.cpp"), cmake_dir or ".")
    if any(_object_source(name, spec.cmake["target"]) == stub for name in loaded.steps.name):
        # NOTE: the log already compiles this migration's stub source: it is a build of the migrated
        # tree, whose TUs took what they take after the migration; scaling them again (the
        # durations and both replays) would count the migration twice
        bo.migrated_log = stub
        scale, what_if = {}, {"remove": [], "scale": {}}
    base = predict_what_if(loaded, what_if, jobs=jobs, policy=policy, max_steps=0)
    opts = base["options"]
    bo.jobs, bo.jobs_source, bo.policy, bo.policy_source = (opts["jobs"], opts["jobs_source"], opts["policy"],
                                                            opts["policy_source"])
    bo.measured_wall_s, bo.replayed_wall_s = round(base["measured_wall_s"], 1), round(base["replayed_wall_s"], 1)
    bo.without_s = round(base["predicted_wall_s"], 1)
    bo.critical_without = (base["critical"]["predicted"]["step"] or {}).get("name")
    if bo.jobs <= 0:
        bo.reason = "-j 0 (no job limit): every step starts at once, the order cannot matter"
        return bo

    # Predicted durations: migrated TUs scaled by the what-if's factor, others as measured.
    steps = loaded.steps
    candidates = []
    for k, name in enumerate(steps.name):
        src = _object_source(name, spec.cmake["target"])
        if src is None:
            continue
        measured = (int(steps.end_ms[k]) - int(steps.start_ms[k])) / 1000.0
        factor = scale.get(f"*/{posixpath.join(cmake_dir, src)}.o", 1.0)
        candidates.append((round(measured * factor, 1), name, src, measured, factor != 1.0, False))
    candidates += _unfinished(loaded, spec, cmake_dir, entries, scale, {c[2] for c in candidates})
    candidates.sort(key=lambda c: (-c[0], c[1]))
    count = order.get("count", bo.jobs)
    for seconds, name, src, measured, moved, unfinished in candidates[:None if count == "all" else count]:
        if src in entries:
            bo.listed.append(Listed(src, name, seconds, round(measured, 1), moved, unfinished))
        else:
            why = ("outside the library folder" if src.startswith("__/")
                   else f"not a literal entry of {variable} or of the lists it is built from"
                        " (added by target_sources(), a generator expression or a variable?)")
            bo.left_out.append(f"{src} ({seconds} s predicted; ninja output {name}): {why}; left out")
    if unpriced:
        bo.left_out.append("migrated TUs the log does not build (kept out of the prediction): " + ", ".join(unpriced))
    if not bo.listed:
        bo.reason = "no translation unit of the target could be matched to an entry of " + variable
        return bo
    # the replay knows only the log's steps: a unit still compiling when the build stopped is listed, not replayed
    reordered = predict_what_if(loaded, what_if, jobs=jobs, policy=policy, max_steps=0,
                                first=[item.step for item in bo.listed if not item.unfinished])
    bo.with_s = round(reordered["predicted_wall_s"], 1)
    bo.critical_with = (reordered["critical"]["predicted"]["step"] or {}).get("name")
    unfinished = [item.path for item in bo.listed if item.unfinished]
    if unfinished:
        # NOTE: the log ends before these units do, so no replay of it can price their start; a unit
        # that outlasted the recorded build is what a late start costs, and listing it first is the remedy
        bo.reason = (f"{', '.join(unfinished)} still compiling when the recorded build stopped: listed on the "
                     "phases nvcc --time recorded (a lower bound); the replay covers the logged steps only")
    elif bo.without_s - bo.with_s < HELP_THRESHOLD * bo.without_s:
        bo.reason = (f"not predicted to help: {bo.without_s} s in the current order, {bo.with_s} s with these "
                     f"TUs first (a gain under {HELP_THRESHOLD:.0%} of the wall)")
        return bo
    bo.emitted = True
    return bo


def _unfinished(loaded, spec, cmake_dir: str, entries, scale: dict, logged: set[str]) -> list[tuple]:
    """Candidates for the units a stopped build was still compiling: ninja logs a step only when it
    ends, but nvcc --time has written the phases it finished (one incomplete invocation, no
    `nvcc (driver)` row). Their sum is a lower bound on the unit's time; a long unit that a late
    start kept from finishing is exactly the one the order should move."""
    out = []
    prefix = f"CMakeFiles/{spec.cmake['target']}.dir/"
    for inv in loaded.nvcc_unmatched:
        if inv.complete:
            continue
        source = posixpath.normpath(inv.source.strip())
        matches = [e for e in entries if source == e or source.endswith("/" + e)]
        if not matches:
            continue
        src = max(matches, key=len)
        if src in logged:
            continue
        so_far = sum(inv.phase_ms().values()) / 1000.0
        factor = scale.get(f"*/{posixpath.join(cmake_dir, src)}.o", 1.0)
        out.append((round(so_far * factor, 1), prefix + src + ".o", src, so_far, factor != 1.0, True))
        logged.add(src)
    return out


def add_edit(spec, bo: BuildOrder, cs: ChangeSet) -> None:
    """The CMake block, inserted at the start of the add_library(<target> ...) line, under the
    comment naming the rule's migration that the other CMake blocks carry."""
    if not bo.emitted:
        return
    path, at = spec.cmake["file"], bo.at_byte
    text = render("build_order.cmake.j2", marker=mark(spec.rule_id), sources=[dict(path=i.path, seconds=i.seconds, unfinished=i.unfinished) for i in bo.listed],
                  log=bo.log, without_s=bo.without_s, with_s=bo.with_s, jobs=bo.jobs,
                  list_variable=list_variable(spec), variable=bo.variable)
    cs.edits.append(Edit(path, at, at, text, "build order: longest predicted TUs first"))


def kept_block(spec, current: str, regenerated: str) -> str:
    """`regenerated`, the rule's CMake file as a regeneration without a build log writes it, with the
    build-order block `current` (the tree's file) holds, at the same place: the block is data from
    a build log that the tree cannot give back, so `--check` and `--update` without `--build-log`
    keep it (with the log they write it anew). Unchanged when the tree holds no block or the
    regeneration wrote one."""
    opted = settings(spec)
    if not opted:
        return regenerated
    head = f"# {mark(spec.rule_id)}: build order.\n"
    tail = f"list(PREPEND {opted['variable']} ${{{list_variable(spec)}}})\n"
    start = current.find(head)
    end = current.find(tail, start) if start >= 0 else -1
    if end < 0 or head in regenerated:
        return regenerated
    end += len(tail)
    nxt = re.search(r"\S[^\n]*", current[end:])     # the line the block stands before (add_library)
    if nxt is None or regenerated.count(nxt.group(0)) != 1:
        return regenerated
    at = regenerated.index(nxt.group(0))
    return regenerated[:at] + current[start:end + nxt.start()] + regenerated[at:]
