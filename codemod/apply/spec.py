"""The rule's `migrate:` section as typed data (validated by the schema in rule.py first)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import RuleError
from ..rule import Rule


@dataclass
class MigrateSpec:
    rule_id: str
    output_dir: str
    namespace: str
    kernels: list[str]
    translation_units: list[str]
    stub_includes: list[str]
    names: dict
    types: dict
    kernel_strings: dict
    layer: dict
    options: dict
    cmake: dict
    raw: dict = field(default_factory=dict)

    @property
    def legacy_option(self) -> str:
        return self.cmake["legacy_option"]

    def aliases(self) -> dict[str, str]:
        """Type alias -> C++ type (`fp32` -> `float`), from the dtype table."""
        return {c["alias"]: c["type"] for c in self.types["cases"].values() if c.get("alias")}


def migrate_spec(rule: Rule) -> MigrateSpec:
    m = rule.raw.get("migrate")
    if not m:
        raise RuleError(f"rule '{rule.id}' has no migrate: section", where=str(rule.path),
                        hint="see docs/rules.md, section migrate")
    return MigrateSpec(
        rule_id=rule.id, output_dir=m["output_dir"].strip("/"), namespace=m["namespace"],
        kernels=list(m["kernels"]), translation_units=list(m["translation_units"]),
        stub_includes=list(m.get("stub_includes", [])), names=m.get("names", {}), types=m["types"],
        kernel_strings=m.get("kernel_strings", {}), layer=m["nvrtc_layer"],
        options={"always": m.get("options", {}).get("always", []),
                 "conditional": m.get("options", {}).get("conditional", [])},
        cmake=m["cmake"], raw=m)
