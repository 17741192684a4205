"""`codemod apply`: CLI wiring. Dry run (diff) by default, --write all-or-nothing and crash-safe under the
tree lock, --check for CI (content checked against the manifest's hashes)."""

from __future__ import annotations

import contextlib
import io
from .. import strict_json
import subprocess
import sys
from pathlib import Path

from ..errors import ApplyError, PartlyMigrated, UsageError
from ..text import printable, printable_lines
from ..impact.options import POLICIES, add_deprecated_jobs, ninja_jobs


def add_parser(sub) -> None:
    p = sub.add_parser("apply", help="generate the NVRTC migration patch for a rule's kernels",
                       description="Generate the NVRTC migration for --target's kernels: a unified diff "
                                   "on stdout by default.")
    p.add_argument("directory", nargs="?", default=".", help="library root (default: .)")
    p.add_argument("--target", required=True, help="rule name (rules/NAME.yaml) or rule file path")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", type=Path, metavar="FILE", help="write the diff to FILE (report beside it)")
    mode.add_argument("--write", action="store_true", help="apply the changes to the tree (all or nothing)")
    mode.add_argument("--check", action="store_true", help="exit 1 when changes are pending")
    p.add_argument("--layer-diff", type=Path, metavar="FILE",
                   help="with --diff: the shared NVRTC layer's changes (stub runtime, disk cache, std names) go "
                        "to FILE, a patch of their own to apply first; --diff then holds only the rule's")
    p.add_argument("--cache-diff", type=Path, metavar="FILE",
                   help="with --layer-diff: the NVRTC layer's disk cache (nvrtc_layer.cache) goes to FILE, a patch "
                        "of its own applied after --layer-diff's and before --diff's")
    p.add_argument("--update", action="store_true",
                   help="on a migrated tree: regenerate the migration (after a kernel or rule change) and show, "
                        "write (--write) or check (--check) only the files that change")
    p.add_argument("--only", nargs="+", default=None, metavar="K", help="migrate only these kernels")
    p.add_argument("--exclude", nargs="+", default=None, metavar="K", help="leave these kernels static")
    p.add_argument("-i", "--interactive", action="store_true",
                   help="review one change set per kernel and answer y/n/a/d/q (needs a terminal on stdin)")
    p.add_argument("--answers", metavar="FILE",
                   help="the --interactive answers, one per line, from FILE ('-': stdin); implies --interactive")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write an HTML page: the files changed, the fan-out removed, the predicted build")
    p.add_argument("--allow-dirty", action="store_true",
                   help="--write even when tracked files under DIR have uncommitted changes")
    p.add_argument("--force", action="store_true",
                   help="--write replaces read-only files too (their mode is kept)")
    p.add_argument("--no-format", action="store_true",
                   help="leave generated files as the templates render them (no clang-format)")
    p.add_argument("--report", type=Path, metavar="FILE", help="where to write the migration report")
    p.add_argument("--no-precheck", action="store_true",
                   help="do not compile the generated kernel strings with NVRTC before writing the diff or tree")
    p.add_argument("--build-log", type=Path, metavar="LOG",
                   help=".ninja_log of a clean build: predict each TU after the migration and, when the rule "
                        "has migrate.cmake.build_order, list the longest first in the CMake source list")
    p.add_argument("--nvcc-time", type=Path, action="append", default=[], metavar="CSV",
                   help="with --build-log: nvcc --time CSV (repeatable)")
    p.add_argument("--ninja-jobs", type=int, default=None, metavar="N",
                   help="with --build-log: ninja's -j for the replay and the number of TUs listed first "
                        "(default: the log's peak concurrency)")
    add_deprecated_jobs(p)
    p.add_argument("--policy", choices=sorted(POLICIES), default=None,
                   help="with --build-log: ninja scheduling policy of the replay (default: from the log version)")
    p.add_argument("--compile-db", type=Path, default=None, metavar="FILE",
                   help="compile_commands.json: include paths, defines and the language standard of the parses, "
                        "as for `codemod analyze`")
    p.set_defaults(run=run)


def compute(root: Path, target: str, only=None, exclude=None, version: str | None = None, progress=None,
            review=None, formatted: bool = True, build_log: Path | None = None, nvcc_times=(),
            jobs: int | None = None, policy: str | None = None, update: bool = False, regenerate: bool = False,
            later: frozenset = frozenset(), compile_db: Path | None = None):
    """(files, report text, migration) for a tree, through the stages once: plan (build_plan: a frozen
    Plan), emit (an Emission: the change set and the formatted files), check.reach (the units outside
    the analysis that the rewrites reach), then the write stage's Migration; `migration.manifest` is
    the migration's manifest, kept outside the tree (`write_migration`). On a migrated tree (its
    manifest found, or its generated code recognised): with the manifest and without `update`, files is
    empty when every file it records holds the migrated content (otherwise PartlyMigrated names those
    that do not); else the migration is regenerated from the tree un-migrated (`_regenerate`; also with
    the manifest when `regenerate`, as --check does) and files holds what differs (`update`), or
    PartlyMigrated names it. `review(views) -> {kernel id: reason}` decides per kernel change set
    (--interactive); the declined kernels leave the plan the way --exclude does. `build_log` (with
    `nvcc_times`, `jobs`, `policy`): predict the build and add the rule's build-order edit
    (build_order.py). `later`: the rules migrated after this one (a regeneration; stacking.py).
    `compile_db`: the library's compile_commands.json, read by the analysis (its language standard for
    every parse)."""
    from .. import __version__
    from ..analysis.analyze import analyze
    from ..rule import load_rule

    from .check.reach import reach
    from .emit import build_order
    from .emit.emission import emit
    from .emit.generate import manifest
    from .plan import arch_policy
    from .plan.spec import check_selection, migrate_spec
    from .write import migrated
    from .write.migration import Migration
    from .write.report import render_report

    if build_log is not None and not Path(build_log).is_file():
        raise UsageError(f"build log not found: {build_log}")
    rule = load_rule(target)
    spec = migrate_spec(rule)
    arch_policy.resolve(root, spec)     # options.arch_targets_from: the table from the library's CMake
    check_selection(spec, only, exclude)
    for note in migrated.ignored_in_tree(root, spec):
        print(f"codemod: note: {note}", file=sys.stderr)
    found = migrated.find(root, spec)
    if found and migrated.untouched(root, found[2]):
        found = None                    # stored before a write that did not happen: no migration here
    stubs = migrated.recognised(root, spec)
    if update and review is not None:
        raise UsageError("--update regenerates the whole migration; --interactive chooses a new one",
                         hint="use --update alone (or with --only/--exclude)")
    # the other rules' manifests, read once for the hash check and the regeneration
    others = migrated.other_manifests(root, spec.rule_id) if found or stubs else []
    if found:
        _, where, doc = found
        problems, note = migrated.check(root, doc, where, others)
        if problems:
            raise PartlyMigrated(
                f"partly migrated: {where} records the migration of rule {spec.rule_id}, but {len(problems)} "
                "file(s) do not hold what it records: " + ", ".join(problems),
                hint="`codemod apply --update` regenerates them; or return those files (or the whole migration) "
                     "to their state before it, e.g. with `git checkout`/`git clean`, and apply again")
        done = f"already migrated: {where} records the migration and the tree holds it{note}"
        if not (update or regenerate):
            return {}, done + "\n", None
    if found or stubs:
        try:
            return _regenerate(root, target, spec, found[2] if found else None, update, stubs, others,
                               dict(only=only, exclude=exclude, version=version, progress=progress,
                                    formatted=formatted, build_log=build_log, nvcc_times=nvcc_times, jobs=jobs,
                                    policy=policy, compile_db=compile_db))
        except migrated.Unmigratable as exc:
            if update or not found:
                raise
            # --check with the manifest: its hashes hold; regenerating needs the tree un-migrated
            return {}, f"{done}; not regenerated: {exc.render()}\n", None
    order = build_order.settings(spec) if build_log is not None else None
    cmake = build_order.check_cmake(root, spec, order["variable"]) if order else None   # refuse before analysing
    analysis = analyze(root, [rule], compile_db=compile_db, progress=progress)
    _check_units_read(analysis, spec)
    version = version or __version__
    plan = _plan(root, analysis, spec, only, exclude, review, version, formatted, progress)
    if not plan.kernels:
        from .base.changeset import ChangeSet
        return {}, render_report(Migration(plan), ChangeSet(), {}), Migration(plan)
    bo = prediction = None
    if build_log is not None:
        if progress:
            progress(f"apply: predicting the build from {build_log.name}")
        bo = build_order.plan(root, spec, analysis, {kp.kernel.id for kp in plan.kernels}, build_log,
                              list(nvcc_times), jobs, policy, cmake)
        prediction = analysis.impact
    if progress:
        progress(f"apply: generating the migration of {len(plan.kernels)} kernel(s): kernel strings, stubs, "
                 "launch-site rewrites, CMake")
    emission = emit(root, plan, version, formatted, later, order=bo, progress=progress)
    for note in emission.changes.notes:
        if note.startswith("warning: "):
            print(printable_lines(note), file=sys.stderr)
    reached = reach(root, rule, analysis, emission, compile_db=compile_db, progress=progress)
    recorded = migrated.record(emission.files, manifest(emission.plan, version, reached.variants), emission.layer)
    migration = Migration(emission.plan, recorded, emission.layer, reached.units, reached.variants, bo, prediction,
                          emission.layer_only)
    return emission.files, render_report(migration, emission.changes, emission.files), migration


def _plan(root: Path, analysis, spec, only, exclude, review, version: str, formatted, progress):
    """The plan stage, entered once per selection: the rule's kernels as --only/--exclude choose
    them; with --interactive, once more with the kernels the review declined left out."""
    from .plan.plan import build_plan

    plan = build_plan(root, analysis, spec, only=only, exclude=exclude, progress=progress)
    if review is None or not plan.kernels:
        return plan
    from .review import change_sets

    if progress:
        progress(f"apply: preparing {len(plan.kernels)} change sets for review")
    declined = review(change_sets(root, plan, version, formatted))
    return build_plan(root, analysis, spec, only=only, exclude=exclude, declined=declined) if declined else plan


def _check_units_read(analysis, spec) -> None:
    """Stop (ParseError naming it) when a translation unit of migrate.translation_units has errors in
    the library's files or could not be read: a unit clang could not read (UTF-16, unreadable) has
    no instantiations, and one with parse errors may have lost some, so migrating its kernels would
    drop the variants only it reaches. Errors only in toolkit or third-party headers do not stop it.
    The message names the first error in the library's files, else what clang said."""
    from ..errors import ParseError

    wanted = set(spec.translation_units)
    broken = [tu for tu in analysis.translation_units if tu.file in wanted and tu.errors]
    if not broken:
        return
    tu = broken[0]
    units = {t.file for t in analysis.translation_units}
    # errors of the unit, of a library header, or unlocated (an unreadable file); not those in
    # toolkit or third-party headers (plan._incomplete: they do not stop a migration), nor another
    # analysed unit's
    errors = [d for d in analysis.diagnostics if d.severity == "error" and
              (not d.file or (not d.file.startswith("/") and (d.file in wanted or d.file not in units)))]
    if not errors:
        return
    located = [d for d in errors if d.file]
    first = next((d for d in located if d.file == tu.file), located[0] if located else None)
    more = f" (and {len(broken) - 1} more unit(s) the rule migrates)" if len(broken) > 1 else ""
    if first is not None:
        raise ParseError(f"{tu.errors} parse error(s) in this translation unit the rule migrates, first "
                         f"{first.file}:{first.line}: {first.message}{more}; nothing done", where=tu.file,
                         hint="fix them (`codemod analyze` lists them), or leave the unit out of "
                              "migrate.translation_units")
    said = next((d.message for d in errors if not d.file), None)
    why = f" ({said})" if said else ""
    raise ParseError(f"clang could not read this translation unit the rule migrates{why}{more}; nothing done",
                     where=tu.file,
                     hint="convert it to UTF-8 and check that it is readable (`codemod analyze` lists "
                          "its errors), or leave it out of migrate.translation_units")


def _regenerate(root: Path, target: str, spec, doc: dict | None, update: bool, stubs: str | None,
                others: list[dict], kwargs: dict):
    """The migration of a migrated tree, regenerated: the tree un-migrated (migrated.unmigrated: the
    manifest's record, else git's), copied to a scratch folder, migrated there as a fresh tree would
    be. Files: what differs from the tree now (`update`: to write; else PartlyMigrated names them,
    or nothing when the tree holds exactly the regenerated migration)."""
    import tempfile

    from .write import migrated

    from .emit.style import target_style

    # the real tree's style: the scratch copy below holds the library, not the repository's
    # .clang-format or pre-commit pin, and would be formatted otherwise than `--write` formatted it
    kwargs = dict(kwargs, formatted=target_style(root, kwargs.get("formatted", True)))
    # every stored manifest read once; without a manifest, git's record adds the rules stacked later
    overlay, source, later = migrated.unmigrated(root, spec, doc, migrated.later_rules(root, spec.rule_id, others),
                                                 layer_of=lambda commit: _layer_before(root, target, spec, commit,
                                                                                       kwargs))
    kwargs = dict(kwargs, later=later)
    progress = kwargs.get("progress")
    if progress:
        progress(f"apply: regenerating the migration of rule {spec.rule_id} from the tree un-migrated ({source})")
    with tempfile.TemporaryDirectory(prefix="codemod-update-") as tmp:
        # the overlay's paths were checked against the tree (migrated.unmigrated); and stay in the copy
        scratch = _scratch(root, spec, Path(tmp) / "tree", overlay)
        fresh, report, migration = compute(scratch, target, **kwargs)
    desired = {path: new for path, (_, new) in fresh.items()}
    dropped = sorted(p for p, text in overlay.items() if text is None and p not in desired and (root / p).exists())
    if dropped:
        raise ApplyError(f"the regenerated migration no longer creates {len(dropped)} file(s) the tree holds: "
                         + ", ".join(dropped), hint="remove them (they are generated), then run `codemod apply "
                         "--update` again")
    for path, text in overlay.items():
        if text is not None and path not in desired:
            desired[path] = text          # edited by the old migration, not by the new one
    cmake_file = (spec.cmake or {}).get("file")      # none for a setuptools library
    if kwargs.get("build_log") is None and cmake_file and cmake_file in desired and (root / cmake_file).is_file():
        from .emit import build_order
        desired[cmake_file] = build_order.kept_block(spec, (root / cmake_file).read_bytes().decode(),
                                                     desired[cmake_file])
    files = {}
    for path, want in sorted(desired.items()):
        have = (root / path).read_bytes().decode() if (root / path).is_file() else None
        if have != want:
            files[path] = (have, want)
    if not update:
        where = stubs or spec.output_dir
        if files:
            raise PartlyMigrated(
                f"migrated by rule {spec.rule_id} ({where}), but regenerating the migration ({source}) changes "
                f"{len(files)} file(s): " + ", ".join(files),
                hint="`codemod apply --update` shows the regenerated files; with --write it writes them")
        return {}, (f"already migrated: {where} is generated by rule {spec.rule_id}, and regenerating the "
                    f"migration ({source}) gives the tree's content\n"), migration
    return files, report, migration


def _layer_before(root: Path, target: str, spec, commit: str, kwargs: dict) -> dict[str, str | None]:
    """The shared NVRTC layer's part of the migration that git's `commit` holds, as a migration of
    that commit's parent writes it: path -> text after the layer part, None for a file it creates
    (migrated.unmigrated keeps it; the manifest records it as `layer`). The tree of the parent is a scratch
    copy with every file git changed since put back as it was then."""
    import tempfile

    from .write import migrated

    progress = kwargs.get("progress")
    if progress:
        progress(f"apply: the NVRTC layer's part of rule {spec.rule_id}'s commit {commit[:12]}, from its parent")
    with tempfile.TemporaryDirectory(prefix="codemod-layer-") as tmp:
        # files git changed outside what a migration reads stay out of the copy
        scratch = _scratch(root, spec, Path(tmp) / "tree", migrated.changed_since(root, f"{commit}^"), outside=False)
        _, _, migration = compute(scratch, target, **dict(kwargs, later=frozenset(), progress=None, build_log=None,
                                                          nvcc_times=()))
    layer = migration.layer if migration is not None else {}
    return {path: None if before is None else after for path, (before, after) in layer.items()}


def _scratch(root: Path, spec, copy: Path, texts: dict[str, str | None] | None = None, outside: bool = True) -> Path:
    """A copy of what a migration reads, for a regeneration: the folder holding the root and every
    include folder of the rule, and the files above it the rule edits (migrate.docs), at their places
    below `copy`; then `texts` (path from the root -> text, None: removed) written over it, a path
    leaving the copy an ApplyError (`outside`) or passed over. The root's path in the copy."""
    import os
    import shutil

    from .write import migrated

    top = root.resolve()
    dirs = [top] + [(top / d).resolve() for d in spec.include_dirs]
    base = Path(os.path.commonpath([str(d) for d in dirs]))
    extra = [(top / p).resolve() for p in spec.repo_files()]
    anchor = Path(os.path.commonpath([str(base)] + [str(f.parent) for f in extra]))
    shutil.copytree(base, copy / base.relative_to(anchor), symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".codemod", "__pycache__", ".codemod-cache",
                                                  migrated.LEGACY_NAME))
    for f in extra:
        if f.is_file() and not f.is_relative_to(base):
            (copy / f.relative_to(anchor)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, copy / f.relative_to(anchor))
    scratch = copy / top.relative_to(anchor)
    for path, text in (texts or {}).items():
        at = Path(os.path.normpath(scratch / path))
        if not at.is_relative_to(copy):
            if outside:
                raise ApplyError("the migration's record names a file outside the tree; nothing done", where=path)
            continue
        if text is None:
            at.unlink(missing_ok=True)
        else:
            at.parent.mkdir(parents=True, exist_ok=True)
            at.write_bytes(text.encode())
    return scratch


def write_migration(root: Path, files: dict, migration, force: bool = False) -> Path | None:
    """Write the migration's files and store its manifest outside the tree (tool_state.manifest_path)
    in one journaled transaction (patch.write_all): a write interrupted or refused leaves both as
    they were, so an interrupted `--update` leaves the manifest of the migration the tree still
    holds. The manifest's path, None when there is none."""
    from ..tool_state import manifest_path
    from .write import migrated
    from .write.patch import write_all

    stored = None
    if migration is not None and migration.manifest:
        stored = manifest_path(root, migration.spec.rule_id)
        if not files:
            migrated.write(root, migration.spec.rule_id, migration.manifest)
    if files:
        write_all(root, files, force=force, manifest=(stored, migration.manifest) if stored else None)
    return stored


def _answers(args):
    """The --interactive answer source, or None. Refused (exit 2) when stdin is not a terminal and
    no --answers was given: a pipe or /dev/null must not answer for a reviewer by accident."""
    from .review import Answers

    if not (args.interactive or args.answers is not None):
        return None
    if args.check:
        raise UsageError("--interactive chooses what to write; --check only reports",
                         hint="use --check with --only/--exclude")
    if args.answers is None:
        if not sys.stdin.isatty():
            raise UsageError("--interactive needs a terminal on stdin",
                             hint="to script it, pipe the answers and add --answers -, one of y/n/a/d/q "
                                  "per line; or choose with --only/--exclude")
        return Answers(sys.stdin, sys.stderr, scripted=False)
    if args.answers == "-":
        return Answers(sys.stdin, sys.stderr, scripted=True)
    try:
        return Answers(io.StringIO(Path(args.answers).read_text()), sys.stderr, scripted=True)
    except OSError as exc:
        raise UsageError(f"cannot read --answers {args.answers}: {exc.strerror}") from None


def _dirty(root: Path) -> list[str]:
    """Tracked files under root with uncommitted changes; [] outside a git work tree."""
    try:
        proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
                              cwd=root, capture_output=True, text=True)
    except OSError:
        return []
    return [line[3:] for line in proc.stdout.splitlines()] if proc.returncode == 0 else []


def _output_paths(args) -> dict[str, Path]:
    """--diff and --report (or the report beside --diff) -> path, checked before any analysis. The
    CLI has checked the options' folders (cli.check_outputs); the report beside --diff shares that
    folder, so only a path naming a folder is left to refuse here."""
    out = {}
    if args.layer_diff and not args.diff:
        raise UsageError("--layer-diff needs --diff (the rule's own patch, applied after it)")
    if args.layer_diff and args.update:
        raise UsageError("--layer-diff splits a first migration; an --update is one patch (--diff), the NVRTC "
                         "layer's changes included",
                         hint="drop --layer-diff: the update's --diff applies on the migrated tree as it is")
    if args.cache_diff and not args.layer_diff:
        raise UsageError("--cache-diff needs --layer-diff (the layer's patch, applied before it)")
    if args.diff:
        out["--diff"] = args.diff
    if args.layer_diff:
        out["--layer-diff"] = args.layer_diff
    if args.cache_diff:
        out["--cache-diff"] = args.cache_diff
    report = args.report or (args.diff.with_suffix(args.diff.suffix + ".report.md") if args.diff else None)
    if report:
        out["--report"] = report
    for flag, path in out.items():
        if path.is_dir():
            raise UsageError(f"{flag} {path} is a folder", hint="name a file")
    return out


def repo_location(root: Path) -> tuple[Path | None, str]:
    """(the git repository's top folder, root's path inside it ending in `/`, or ""); (None, "")
    outside a git work tree. The diff's paths carry that prefix so that `git apply` works from the
    repository root, where git runs it (from a subfolder it skips the files outside it silently)."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True)
        pre = subprocess.run(["git", "rev-parse", "--show-prefix"], cwd=root, capture_output=True, text=True)
    except OSError:
        return None, ""
    if top.returncode != 0 or pre.returncode != 0:
        return None, ""
    return Path(top.stdout.strip()), pre.stdout.strip()


def _write_output(flag: str, path: Path, text: str) -> None:
    """Whole or nothing (temp file + rename): a full disk leaves the previous file, not a truncated one."""
    from .write.journal import atomic_write

    try:
        atomic_write(path, text.encode())
    except OSError as exc:
        raise UsageError(f"cannot write {flag} {path}: {exc.strerror}",
                         hint="nothing was written to it (a previous file is unchanged); free space or choose "
                              "another path") from None


def run(args) -> int:
    root = Path(args.directory)
    if not root.is_dir():
        raise UsageError(f"no such directory: {root}")
    with contextlib.ExitStack() as held:
        _recover_and_lock(root, args.write, held)
        return _run(args, root)


def _recover_and_lock(root: Path, write: bool, held: contextlib.ExitStack) -> None:
    """--write holds the tree lock to the end; any mode first rolls back what an interrupted write
    left (journal.recover) and says so."""
    from .write import journal

    journal.check_legacy(root)
    if not (write or journal.pending(root)):
        return
    held.enter_context(journal.tree_lock(root))
    note = journal.recover(root)
    if note:
        print(printable_lines(f"codemod: {note}"), file=sys.stderr, flush=True)
    if not write:
        held.close()


def _run(args, root: Path) -> int:
    from .emit.texts import after_layer
    from .write.patch import unified_diff
    from .review import review

    outputs = _output_paths(args)
    answers = _answers(args)
    if args.write and not args.allow_dirty:
        dirty = _dirty(root)
        if dirty:
            raise UsageError(f"uncommitted changes in {len(dirty)} tracked file(s) under {root}: "
                             + ", ".join(dirty[:3]) + (", ..." if len(dirty) > 3 else ""),
                             hint="commit or stash them so the migration can be reviewed and reverted "
                                  "on its own, or pass --allow-dirty")
    progress = None if args.quiet else (lambda m: print(printable_lines(m), file=sys.stderr, flush=True))
    chooser = None if answers is None else (lambda views: review(views, answers))
    jobs = ninja_jobs(args)
    if args.compile_db is not None and not args.compile_db.is_file():
        raise UsageError(f"compile database not found: {args.compile_db}")
    if args.build_log is None and (args.nvcc_time or jobs is not None or args.policy):
        raise UsageError("--nvcc-time, --ninja-jobs and --policy need --build-log")
    try:
        files, report, migration = compute(root, args.target, args.only, args.exclude, progress=progress,
                                      review=chooser, formatted=not args.no_format, build_log=args.build_log,
                                      nvcc_times=args.nvcc_time, jobs=jobs, policy=args.policy,
                                      update=args.update, regenerate=args.check, compile_db=args.compile_db)
    except PartlyMigrated as exc:
        if not args.check:
            raise
        print(f"pending: {printable(exc.render())}", file=sys.stderr)
        return 1
    if files and not args.check and not args.no_precheck:
        _precheck(root, files, migration, progress)
    top, prefix = repo_location(root)
    layer = migration.layer if args.layer_diff and migration is not None else {}
    diff = unified_diff(after_layer(files, layer) if layer else files, prefix)
    report_path = outputs.get("--report")
    if report_path:
        _write_output("--report", report_path, report)
    summary = _summary(files, migration, report_path)
    if migration is not None and migration.prediction:
        from ..analysis.pricing import prediction_line

        print(f"apply: {prediction_line(migration.prediction)}", file=sys.stderr)
    if args.html:
        from ..report.html import render_apply_html

        _write_output("--html", args.html, render_apply_html(root, args.target, files, migration, summary))
    if args.check:
        done = report.splitlines()[0] if not files and report.startswith("already migrated") else "nothing to do"
        print(printable(summary if files else done), file=sys.stderr)
        return 1 if files else 0
    if args.write:
        stored = write_migration(root, files, migration, force=args.force)
        kept = f" Manifest (outside the tree): {stored}." if stored else ""
        if not files:
            print(printable(f"{summary}; nothing written" + (f".{kept}" if kept else "")), file=sys.stderr)
            return _exit_code(migration)
        print(printable(f"{summary}; written.{kept} Next: build, then `codemod verify {root}`."), file=sys.stderr)
        return _exit_code(migration)
    if args.diff:
        diffs = [args.diff]
        if layer:
            only = migration.layer_only() if args.cache_diff else layer
            cache = after_layer(layer, only)
            if only:
                _write_output("--layer-diff", args.layer_diff, unified_diff(only, prefix))
            if cache:
                _write_output("--cache-diff", args.cache_diff, unified_diff(cache, prefix))
            diffs[:0] = [*([args.layer_diff] if only else []), *([args.cache_diff] if cache else [])]
            summary += (f"; the NVRTC layer's part ({len(only)} files): {args.layer_diff}" if only
                        else f"; no NVRTC layer change but its disk cache ({args.layer_diff} not written)")
            if args.cache_diff:
                summary += (f"; its disk cache ({len(cache)} files): {args.cache_diff}" if cache
                            else f"; no disk cache change ({args.cache_diff} not written)")
        elif args.layer_diff:
            summary += f"; no NVRTC layer change ({args.layer_diff} not written)"
        _write_output("--diff", args.diff, diff)
        if migration is not None and migration.manifest:
            _write_output("--diff", manifest_beside(args.diff), migration.manifest)
        if migration is not None and migration.prediction:
            what_if = {"what_if": migration.prediction["what_if"]}
            _write_output("--diff", what_if_beside(args.diff),
                          strict_json.dumps(what_if, "the what-if", indent=1, sort_keys=True) + "\n")
            summary += f"; what-if for `codemod impact --what-if`: {what_if_beside(args.diff)}"
        print(printable(f"{summary}; diff: {args.diff}" + (f". Next: {_apply_hint(top, *diffs)}" if files else "")),
              file=sys.stderr)
    else:
        sys.stdout.write(diff)  # NOTE: file contents as they are (CRLF kept): `git apply` reads it
        print(printable(summary), file=sys.stderr)
    return _exit_code(migration)


def _exit_code(migration) -> int:
    """1 when the rule's kernels exist but none was migrated (each left static, the report says
    why): an apply that changes nothing for them is no success to a script or CI."""
    if migration is not None and not migration.kernels and migration.skipped:
        print(f"codemod: error: no kernel migrated: the rule's {len(migration.skipped)} kernel(s) all stay static "
              "(reasons under \"Left static\" in the report); fix the rule or exclude them", file=sys.stderr)
        return 1
    return 0


def _apply_hint(top: Path | None, *diffs: Path) -> str:
    """The commands that apply the diffs, in order: from the repository root, whose paths they carry
    (`git apply --check` of the second needs the first applied)."""
    if top is None:
        return " && ".join(f"git apply {d}" for d in diffs) + " (from the library root)"
    return " && ".join(f"git -C {top} apply --check {d.resolve()} && git -C {top} apply {d.resolve()}"
                       for d in diffs)


def what_if_beside(diff: Path) -> Path:
    """Where `--diff FILE --build-log LOG` puts the priced what-if (`codemod impact LOG --what-if` reads it)."""
    return diff.with_suffix(diff.suffix + ".what_if.json")


def manifest_beside(diff: Path) -> Path:
    """Where `--diff FILE` puts the migration's manifest (verify reads it with --manifest)."""
    return diff.with_suffix(diff.suffix + ".manifest.json")


def _precheck(root: Path, files: dict, migration, progress) -> None:
    """Refuse (nothing written) when a generated kernel string does not compile under NVRTC, or
    kernels.h does not as a unit's first include (self_contained.py)."""
    from ..tool_state import manifest_path
    from .check.precheck import BLACKWELL_ARCH, BLACKWELL_MIN, precheck

    if migration is None or not migration.manifest:
        return
    blackwell = {kp.kernel.id for kp in migration.kernels if (kp.kernel.body_arch_min or 0) >= BLACKWELL_MIN}
    if progress:
        also = f"; {BLACKWELL_ARCH} for the {len(blackwell)} kernel(s) whose body needs it" if blackwell else ""
        progress(f"apply: compiling the generated kernel strings with NVRTC (sm_90{also}, the name expressions "
                 "of a cover of the variants)")
    problems, note = precheck(root, files, [(manifest_path(root, migration.spec.rule_id), migration.manifest)],
                              blackwell, progress)
    if note:
        print(printable_lines(f"note: {note}"), file=sys.stderr)
    if problems:
        raise ApplyError(f"{len(problems)} generated kernel string(s) do not compile under NVRTC; nothing "
                         "written:\n" + "\n".join(problems),
                         hint="leave those kernels static with --exclude, fix the rule, or pass --no-precheck "
                              "to write the migration anyway")
    from .check.self_contained import kernels_h_errors

    units = [u for u in migration.spec.translation_units if (root / u).is_file()]
    if progress:
        progress(f"apply: parsing the rule's {len(units)} translation unit(s) as migrated, for errors in "
                 f"{migration.spec.output_dir}/kernels.h, its sections and the rewritten lines")
    errors = kernels_h_errors(root, migration.spec.output_dir, migration.spec.include_dirs, files, units=units,
                              progress=progress)
    if errors:
        raise ApplyError(f"{migration.spec.output_dir}/kernels.h, its sections or the rewritten launches do not "
                         "compile where the rule's units include them; nothing written:\n" + "\n".join(errors[:20])
                         + (f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""),
                         hint="a name kernels.h spells must be declared where units include it (what is "
                              "declared later goes to the section of its header: docs/apply.md), and a kernel "
                              "whose factory a section defines must not be launched from a non-template "
                              "function of its header; add the header to migrate.stub_includes (unless it "
                              "includes a rewritten one), or leave the kernels or entry points out of the rule")


def _summary(files: dict, migration, report_path: Path | None) -> str:
    """One line in LibCST's manner: files changed, kernels migrated and left static, the report."""
    if migration is None:
        text = "already migrated: 0 files changed"
    else:
        new = sum(1 for old, _ in files.values() if old is None)
        n = len(migration.kernels)
        text = (f"{len(files)} file{'s' if len(files) != 1 else ''} changed ({new} new); {n} "
                f"kernel{'s' if n != 1 else ''} migrated, {len(migration.skipped)} left static")
        if migration.outside_units:
            u = len(migration.outside_units)
            text += (f"; {u} TU{'s' if u != 1 else ''} outside the analysis include rewritten code "
                     "(arguments only they use keep the static kernel)")
        bo = migration.build_order
        if bo is not None:
            text += (f"; build order: {len(bo.listed)} TUs first, predicted {bo.without_s} -> {bo.with_s} s"
                     if bo.emitted else "; build order unchanged")
    if report_path:
        text += f": see {report_path}"
    return text
