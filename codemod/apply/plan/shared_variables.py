"""Mutable `__device__` variables that a migrated kernel reads and a static kernel writes (rule key
`migrate.shared_variables`): an NVRTC module holds its own copy of each, so the stubs copy the
launching unit's copy into the module's before every launch, on the launch's stream."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import RuleError

KEY = "migrate.shared_variables"


@dataclass(frozen=True)
class Shared:
    """A variable the kernel's body names that other kernels' bodies name too."""
    name: str                 # as declared (unqualified)
    path: str                 # the header declaring it
    others: tuple[str, ...]   # the other kernels naming it


def module_symbol(qualified: str, listed_names: list[str]) -> str:
    """The C name of the kernel string's pointer to the NVRTC module's copy of `qualified`: its
    unqualified name, or its qualified one when the rule lists two variables of that name."""
    name = qualified.lstrip(":")
    short = name.rsplit("::", 1)[-1]
    twins = {q.lstrip(":") for q in listed_names if q.lstrip(":").rsplit("::", 1)[-1] == short}
    return "rtc_shared_" + (short if len(twins) <= 1 else name.replace("::", "_"))


def listed(raw: dict) -> dict[str, list[str]]:
    """kernel id -> the qualified names the rule lists for it (no leading `::`)."""
    return {k: [v.lstrip(":") for v in vs] for k, vs in raw.get("shared_variables", {}).items()}


def check_rule(path, m: dict) -> None:
    """Every kernel keyed under shared_variables is one the rule migrates."""
    unknown = sorted(k for k in m.get("shared_variables", {}) if k not in m["kernels"])
    if unknown:
        raise RuleError(f"{KEY} names {', '.join(unknown)}, not in migrate.kernels", where=str(path),
                        hint="key it by a kernel id listed under migrate.kernels")


def resolve(kernel_id: str, found: list[Shared], rule_kernels: list[str],
            rule_lists: list[str]) -> tuple[list[str], str | None]:
    """(the qualified variables the stubs copy before each launch, a refusal or None). A variable
    shared with another kernel must be listed; its writers must stay static (the copy goes from
    the static module to the NVRTC one); a listed variable the body does not share is a stale
    entry, refused rather than copied blindly."""
    copied = []
    for s in found:
        qualified = next((q for q in rule_lists if q.rsplit("::", 1)[-1] == s.name), None)
        if qualified is None:
            return [], (f"its body uses the __device__ variable `{s.name}` ({s.path}), which {s.others[0]} also "
                        "uses: an NVRTC module holds its own copy of each __device__ variable, so the migrated "
                        "kernel would no longer see what the other one writes; keep both static, or, when the "
                        f"other kernel writes it and stays static and this one only reads it, list it under "
                        f"{KEY}.{kernel_id} (its qualified name): the stubs then copy it before each launch")
        migrated = [o for o in s.others if o in rule_kernels]
        if migrated:
            return [], (f"`{qualified}` ({KEY}) is copied from the static module into the NVRTC one before each "
                        f"launch, so the kernels that also use it must stay static: {', '.join(migrated)} is in "
                        "migrate.kernels")
        copied.append(qualified)
    stale = [q for q in rule_lists if q not in copied]
    if stale:
        return [], (f"{KEY}.{kernel_id} lists {', '.join(f'`{q}`' for q in stale)}, which its body does not "
                    "share with another kernel (a `__device__` variable of the headers it reaches that another "
                    "kernel's body names): remove the entry")
    return copied, None
