"""What the write stage takes: one rule's migration as the earlier stages left it, frozen."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..plan.plan import Plan


@dataclass(frozen=True)
class Migration:
    plan: Plan
    # the migration manifest (JSON text, migrated.record): stored outside the tree; None when no
    # kernel is migrated
    manifest: str | None = None
    # path -> (text before, text after) of the shared NVRTC layer's part (emission.Emission.layer)
    layer: dict = field(default_factory=dict)
    # TUs the analysis did not cover that include a rewritten file (check/reach.py: Reach.units)
    outside_units: list[str] = field(default_factory=list)
    # kernel id -> variants only those units launch that reach NVRTC (Reach.variants)
    outside_reach: dict = field(default_factory=dict)
    # apply --build-log with the rule's migrate.cmake.build_order (build_order.BuildOrder)
    build_order: object | None = None
    # apply --build-log: the predicted build (analysis.impact of pricing.attach_impact: the what-if
    # analyze prices for the same rule and log)
    prediction: dict | None = None
    # () -> the layer part without the disk cache's files and edits (--cache-diff; Emission.layer_only)
    layer_only: object = None

    @property
    def spec(self):
        return self.plan.spec

    @property
    def kernels(self):
        return self.plan.kernels

    @property
    def skipped(self):
        return self.plan.skipped
