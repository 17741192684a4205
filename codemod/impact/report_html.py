"""Self-contained HTML report of an impact document: Gantt charts before/after, concurrency curves,
tables. Geometry is computed here; markup lives in templates/impact/report.html.j2."""

from __future__ import annotations

from pathlib import Path

import jinja2

from .lanes import assign_lanes

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates" / "impact"
CHART_W = 960  # px of the time axis
LANE_H = 9
MAX_BARS = 3000  # per chart; the longest steps are drawn, the rest counted


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _window(row: dict, which: str) -> tuple[float, float]:
    return (row["start_s"], row["end_s"]) if which == "measured" else (row[which]["start_s"], row[which]["end_s"])


def gantt(doc: dict, which: str, span_s: float, critical: set[str]) -> dict:
    rows = [r for r in doc["steps"] if _window(r, which)[1] > _window(r, which)[0]]
    lanes = assign_lanes([_window(r, which) for r in rows])
    drawn = sorted(range(len(rows)), key=lambda i: (-(rows[i]["elapsed_s"]), rows[i]["name"]))[:MAX_BARS]
    scale = CHART_W / span_s if span_s > 0 else 0.0
    bars = []
    for i in sorted(drawn, key=lambda i: (lanes[i], _window(rows[i], which)[0])):
        r = rows[i]
        s, e = _window(r, which)
        bars.append({
            "x": round(s * scale, 2), "y": lanes[i] * LANE_H, "w": max(0.5, round((e - s) * scale, 2)),
            "cls": ("removed" if r["action"] == "remove" else "scaled" if r["action"] == "scale"
                    else "cuda" if r["nvcc"] else "other") + (" critical" if r["name"] in critical else ""),
            "title": f"{r['name']}: {e - s:.1f} s ({s:.1f}-{e:.1f} s)",
        })
    n_lanes = (max(lanes) + 1) if lanes else 1
    return {"bars": bars, "height": n_lanes * LANE_H, "hidden": len(rows) - len(drawn), "lanes": n_lanes}


def concurrency(doc: dict, span_s: float, jobs: int) -> dict:
    height = 160
    peak = max([jobs] + [n for k in ("measured", "predicted") for _, n in doc["concurrency"][k]["profile"]])
    sx = CHART_W / span_s if span_s > 0 else 0.0
    sy = height / peak if peak else 0.0
    curves = {}
    for k in ("measured", "predicted"):
        pts, prev = [], 0
        for t, n in doc["concurrency"][k]["profile"]:
            x = round(t * sx, 2)
            pts.append(f"{x},{round(height - prev * sy, 2)}")
            pts.append(f"{x},{round(height - n * sy, 2)}")
            prev = n
        curves[k] = " ".join(pts)
    return {"curves": curves, "height": height, "peak": peak, "jobs_y": round(height - jobs * sy, 2)}


def ticks(span_s: float) -> list[dict]:
    step = next((s for s in (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600) if span_s / s <= 12), 7200)
    out, t = [], 0
    while t <= span_s:
        out.append({"x": round(t * CHART_W / span_s, 2) if span_s else 0, "label": f"{t:g} s"})
        t += step
    return out


def render(doc: dict, top: int = 200) -> str:
    span = max(doc["measured_wall_s"], doc["predicted_wall_s"], doc["replayed_wall_s"]) or 1.0
    crit = {k: {c["name"] for c in doc["critical"][k]["chain"]} for k in ("measured", "predicted")}
    ctx = {
        "doc": doc,
        "chart_w": CHART_W,
        "ticks": ticks(span),
        "before": gantt(doc, "measured", span, crit["measured"]),
        "after": gantt(doc, "predicted", span, crit["predicted"]),
        "conc": concurrency(doc, span, doc["options"]["jobs"]),
        "rows": doc["steps"][:top],
        "top": top,
        "removed": sum(1 for r in doc["steps"] if r["action"] == "remove"),
        "scaled": sum(1 for r in doc["steps"] if r["action"] == "scale"),
    }
    return _env().get_template("report.html.j2").render(**ctx)
