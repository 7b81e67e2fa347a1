"""The trend report: the per-VP distribution, the non-adopter share and the transitions
across every published month (DATA_DIR/reports/trend.html)."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from urllib.parse import quote

import plotly.graph_objects as go

from bgp_congruency.common import layout
from bgp_congruency.common.months import parse_month_range, previous_month
from bgp_congruency.lake import published
from bgp_congruency.reports import warehouse
from bgp_congruency.reports.page import (
    TRANSITION_KINDS,
    Figure,
    ReportError,
    fetch_rows,
    figure_html,
    num,
    page_html,
    plot_layout,
    render,
    table_html,
)


def trend_path(cfg) -> Path:
    return layout.report_file(warehouse.data_root(cfg), None)


def _calendar(first: str, last: str) -> list[str]:
    """Every month from first to last: the trend's x axis, so a missing month is a gap."""
    return parse_month_range(f"{first}..{last}")


def trend_data(con) -> dict:
    """The trend's numbers: per published month its summary, transitions both ways (None
    where the month before was not published: not applicable), and per-VP fractions."""
    ms = fetch_rows(con, "SELECT month, pairs, noncongruent_fraction, non_adopter_fraction, vps_with_pairs, "
                    "vp_noncongruent_min AS lo, vp_noncongruent_q1 AS q1, vp_noncongruent_median AS med, "
                    "vp_noncongruent_q3 AS q3, vp_noncongruent_max AS hi FROM month_summary ORDER BY month")
    have = {r["month"] for r in ms}
    tr = fetch_rows(con, "SELECT month, kind, count(*) AS n FROM transitions GROUP BY ALL") if \
        "transitions" in warehouse.views(con) else []
    by = {(r["month"], r["kind"]): r["n"] for r in tr}
    # The counterpart of transitions' existing_pair: pairs non-congruent now, congruent the month before.
    worse = {r["month"]: r["n"] for r in fetch_rows(con, """
        SELECT m.month, count(*) AS n FROM pairs m JOIN pairs p
          ON p.month = strftime(strptime(m.month || '-01', '%Y-%m-%d') - INTERVAL 1 MONTH, '%Y-%m')
         AND p.vp_group = m.vp_group AND p.vp_asn = m.vp_asn AND p.dest_asn = m.dest_asn
        WHERE NOT m.congruent AND p.congruent GROUP BY 1""")}
    for r in ms:
        applicable = previous_month(r["month"]) in have
        for kind, _ in TRANSITION_KINDS:
            r[kind] = by.get((r["month"], kind), 0) if applicable else None
        r["became_congruent"] = sum(r[k] for k, _ in TRANSITION_KINDS) if applicable else None
        r["became_noncongruent"] = worse.get(r["month"], 0) if applicable else None
    prov = {r["month"]: r for r in fetch_rows(con, "SELECT month, min_coverage, len(snapshots_used) AS used, "
                                              "len(snapshots_missing) + len(snapshots_failed) AS gaps FROM provenance")} \
        if "provenance" in warehouse.views(con) else {}
    for r in ms:
        p = prov.get(r["month"])
        r["inputs"] = ("not recorded" if p is None else
                       f"{p['used']} snapshot(s)" + (f", {p['gaps']} missing or failed" if p["gaps"] else "")
                       + f"; threshold {p['min_coverage']:g}" + (" (lenient)" if p["min_coverage"] < 0.9 else ""))
    vps = fetch_rows(con, "SELECT month, vp_group, vp_asn, noncongruent_fraction, pairs FROM vps WHERE pairs > 0 "
                     "ORDER BY vp_group, vp_asn, month")
    axis = _calendar(ms[0]["month"], ms[-1]["month"]) if ms else []
    return {"months": ms, "axis": axis, "missing": [m for m in axis if m not in have], "vps": vps}


def trend_figures(con, data: dict | None = None) -> tuple[list[dict], list[Figure]]:
    d = data or trend_data(con)
    ms, axis = d["months"], d["axis"]
    at = {r["month"]: r for r in ms}
    figs = []
    pc = lambda v: None if v is None else 100 * v  # noqa: E731
    on_axis = lambda key: [pc(at[m][key]) if m in at else None for m in axis]  # noqa: E731
    cat = dict(xaxis_type="category", xaxis_categoryorder="array", xaxis_categoryarray=axis)

    f = go.Figure()
    f.add_trace(go.Box(x=[r["month"] for r in ms], lowerfence=[pc(r["lo"]) for r in ms], q1=[pc(r["q1"]) for r in ms],
                       median=[pc(r["med"]) for r in ms], q3=[pc(r["q3"]) for r in ms],
                       upperfence=[pc(r["hi"]) for r in ms], name="per-VP fraction", marker_color="#1f77b4",
                       customdata=[r["vps_with_pairs"] for r in ms],
                       hovertemplate="%{x}: min %{lowerfence:.1f}%, Q1 %{q1:.1f}%, median %{median:.1f}%, "
                                     "Q3 %{q3:.1f}%, max %{upperfence:.1f}% over %{customdata} VPs<extra></extra>"))
    f.add_trace(go.Scatter(x=axis, y=on_axis("noncongruent_fraction"), mode="lines+markers", connectgaps=False,
                           name="all pairs", line=dict(color="#d62728", dash="dot"),
                           customdata=[at[m]["pairs"] if m in at else None for m in axis],
                           hovertemplate="%{x}: %{y:.1f}% of %{customdata} pairs non-congruent<extra></extra>"))
    plot_layout(f, "Per-VP non-congruent fraction by month", "month (YYYY-MM; a month without data is a gap)",
            "non-congruent pairs of a VP (%)", yaxis_range=[0, 100], **cat)
    figs.append(Figure("fig-trend-vps", f, "Each box spans one month's VPs: whiskers at the least and most "
                       "non-congruent VP, box from first to third quartile, line at the median (study fig. 2b); "
                       "the dotted line is the fraction over all pairs. A month without data is an empty slot "
                       "and breaks the line."))

    f = go.Figure()
    for (g, a) in dict.fromkeys((r["vp_group"], r["vp_asn"]) for r in d["vps"]):
        mine = {r["month"]: r for r in d["vps"] if (r["vp_group"], r["vp_asn"]) == (g, a)}
        f.add_trace(go.Scatter(x=axis, y=[pc(mine[m]["noncongruent_fraction"]) if m in mine else None for m in axis],
                               mode="lines+markers", connectgaps=False, name=f"{g} AS{a}",
                               customdata=[mine[m]["pairs"] if m in mine else None for m in axis],
                               hovertemplate="%{x}: %{y:.1f}% of %{customdata} pairs<extra>" + f"{g} AS{a}"
                                             + "</extra>"))
    plot_layout(f, "Non-congruent fraction of each VP by month", "month (YYYY-MM)", "non-congruent pairs of the VP (%)",
            yaxis_range=[0, 100], **cat)
    f.update_layout(legend=dict(orientation="v", y=1), height=max(420, 22 * len(f.data)))
    figs.append(Figure("fig-trend-vp-lines", f, "One line per VP (click a VP in the legend to hide it, "
                       "double-click to show it alone); a month the VP has no pairs in breaks its line."))

    f = go.Figure(go.Scatter(x=axis, y=on_axis("non_adopter_fraction"), mode="lines+markers", connectgaps=False,
                             name="explained by non-adopters", line=dict(color="#9467bd"),
                             hovertemplate="%{x}: %{y:.1f}% of non-congruent pairs<extra></extra>"))
    plot_layout(f, "Non-congruent pairs explained by IPv6 non-adopters, by month", "month (YYYY-MM)",
            "non-congruent pairs with a non-adopter (%)", yaxis_range=[0, 100], **cat)
    figs.append(Figure("fig-trend-nonadopter", f, "Share of non-congruent pairs whose IPv4 path crosses an AS with "
                       "no IPv6 path that month: how much of the non-congruence IPv6 adoption alone could remove."))

    if len(ms) >= 2:
        f = go.Figure()
        for kind, label in TRANSITION_KINDS:
            f.add_trace(go.Bar(x=axis, y=[at[m][kind] if m in at else None for m in axis],
                               name=f"became congruent: {label}",
                               hovertemplate="%{x}: %{y} pairs became congruent (" + label + ")<extra></extra>"))
        f.add_trace(go.Bar(x=axis, y=[-at[m]["became_noncongruent"] if m in at and at[m]["became_noncongruent"]
                                      is not None else None for m in axis],
                           name="became non-congruent (existing pair)", marker_color="#7f7f7f",
                           customdata=[at[m]["became_noncongruent"] if m in at else None for m in axis],
                           hovertemplate="%{x}: %{customdata} pairs became non-congruent<extra></extra>"))
        plot_layout(f, "Pairs that changed since the month before", "month (YYYY-MM)",
                "pairs (count; below 0: became non-congruent)", barmode="relative", **cat)
        figs.append(Figure("fig-trend-transitions", f, "Above zero, pairs congruent this month that were not a "
                           "congruent pair the month before, by why (the pair existed, the destination newly has "
                           "IPv6, or the pair is new); below zero, pairs of the month before that were congruent "
                           "and are not now. A month whose month before has no data has no bar: not applicable."))
    return ms, figs


def _trend_table(d: dict) -> str:
    """Per month (missing months included, marked), with the CSV of the same rows."""
    at = {r["month"]: r for r in d["months"]}
    head = ["month", "pairs", "VPs with pairs", "non-congruent (%)", "per-VP median (%)", "non-adopter share (%)",
            "inputs (provenance)", "became congruent", "became non-congruent"]
    rows = []
    for m in d["axis"]:
        r = at.get(m)
        if r is None:
            rows.append([m, "no data", "", "", "", "", "", "", ""])
            continue
        na = "not applicable"
        rows.append([m, r["pairs"], r["vps_with_pairs"], num(r["noncongruent_fraction"]), num(r["med"]),
                     num(r["non_adopter_fraction"]), r["inputs"],
                     na if r["became_congruent"] is None else r["became_congruent"],
                     na if r["became_noncongruent"] is None else r["became_noncongruent"]])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([head, *rows])
    link = (f"<p><a id='trend-csv' download='trend.csv' href='data:text/csv;charset=utf-8,{quote(buf.getvalue())}'>"
            "Download this table as CSV</a> (generated into the page; works offline)</p>")
    return table_html("trend-table", head, rows, {1, 2, 3, 4, 5, 7, 8}) + link


def trend_html(con) -> str:
    d = trend_data(con)
    ms, figs = trend_figures(con, d)
    if not ms:
        raise ReportError("no published months (run congruency run for the month first)")
    missing = d["missing"]
    intro = (f"{len(ms)} published month{'s' if len(ms) > 1 else ''}, {ms[0]['month']} to {ms[-1]['month']}"
             + (f"; no data for {', '.join(missing)}" if missing else "") + ".")
    links = ("<p class='note'>Month reports: " + " ".join(
        f"<a href='{layout.month_part(r['month'])}/report.html'>{r['month']}</a>" for r in ms) + "</p>")
    one = ("<p id='one-month' class='note'><b>The trend needs two published months</b>: only "
           f"{ms[0]['month']} is published, so nothing has changed yet (transitions are not applicable).</p>"
           if len(ms) < 2 else "")
    return page_html("IPv4/IPv6 AS-path congruency across months", intro,
                 [links, one, "<h2>Figures</h2>", *map(figure_html, figs), "<h2>Per month</h2>", _trend_table(d)])


def write_trend_report(cfg, out: Path | None = None) -> Path:
    """DATA_DIR/reports/trend.html (or `out`): every published month, offline."""
    if not published.months(warehouse.data_root(cfg)):  # ingested only, or nothing yet
        raise ReportError(f"{warehouse.data_root(cfg)}: no published tables of any month to show a trend of "
                          "(run congruency run for a month first)")
    return render(cfg, trend_html, out or (lambda: trend_path(cfg)))
