"""Self-contained HTML page of an analysis (jinja2 template codemod/templates/analysis/report.html.j2)."""

from __future__ import annotations

import jinja2

from ..model import Analysis


def render_html(a: Analysis) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("codemod", "templates/analysis"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    max_tu = max([tu.instantiations for tu in a.translation_units] + [1])
    return env.get_template("report.html.j2").render(a=a, t=a.totals, max_tu=max_tu)
