"""The emit stage's one entry: a frozen plan -> an Emission (the change set and the files as the
migration leaves them, formatted in the target's style), writing nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ... import __version__
from ..base.changeset import ChangeSet
from ..plan.plan import Plan
from . import build_order
from .generate import generate
from .style import format_edits, target_style
from .texts import apply_edits, layer_part


@dataclass(frozen=True)
class Emission:
    """What emit makes of a plan."""
    plan: Plan              # the plan as emitted: each kernel's headers as its NVRTC program sees them
    changes: ChangeSet      # new files, edits, notes, the stubs' domain
    files: dict             # path -> (text before or None, text after), formatted: what the patch holds
    layer: dict             # path -> (before, after) of the shared NVRTC layer's part (--layer-diff)
    # () -> that part without the disk cache's files and edits (--cache-diff; formatted on demand)
    layer_only: Callable[[], dict]


def emit(root: Path, plan: Plan, version: str = __version__, formatted=True, later: frozenset = frozenset(),
         order: build_order.BuildOrder | None = None, progress=None) -> Emission:
    """The migration of `plan` as file texts. `order`: the predicted build order (--build-log), its
    CMake edit added; `formatted`: False (--no-format) or a TargetStyle (a regeneration formats with
    the real tree's style); `later`: the rules migrated after this one (stacking.py)."""
    emitted, cs = generate(root, plan, version, formatted, later)
    if order is not None:
        build_order.add_edit(plan.spec, order, cs)
    # formatted before the manifest records each file's hash
    style = target_style(root, formatted)
    edited = apply_edits(root, cs)
    if progress and formatted:
        progress(f"apply: formatting {len(edited)} file(s) in the target's style")
    files = format_edits(edited, style)
    return Emission(emitted, cs, files, layer_part(root, cs, files, lambda f: format_edits(f, style)),
                    lambda: layer_part(root, cs, files, lambda f: format_edits(f, style), with_cache=False))
