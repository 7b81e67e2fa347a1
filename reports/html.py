"""Self-contained offline HTML reports: plotly.js embedded once, no network requests.

`write_month_report` draws the 2014 study's section III for one month beside its headline
numbers; `write_trend_report` the per-VP distribution, the non-adopter share and the
transitions across every published month. Both read the published Parquet through the
warehouse's views (an in-memory DuckDB, so a locked or stale warehouse file does not
matter) and write atomically: a dot-temp file renamed into place.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from common import atomic, published
from reports import query, warehouse

#: The 2014 study's section III figures (72 VPs), shown beside each month as the "2014 reference".
REFERENCE_2014 = {
    "noncongruent": "62% over 72 VPs",
    "shared_0": "61%",
    "shared_2plus": "8%",
    "adjacent": "91%",
    "vp_range": "27-91%",
    "non_adopter": "about 70% in 2009, below 40% in 2014",
}
#: Cleaning rules in the order they apply (METHOD.md step 1) and the funnel stage each leaves.
CLEANING = (
    ("default_route", "no default route"),
    ("as_set", "no AS_SET"),
    ("first_as_not_peer", "first AS is the peer"),
    ("reserved_asn", "no reserved ASN"),
    ("loop", "no loop (kept)"),
)
TRANSITION_KINDS = (
    ("existing_pair", "existing pair"),
    ("new_ipv6_destination", "new IPv6 destination"),
    ("new_pair", "new pair"),
)
COLORS = {"edge": "#1f77b4", "transit": "#d62728"}


class ReportError(Exception):
    """A one-line reason a report cannot be written."""


@dataclass
class Figure:
    id: str
    fig: object  # plotly.graph_objects.Figure
    caption: str


def month_path(cfg, month: str) -> Path:
    return warehouse.data_root(cfg) / "reports" / f"month={month}" / "report.html"


def trend_path(cfg) -> Path:
    return warehouse.data_root(cfg) / "reports" / "trend.html"


def _rows(con, sql: str, params=None) -> list[dict]:
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    return rel.to_arrow_table().to_pylist()


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _layout(fig, title: str, x: str, y: str, **kw) -> None:
    fig.update_layout(title=dict(text=title), template="plotly_white", height=420,
                      margin=dict(l=70, r=30, t=60, b=60), xaxis_title=x, yaxis_title=y,
                      legend=dict(orientation="h", y=-0.2), **kw)


# ----------------------------------------------------------------------------- month report
def month_figures(con, month: str) -> tuple[dict, list[dict], list[Figure]]:
    """(month_summary row, per-VP rows, figures) of one published month."""
    import plotly.graph_objects as go

    p = {"month": month}
    summary = _rows(con, "SELECT * FROM month_summary WHERE month = $month", p)[0]
    vps = _rows(con, query.get("vp_congruency").sql, p)
    figs = []

    # Figure 2a: CDF of the per-VP non-congruent fraction, edge and transit VPs apart.
    f = go.Figure()
    for cls in ("edge", "transit"):
        xs = sorted(100 * r["noncongruent_fraction"] for r in vps if r["vp_class"] == cls)
        names = [f"{r['vp_group']} AS{r['vp_asn']}" for r in sorted(
            (r for r in vps if r["vp_class"] == cls), key=lambda r: r["noncongruent_fraction"])]
        ys = [100 * (i + 1) / len(xs) for i in range(len(xs))]
        f.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", line_shape="hv", name=f"{cls} VPs ({len(xs)})",
                               marker=dict(color=COLORS[cls]), customdata=names,
                               hovertemplate="%{customdata}<br>non-congruent: %{x:.1f}%<br>"
                                             "VPs at or below: %{y:.0f}%<extra>" + cls + "</extra>"))
    _layout(f, f"Per-VP non-congruent fraction, {month} (CDF)", "non-congruent pairs of the VP (%)",
            "VPs at or below (%)", xaxis_range=[0, 100], yaxis_range=[0, 105])
    figs.append(Figure("fig-cdf", f, "Each step is one VP: the share of VPs (y) whose fraction of non-congruent "
                       "pairs is at most x; a curve further right means more non-congruent VPs (study fig. 2a)."))

    # Congruent pairs by path length.
    hops = _rows(con, "SELECT hops_v4 AS hops, count(*) AS n FROM pairs WHERE month = $month AND congruent "
                      "GROUP BY 1 ORDER BY 1", p)
    f = go.Figure(go.Bar(x=[r["hops"] for r in hops], y=[r["n"] for r in hops], name="congruent pairs",
                         marker_color="#2ca02c",
                         hovertemplate="%{x} hops: %{y} congruent pairs<extra></extra>"))
    _layout(f, f"Congruent pairs by path length, {month}", "path length (AS hops)", "congruent pairs (count)",
            xaxis_dtick=1)
    figs.append(Figure("fig-hops", f, "Congruent pairs (identical IPv4 and IPv6 paths) by the length of that "
                       "path in AS hops; bars on the left mean congruence comes mostly from short paths."))

    # Non-congruent pairs by number of shared ASes and by adjacency.
    shared = _rows(con, """
        SELECT CASE WHEN len(shared_asns) >= 2 THEN '2+' ELSE len(shared_asns)::VARCHAR END AS bucket,
               count(*) FILTER (WHERE len(shared_asns) = 0) AS none,
               count(*) FILTER (WHERE shared_adjacent) AS adjacent,
               count(*) FILTER (WHERE NOT shared_adjacent) AS not_adjacent
        FROM pairs WHERE month = $month AND NOT congruent GROUP BY 1""", p)
    by = {r["bucket"]: r for r in shared}
    buckets = ["0", "1", "2+"]
    f = go.Figure()
    for key, label, color in (("none", "no shared AS", "#7f7f7f"), ("adjacent", "shared ASes all adjacent", "#1f77b4"),
                              ("not_adjacent", "a shared AS not adjacent", "#ff7f0e")):
        f.add_trace(go.Bar(x=buckets, y=[by.get(b, {}).get(key, 0) for b in buckets], name=label, marker_color=color,
                           hovertemplate="%{x} shared ASes, " + label + ": %{y} pairs<extra></extra>"))
    _layout(f, f"Non-congruent pairs by shared ASes, {month}", "ASes on both paths besides VP and destination (count)",
            "non-congruent pairs (count)", barmode="stack")
    figs.append(Figure("fig-shared", f, "Non-congruent pairs by how many intermediate ASes their two paths share, "
                       "split by whether every shared AS sits right after the VP or right before the destination."))

    # The share explained by IPv6 non-adopters.
    na = _rows(con, """
        SELECT coalesce(v.vp_class, 'all') AS grp,
               count(*) FILTER (WHERE len(p.non_adopters) > 0) AS with_na,
               count(*) FILTER (WHERE len(p.non_adopters) = 0) AS without_na
        FROM pairs p JOIN vps v USING (month, vp_group, vp_asn)
        WHERE p.month = $month AND NOT p.congruent
        GROUP BY ROLLUP (v.vp_class)""", p)
    by = {r["grp"]: r for r in na}
    groups = [("all", "all VPs"), ("edge", "edge VPs"), ("transit", "transit VPs")]
    f = go.Figure()
    for key, label, color in (("with_na", "IPv4 path crosses an IPv6 non-adopter", "#9467bd"),
                              ("without_na", "no non-adopter on the IPv4 path", "#bcbd22")):
        ys = [by.get(g, {}).get(key, 0) for g, _ in groups]
        tot = [by.get(g, {}).get("with_na", 0) + by.get(g, {}).get("without_na", 0) for g, _ in groups]
        share = [100 * y / t if t else 0 for y, t in zip(ys, tot)]
        f.add_trace(go.Bar(x=[lbl for _, lbl in groups], y=ys, name=label, marker_color=color, customdata=share,
                           hovertemplate="%{x}: %{y} non-congruent pairs (%{customdata:.1f}%)<extra>"
                                         + label + "</extra>"))
    _layout(f, f"Non-congruent pairs explained by IPv6 non-adopters, {month}", "vantage points",
            "non-congruent pairs (count)", barmode="stack")
    figs.append(Figure("fig-nonadopter", f, "A non-congruent pair is explained by non-adoption when its IPv4 path "
                       "crosses an AS seen on no IPv6 path this month; the purple part is that share."))

    # The cleaning funnel.
    cs = _rows(con, "SELECT afi, reason, sum(entries)::BIGINT AS n FROM cleaning_stats WHERE month = $month "
                    "GROUP BY ALL", p)
    f = go.Figure()
    stages = ["RIB entries"] + [label for _, label in CLEANING]
    for afi in (4, 6):
        counts = {r["reason"]: r["n"] for r in cs if r["afi"] == afi}
        left = sum(counts.values())
        ys = [left]
        for reason, _ in CLEANING:
            left -= counts.get(reason, 0)
            ys.append(left)
        f.add_trace(go.Funnel(y=stages, x=ys, name=f"IPv{afi}", texttemplate="%{value:,}<br>%{percentInitial:.2%}",
                              hovertemplate="IPv" + str(afi) + " %{y}: %{x} entries "
                                            "(%{percentInitial:.1%} of all)<extra></extra>"))
    # A funnel's x axis is centred on 0 (negative ticks): name it, but let the bars carry the counts.
    _layout(f, f"Cleaning funnel, {month}", "RIB entries left (count, in the bars; IPv6 after IPv4)",
            "after the cleaning rule", xaxis_visible=True, xaxis_showticklabels=False)
    figs.append(Figure("fig-cleaning", f, "RIB entries left after each cleaning rule of METHOD.md step 1, applied "
                       "in this order; the last row is what the comparison uses."))
    return summary, vps, figs


def _headline(s: dict) -> str:
    nc = s["noncongruent_pairs"]
    rows = [
        ("Non-congruent pairs", f"{_pct(s['noncongruent_fraction'])} of {s['pairs']:,} pairs over "
                                f"{s['vps_with_pairs']} VPs", REFERENCE_2014["noncongruent"]),
        ("Non-congruent pairs sharing no AS", _pct(s["noncongruent_shared_0"] / nc if nc else None),
         REFERENCE_2014["shared_0"]),
        ("Non-congruent pairs sharing more than one AS", _pct(s["noncongruent_shared_2plus"] / nc if nc else None),
         REFERENCE_2014["shared_2plus"]),
        ("Shared ASes adjacent (pairs whose shared ASes are all adjacent)",
         _pct(s["shared_all_adjacent_fraction"]), REFERENCE_2014["adjacent"]),
        ("Per-VP non-congruent fraction, min-max",
         f"{_pct(s['vp_noncongruent_min'])}-{_pct(s['vp_noncongruent_max'])}", REFERENCE_2014["vp_range"]),
        ("Non-congruent pairs with an IPv6 non-adopter", _pct(s["non_adopter_fraction"]), REFERENCE_2014["non_adopter"]),
    ]
    body = "".join(f"<tr><th scope='row'>{html.escape(a)}</th><td>{html.escape(b)}</td><td>{html.escape(c)}</td></tr>"
                   for a, b, c in rows)
    return ("<table id='headline'><thead><tr><th>Figure</th><th>This month</th><th>2014 reference</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


VP_COLUMNS = (("vp_group", "collector group", "text"), ("vp_asn", "VP ASN", "num"), ("vp_class", "class", "text"),
              ("pairs", "pairs", "num"), ("noncongruent_pairs", "non-congruent", "num"),
              ("noncongruent_fraction", "non-congruent (%)", "num"), ("coverage_v4", "IPv4 coverage (%)", "num"),
              ("coverage_v6", "IPv6 coverage (%)", "num"))


def _vp_table(vps: list[dict]) -> str:
    pct = {"noncongruent_fraction", "coverage_v4", "coverage_v6"}
    head = "".join(f"<th data-type='{t}' tabindex='0'>{html.escape(label)}</th>" for _, label, t in VP_COLUMNS)
    rows = []
    for r in vps:
        cells = []
        for key, _, t in VP_COLUMNS:
            v = r[key]
            shown = "" if v is None else f"{100 * v:.1f}" if key in pct else str(v)
            sort = "" if v is None else repr(v) if t == "num" else html.escape(str(v))
            cells.append(f"<td data-v='{sort}'>{html.escape(shown)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<input id='vp-filter' type='search' placeholder='filter VPs (any column)' aria-label='filter VPs'> "
            f"<span id='vp-count'>{len(vps)} of {len(vps)} VPs</span>"
            f"<table id='vp-table' class='sortable'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


TABLE_JS = """
(function () {
  var table = document.getElementById('vp-table');
  if (!table) return;
  var body = table.tBodies[0], heads = table.tHead.rows[0].cells;
  var filter = document.getElementById('vp-filter'), count = document.getElementById('vp-count');
  var total = body.rows.length;
  function sortBy(i) {
    var th = heads[i], asc = th.getAttribute('aria-sort') !== 'ascending';
    var num = th.dataset.type === 'num';
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[i].dataset.v, y = b.cells[i].dataset.v;
      if (x === '' || y === '') return (x === '') - (y === '');
      var c = num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    for (var j = 0; j < heads.length; j++) heads[j].removeAttribute('aria-sort');
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
  }
  for (var i = 0; i < heads.length; i++) (function (i) {
    heads[i].addEventListener('click', function () { sortBy(i); });
    heads[i].addEventListener('keydown', function (e) { if (e.key === 'Enter') sortBy(i); });
  })(i);
  filter.addEventListener('input', function () {
    var q = filter.value.trim().toLowerCase(), shown = 0;
    Array.prototype.forEach.call(body.rows, function (r) {
      var hit = !q || r.textContent.toLowerCase().indexOf(q) >= 0;
      r.hidden = !hit; shown += hit;
    });
    count.textContent = shown + ' of ' + total + ' VPs';
  });
})();
"""

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
figure { margin: 1.5em 0; border: 1px solid #ddd; padding: 0.5em; }
figcaption { color: #444; font-size: 0.95em; padding: 0.3em 0.5em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.95em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
td[data-v] { text-align: right; } thead th { background: #f3f3f3; }
#vp-table th { cursor: pointer; } #vp-table th[aria-sort=ascending]::after { content: ' \\25B2'; }
#vp-table th[aria-sort=descending]::after { content: ' \\25BC'; }
#vp-filter { padding: 0.3em; width: 20em; } .note { color: #555; font-size: 0.9em; }
"""


def _page(title: str, intro: str, sections: list[str]) -> str:
    from plotly.offline import get_plotlyjs

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # No network at all: the page may load nothing but what it carries inline.
    csp = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
           "img-src data: blob:; font-src data:")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='note'>{intro} Generated {stamp} by <code>congruency report</code>; "
        "works offline.</p>" + "".join(sections) + f"<script>{TABLE_JS}</script></body></html>\n"
    )


def _figure_html(f: Figure) -> str:
    div = f.fig.to_html(full_html=False, include_plotlyjs=False, div_id=f.id, default_height="420px",
                        config={"displaylogo": False, "responsive": True})
    return f"<figure>{div}<figcaption>{html.escape(f.caption)}</figcaption></figure>"


def _provenance(con, month: str) -> str:
    """What produced the month (its provenance row), so a lenient month never reads as a strict one."""
    if "provenance" not in warehouse.views(con):
        return "<p class='note'>Provenance: not recorded (published before provenance existed).</p>"
    rows = _rows(con, "SELECT * FROM provenance WHERE month = $month", {"month": month})
    if not rows:
        return "<p class='note'>Provenance: not recorded for this month.</p>"
    p = rows[0]
    lenient = " (lenient: the study's is 0.9)" if p["min_coverage"] < 0.9 else ""
    gaps = ""
    if p["snapshots_missing"] or p["snapshots_failed"]:
        gaps = (f"; <b>{len(p['snapshots_missing'])} missing and {len(p['snapshots_failed'])} failed "
                f"snapshot(s)</b>: {html.escape(', '.join((p['snapshots_missing'] + p['snapshots_failed'])[:8]))}"
                + (" ..." if len(p["snapshots_missing"]) + len(p["snapshots_failed"]) > 8 else ""))
    return (f"<p id='provenance' class='note'>Provenance: {len(p['snapshots_used'])} snapshot(s) of "
            f"{html.escape(', '.join(p['collectors']))} ({p['entries']:,} entries){gaps}; coverage threshold "
            f"<b>{p['min_coverage']:g}</b>{lenient}; engine {html.escape(p['engine'])}; method "
            f"{html.escape(p['method_version'])}; code {html.escape(p['project_version'])}; published "
            f"{html.escape(str(p['published_at']))}. Every value: the <code>provenance</code> table.</p>")


def month_html(con, month: str) -> str:
    summary, vps, figs = month_figures(con, month)
    sections = [
        _provenance(con, month),
        "<h2>Headline numbers</h2>", _headline(summary),
        "<p class='note'>2014 reference: the 2014 study's section III figures (72 VPs).</p>",
        "<h2>Figures</h2>", *map(_figure_html, figs),
        "<h2>Vantage points</h2><p class='note'>Click a column to sort; type to filter.</p>", _vp_table(vps),
    ]
    reached = _rows(con, "SELECT count(DISTINCT dest_asn) AS n FROM pairs WHERE month = $month", {"month": month})[0]["n"]
    intro = (f"{summary['vps_with_pairs']} vantage points with pairs, {summary['pairs']:,} pairs to {reached:,} "
             f"destinations, of the month's {summary['destinations']:,} dual-stacked destinations (origin ASes "
             f"seen in both families; those no default-free VP reaches in both form no pair).")
    return _page(f"IPv4/IPv6 AS-path congruency, {month}", intro, sections)


def write_month_report(cfg, month: str, out: Path | None = None) -> Path:
    """DATA_DIR/reports/month=M/report.html (or `out`): one month, offline; ReportError when unpublished."""
    try:
        published.require(warehouse.data_root(cfg), month)
    except (published.NoResults, warehouse.WarehouseError) as exc:
        raise ReportError(str(exc)) from None
    return _render(cfg, lambda con: month_html(con, month), out or (lambda: month_path(cfg, month)))


# ----------------------------------------------------------------------------- trend report
def trend_figures(con) -> tuple[list[dict], list[Figure]]:
    import plotly.graph_objects as go

    ms = _rows(con, "SELECT month, pairs, noncongruent_fraction, non_adopter_fraction, vps_with_pairs, "
                    "vp_noncongruent_min AS lo, vp_noncongruent_q1 AS q1, vp_noncongruent_median AS med, "
                    "vp_noncongruent_q3 AS q3, vp_noncongruent_max AS hi FROM month_summary ORDER BY month")
    months = [r["month"] for r in ms]
    figs = []
    pc = lambda v: None if v is None else 100 * v  # noqa: E731

    f = go.Figure()
    f.add_trace(go.Box(x=months, lowerfence=[pc(r["lo"]) for r in ms], q1=[pc(r["q1"]) for r in ms],
                       median=[pc(r["med"]) for r in ms], q3=[pc(r["q3"]) for r in ms],
                       upperfence=[pc(r["hi"]) for r in ms], name="per-VP fraction", marker_color="#1f77b4",
                       customdata=[r["vps_with_pairs"] for r in ms],
                       hovertemplate="%{x}: min %{lowerfence:.1f}%, Q1 %{q1:.1f}%, median %{median:.1f}%, "
                                     "Q3 %{q3:.1f}%, max %{upperfence:.1f}% over %{customdata} VPs<extra></extra>"))
    f.add_trace(go.Scatter(x=months, y=[pc(r["noncongruent_fraction"]) for r in ms], mode="lines+markers",
                           name="all pairs", line=dict(color="#d62728", dash="dot"),
                           customdata=[r["pairs"] for r in ms],
                           hovertemplate="%{x}: %{y:.1f}% of %{customdata} pairs non-congruent<extra></extra>"))
    _layout(f, "Per-VP non-congruent fraction by month", "month (YYYY-MM)", "non-congruent pairs of a VP (%)",
            yaxis_range=[0, 100], xaxis_type="category")
    figs.append(Figure("fig-trend-vps", f, "Each box spans one month's VPs: whiskers at the least and most "
                       "non-congruent VP, box from first to third quartile, line at the median (study fig. 2b); "
                       "the dotted line is the fraction over all pairs."))

    f = go.Figure(go.Scatter(x=months, y=[pc(r["non_adopter_fraction"]) for r in ms], mode="lines+markers",
                             name="explained by non-adopters", line=dict(color="#9467bd"),
                             hovertemplate="%{x}: %{y:.1f}% of non-congruent pairs<extra></extra>"))
    _layout(f, "Non-congruent pairs explained by IPv6 non-adopters, by month", "month (YYYY-MM)",
            "non-congruent pairs with a non-adopter (%)", yaxis_range=[0, 100], xaxis_type="category")
    figs.append(Figure("fig-trend-nonadopter", f, "Share of non-congruent pairs whose IPv4 path crosses an AS with "
                       "no IPv6 path that month: how much of the non-congruence IPv6 adoption alone could remove."))

    tr = _rows(con, "SELECT month, kind, count(*) AS n FROM transitions GROUP BY ALL") if \
        "transitions" in warehouse.views(con) else []
    by = {(r["month"], r["kind"]): r["n"] for r in tr}
    f = go.Figure()
    for kind, label in TRANSITION_KINDS:
        f.add_trace(go.Bar(x=months, y=[by.get((m, kind), 0) for m in months], name=label,
                           hovertemplate="%{x}: %{y} pairs became congruent (" + label + ")<extra></extra>"))
    _layout(f, "Pairs that became congruent since the month before", "month (YYYY-MM)", "pairs (count)",
            barmode="stack", xaxis_type="category")
    figs.append(Figure("fig-trend-transitions", f, "Pairs congruent this month that were not a congruent pair the "
                       "month before, by why: the pair existed, the destination newly has IPv6, or the pair is new. "
                       "The first month has no month before it."))
    return ms, figs


def trend_html(con) -> str:
    ms, figs = trend_figures(con)
    if not ms:
        raise ReportError("no published months (run congruency run for the month first)")
    intro = f"{len(ms)} published months, {ms[0]['month']} to {ms[-1]['month']}."
    return _page("IPv4/IPv6 AS-path congruency across months", intro, ["<h2>Figures</h2>", *map(_figure_html, figs)])


def write_trend_report(cfg, out: Path | None = None) -> Path:
    """DATA_DIR/reports/trend.html (or `out`): every published month, offline."""
    return _render(cfg, trend_html, out or (lambda: trend_path(cfg)))


def _render(cfg, page, out) -> Path:
    """Render `page(con)` and write it atomically to `out` (a path, or a function giving the default)."""
    import duckdb

    try:
        target = Path(out() if callable(out) else out)
        con = warehouse.memory(cfg)
    except warehouse.WarehouseError as exc:
        raise ReportError(str(exc)) from None
    try:
        text = page(con)
    except duckdb.Error as exc:
        raise ReportError(f"{warehouse.data_root(cfg)}: reading the tables failed: "
                          f"{' '.join(str(exc).splitlines()[0].split())}") from None
    finally:
        con.close()
    try:
        return atomic.write_text(target, text)
    except OSError as exc:
        raise ReportError(f"{target}: cannot write the report: {exc.strerror or exc}") from None
