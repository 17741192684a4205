"""Device time per kernel instantiation, fitted on one build's per-unit nvcc rows, and the share of a
unit's device and host time that the kernels a migration moves account for.

Device: per target, a unit's time = c + sum over its kernels of n_k * w_k (non-negative least squares
over the units of one build; c is the per-unit cost no kernel explains, which stays with the unit);
a kernel whose body is gated away from the target's arch counts 0 there. Host: one line, host time =
a + b * instantiations, over the same units; a moved instantiation takes b with it.
"""

from __future__ import annotations

import re

import numpy as np

INTERCEPT = "<unit>"  # the per-unit device cost no kernel explains
_TARGET = re.compile(r"^(\d+)")


def target_arch(target: str) -> int | None:
    """An nvcc target -> the __CUDA_ARCH__ its device pass sees: '90a' -> 900, '120f' -> 1200."""
    m = _TARGET.match(target)
    return int(m.group(1)) * 10 if m else None


def compiles_at(gate: tuple[int | None, int | None] | None, arch: int) -> bool:
    """Whether a kernel whose body is gated to [low, below) (None: unbounded) compiles to code at
    `arch` (Kernel.body_arch_min, Kernel.body_arch_range)."""
    low, below = gate or (None, None)
    return (low is None or arch >= low) and (below is None or arch < below)


def gate_of(kernel: dict) -> tuple[int | None, int | None] | None:
    """An analysis JSON kernel's gate: its body_arch_range, else [body_arch_min, None], else None."""
    if kernel.get("body_arch_range"):
        low, below = kernel["body_arch_range"]
        return low, below
    return (kernel["body_arch_min"], None) if kernel.get("body_arch_min") else None


def gated_counts(counts: dict[str, int], gates: dict[str, tuple | None], arch: int | None) -> dict[str, int]:
    """Instantiations per kernel that compile to code at `arch`: a kernel whose body is one
    `#if __CUDA_ARCH__` block excluding `arch` counts 0 (arch None: every kernel counts)."""
    if arch is None:
        return dict(counts)
    return {k: (n if compiles_at(gates.get(k), arch) else 0) for k, n in counts.items()}


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int = 500) -> np.ndarray:
    """min |a x - b| subject to x >= 0 (Lawson and Hanson's active-set method)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * np.linalg.norm(a, 1) * max(m, n)
    for _ in range(max_iter):
        grad = a.T @ (b - a @ x)
        free = ~passive & (grad > tol)
        if not free.any():
            break
        passive[np.argmax(np.where(free, grad, -np.inf))] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
    return x


def fit_weights(rows: list[tuple[dict[str, int], float]], intercept: bool = True,
                fixed: dict[str, float] | None = None) -> dict[str, float]:
    """Seconds per instantiation of each kernel (and per unit under INTERCEPT) that best explain
    `rows` (instantiations per kernel of one unit at one target, that target's device seconds).
    `fixed`: kernels whose weight is known (taken out of each row first, returned as given). A
    kernel with no instantiation in any row gets no weight."""
    fixed = dict(fixed or {})
    kernels = sorted({k for counts, _ in rows for k, n in counts.items() if n > 0 and k not in fixed})
    cols = kernels + ([INTERCEPT] if intercept else [])
    if not rows or not cols:
        return fixed
    a = np.array([[counts.get(k, 0) for k in kernels] + ([1.0] if intercept else []) for counts, _ in rows],
                 dtype=float)
    b = np.array([s - sum(n * fixed.get(k, 0.0) for k, n in counts.items()) for counts, s in rows], dtype=float)
    x = nnls(a, b)
    return {**fixed, **{k: float(v) for k, v in zip(cols, x)}}


def moved_share(counts: dict[str, int], weights: dict[str, float], moved: set[str]) -> float:
    """The moved kernels' share of a unit's modelled device time at one target (counts already
    gated); a kernel the fit has no weight for weighs the mean of the fitted kernel weights."""
    total = device_seconds(counts, weights)
    if total <= 0:
        return 0.0
    return 1.0 - device_seconds(counts, weights, leave=moved) / total


def device_seconds(counts: dict[str, int], weights: dict[str, float], leave: set[str] = frozenset()) -> float:
    """A unit's modelled device seconds at one target (counts already gated), without the kernels of
    `leave`: the per-unit cost plus each kernel's instantiations times its weight (the mean fitted
    weight for a kernel the fit has none for)."""
    fitted = [w for k, w in weights.items() if k != INTERCEPT]
    default = sum(fitted) / len(fitted) if fitted else 1.0
    return weights.get(INTERCEPT, 0.0) + sum(n * weights.get(k, default) for k, n in counts.items()
                                             if n > 0 and k not in leave)


def fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y on x."""
    if len(points) < 2:
        raise ValueError("a line needs two points")
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    return float(intercept), float(slope)


def host_kept(host_s: float, moved_instantiations: int, slope: float) -> float:
    """The share of a unit's host seconds that stays when `moved_instantiations` go at `slope`
    seconds each (never below 0)."""
    if host_s <= 0:
        return 1.0
    return max(0.0, 1.0 - moved_instantiations * max(slope, 0.0) / host_s)
