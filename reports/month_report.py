"""The month report: the 2014 study's section III for one month beside its headline
numbers, provenance and per-VP table (DATA_DIR/reports/month=M/report.html)."""
from __future__ import annotations

import html
from pathlib import Path

import plotly.graph_objects as go

from bgp_congruency.common import layout
from bgp_congruency.lake import published
from bgp_congruency.reports import query, warehouse
from bgp_congruency.reports.page import (
    Figure,
    ReportError,
    fetch_rows,
    figure_html,
    page_html,
    pct,
    plot_layout,
    render,
    share,
    table_html,
    when,
)
from bgp_congruency.selector import calibration

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




COLORS = {"edge": "#1f77b4", "transit": "#d62728"}


#: VPs with fewer pairs than this are left out of the per-VP CDF (a fraction over a handful of
#: pairs is noise) and listed under it; `congruency report --min-pairs N` changes it.
MIN_PAIRS = 10


#: Rows in the divergence and shared-AS tables.
TOP_ASES = 15


def month_path(cfg, month: str) -> Path:
    return layout.report_file(warehouse.data_root(cfg), month)


def month_figures(con, month: str, min_pairs: int = MIN_PAIRS) -> tuple[dict, list[dict], list[Figure]]:
    """(month_summary row, per-VP rows, figures) of one published month."""
    p = {"month": month}
    summary = fetch_rows(con, "SELECT * FROM month_summary WHERE month = $month", p)[0]
    vps = fetch_rows(con, query.get("vp_congruency").sql, p)
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
    plot_layout(f, f"Per-VP non-congruent fraction, {month} (CDF)", "non-congruent pairs of the VP (%)",
            "VPs at or below (%)", xaxis_range=[0, 100], yaxis_range=[0, 100])
    left_out = (f" Left out, with fewer than {min_pairs} pairs: "
                + ", ".join(f"{r['vp_group']} AS{r['vp_asn']} ({r['pairs']})" for r in few) + "."
                if few else f" Every VP has at least {min_pairs} pairs.")
    figs.append(Figure("fig-cdf", f, "Each step is one VP: the share of VPs (y) whose fraction of non-congruent "
                       "pairs is at most x; a curve further right means more non-congruent VPs (study fig. 2a). "
                       "Hover shows each VP's pairs; the dotted curve is all VPs together." + left_out))

    # Congruent pairs by path length.
    hops = fetch_rows(con, "SELECT hops_v4 AS hops, count(*) AS n FROM pairs WHERE month = $month AND congruent "
                      "GROUP BY 1 ORDER BY 1", p)
    f = go.Figure(go.Bar(x=[r["hops"] for r in hops], y=[r["n"] for r in hops], name="congruent pairs",
                         marker_color="#2ca02c",
                         hovertemplate="%{x} hops: %{y} congruent pairs<extra></extra>"))
    plot_layout(f, f"Congruent pairs by path length, {month}", "path length (AS hops)", "congruent pairs (count)",
            xaxis_dtick=1)
    figs.append(Figure("fig-hops", f, "Congruent pairs (identical IPv4 and IPv6 paths) by the length of that "
                       "path in AS hops; bars on the left mean congruence comes mostly from short paths."))

    # The share of pairs that are congruent at each length of the IPv4 path.
    share = fetch_rows(con, "SELECT hops_v4 AS hops, count(*) FILTER (WHERE congruent) AS c, count(*) AS n FROM pairs "
                       "WHERE month = $month GROUP BY 1 ORDER BY 1", p)
    ys = [100 * r["c"] / r["n"] for r in share]
    f = go.Figure(go.Bar(x=[r["hops"] for r in share], y=ys, name="congruent share", marker_color="#2ca02c",
                         text=[f"{y:.0f}%" for y in ys], textposition="outside",
                         customdata=[[r["c"], r["n"]] for r in share],
                         hovertemplate="IPv4 path of %{x} hops: %{customdata[0]} of %{customdata[1]} pairs "
                                       "congruent (%{y:.1f}%)<extra></extra>"))
    plot_layout(f, f"Share of pairs congruent by IPv4 path length, {month}", "IPv4 path length (AS hops)",
            "congruent pairs of that length (%)", xaxis_dtick=1, yaxis_range=[0, 110])
    figs.append(Figure("fig-hops-share", f, "Of all pairs whose IPv4 path has x AS hops, the share whose IPv6 "
                       "path is the same path: normalised per length, so lengths with few pairs are not hidden "
                       "(hover for the counts)."))

    # Non-congruent pairs by number of shared ASes and by adjacency.
    shared = fetch_rows(con, """
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
    plot_layout(f, f"Non-congruent pairs by shared ASes, {month}", "ASes on both paths besides VP and destination (count)",
            "non-congruent pairs (count)", barmode="stack")
    figs.append(Figure("fig-shared", f, "Non-congruent pairs by how many intermediate ASes their two paths share, "
                       "split by whether every shared AS sits right after the VP or right before the destination."))

    # The share explained by IPv6 non-adopters.
    na = fetch_rows(con, """
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
    plot_layout(f, f"Non-congruent pairs explained by IPv6 non-adopters, {month}", "vantage points",
            "non-congruent pairs (count)", barmode="stack")
    figs.append(Figure("fig-nonadopter", f, "A non-congruent pair is explained by non-adoption when its IPv4 path "
                       "crosses an AS seen on no IPv6 path this month; the purple part is that share."))

    # Divergence: the ASes most often on only one family's path (METHOD.md 7b).
    div = fetch_rows(con, query.get("divergence_ases").sql, {"month": month, "vp": 0, "limit": TOP_ASES})
    if div:
        f = go.Figure()
        for key, label, color in (("v4_only_pairs", "IPv4 path only", "#1f77b4"),
                                  ("v6_only_pairs", "IPv6 path only", "#ff7f0e")):
            f.add_trace(go.Bar(x=[f"AS{r['asn']}" for r in div], y=[r[key] for r in div], name=label,
                               marker_color=color, customdata=[r["vps"] for r in div],
                               hovertemplate="%{x} on the " + label + " of %{y} non-congruent pairs "
                                             "(%{customdata} VPs)<extra></extra>"))
        plot_layout(f, f"ASes on only one family's path, {month} (top {len(div)})", "AS",
                "non-congruent pairs (count)", barmode="group", xaxis_type="category")
        figs.append(Figure("fig-divergence", f, "Where the two paths of non-congruent pairs differ: each AS on "
                           "only the IPv4 or only the IPv6 path of a pair, counted over the month's pairs (the "
                           "divergence table; congruency query divergence_ases for one VP)."))
    return summary, vps, figs
    return summary, vps, figs


def _headline(s: dict) -> str:
    nc = s["noncongruent_pairs"]
    rows = [
        ("Non-congruent pairs", f"{pct(s['noncongruent_fraction'])} of {s['pairs']:,} pairs over "
                                f"{s['vps_with_pairs']} VPs", REFERENCE_2014["noncongruent"]),
        ("Non-congruent pairs sharing no AS", pct(s["noncongruent_shared_0"] / nc if nc else None),
         REFERENCE_2014["shared_0"]),
        ("Non-congruent pairs sharing more than one AS", pct(s["noncongruent_shared_2plus"] / nc if nc else None),
         REFERENCE_2014["shared_2plus"]),
        ("Shared ASes adjacent (pairs whose shared ASes are all adjacent)",
         pct(s["shared_all_adjacent_fraction"]), REFERENCE_2014["adjacent"]),
        ("Per-VP non-congruent fraction, min-max",
         f"{pct(s['vp_noncongruent_min'])}-{pct(s['vp_noncongruent_max'])}", REFERENCE_2014["vp_range"]),
        ("Non-congruent pairs with an IPv6 non-adopter", pct(s["non_adopter_fraction"]), REFERENCE_2014["non_adopter"]),
    ]
    body = "".join(f"<tr><th scope='row'>{html.escape(a)}</th><td>{html.escape(b)}</td><td>{html.escape(c)}</td></tr>"
                   for a, b, c in rows)
    return ("<table id='headline'><thead><tr><th>Figure</th><th>This month</th><th>2014 reference</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


def _cleaning_table(con, month: str) -> str:
    """Entries dropped by each cleaning rule (METHOD.md step 1, in order), per family."""
    cs = {(r["afi"], r["reason"]): r["n"] for r in fetch_rows(
        con, "SELECT afi, reason, sum(entries)::BIGINT AS n FROM cleaning_stats WHERE month = $month GROUP BY ALL",
        {"month": month})}
    total = {a: sum(n for (afi, _), n in cs.items() if afi == a) for a in (4, 6)}
    rows = []
    for reason, label in (*CLEANING[:-1], ("loop", "no loop")):
        n4, n6 = cs.get((4, reason), 0), cs.get((6, reason), 0)
        rows.append([reason, f"{n4:,}", share(n4, total[4]), f"{n6:,}", share(n6, total[6])])
    rows.append(["kept", f"{cs.get((4, 'kept'), 0):,}", share(cs.get((4, "kept"), 0), total[4]),
                 f"{cs.get((6, 'kept'), 0):,}", share(cs.get((6, "kept"), 0), total[6])])
    rows.append(["all entries", f"{total[4]:,}", "", f"{total[6]:,}", ""])
    return table_html("cleaning", ["rule (in order)", "IPv4 entries dropped", "of IPv4", "IPv6 entries dropped",
                               "of IPv6"], rows, {1, 2, 3, 4})


def _shared_table(con, month: str) -> str:
    rows = fetch_rows(con, query.get("shared_ases").sql, {"month": month, "limit": TOP_ASES})
    if not rows:
        return "<p class='note'>No non-congruent pair shares an AS this month.</p>"
    return table_html("shared-ases", ["AS", "non-congruent pairs sharing it", "adjacent on both paths", "VPs"],
                  [[f"AS{r['asn']}", f"{r['pairs']:,}", f"{r['adjacent_pairs']:,} ({pct(r['adjacent_fraction'])})",
                    r["vps"]] for r in rows], {1, 2, 3})


def _divergence_table(con, month: str) -> str:
    rows = fetch_rows(con, query.get("divergence_ases").sql, {"month": month, "vp": 0, "limit": TOP_ASES})
    if not rows:
        return "<p class='note'>No non-congruent pair this month.</p>"
    return table_html("divergence-ases", ["AS", "IPv4 path only (pairs)", "IPv6 path only (pairs)", "VPs"],
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


def _provenance(con, month: str) -> str:
    """What produced the month (its provenance row), so a lenient month never reads as a strict one."""
    if "provenance" not in warehouse.views(con):
        return "<p class='note'>Provenance: not recorded (published before provenance existed).</p>"
    rows = fetch_rows(con, "SELECT * FROM provenance WHERE month = $month", {"month": month})
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
            f"{html.escape(when(p['published_at']))}. Every value: the <code>provenance</code> table.</p>")


#: What each `evaluate --reveal` mode gives the selector of the held-out source, as the report names it.
REVEAL_WORDS = {"none": "none (BGP only)", "first-hop": "first hop per destination",
                "neighbours": "its set of neighbours"}
#: One colour per reveal mode (the reliability diagram and the accuracy-coverage curve).
REVEAL_COLOURS = {"none": "#1f77b4", "first-hop": "#2ca02c", "neighbours": "#9467bd"}


def _selector_section(con, month: str) -> list[str]:
    """How often the path selector is right, each source held out (selector_eval, `congruency
    evaluate`), per reveal mode (what the source's own evidence gives it): coverage and accuracy
    per rule, the reliability diagram (confidence against observed accuracy) and the
    accuracy-coverage curve; a note where the month has no evaluation."""
    head = "<h2 id='selector'>How often the path selector is right</h2>"
    if "selector_eval" not in warehouse.views(con) or not fetch_rows(
            con, "SELECT 1 AS x FROM selector_eval WHERE month = $month LIMIT 1", {"month": month}):
        return [head, "<p class='note'>Not evaluated for this month: <code>congruency evaluate --month "
                f"{html.escape(month)}</code>, then <code>congruency report</code>.</p>"]
    p = {"month": month}
    # rows from before kinds or reveal modes were recorded are VPs held out, with no evidence
    ev = ("(SELECT * REPLACE (coalesce(kind, 'vp') AS kind, coalesce(reveal, 'none') AS reveal) "
          "FROM selector_eval WHERE month = $month)")
    order = "CASE reveal WHEN 'none' THEN 0 WHEN 'first-hop' THEN 1 WHEN 'neighbours' THEN 2 ELSE 3 END, reveal"
    modes = [r["reveal"] for r in fetch_rows(con, f"SELECT DISTINCT reveal FROM {ev} ORDER BY {order}", p)]
    rules = fetch_rows(con, f"""
        SELECT reveal, kind, coalesce(rule, 'all') AS rule, count(*) AS pairs,
               count(correct) AS answered, count(*) FILTER (WHERE correct) AS correct
        FROM {ev} GROUP BY GROUPING SETS ((reveal, kind, rule), (reveal, kind))
        ORDER BY {order}, kind = 'vp' DESC, kind, rule IS NULL, rule""", p)
    f = go.Figure()
    f.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="stated = observed",
                           line=dict(color="#999999", dash="dot"), hovertemplate="perfect calibration<extra></extra>"))
    for mode in modes:
        for col, name, dash in (("confidence", "stated (hand-set rule)", "dot"),
                                ("calibrated_confidence", "calibrated (other sources' answers)", "solid")):
            # the calibrated confidence binned by its cell's (calibration.reliability's choice)
            edge, rel = (col, ev) if col == "confidence" else \
                ("cell_confidence", f"({calibration.cell_confidence_sql(ev)})")
            bins = fetch_rows(con, f"""
                SELECT least(floor({edge} * 10), 9) AS b, count(*) AS n,
                       avg(CAST({col} AS DECIMAL(18, 12))) AS conf,  -- exact: the same page whatever the threads
                       avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS acc
                FROM {rel} WHERE reveal = $mode AND correct IS NOT NULL AND {col} IS NOT NULL AND {edge} IS NOT NULL
                GROUP BY 1 ORDER BY 1""", {**p, "mode": mode})
            colour = REVEAL_COLOURS.get(mode, "#7f7f7f")
            f.add_trace(go.Scatter(
                x=[r["conf"] for r in bins], y=[r["acc"] for r in bins], mode="markers+lines",
                name=f"{name}, evidence: {REVEAL_WORDS.get(mode, mode)}", customdata=[r["n"] for r in bins],
                marker=dict(size=[8 + min(30, r["n"] ** 0.5) for r in bins], color=colour,
                            symbol="circle" if dash == "solid" else "circle-open"),
                line=dict(color=colour, dash=dash),
                hovertemplate="confidence %{x:.2f}: right %{y:.1%} of %{customdata} answers<extra></extra>"))
    plot_layout(f, f"Reliability of the selector's confidence, {month}", "confidence (mean of the bin)",
                "observed accuracy", xaxis_range=[0, 1], yaxis_range=[0, 1])
    fig = Figure("fig-reliability", f, "Each source held out in turn (a VP AS with all its VPs hidden; in a generated "
                 "month also ASes that are no VP, against the generator's true paths), the selector answers for it; "
                 "each point is one confidence bin of those answers: the mean confidence against the share whose "
                 "class was right (marker size: answers). Dotted, open: the confidence the rules state; solid: the "
                 "calibrated one (selector/calibration.py), fitted on the other sources' answers of the same mode "
                 "only, in bins of the confidence the month's calibration states for each answer's kind (what "
                 "advise shows). One colour per evidence mode. Points above the diagonal: the confidence understates; "
                 "below: it overstates.")

    curve = fetch_rows(con, f"""
        WITH ev AS {ev}, n AS (SELECT reveal, count(*) AS pairs FROM ev GROUP BY reveal)
        SELECT n.reveal, n.pairs, t.threshold, count(e.correct) AS answered,
               count(*) FILTER (WHERE e.correct) AS correct
        FROM n CROSS JOIN (SELECT unnest($t::DOUBLE[]) AS threshold) t
        LEFT JOIN ev e ON e.reveal = n.reveal AND e.correct IS NOT NULL
             AND coalesce(e.calibrated_confidence, 0) >= t.threshold
        GROUP BY n.reveal, n.pairs, t.threshold
        ORDER BY {order.replace('reveal', 'n.reveal')}, t.threshold""", {**p, "t": list(calibration.CURVE)})
    c = go.Figure()
    for mode in modes:
        pts = [r for r in curve if r["reveal"] == mode and r["answered"]]
        c.add_trace(go.Scatter(
            x=[r["answered"] / r["pairs"] for r in pts], y=[r["correct"] / r["answered"] for r in pts],
            mode="markers+lines", name=f"evidence: {REVEAL_WORDS.get(mode, mode)}",
            customdata=[[r["threshold"], r["answered"]] for r in pts],
            marker=dict(color=REVEAL_COLOURS.get(mode, "#7f7f7f")), line=dict(color=REVEAL_COLOURS.get(mode, "#7f7f7f")),
            hovertemplate="calibrated confidence >= %{customdata[0]:.1f}: %{customdata[1]:,} answers, "
                          "coverage %{x:.1%}, right %{y:.1%}<extra></extra>"))
    plot_layout(c, f"Accuracy against coverage per evidence mode, {month}", "coverage (share of pairs answered)",
                "accuracy (share of the answers right)", xaxis_range=[0, 1], yaxis_range=[0, 1])
    curve_fig = Figure("fig-selector-curve", c, "Each point: the answers at or above one calibrated confidence "
                       "threshold (the table below); from the right, the threshold rises, fewer pairs are answered and "
                       "more of them right. One line per evidence mode: none, BGP alone; first hop, the "
                       "source's first AS hop per family toward each destination; neighbours, only the set of "
                       "its first hops over the month.")
    curve_table = table_html("selector-curve", ["evidence", "answer at calibrated confidence >=", "answered",
                                                "coverage", "accuracy"],
                             [[REVEAL_WORDS.get(r["reveal"], r["reveal"]), f"{r['threshold']:.1f}", f"{r['answered']:,}",
                               share(r["answered"], r["pairs"]),
                               share(r["correct"], r["answered"]) if r["answered"] else "n/a"] for r in curve],
                             numeric={2, 3, 4})
    who = {"vp": "VPs held out", "stub": "stubs (generated)", "transit": "transit ASes (generated)",
           "multihomed-stub": "multi-homed stubs (generated)"}
    # selector/evaluate.destination_ceiling, per kind of source, over the first mode's rows (none
    # where evaluated): the pairs are the same in every mode, a generated source's kind is not
    # (stub or transit without evidence, by homing with it)
    ceiling = fetch_rows(con, f"""
        SELECT kind AS k, sum(mx) AS right, sum(n) AS pairs FROM (
          SELECT kind, dest_asn, max(c) AS mx, sum(c) AS n FROM (
            SELECT kind, dest_asn, observed_class, count(*) AS c FROM {ev} WHERE reveal = $first GROUP BY ALL)
          GROUP BY ALL)
        GROUP BY kind ORDER BY kind = 'vp' DESC, kind""", {**p, "first": modes[0]})
    ceiling_note = ("<p class='note'>Why the accuracy stops where it does without the source's evidence: a rule "
                    "that gives every source the same class toward a destination (<i>destination</i>, and any rule "
                    "that knows nothing of the source) is right at most as often as each destination's most common "
                    "observed class: "
                    + "; ".join(f"{who.get(r['k'], r['k'])} {share(r['right'], r['pairs'])}" for r in ceiling)
                    + ". Above that, only rules that see the source's own routes (<i>through</i>, "
                    "<i>provider</i>, and the rules of its revealed first hops) can go.</p>")
    table = table_html("selector-rules", ["evidence", "sources", "rule", "pairs", "answered", "coverage", "right",
                                          "accuracy"],
                       [[REVEAL_WORDS.get(r["reveal"], r["reveal"]), who.get(r["kind"], r["kind"]), r["rule"],
                         f"{r['pairs']:,}", f"{r['answered']:,}", share(r["answered"], r["pairs"]), f"{r['correct']:,}",
                         share(r["correct"], r["answered"]) if r["answered"] else "n/a"]
                        for r in rules], numeric={3, 4, 5, 6, 7})
    return [head, "<p class='note'>Operators are rarely vantage points: for every VP AS of the month, all of its "
            "VPs are hidden and the selector asked for it to each destination it has a pair for; the answer is "
            "compared with the pair as observed (<code>congruency evaluate</code>, table <code>selector_eval</code>). "
            "<i>Evidence</i> is what the selector is given of the source itself (<code>--reveal</code>): nothing, "
            "its first AS hop per family toward each destination, or only the set of its neighbours. "
            "Without evidence the rules, in the order tried, are: <i>through</i>, a VP whose path crosses the source; "
            "<i>provider</i>, a stub in front of its neighbours' routes; <i>one-neighbour</i>, a stub behind one "
            "AS, the same in both families: that AS's class with it shared; <i>destination</i>, any other source: "
            "the class most pairs to the destination show (no path); <i>upstream</i>, a VP the source hands "
            "traffic to, the source put in front. With evidence: <i>first-hop</i>, the revealed neighbour's route "
            "with the source in front; <i>through</i>; <i>neighbours</i>, the neighbour chosen by relationship "
            "among those revealed (customer, then peer, then provider); <i>inferred</i>, a neighbour's route "
            "not observed, taken one AS further from the month's relationships (calibrated, on); the fallback "
            "<i>destination</i> after them is off (right half the time). <i>none</i>: nothing stands in.</p>", table, figure_html(fig),
            "<p class='note'>Where each evidence mode stands: coverage and accuracy when only answers at or above a "
            "calibrated confidence count.</p>", figure_html(curve_fig), curve_table, ceiling_note]


#: Words of the parting causes (parting_causes.sql) as the report's table says them.
CAUSES = ("a link in one family only", "a relationship differs", "the same links, chosen differently")


def _relationships_section(con, month: str) -> list[str]:
    """The month's AS relationships per family (as_relationships): links per relationship and
    step, the clique of each family side by side, the hybrid links, the largest customer
    cones, and why the non-congruent pairs' paths part (named queries clique, hybrid_links,
    customer_cones, parting_causes)."""
    head = "<h2 id='relationships'>Who is whose provider, in each family</h2>"
    if "as_relationships" not in warehouse.views(con) or not fetch_rows(
            con, "SELECT 1 AS x FROM as_relationships WHERE month = $month LIMIT 1", {"month": month}):
        return [head, "<p class='note'>No relationships for this month (published before they were inferred): "
                f"<code>congruency relationships --month {html.escape(month)} --infer</code>, then "
                "<code>congruency report</code>.</p>"]
    p = {"month": month}
    counts = fetch_rows(con, """
        SELECT afi, count(*) AS links, count(*) FILTER (WHERE rel = 'p2c') AS p2c,
               count(*) FILTER (WHERE rel = 'p2p') AS p2p, count(*) FILTER (WHERE NOT coalesce(decided, step <> 'rest-p2p')) AS rest
        FROM as_relationships WHERE month = $month GROUP BY afi ORDER BY afi""", p)
    counts_table = table_html("rel-counts", ["family", "links", "p2c", "p2p", "of them undecided (p2p by default)"],
                              [[f"IPv{r['afi']}", f"{r['links']:,}", f"{r['p2c']:,}", f"{r['p2p']:,}",
                                f"{r['rest']:,}"] for r in counts], numeric={1, 2, 3, 4})
    clique = fetch_rows(con, query.get("clique").sql, p)

    def yes(v):
        return "yes" if v else "no"

    def provs(v):
        return ", ".join(f"AS{a}" for a in v) if v else "none"

    clique_table = table_html("rel-clique", ["AS", "IPv4 clique", "IPv6 clique", "IPv4 providers", "IPv6 providers",
                                             "IPv4 customers", "IPv6 customers"],
                              [[f"AS{r['asn']}", yes(r["in_v4_clique"]), yes(r["in_v6_clique"]),
                                provs(r["v4_providers"]), provs(r["v6_providers"]), r["v4_customers"] or 0,
                                r["v6_customers"] or 0] for r in clique], numeric={5, 6})
    hyb = fetch_rows(con, query.get("hybrid_links").sql, {**p, "limit": 1_000_000})
    differs = [r for r in hyb if r["kind"] == "differs"]
    both = fetch_rows(con, """
        SELECT count(*) AS n FROM (SELECT least(as1, as2) a, greatest(as1, as2) b FROM as_relationships
                                   WHERE month = $month GROUP BY ALL HAVING count(DISTINCT afi) = 2)""", p)[0]["n"]
    evid = [r for r in differs if r["both_by_evidence"]]
    hyb_note = (f"<p class='note'>{len(differs):,} of the {both:,} links seen in both families "
                f"({share(len(differs), both)}) have a relationship that differs; {len(evid):,} of them are decided by "
                "evidence in both families (the others are p2p in one family by default, for lack of "
                "valley-free evidence there: <code>decided</code> false). Giotsas and Zhou (2011) found 13% of dual-stack links hybrid. "
                f"Links in one family only, with both ASes on the other family's paths: IPv4 "
                f"{sum(r['kind'] == 'IPv4 only' for r in hyb):,}, IPv6 {sum(r['kind'] == 'IPv6 only' for r in hyb):,}."
                "</p>")
    hyb_table = table_html("rel-hybrid", ["AS", "AS", "IPv4: the first AS is", "IPv6: the first AS is", "IPv4 step",
                                          "IPv6 step",
                                          "paths IPv4 / IPv6"],
                           [[f"AS{r['as_low']}", f"AS{r['as_high']}", r["ipv4"], r["ipv6"], r["ipv4_step"],
                             r["ipv6_step"], f"{r['ipv4_paths']:,} / {r['ipv6_paths']:,}"]
                            for r in (evid + [r for r in differs if not r["both_by_evidence"]])[:TOP_ASES]],
                           numeric={6})
    cones = fetch_rows(con, query.get("customer_cones").sql, {**p, "limit": TOP_ASES})
    cone_table = table_html("rel-cones", ["AS", "customer cone, IPv4 (ASes)", "customer cone, IPv6 (ASes)"],
                            [[f"AS{r['asn']}", "" if r["cone_v4"] is None else f"{r['cone_v4']:,}",
                              "" if r["cone_v6"] is None else f"{r['cone_v6']:,}"] for r in cones], numeric={1, 2})
    parts = fetch_rows(con, query.get("parting_causes").sql, p)
    total = sum(r["pairs"] for r in parts)
    by_cause = {c: sum(r["pairs"] for r in parts if r["cause"] == c) for c in CAUSES}
    f = go.Figure(go.Bar(x=[by_cause[c] for c in CAUSES], y=list(CAUSES), orientation="h",
                         marker_color=["#1f77b4", "#d62728", "#7f7f7f"],
                         text=[share(by_cause[c], total) for c in CAUSES], textposition="auto",
                         hovertemplate="%{y}: %{x:,} pairs<extra></extra>"))
    plot_layout(f, f"Why the IPv4 and IPv6 paths of non-congruent pairs part, {month}", "non-congruent pairs", "cause")
    f.update_layout(height=300, margin=dict(l=260, r=30, t=60, b=60))
    fig = Figure("fig-parting", f, "Where a non-congruent pair's paths part (divergence.part_asn), the next AS on "
                 "each family's path: the link to it missing from the other family's paths (the AS or the link has "
                 "no IPv6, or no IPv4); both links in both families but a relationship that differs (hybrid); or "
                 "the same links and relationships, and the parting AS preferring another neighbour (named query "
                 "parting_causes).")
    part_table = table_html("rel-parting", ["cause", "IPv4 next AS is the parting AS's", "IPv6 next AS is", "pairs",
                                            "share"],
                            [[r["cause"], r["ipv4_next_is"] or "-", r["ipv6_next_is"] or "-", f"{r['pairs']:,}",
                              share(r["pairs"], total)] for r in parts[:12]], numeric={3, 4})
    return [head, "<p class='note'>Inferred from each family's paths of the month alone (AS-Rank's steps, "
            "relationships/METHOD.md; table <code>as_relationships</code>, <code>congruency relationships</code>). "
            "An undecided link (<code>decided</code> false: p2p by default) may be a provider link no VP sees from "
            "above; <code>evidence</code> says which AS of each link the paths show carrying the other's routes.</p>",
            counts_table, "<h3>The transit-free clique of each family</h3>", clique_table,
            "<h3>Hybrid links</h3>", hyb_note, hyb_table,
            "<h3>Largest customer cones</h3>", cone_table,
            "<h3>Why paths part</h3>", figure_html(fig), part_table]


def month_html(con, month: str, min_pairs: int = MIN_PAIRS) -> str:
    summary, vps, figs = month_figures(con, month, min_pairs)
    by = {f.id: f for f in figs}
    sections = [
        "<p class='note'><a href='../trend.html'>Trend across months</a></p>",
        _provenance(con, month),
        "<h2>Headline numbers</h2>", _headline(summary),
        "<p class='note'>2014 reference: the 2014 study's section III figures (72 VPs).</p>",
        "<h2>Figures</h2>", *(figure_html(f) for f in figs if f.id != "fig-divergence"),
        "<h2 id='why'>Why paths diverge</h2>",
        "<p class='note'>The ASes most often on only one family's path of a non-congruent pair, and the ASes "
        "the two paths most often share (METHOD.md 7b; named queries divergence_ases and shared_ases).</p>",
        *([figure_html(by["fig-divergence"])] if "fig-divergence" in by else []),
        _divergence_table(con, month),
        "<h3>Top shared ASes</h3>", _shared_table(con, month),
        "<h2>Cleaning</h2><p class='note'>RIB entries each rule of METHOD.md step 1 drops, in the order the "
        "rules apply; kept entries are what the comparison uses.</p>", _cleaning_table(con, month),
        "<h2>Vantage points</h2><p class='note'>Click a column to sort; type to filter.</p>", _vp_table(vps),
        *_relationships_section(con, month),
        *_selector_section(con, month),
    ]
    reached = fetch_rows(con, "SELECT count(DISTINCT dest_asn) AS n FROM pairs WHERE month = $month", {"month": month})[0]["n"]
    intro = (f"{summary['vps_with_pairs']} vantage points with pairs, {summary['pairs']:,} pairs to {reached:,} "
             f"destinations, of the month's {summary['destinations']:,} dual-stacked destinations (origin ASes "
             f"seen in both families; those no default-free VP reaches in both form no pair).")
    return page_html(f"IPv4/IPv6 AS-path congruency, {month}", intro, sections)


def write_month_report(cfg, month: str, out: Path | None = None, min_pairs: int = MIN_PAIRS) -> Path:
    """DATA_DIR/reports/month=M/report.html (or `out`): one month, offline; ReportError when unpublished."""
    try:
        published.require(warehouse.data_root(cfg), month)
    except (published.NoResults, warehouse.WarehouseError) as exc:
        raise ReportError(str(exc)) from None
    return render(cfg, lambda con: month_html(con, month, min_pairs), out or (lambda: month_path(cfg, month)))
