"""The parts every offline HTML report shares: the page (plotly.js embedded once, no network
requests), its CSS and table script, figures and tables, and the writer that renders a
page from the published tables (an in-memory DuckDB with a view per table, lake.connect)
and writes it atomically."""
from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
from plotly.offline import get_plotlyjs

from bgp_congruency.common import atomic, hooks, s3
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.lake.attach import unreadable
from bgp_congruency.reports import warehouse

#: The kinds of the transitions table and their labels (month and trend reports).
TRANSITION_KINDS = (
    ("existing_pair", "existing pair"),
    ("new_ipv6_destination", "new IPv6 destination"),
    ("new_pair", "new pair"),
)


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


def fetch_rows(con, sql: str, params=None) -> list[dict]:
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    return rel.to_arrow_table().to_pylist()


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


#: Room beyond a fixed axis range, as a share of its span, so a marker at its end (a VP at
#: 100%, a confidence of 1.0) is drawn whole (issue 58: the first-hop marker at 1.0 was cut).
RANGE_PAD = 0.04


def plot_layout(fig, title: str, x: str, y: str, **kw) -> None:
    """Every figure's one layout: a fixed axis range ([lo, hi]) is widened by RANGE_PAD on each
    side, and markers are never clipped at the axes."""
    for axis in ("xaxis_range", "yaxis_range"):
        if axis in kw:
            lo, hi = kw[axis]
            kw[axis] = [lo - RANGE_PAD * (hi - lo), hi + RANGE_PAD * (hi - lo)]
    fig.update_layout(title=dict(text=title), template="plotly_white", height=420,
                      margin=dict(l=70, r=30, t=60, b=60), xaxis_title=x, yaxis_title=y,
                      legend=dict(orientation="h", y=-0.2), **kw)
    fig.update_traces(cliponaxis=False, selector=dict(type="scatter"))


def table_html(tid: str, head: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    """A plain table; cells are escaped; columns in `numeric` align right."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(
        f"<td{' class=num' if i in numeric else ''}>{html.escape(str(c))}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows)
    return f"<table id='{tid}'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def share(n: int, total: int) -> str:
    """n of total in percent, with as many decimals as it takes not to read as 0% or 100%."""
    if not total:
        return ""
    pct, dec = 100 * n / total, 2
    while dec < 9 and 0 < n < total and round(pct, dec) in (0, 100):
        dec += 1
    return f"{pct:.{dec}f}%"


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


def page_html(title: str, intro: str, sections: list[str], by: str = "congruency report") -> str:
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


def figure_html(f: Figure) -> str:
    div = f.fig.to_html(full_html=False, include_plotlyjs=False, div_id=f.id, default_height="420px",
                        config={"displaylogo": False, "responsive": True})
    return f"<figure>{div}<figcaption>{html.escape(f.caption)}</figcaption></figure>"


def when(v) -> str:
    """A stored time (timestamp, or ISO text) in the reports' one spelling."""
    if isinstance(v, str):
        try:
            v = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return v
    return stamp(v if v.tzinfo else v.replace(tzinfo=timezone.utc))


def num(x) -> str:
    return "" if x is None else f"{100 * x:.1f}"


def render(cfg, page, out) -> Path:
    """Render `page(con)` and write it atomically to `out` (a path, or a function giving the default)."""
    try:
        target = out() if callable(out) else out
        target = target if s3.is_s3(target) else Path(target)  # a data dir on S3: the page beside its tables
        con = warehouse.memory(cfg)
    except warehouse.WarehouseError as exc:
        raise ReportError(str(exc)) from None
    try:
        text = page(con)
    except duckdb.Error as exc:
        lost = unreadable(warehouse.data_root(cfg), exc) if isinstance(exc, duckdb.IOException) else None
        raise ReportError(lost or f"{warehouse.data_root(cfg)}: reading the tables failed: "
                          f"{' '.join(str(exc).splitlines()[0].split())}") from None
    finally:
        con.close()
    if s3.is_s3(target):
        try:
            s3.Bucket(target).write_text(target, text)  # one PUT: a reader gets the old page or the new
            return target
        except OSError as exc:
            raise ReportError(f"{target}: cannot write the report: {s3.why(exc)}") from None
    try:
        with atomic.replacing(target) as tmp:
            tmp.write_text(text, encoding="utf-8")
            hooks.pause("report")
        return target
    except OSError as exc:
        raise ReportError(f"{target}: cannot write the report: {exc.strerror or exc}") from None
