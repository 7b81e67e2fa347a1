"""The sensitivity page: how far each headline figure moves under each open choice of the
method (the `sensitivity` table, pipeline/sensitivity.py), as tornado charts with the table
under them. Offline like the other reports (reports/page.py's page and writer)."""
from __future__ import annotations

import html
from pathlib import Path

import plotly.graph_objects as go

from bgp_congruency.common import layout
from bgp_congruency.reports import warehouse
from bgp_congruency.reports.page import Figure, ReportError, fetch_rows, figure_html, page_html, plot_layout, render

#: Headline figures shown: column -> (label, how to compute it from a row).
FIGURES = {
    "noncongruent": ("non-congruent pairs", lambda r: r["noncongruent_fraction"]),
    "shared_0": ("non-congruent pairs sharing no AS",
                 lambda r: r["noncongruent_shared_0"] / r["noncongruent_pairs"] if r["noncongruent_pairs"] else None),
    "adjacent": ("shared ASes all adjacent", lambda r: r["shared_all_adjacent_fraction"]),
    "vp_median": ("median per-VP non-congruent fraction", lambda r: r["vp_noncongruent_median"]),
}


def path(cfg, month: str) -> Path:
    return layout.report_file(warehouse.data_root(cfg), month, "sensitivity.html")


def effects(rows: list[dict], key: str, published: dict | None = None) -> tuple[float | None, list[dict]]:
    """(the default value: a 'default' row's, else the published month_summary's; one entry
    per choice: low and high over its variants in points against the default, the default
    itself included, sorted by range, largest first, then by name)."""
    label, get = FIGURES[key]
    default = next((get(r) for r in rows if r["variant"] == "default"), None)
    if default is None and published is not None:
        default = get(published)
    out = []
    for choice in dict.fromkeys(r["choice"] for r in rows):
        vals = [(r["variant"], get(r)) for r in rows if r["choice"] == choice and get(r) is not None]
        undefined = [r["variant"] for r in rows if r["choice"] == choice and get(r) is None]
        if not vals or default is None:
            continue
        if all(v != "default" for v, _ in vals):
            vals.append(("default", default))
        lo, hi = min(vals, key=lambda v: v[1]), max(vals, key=lambda v: v[1])
        out.append({"choice": choice, "low": 100 * (lo[1] - default), "high": 100 * (hi[1] - default),
                    "low_variant": lo[0], "high_variant": hi[0], "values": vals, "undefined": undefined})
    return default, sorted(out, key=lambda e: (-round(e["high"] - e["low"], 9), e["choice"]))


def figures(rows: list[dict], month: str, published: dict) -> list[Figure]:
    figs = []
    for key, (label, _get) in FIGURES.items():
        default, eff = effects(rows, key, published)
        if default is None:
            continue
        eff = list(reversed(eff))  # plotly draws the first bar at the bottom: largest effect on top
        f = go.Figure(go.Bar(
            y=[e["choice"] for e in eff], x=[e["high"] - e["low"] for e in eff],
            base=[e["low"] for e in eff], orientation="h", marker_color="#1f77b4",
            text=[(f"{e['low']:+.1f} .. {e['high']:+.1f} pts" if e["high"] - e["low"] >= 0.05 else "no change")
                  + (f" (undefined: {', '.join(e['undefined'])})" if e["undefined"] else "")
                  for e in eff], textposition="outside", cliponaxis=False,
            customdata=[", ".join(f"{v}: {100 * x:.1f}%" for v, x in e["values"]) for e in eff],
            hovertemplate="%{y}: %{customdata}<extra></extra>"))
        plot_layout(f, f"{label}, {month}: default {100 * default:.1f}%",
                "change against the default (percentage points)", "open choice")
        f.update_layout(height=320, margin=dict(l=110, r=140, t=60, b=60))
        f.add_vline(x=0, line_color="#333")
        figs.append(Figure(f"fig-sens-{key}", f, f"{label}: for each open choice, the range of the figure over "
                           "its variants, in points against the month's own parameters; the choice that moves "
                           "it most is on top."))
    return figs


def table_html(rows: list[dict]) -> str:
    cols = {"choice": "choice", "variant": "variant", "vps_default_free": "default-free VPs", "pairs": "pairs",
            "noncongruent_fraction": "non-congruent", "noncongruent_shared_0": "non-congruent, no shared AS",
            "shared_all_adjacent_fraction": "shared all adjacent", "vp_noncongruent_median": "per-VP median"}
    head = "".join(f"<th>{html.escape(label)}</th>" for label in cols.values())
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"<td>{'n/a' if v is None else (f'{100 * v:.1f}%' if isinstance(v, float) else html.escape(str(v)))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table class='vps'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def page(con, month: str) -> str:
    if "sensitivity" not in warehouse.views(con):
        raise ReportError(f"month {month}: no sensitivity table (run congruency sensitivity --month {month})")
    rows = fetch_rows(con, "SELECT * FROM sensitivity WHERE month = $month ORDER BY choice, variant", {"month": month})
    if not rows:
        raise ReportError(f"month {month}: no sensitivity rows (run congruency sensitivity --month {month})")
    [ms] = fetch_rows(con, "SELECT * FROM month_summary WHERE month = $month", {"month": month})
    default, eff = effects(rows, "noncongruent", ms)
    top = eff[0] if eff else None
    intro = (f"The month's headline figures recomputed under each variant of each open choice of the method, one "
             f"choice at a time (METHOD.md). Default (the month as published): "
             f"{'n/a' if default is None else f'{100 * default:.1f}%'} of pairs non-congruent."
             + (f" The choice that moves it most is <b>{html.escape(top['choice'])}</b>: "
                f"{top['low']:+.1f} to {top['high']:+.1f} points." if top else ""))
    return page_html(f"Sensitivity of the headline figures, {month}", intro,
                 ["<h2>Figures</h2>", *map(figure_html, figures(rows, month, ms)),
                  "<h2>Every variant</h2>", table_html(rows)], by="congruency sensitivity")


def write(cfg, month: str, out: Path | None = None) -> Path:
    return render(cfg, lambda con: page(con, month), out or (lambda: path(cfg, month)))
