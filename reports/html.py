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

from common import atomic, layout, published
from common.errors import CongruencyError
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
#: VPs with fewer pairs than this are left out of the per-VP CDF (a fraction over a handful of
#: pairs is noise) and listed under it; `congruency report --min-pairs N` changes it.
MIN_PAIRS = 10
#: Rows in the divergence and shared-AS tables.
TOP_ASES = 15


def stamp(t: datetime | None = None) -> str:
    """The one timestamp spelling of the reports: ISO 8601 UTC to the minute (2026-07-30T14:00Z)."""
    return (t or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


class ReportError(CongruencyError):
    """A one-line reason a report cannot be written."""


@dataclass
class Figure:
    id: str
    fig: object  # plotly.graph_objects.Figure
    caption: str


def month_path(cfg, month: str) -> Path:
    return layout.report_file(warehouse.data_root(cfg), month)


def trend_path(cfg) -> Path:
    return layout.report_file(warehouse.data_root(cfg), None)


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
def month_figures(con, month: str, min_pairs: int = MIN_PAIRS) -> tuple[dict, list[dict], list[Figure]]:
    """(month_summary row, per-VP rows, figures) of one published month."""
    import plotly.graph_objects as go

    p = {"month": month}
    summary = _rows(con, "SELECT * FROM month_summary WHERE month = $month", p)[0]
    vps = _rows(con, query.get("vp_congruency").sql, p)
    figs = []

    # Figure 2a: CDF of the per-VP non-congruent fraction, edge and transit VPs apart, and all
    # VPs together; VPs with fewer than min_pairs pairs are left out and named in the caption.
    f = go.Figure()
    plotted = [r for r in vps if r["pairs"] >= min_pairs]
    few = [r for r in vps if r["pairs"] < min_pairs]
    for cls, rows, color, dash in (("edge", [r for r in plotted if r["vp_class"] == "edge"], COLORS["edge"], None),
                                   ("transit", [r for r in plotted if r["vp_class"] == "transit"], COLORS["transit"],
                                    None),
                                   ("all", plotted, "#444444", "dot")):
        rows = sorted(rows, key=lambda r: r["noncongruent_fraction"])
        xs = [100 * r["noncongruent_fraction"] for r in rows]
        ys = [100 * (i + 1) / len(xs) for i in range(len(xs))]
        f.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", line_shape="hv", name=f"{cls} VPs ({len(xs)})",
                               marker=dict(color=color), line=dict(dash=dash),
                               customdata=[[f"{r['vp_group']} AS{r['vp_asn']}", r["pairs"]] for r in rows],
                               hovertemplate="%{customdata[0]}: %{customdata[1]} pairs<br>non-congruent: %{x:.1f}%"
                                             "<br>VPs at or below: %{y:.0f}%<extra>" + cls + "</extra>"))
    _layout(f, f"Per-VP non-congruent fraction, {month} (CDF)", "non-congruent pairs of the VP (%)",
            "VPs at or below (%)", xaxis_range=[0, 100], yaxis_range=[0, 105])
    left_out = (f" Left out, with fewer than {min_pairs} pairs: "
                + ", ".join(f"{r['vp_group']} AS{r['vp_asn']} ({r['pairs']})" for r in few) + "."
                if few else f" Every VP has at least {min_pairs} pairs.")
    figs.append(Figure("fig-cdf", f, "Each step is one VP: the share of VPs (y) whose fraction of non-congruent "
                       "pairs is at most x; a curve further right means more non-congruent VPs (study fig. 2a). "
                       "Hover shows each VP's pairs; the dotted curve is all VPs together." + left_out))

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

    # The share of pairs that are congruent at each length of the IPv4 path.
    share = _rows(con, "SELECT hops_v4 AS hops, count(*) FILTER (WHERE congruent) AS c, count(*) AS n FROM pairs "
                       "WHERE month = $month GROUP BY 1 ORDER BY 1", p)
    ys = [100 * r["c"] / r["n"] for r in share]
    f = go.Figure(go.Bar(x=[r["hops"] for r in share], y=ys, name="congruent share", marker_color="#2ca02c",
                         text=[f"{y:.0f}%" for y in ys], textposition="outside",
                         customdata=[[r["c"], r["n"]] for r in share],
                         hovertemplate="IPv4 path of %{x} hops: %{customdata[0]} of %{customdata[1]} pairs "
                                       "congruent (%{y:.1f}%)<extra></extra>"))
    _layout(f, f"Share of pairs congruent by IPv4 path length, {month}", "IPv4 path length (AS hops)",
            "congruent pairs of that length (%)", xaxis_dtick=1, yaxis_range=[0, 110])
    figs.append(Figure("fig-hops-share", f, "Of all pairs whose IPv4 path has x AS hops, the share whose IPv6 "
                       "path is the same path: normalised per length, so lengths with few pairs are not hidden "
                       "(hover for the counts)."))

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

    # Divergence: the ASes most often on only one family's path (METHOD.md 7b).
    div = _rows(con, query.get("divergence_ases").sql, {"month": month, "vp": 0, "limit": TOP_ASES})
    if div:
        f = go.Figure()
        for key, label, color in (("v4_only_pairs", "IPv4 path only", "#1f77b4"),
                                  ("v6_only_pairs", "IPv6 path only", "#ff7f0e")):
            f.add_trace(go.Bar(x=[f"AS{r['asn']}" for r in div], y=[r[key] for r in div], name=label,
                               marker_color=color, customdata=[r["vps"] for r in div],
                               hovertemplate="%{x} on the " + label + " of %{y} non-congruent pairs "
                                             "(%{customdata} VPs)<extra></extra>"))
        _layout(f, f"ASes on only one family's path, {month} (top {len(div)})", "AS",
                "non-congruent pairs (count)", barmode="group", xaxis_type="category")
        figs.append(Figure("fig-divergence", f, "Where the two paths of non-congruent pairs differ: each AS on "
                           "only the IPv4 or only the IPv6 path of a pair, counted over the month's pairs (the "
                           "divergence table; congruency query divergence_ases for one VP)."))
    return summary, vps, figs
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


def _table(tid: str, head: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    """A plain table; cells are escaped; columns in `numeric` align right."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(
        f"<td{' class=num' if i in numeric else ''}>{html.escape(str(c))}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows)
    return f"<table id='{tid}'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _cleaning_table(con, month: str) -> str:
    """Entries dropped by each cleaning rule (METHOD.md step 1, in order), per family."""
    cs = {(r["afi"], r["reason"]): r["n"] for r in _rows(
        con, "SELECT afi, reason, sum(entries)::BIGINT AS n FROM cleaning_stats WHERE month = $month GROUP BY ALL",
        {"month": month})}
    total = {a: sum(n for (afi, _), n in cs.items() if afi == a) for a in (4, 6)}
    rows = []
    for reason, label in (*CLEANING[:-1], ("loop", "no loop")):
        n4, n6 = cs.get((4, reason), 0), cs.get((6, reason), 0)
        rows.append([reason, f"{n4:,}", _share(n4, total[4]), f"{n6:,}", _share(n6, total[6])])
    rows.append(["kept", f"{cs.get((4, 'kept'), 0):,}", _share(cs.get((4, "kept"), 0), total[4]),
                 f"{cs.get((6, 'kept'), 0):,}", _share(cs.get((6, "kept"), 0), total[6])])
    rows.append(["all entries", f"{total[4]:,}", "", f"{total[6]:,}", ""])
    return _table("cleaning", ["rule (in order)", "IPv4 entries dropped", "of IPv4", "IPv6 entries dropped",
                               "of IPv6"], rows, {1, 2, 3, 4})


def _share(n: int, total: int) -> str:
    """n of total in percent, with as many decimals as it takes not to read as 0% or 100%."""
    if not total:
        return ""
    pct, dec = 100 * n / total, 2
    while dec < 9 and 0 < n < total and round(pct, dec) in (0, 100):
        dec += 1
    return f"{pct:.{dec}f}%"


def _shared_table(con, month: str) -> str:
    rows = _rows(con, query.get("shared_ases").sql, {"month": month, "limit": TOP_ASES})
    if not rows:
        return "<p class='note'>No non-congruent pair shares an AS this month.</p>"
    return _table("shared-ases", ["AS", "non-congruent pairs sharing it", "adjacent on both paths", "VPs"],
                  [[f"AS{r['asn']}", f"{r['pairs']:,}", f"{r['adjacent_pairs']:,} ({_pct(r['adjacent_fraction'])})",
                    r["vps"]] for r in rows], {1, 2, 3})


def _divergence_table(con, month: str) -> str:
    rows = _rows(con, query.get("divergence_ases").sql, {"month": month, "vp": 0, "limit": TOP_ASES})
    if not rows:
        return "<p class='note'>No non-congruent pair this month.</p>"
    return _table("divergence-ases", ["AS", "IPv4 path only (pairs)", "IPv6 path only (pairs)", "VPs"],
                  [[f"AS{r['asn']}", f"{r['v4_only_pairs']:,}", f"{r['v6_only_pairs']:,}", r["vps"]] for r in rows],
                  {1, 2, 3})


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
td[data-v], td.num { text-align: right; } thead th { background: #f3f3f3; }
td:first-child { white-space: nowrap; }
#vp-table th { cursor: pointer; } #vp-table th[aria-sort=ascending]::after { content: ' \\25B2'; }
#vp-table th[aria-sort=descending]::after { content: ' \\25BC'; }
#vp-filter { padding: 0.3em; width: 20em; } .note { color: #555; font-size: 0.9em; }
"""


def _page(title: str, intro: str, sections: list[str], by: str = "congruency report") -> str:
    from plotly.offline import get_plotlyjs

    now = stamp()
    # No network at all: the page may load nothing but what it carries inline.
    csp = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
           "img-src data: blob:; font-src data:")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='note'>{intro} Generated {now} by <code>{html.escape(by)}</code>; "
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
            f"{html.escape(_when(p['published_at']))}. Every value: the <code>provenance</code> table.</p>")


def _when(v) -> str:
    """A stored time (timestamp, or ISO text) in the reports' one spelling."""
    if isinstance(v, str):
        try:
            v = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return v
    return stamp(v if v.tzinfo else v.replace(tzinfo=timezone.utc))


def month_html(con, month: str, min_pairs: int = MIN_PAIRS) -> str:
    summary, vps, figs = month_figures(con, month, min_pairs)
    by = {f.id: f for f in figs}
    sections = [
        "<p class='note'><a href='../trend.html'>Trend across months</a></p>",
        _provenance(con, month),
        "<h2>Headline numbers</h2>", _headline(summary),
        "<p class='note'>2014 reference: the 2014 study's section III figures (72 VPs).</p>",
        "<h2>Figures</h2>", *(_figure_html(f) for f in figs if f.id != "fig-divergence"),
        "<h2 id='why'>Why paths diverge</h2>",
        "<p class='note'>The ASes most often on only one family's path of a non-congruent pair, and the ASes "
        "the two paths most often share (METHOD.md 7b; named queries divergence_ases and shared_ases).</p>",
        *([_figure_html(by["fig-divergence"])] if "fig-divergence" in by else []),
        _divergence_table(con, month),
        "<h3>Top shared ASes</h3>", _shared_table(con, month),
        "<h2>Cleaning</h2><p class='note'>RIB entries each rule of METHOD.md step 1 drops, in the order the "
        "rules apply; kept entries are what the comparison uses.</p>", _cleaning_table(con, month),
        "<h2>Vantage points</h2><p class='note'>Click a column to sort; type to filter.</p>", _vp_table(vps),
    ]
    reached = _rows(con, "SELECT count(DISTINCT dest_asn) AS n FROM pairs WHERE month = $month", {"month": month})[0]["n"]
    intro = (f"{summary['vps_with_pairs']} vantage points with pairs, {summary['pairs']:,} pairs to {reached:,} "
             f"destinations, of the month's {summary['destinations']:,} dual-stacked destinations (origin ASes "
             f"seen in both families; those no default-free VP reaches in both form no pair).")
    return _page(f"IPv4/IPv6 AS-path congruency, {month}", intro, sections)


def write_month_report(cfg, month: str, out: Path | None = None, min_pairs: int = MIN_PAIRS) -> Path:
    """DATA_DIR/reports/month=M/report.html (or `out`): one month, offline; ReportError when unpublished."""
    try:
        published.require(warehouse.data_root(cfg), month)
    except (published.NoResults, warehouse.WarehouseError) as exc:
        raise ReportError(str(exc)) from None
    return _render(cfg, lambda con: month_html(con, month, min_pairs), out or (lambda: month_path(cfg, month)))


# ----------------------------------------------------------------------------- trend report
def _calendar(first: str, last: str) -> list[str]:
    """Every month from first to last: the trend's x axis, so a missing month is a gap."""
    from common.months import parse_month_range

    return parse_month_range(f"{first}..{last}")


def trend_data(con) -> dict:
    """The trend's numbers: per published month its summary, transitions both ways (None
    where the month before was not published: not applicable), and per-VP fractions."""
    from common.months import previous_month

    ms = _rows(con, "SELECT month, pairs, noncongruent_fraction, non_adopter_fraction, vps_with_pairs, "
                    "vp_noncongruent_min AS lo, vp_noncongruent_q1 AS q1, vp_noncongruent_median AS med, "
                    "vp_noncongruent_q3 AS q3, vp_noncongruent_max AS hi FROM month_summary ORDER BY month")
    have = {r["month"] for r in ms}
    tr = _rows(con, "SELECT month, kind, count(*) AS n FROM transitions GROUP BY ALL") if \
        "transitions" in warehouse.views(con) else []
    by = {(r["month"], r["kind"]): r["n"] for r in tr}
    # The counterpart of transitions' existing_pair: pairs non-congruent now, congruent the month before.
    worse = {r["month"]: r["n"] for r in _rows(con, """
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
    prov = {r["month"]: r for r in _rows(con, "SELECT month, min_coverage, len(snapshots_used) AS used, "
                                              "len(snapshots_missing) + len(snapshots_failed) AS gaps FROM provenance")} \
        if "provenance" in warehouse.views(con) else {}
    for r in ms:
        p = prov.get(r["month"])
        r["inputs"] = ("not recorded" if p is None else
                       f"{p['used']} snapshot(s)" + (f", {p['gaps']} missing or failed" if p["gaps"] else "")
                       + f"; threshold {p['min_coverage']:g}" + (" (lenient)" if p["min_coverage"] < 0.9 else ""))
    vps = _rows(con, "SELECT month, vp_group, vp_asn, noncongruent_fraction, pairs FROM vps WHERE pairs > 0 "
                     "ORDER BY vp_group, vp_asn, month")
    axis = _calendar(ms[0]["month"], ms[-1]["month"]) if ms else []
    return {"months": ms, "axis": axis, "missing": [m for m in axis if m not in have], "vps": vps}


def trend_figures(con, data: dict | None = None) -> tuple[list[dict], list[Figure]]:
    import plotly.graph_objects as go

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
    _layout(f, "Per-VP non-congruent fraction by month", "month (YYYY-MM; a month without data is a gap)",
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
    _layout(f, "Non-congruent fraction of each VP by month", "month (YYYY-MM)", "non-congruent pairs of the VP (%)",
            yaxis_range=[0, 100], **cat)
    f.update_layout(legend=dict(orientation="v", y=1), height=max(420, 22 * len(f.data)))
    figs.append(Figure("fig-trend-vp-lines", f, "One line per VP (click a VP in the legend to hide it, "
                       "double-click to show it alone); a month the VP has no pairs in breaks its line."))

    f = go.Figure(go.Scatter(x=axis, y=on_axis("non_adopter_fraction"), mode="lines+markers", connectgaps=False,
                             name="explained by non-adopters", line=dict(color="#9467bd"),
                             hovertemplate="%{x}: %{y:.1f}% of non-congruent pairs<extra></extra>"))
    _layout(f, "Non-congruent pairs explained by IPv6 non-adopters, by month", "month (YYYY-MM)",
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
        _layout(f, "Pairs that changed since the month before", "month (YYYY-MM)",
                "pairs (count; below 0: became non-congruent)", barmode="relative", **cat)
        figs.append(Figure("fig-trend-transitions", f, "Above zero, pairs congruent this month that were not a "
                           "congruent pair the month before, by why (the pair existed, the destination newly has "
                           "IPv6, or the pair is new); below zero, pairs of the month before that were congruent "
                           "and are not now. A month whose month before has no data has no bar: not applicable."))
    return ms, figs


def _trend_table(d: dict) -> str:
    """Per month (missing months included, marked), with the CSV of the same rows."""
    import csv
    import io
    from urllib.parse import quote

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
        rows.append([m, r["pairs"], r["vps_with_pairs"], _num(r["noncongruent_fraction"]), _num(r["med"]),
                     _num(r["non_adopter_fraction"]), r["inputs"],
                     na if r["became_congruent"] is None else r["became_congruent"],
                     na if r["became_noncongruent"] is None else r["became_noncongruent"]])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([head, *rows])
    link = (f"<p><a id='trend-csv' download='trend.csv' href='data:text/csv;charset=utf-8,{quote(buf.getvalue())}'>"
            "Download this table as CSV</a> (generated into the page; works offline)</p>")
    return _table("trend-table", head, rows, {1, 2, 3, 4, 5, 7, 8}) + link


def _num(x) -> str:
    return "" if x is None else f"{100 * x:.1f}"


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
    return _page("IPv4/IPv6 AS-path congruency across months", intro,
                 [links, one, "<h2>Figures</h2>", *map(_figure_html, figs), "<h2>Per month</h2>", _trend_table(d)])


def write_trend_report(cfg, out: Path | None = None) -> Path:
    """DATA_DIR/reports/trend.html (or `out`): every published month, offline."""
    from common import published

    if not published.months(warehouse.data_root(cfg)):  # ingested only, or nothing yet
        raise ReportError(f"{warehouse.data_root(cfg)}: no published tables of any month to show a trend of "
                          "(run congruency run for a month first)")
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
