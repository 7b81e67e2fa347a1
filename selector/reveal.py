"""The one answering engine of the evidence rules (8-11 of selector/rules.py: `ask`, over a
table of questions), and the held-out evaluation with the source's evidence revealed (issue
47) through it. `advise` and `export` (selector/advice.py, through `source_hints` here), the
run's site hints (`site_hints`), `evaluate --reveal first-hop|neighbours`
(`answers`) and `evaluate --truth --reveal` all answer through `ask`, so they cannot disagree
(the rule 6 fallback, DESTINATION_FALLBACK, is the evaluation's alone: off).

Every VP AS of the month with pairs is held out in turn (all of its VPs hidden), as
selector/evaluate.py does, but the questions are answered all at once in SQL and only the
answers reach Python: the month's paths are read once into a table of routes (every suffix of
every path: from which AS, to which destination, shown by which VP), and each question joins
the routes it may use, a destination partition at a time (memory follows the partition,
bounded by duckdb_memory_limit). The rules are selector/rules.py's 8-11 and the fallback to
rule 6; selector/reference.evidence_answer is their reference, one question at a time, which
no command answers through (tests/test_reveal.py holds the two equal).

Revealed, per held-out VP AS v and pair (v, destination d):
- `first-hop`: the second AS of the pair's own IPv4 and IPv6 paths (v's neighbour toward d).
- `neighbours`: per family, the set of second ASes of all of v's paths of the month (its
  neighbours), ordered by how many of its paths use each (the primary first); what each is to
  v comes from the month's as_relationships where it has the link, else `provider`.
  (The month's relationships were inferred with v's own paths among the others: they stand in
  for what an operator knows of its own contracts.)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bgp_congruency.common import duck, vp_hash
from bgp_congruency.common.config import Config
from bgp_congruency.common.tables import HINTS
from bgp_congruency.lake import published
from bgp_congruency.pipeline.partitions import limit_bytes
from bgp_congruency.pipeline.steps import edit_distance_sql
from bgp_congruency.selector import calibration, rules
from bgp_congruency.selector.month import data_root, is_vp, month_snapshots, table_relation


def empty_hint(month: str, src: int) -> dict:
    h = {name: None for name in HINTS.names}
    h.update(month=month, source_asn=src, via_proxy=False, proxies=[], shared_asns=[], notes=[],
             caveat=rules.LOWER_BOUND)
    return h


def month_calibration(con, cfg: Config, month: str) -> dict[str, calibration.Fit] | None:
    """The calibrations of the month's evaluation per reveal (selector_eval: none for today's
    rules, first-hop and neighbours for answers from the source's evidence; the VPs held out,
    and in a generated month the ASes that are no VP), counted in SQL (a few cells, however
    many rows); None before it ran."""
    if month not in published.months(data_root(cfg), "selector_eval"):
        return None
    rel = table_relation(cfg, "selector_eval", month)
    have = {r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE SELECT * FROM {rel})").fetchall()}
    reveal = "coalesce(reveal, 'none')" if "reveal" in have else "'none'"
    rows = con.execute(f"""SELECT {reveal}, rule, predicted_class = 'congruent', count(*),
                                  count(*) FILTER (WHERE correct)
        FROM {rel} WHERE correct IS NOT NULL GROUP BY ALL""").fetchall()
    out: dict[str, calibration.Fit] = {}
    for rv, r, c, n, k in rows:
        out.setdefault(rv, {})[(r, bool(c))] = (int(n), int(k))
    return out


REVEALS = ("none", "first-hop", "neighbours")
#: rules.CAUTION as a DuckDB list: list_position(CAUTION_SQL, class) ranks a class's caution.
CAUTION_SQL = "[" + ", ".join(f"'{c}'" for c in rules.CAUTION) + "]"
#: DuckDB memory per route row of a destination partition (its questions' joins and sorts).
BYTES_PER_ROUTE = 600

_CLASS_SQL = """CASE WHEN {a} = {b} THEN 'congruent'
    WHEN len({s}) = 0 THEN 'disjoint'
    WHEN list_bool_and(list_transform({s}, x -> (list_position({a}, x) = 2 OR list_position({a}, x) = len({a}) - 1)
                                          AND (list_position({b}, x) = 2 OR list_position({b}, x) = len({b}) - 1)))
    THEN 'shared-edge' ELSE 'shared-core' END"""


def class_sql(a: str, b: str, src: str, dest: str, dest6: str | None = None) -> tuple[str, str]:
    """(shared ASes, class) of two path expressions from `src` to `dest` (`dest6`: the IPv6
    path's where it differs), as rules.classify."""
    other = f" AND x IS DISTINCT FROM {dest6}" if dest6 else ""
    shared = f"list_sort(list_filter(list_intersect({a}, {b}), x -> x <> {src} AND x <> {dest}{other}))"
    return shared, _CLASS_SQL.format(a=a, b=b, s=shared)


def partitions(con, cfg: Config) -> int:
    """Destination partitions of the routes: as many as the memory limit needs for one
    partition's routes (every suffix of its paths, at most the paths' total length)."""
    n = con.execute("SELECT coalesce(sum(len(path)), 0) FROM ev_paths").fetchone()[0]
    limit = limit_bytes(cfg)
    return max(1, -(-int(n) * BYTES_PER_ROUTE // limit)) if limit else 1


def in_partition(col: str, k: int, i: int) -> str:
    """The SQL predicate of destination partition i of k on the ASN column `col`."""
    return f"{vp_hash.sql_partition(col, k)} = {i}" if k > 1 else "true"


def routes(con, k: int, i: int) -> str:
    """The routes table ev_routes of destination partition i of k: every suffix of every path to
    a destination of the partition (the route of its first AS to the destination, per VP AS),
    and the SQL predicate of the partition's questions (on their destination `d`). Built per
    partition, so no step scans every route of the month (at the study's scale ~150 M rows)."""
    part = lambda col: in_partition(col, k, i)  # noqa: E731
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_routes AS
        SELECT afi, dest_asn AS dest, path[i] AS n, path[i:] AS route, vp_asn AS vp, bool_or(i = 1) AS own,
               max(stability) AS stab, max(snapshots) AS snaps
        FROM (SELECT *, unnest(range(1, len(path) + 1)) AS i FROM ev_paths WHERE {part('dest_asn')})
        GROUP BY ALL""")
    return part("d")


def setup(con, cfg: Config, month: str, groups: bool = False, dests: set[int] | None = None) -> tuple[int, bool]:
    """The month's paths, pairs and relationships as temp tables; returns (its snapshots, whether it
    has relationships). `groups`: the paths keep their VP's collector group (the proxies of
    rule 1 are VPs, not VP ASes; rules 8-11 read routes per VP AS and need none). `dests`:
    only the paths and pairs to these destinations (one source's questions)."""
    only = f" WHERE dest_asn IN ({', '.join(str(int(d)) for d in sorted(dests)) or 'NULL'})" if dests is not None else ""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_paths AS
        SELECT {'vp_group, ' if groups else ''}vp_asn, afi, dest_asn, path, stability, snapshots
        FROM {table_relation(cfg, 'paths', month)}{only}""")
    snaps = month_snapshots(con, cfg, month) if dests is not None else None  # the month's, not the asked paths'
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_pairs AS
        SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, congruent, shared_asns, shared_adjacent,
               CASE WHEN congruent THEN 'congruent' WHEN len(shared_asns) = 0 THEN 'disjoint'
                    WHEN shared_adjacent THEN 'shared-edge' ELSE 'shared-core' END AS observed
        FROM {table_relation(cfg, 'pairs', month)}{only}""")
    if snaps is None:
        snaps = con.execute("SELECT coalesce(max(snapshots), 0) FROM ev_paths").fetchone()[0]
    if month in published.months(data_root(cfg), "as_relationships"):
        con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_rel AS
            SELECT afi, as1 AS a, as2 AS b, CASE rel WHEN 'p2c' THEN 'customer' ELSE 'peer' END AS b_is
            FROM {table_relation(cfg, 'as_relationships', month)}
            UNION ALL
            SELECT afi, as2, as1, CASE rel WHEN 'p2c' THEN 'provider' ELSE 'peer' END
            FROM {table_relation(cfg, 'as_relationships', month)}""")
        has_rel = True
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE ev_rel (afi TINYINT, a BIGINT, b BIGINT, b_is VARCHAR)")
        has_rel = False
    return int(snaps), has_rel


def _held_out_questions(con, reveal: str) -> None:
    """The questions of the held-out evaluation: one per pair and family (key: the pair's VP
    group), with the first hop revealed (`first-hop`: the second AS of the pair's own path), and
    the held-out VP AS's neighbours (ev_nb: declared `provider`, the most used first)."""
    hop = "CASE afi WHEN 4 THEN v4_path[2] ELSE v6_path[2] END" if reveal == "first-hop" else "NULL::BIGINT"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_q AS
        SELECT vp_group, vp_asn AS v, dest_asn AS d, afi, {hop} AS hop
        FROM ev_pairs, (SELECT unnest([4, 6]) AS afi)""")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_nb AS
        SELECT vp_asn AS v, afi, path[2] AS n, row_number() OVER (PARTITION BY vp_asn, afi
                                                                  ORDER BY count(*) DESC, path[2]) - 1 AS ord,
               'provider' AS rel
        FROM ev_paths WHERE len(path) >= 2 AND vp_asn IN (SELECT DISTINCT vp_asn FROM ev_pairs)
        GROUP BY vp_asn, afi, path[2]""")


def _questions(kind: str, part: str) -> str:
    """The questions of rule `kind` in destination partition `part`: each (question, family)
    with the AS whose route it reads (n: the first hop, the source itself, or each declared
    neighbour), the neighbour's declared order, what n is to the source as declared, and
    whether n is the question's first hop (`hopped`)."""
    hop = "SELECT vp_group, v, d, afi, hop AS n, 0 AS ord, 'provider' AS rel, true AS hopped FROM ev_q WHERE hop IS NOT NULL"
    if kind == "first-hop":
        q = hop
    elif kind == "through":
        q = "SELECT vp_group, v, d, afi, v AS n, 0 AS ord, 'provider' AS rel, false AS hopped FROM ev_q WHERE hop IS NULL"
    else:  # the heads: rule 10's neighbours where no first hop is known, rule 11's first hop whose route is not observed
        q = (f"{hop} UNION ALL SELECT q.vp_group, q.v, q.d, q.afi, nb.n, nb.ord, nb.rel, false FROM ev_q q "
             "JOIN ev_nb nb ON nb.v = q.v AND nb.afi = q.afi WHERE q.hop IS NULL")
    return f"SELECT * FROM ({q}) WHERE {part} AND n IS NOT NULL"


def _best_sql(qs: str, snaps: int, at_dest: bool) -> str:
    """Each question's best observed route of its AS n (rules.best_route), from the routes
    table, the held-out VP AS's paths left out and routes on which it follows n dropped; with
    `at_dest`, n = d is the route (d), as sure as the month."""
    dest = f"""
        UNION ALL SELECT vp_group, v, d, afi, n, ord, rel, hopped, [d] AS route, true AS own, 1::BIGINT AS vps,
                         1.0::DOUBLE AS stab, {int(snaps)}::BIGINT AS snaps
        FROM ({qs}) WHERE n = d""" if at_dest else ""
    return f"""
        SELECT vp_group, v, d, afi, n, ord, rel, hopped, route, stab, snaps FROM (
            SELECT *, row_number() OVER (PARTITION BY vp_group, v, d, afi, n
                                         ORDER BY own DESC, vps DESC, len(route), route) AS rk
            FROM (SELECT qs.vp_group, qs.v, qs.d, qs.afi, qs.n, qs.ord, qs.rel, qs.hopped, r.route, bool_or(r.own) AS own,
                         count(*) AS vps, max(r.stab) AS stab, max(r.snaps) AS snaps
                  FROM (SELECT DISTINCT * FROM ({qs})) qs JOIN ev_routes r ON r.afi = qs.afi AND r.dest = qs.d AND r.n = qs.n
                  WHERE qs.n <> qs.d AND r.vp <> qs.v AND NOT list_contains(r.route[2:], qs.v)
                  GROUP BY ALL{dest}))
        WHERE rk = 1"""


def _inferred(con, qs: str) -> None:
    """Rule 11 into ev_inf: each question's route of its AS n (a head with no observed route)
    one AS further: among n's neighbours m in the family's relationships, m's best observed
    route (neither crossing the source nor n; reference.inferred_routes), given to n (m is n's
    provider, or the route is m's own or its customers'); a customer, then a peer, then a
    provider, then the shortest, then the lowest m. Columns as _best_sql's and m_is (what m is
    to n).

    m's best route is computed once per (family, destination, m) from every VP's routes; a
    question takes it where its source is neither among that route's VPs nor on it, as leaving
    the source's rows out then only lowers other routes' counts or drops them. Only the other
    questions are answered one source at a time (their held-out best route), and only the
    neighbours with a route are joined. On the real sample, `--reveal neighbours` with rule 11
    took 3.4-3.8 s answering every question on its own, 2.5-2.7 s so."""
    heads = f"SELECT * FROM ({qs}) WHERE n <> d"
    # A head that is not the source's provider gives it only its customers' routes: only its
    # customers' routes can make it a candidate (the same choice: customers rank first).
    rank = "ORDER BY own DESC, vps DESC, len(route), route"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_mbest AS
        SELECT afi, dest, n, route, stab, snaps, who FROM (
            SELECT *, row_number() OVER (PARTITION BY afi, dest, n {rank}) AS rk
            FROM (SELECT r.afi, r.dest, r.n, r.route, bool_or(r.own) AS own, count(*) AS vps,
                         max(r.stab) AS stab, max(r.snaps) AS snaps, list(r.vp) AS who
                  FROM ev_routes r SEMI JOIN ({heads}) h ON h.afi = r.afi AND h.d = r.dest
                  GROUP BY ALL))
        WHERE rk = 1""")
    # the heads' neighbours m with a route to the destination (most have none: 66 k of 3.9 M
    # on the real sample), each with m's best route
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_below AS
        SELECT h.vp_group, h.v, h.d, h.afi, hr.b AS n, h.n AS head, h.ord AS head_ord, h.rel, h.hopped,
               hr.b_is AS m_is, g.route, g.stab, g.snaps, g.who
        FROM ({heads}) h JOIN ev_rel hr ON hr.afi = h.afi AND hr.a = h.n AND hr.b <> h.v
        JOIN ev_mbest g ON g.afi = h.afi AND g.dest = h.d AND g.n = hr.b
        WHERE h.n_is = 'provider' OR hr.b_is = 'customer'""")
    cols = "b.vp_group, b.v, b.d, b.afi, b.n, b.head, b.head_ord, b.rel, b.hopped, b.m_is"
    mine = "(list_contains(b.who, b.v) OR list_contains(b.route[2:], b.v))"
    shared = f"SELECT {cols}, b.route, b.stab, b.snaps FROM ev_below b WHERE NOT {mine}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE ev_mine AS SELECT {cols} FROM ev_below b WHERE {mine}")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_best AS
        SELECT * FROM ({shared}) WHERE NOT list_contains(route, head)""")
    # m's best route without the source's rows depends on (source, family, destination, m) only
    con.execute(f"""INSERT INTO ev_best
        SELECT {cols}, o.route, o.stab, o.snaps
        FROM ev_mine b JOIN (
            SELECT v, d, afi, n, route, stab, snaps FROM (
                SELECT *, row_number() OVER (PARTITION BY v, d, afi, n {rank}) AS rk
                FROM (SELECT b.v, b.d, b.afi, b.n, r.route, bool_or(r.own) AS own,
                             count(*) AS vps, max(r.stab) AS stab, max(r.snaps) AS snaps
                      FROM (SELECT DISTINCT v, d, afi, n FROM ev_mine) b
                      JOIN ev_routes r ON r.afi = b.afi AND r.dest = b.d AND r.n = b.n
                      WHERE r.vp <> b.v AND NOT list_contains(r.route[2:], b.v)
                      GROUP BY ALL))
            WHERE rk = 1) o ON o.v = b.v AND o.d = b.d AND o.afi = b.afi AND o.n = b.n
        WHERE NOT list_contains(o.route, b.head)""")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_inf AS
        SELECT vp_group, v, d, afi, head AS n, head_ord AS ord, rel, hopped, list_prepend(head, route) AS route, stab,
               snaps, m_is FROM (
            SELECT b.*, row_number() OVER (PARTITION BY b.vp_group, b.v, b.d, b.afi, b.head
                ORDER BY list_position(['customer', 'peer', 'provider'], b.m_is), len(b.route), b.n) AS pick
            FROM (SELECT *, route[2] AS nxt FROM ev_best) b
            LEFT JOIN ev_rel nr ON nr.afi = b.afi AND nr.a = b.n AND nr.b = b.nxt
            WHERE b.m_is = 'provider' OR len(b.route) = 1 OR nr.b_is = 'customer')
        WHERE pick = 1""")
    for t in ("ev_below", "ev_mbest", "ev_mine", "ev_best"):
        con.execute(f"DROP TABLE {t}")


#: What the AS whose route a question reads is to its source: its first hop (a trace's, or a
#: family's sole neighbour: rules.sole_neighbour) gives every route; a declared neighbour is
#: what the month's relationships say of the link, else what was declared.
_N_IS = "CASE WHEN {q}.hopped THEN 'provider' ELSE coalesce(vr.b_is, {q}.rel) END"


def _family_sql(con, kind: str, part: str, has_rel: bool, snaps: int, inferred: bool) -> str:
    """The answers of rule `kind` for the questions of partition `part`: columns vp_group, v,
    d, afi, rule, n, n_is, route (from n on; through: from the source on), stab, snaps. For the
    heads (rules 10 and 11) the observed routes and the questions still without one are temp
    tables first, so rule 11 expands only those."""
    qs = _questions(kind, part)
    if kind in ("first-hop", "through"):
        n_is = "'provider'" if kind == "first-hop" else "NULL::VARCHAR"
        return f"SELECT *, '{kind}' AS rule, {n_is} AS n_is FROM ({_best_sql(qs, snaps, kind == 'first-hop')})"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_hq AS SELECT q.* FROM ({qs}) q
                    ANTI JOIN ev_fam f ON f.vp_group = q.vp_group AND f.v = q.v AND f.d = q.d AND f.afi = q.afi""")
    # a first hop's observed route was rule 8's: only the declared neighbours' are read here
    con.execute(f"CREATE OR REPLACE TEMP TABLE ev_obs AS {_best_sql('SELECT * FROM ev_hq WHERE NOT hopped', snaps, True)}")
    if inferred:
        missing = f"""SELECT q.*, {_N_IS.format(q="q")} AS n_is FROM ev_hq q
                     LEFT JOIN ev_rel vr ON vr.afi = q.afi AND vr.a = q.v AND vr.b = q.n
                     ANTI JOIN ev_obs o
                     ON o.vp_group = q.vp_group AND o.v = q.v AND o.d = q.d AND o.afi = q.afi AND o.n = q.n"""
        _inferred(con, missing)
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE ev_inf AS SELECT *, NULL::VARCHAR AS m_is FROM ev_obs WHERE false")
    cands = """SELECT *, NULL::VARCHAR AS m_is, 'neighbours' AS rule FROM ev_obs
               UNION ALL BY NAME SELECT *, 'inferred' AS rule FROM ev_inf"""
    nxt = "CASE WHEN c.rule = 'inferred' THEN c.m_is ELSE nr.b_is END" if has_rel else "NULL"
    return f"""
        SELECT vp_group, v, d, afi, rule, n, n_is, route, stab, snaps FROM (
            SELECT c.*, {_N_IS.format(q="c")} AS n_is, {nxt} AS next_is FROM (SELECT *, route[2] AS nxt FROM ({cands})) c
            LEFT JOIN ev_rel vr ON vr.afi = c.afi AND vr.a = c.v AND vr.b = c.n
            LEFT JOIN ev_rel nr ON nr.afi = c.afi AND nr.a = c.n AND nr.b = c.nxt)
        WHERE n_is = 'provider' OR len(route) = 1 OR next_is IS NULL OR next_is = 'customer'
        QUALIFY row_number() OVER (PARTITION BY vp_group, v, d, afi
            ORDER BY list_position(['customer', 'peer', 'provider'], n_is), len(route), ord, n) = 1"""


def ask(con, cfg: Config, snaps: int, has_rel: bool, inferred: bool = rules.INFERRED_ROUTES, progress=None,
        parts: int | None = None) -> None:
    """The one answering engine of rules 8-11: every question of ev_q (key vp_group, source v,
    destination d, family afi, its first hop `hop` or null) with its source's declared
    neighbours ev_nb answered into ev_fam (one row per question that has a route: rule, n,
    n_is, route from n on, stability, snapshots). A family's sole neighbour is its first hop
    toward every destination (rules.sole_neighbour), set here once for every caller. The
    routes are read a destination partition at a time (`parts`: default as the memory limit
    needs)."""
    con.execute("""UPDATE ev_q SET hop = s.n
        FROM (SELECT v, afi, min(n) AS n FROM ev_nb GROUP BY ALL HAVING count(*) = 1) s
        WHERE ev_q.hop IS NULL AND ev_q.v = s.v AND ev_q.afi = s.afi""")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_fam (vp_group VARCHAR, v BIGINT, d BIGINT, afi INTEGER,
        rule VARCHAR, n BIGINT, n_is VARCHAR, route BIGINT[], stab DOUBLE, snaps BIGINT)""")
    use_rel = has_rel and inferred
    k = parts or partitions(con, cfg)
    for i in range(k):
        part = routes(con, k, i)
        # rule 9 only without a first hop (rules.py): _questions gives each kind its questions
        for kind in ("first-hop", "through", "heads"):
            con.execute(f"""INSERT INTO ev_fam
                SELECT c.vp_group, c.v, c.d, c.afi, c.rule, c.n, c.n_is, c.route, c.stab, c.snaps
                FROM ({_family_sql(con, kind, part, has_rel, snaps, use_rel)}) c
                ANTI JOIN ev_fam f ON f.vp_group = c.vp_group AND f.v = c.v AND f.d = c.d AND f.afi = c.afi""")
        if progress:
            progress(i + 1, k)


def answers(cfg: Config, month: str, reveal: str, progress=None, fallback: bool = rules.DESTINATION_FALLBACK,
            inferred: bool = rules.INFERRED_ROUTES, parts: int | None = None) -> pa.Table:
    """One row per pair of the month: the evidence rules' answer for the pair's VP AS held out,
    under `reveal` (first-hop or neighbours), with everything selector_eval records but the
    calibrated confidence. `parts`: destination partitions (default: as the memory limit needs)."""
    if reveal not in ("first-hop", "neighbours"):
        raise ValueError(f"reveal: {reveal!r}")
    con = duck.connect(cfg)
    try:
        snaps, has_rel = setup(con, cfg, month)
        _held_out_questions(con, reveal)
        ask(con, cfg, snaps, has_rel, inferred, progress, parts)
        t = read_closing(con, _assemble(con, fallback), "answers.parquet")
    finally:
        con.close()
    return _rows(t, month, reveal, snaps)


def read_closing(con, query: str, name: str) -> pa.Table:
    """`query`'s rows as Arrow, through the Parquet file `name` in the connection's spill
    folder: DuckDB streams them out under its memory limit and `con` is closed (its temp tables
    freed) before they are read back: never both at once. The file is gone afterwards."""
    out = Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0]) / name
    try:
        try:
            con.execute(f"COPY ({query}) TO {duck.quote(str(out))} (FORMAT parquet)")
        finally:
            con.close()
        return pq.read_table(out)
    finally:
        out.unlink(missing_ok=True)


def votes(con, name: str, behind: bool = False,
          questions: str = "SELECT DISTINCT vp_asn AS v, dest_asn AS d FROM ev_pairs", who: bool = False) -> None:
    """Temp table `name`: per question (source v, destination d; by default each pair's VP AS
    and destination), rule 6's class (the one most pairs of the other VP ASes to d show; ties
    to the more cautious), with `behind` rule 7's (each pair's class seen behind one neighbour
    first: BEHIND_ONE_NEIGHBOUR); columns v, d, cls, n (its pairs), vps (their VP ASes), who
    (with `who`, those ASes, sorted; else null), total (the pairs to d), share. The month's
    counts less v's own, so no question joins every pair to its destination."""
    cls = ("CASE observed " + " ".join(f"WHEN '{a}' THEN '{b}'" for a, b in rules.BEHIND_ONE_NEIGHBOUR.items())
           + " END") if behind else "observed"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {name} AS
        WITH c AS (SELECT dest_asn AS d, {cls} AS cls, vp_asn FROM ev_pairs),
        tot AS (SELECT d, cls, count(*) AS n, count(DISTINCT vp_asn) AS vps,
                       {"list(DISTINCT vp_asn ORDER BY vp_asn)" if who else "NULL::BIGINT[]"} AS who
                FROM c GROUP BY ALL),
        mine AS (SELECT vp_asn AS v, d, cls, count(*) AS n FROM c GROUP BY ALL),
        q AS ({questions}),
        rest AS (SELECT q.v, q.d, t.cls, t.n - coalesce(m.n, 0) AS n, t.vps - (m.n IS NOT NULL)::INT AS vps,
                        list_filter(t.who, x -> x <> q.v) AS who
                 FROM q JOIN tot t ON t.d = q.d LEFT JOIN mine m ON m.v = q.v AND m.d = q.d AND m.cls = t.cls)
        SELECT v, d, cls, n, vps, who, sum(n) OVER (PARTITION BY v, d) AS total, n / sum(n) OVER (PARTITION BY v, d) AS share
        FROM rest WHERE n > 0
        QUALIFY row_number() OVER (PARTITION BY v, d ORDER BY n DESC, list_position({CAUTION_SQL}, cls) DESC) = 1""")


def _assemble(con, fallback: bool) -> str:
    """The query of each pair's answer from its families' routes (ev_fam; rule 6's ev_dest is
    made here): the class of the two paths, or rule 6's class where a family has none, scored
    against the pair as observed."""
    shared, cls = class_sql("p4", "p6", "v", "d")
    votes(con, "ev_dest")  # rule 6 with the VP AS held out
    return f"""
        WITH f AS (
            SELECT p.vp_group, p.vp_asn AS v, p.dest_asn AS d, p.v4_path, p.v6_path, p.observed,
                   f4.rule AS r4, CASE WHEN f4.rule IS NULL THEN NULL WHEN f4.rule = 'through' THEN f4.route
                                         ELSE list_prepend(p.vp_asn, f4.route) END AS p4,
                   f4.stab AS s4, f4.snaps AS k4,
                   f6.rule AS r6, CASE WHEN f6.rule IS NULL THEN NULL WHEN f6.rule = 'through' THEN f6.route
                                         ELSE list_prepend(p.vp_asn, f6.route) END AS p6,
                   f6.stab AS s6, f6.snaps AS k6
            FROM ev_pairs p
            LEFT JOIN ev_fam f4 ON f4.vp_group = p.vp_group AND f4.v = p.vp_asn AND f4.d = p.dest_asn AND f4.afi = 4
            LEFT JOIN ev_fam f6 ON f6.vp_group = p.vp_group AND f6.v = p.vp_asn AND f6.d = p.dest_asn AND f6.afi = 6),
        c AS (
            SELECT f.*, {shared} AS shared, CASE WHEN p4 IS NOT NULL AND p6 IS NOT NULL THEN {cls} END AS both_cls
            FROM f)
        SELECT c.vp_group, c.v AS vp_asn, c.d AS dest_asn, c.observed, c.r4, c.r6, c.p4 = c.v4_path AS e4,
               c.p6 = c.v6_path AS e6, c.s4, c.s6, least(c.k4, c.k6) AS k, c.both_cls, e.cls AS dest_cls,
               e.share AS dest_share, e.vps AS dest_vps,
               CASE WHEN c.p4 IS NULL THEN NULL ELSE ({edit_distance_sql('c.p4', 'c.v4_path')})::INTEGER END AS h4,
               CASE WHEN c.p6 IS NULL THEN NULL ELSE ({edit_distance_sql('c.p6', 'c.v6_path')})::INTEGER END AS h6
        FROM c LEFT JOIN ev_dest e ON e.v = c.v AND e.d = c.d AND {str(bool(fallback)).lower()}
        ORDER BY c.v, c.vp_group, c.d"""


MODE_OF = {"disjoint": "aggregate", "shared-edge": "aggregate", "shared-core": "backup", "congruent": "single-path",
            "unknown": "single-path"}


def codes(col: pa.ChunkedArray, names: tuple[str, ...]) -> np.ndarray:
    """A string column as each value's index in `names` (-1 for null): whole columns, no str
    object per row."""
    import pyarrow.compute as pc  # not at the top: 80 ms of import that advise does not need
    return pc.fill_null(pc.index_in(col, value_set=pa.array(names)), -1).to_numpy(zero_copy_only=False)


def _rows(t: pa.Table, month: str, reveal: str, snaps: int) -> pa.Table:
    """selector_eval's columns from the assembled answers, over whole columns (numpy): the
    pair's rule, class and stated confidence as selector/reference.evidence_answer gives them."""
    import pyarrow.compute as pc  # not at the top: 80 ms of import that advise does not need
    classes = rules.CLASSES
    r4, r6 = codes(t.column("r4"), rules.EVIDENCE_RULES), codes(t.column("r6"), rules.EVIDENCE_RULES)
    both_c, dest_c = codes(t.column("both_cls"), classes), codes(t.column("dest_cls"), classes)
    obs_c = codes(t.column("observed"), classes)
    both, has_dest = both_c >= 0, dest_c >= 0
    names = np.array([*rules.EVIDENCE_RULES, "destination", "none"], dtype=object)
    rule = names[np.where(both, np.maximum(r4, r6), np.where(has_dest, len(rules.EVIDENCE_RULES),
                                                              len(rules.EVIDENCE_RULES) + 1))]
    unknown = classes.index("unknown")
    pred_c = np.where(both, both_c, np.where(has_dest, dest_c, unknown))
    col = lambda c: pc.fill_null(t.column(c).cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)  # noqa: E731
    s4, s6, k, share = col("s4"), col("s6"), col("k"), col("dest_share")
    proxy = rule != "first-hop"
    stated = rules.confidence_array(s4, s6, k, snaps, factor=np.where(proxy, rules.PROXY_FACTOR, 1.0))
    conf = np.where(both, stated, np.where(rule == "destination", share, 0.0))
    conf = np.where(pred_c == unknown, 0.0, conf)
    # the advice's mode: an aggregate class held back to backup where a proxy rule is unsure
    cautious = (rule == "destination") & (share < 1) | (both & proxy & (conf < rules.PROXY_MIN_CONFIDENCE))
    mode_of = np.array([MODE_OF[c] for c in classes], dtype=object)
    modes = mode_of[pred_c]
    modes = np.where((modes == "aggregate") & cautious, "backup", modes)
    correct = pa.array(pred_c == obs_c, pa.bool_(), mask=pred_c == unknown)
    dest_vps = pc.fill_null(t.column("dest_vps"), 0).cast(pa.int32()).to_numpy(zero_copy_only=False)
    n = t.num_rows
    cls_names = np.array(classes, dtype=object)
    return pa.table({
        "month": pa.array([month] * n, pa.string()),
        "vp_group": t.column("vp_group"), "vp_asn": t.column("vp_asn"), "dest_asn": t.column("dest_asn"),
        "rule": pa.array(rule, pa.string()),
        "proxies": pa.array(np.where(rule == "destination", dest_vps, 0), pa.int32()),
        "observed_class": t.column("observed"), "predicted_class": pa.array(cls_names[pred_c], pa.string()),
        "correct": correct, "confidence": pa.array(conf, pa.float64()),
        "observed_mode": pa.array(mode_of[obs_c], pa.string()), "predicted_mode": pa.array(modes, pa.string()),
        "v4_exact": t.column("e4"), "v6_exact": t.column("e6"),  # null where the family has no route
        "v4_hop_distance": t.column("h4").cast(pa.int32()), "v6_hop_distance": t.column("h6").cast(pa.int32()),
        "kind": pa.array(["vp"] * n, pa.string()), "reveal": pa.array([reveal] * n, pa.string())})


def where(cfg: Config) -> Path:
    return data_root(cfg)


# ------------------------------------------------------------------ one source's questions
def _families(con, cfg: Config, month: str, src: int, targets: list[tuple[int | None, int | None]] | None,
                    via: dict, first_hop: dict | None = None, inferred: bool = rules.INFERRED_ROUTES,
                    progress=None) -> tuple[int, bool, list[tuple], dict]:
    """Rules 8-11 for one source that is no VP, through `ask` (source_hints' first half):
    (the month's snapshots, whether it has relationships, the targets, per target index and
    family the route row (rule, n, n_is, route from n on, stability, snapshots)). `targets`: (IPv4, IPv6) destination ASes
    (either None), or None for every destination of the month's pairs; `via`: afi ->
    declared Neighbours; `first_hop`: (afi, destination) -> the neighbour a trace showed."""
    dests = None if targets is None else {d for t in targets for d in t if d is not None}
    snaps, has_rel = setup(con, cfg, month, dests=dests)
    if targets is None:
        targets = [(d, d) for (d,) in con.execute(
            f"SELECT DISTINCT dest_asn FROM ev_pairs WHERE dest_asn <> {int(src)} ORDER BY 1").fetchall()]
    hops = first_hop or {}
    q = [(str(i), afi, d, hops.get((afi, d))) for i, t in enumerate(targets) for afi, d in zip((4, 6), t) if d is not None]
    # as lists bound to the query, not Arrow tables: DuckDB's Arrow scan costs advise 80 ms of import
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_q AS
        SELECT unnest($k)::VARCHAR AS vp_group, {int(src)}::BIGINT AS v, unnest($d)::BIGINT AS d, unnest($afi)::INTEGER AS afi,
               unnest($hop)::BIGINT AS hop""",
                {"k": [r[0] for r in q], "afi": [r[1] for r in q], "d": [r[2] for r in q], "hop": [r[3] for r in q]})
    nbs = [(afi, n) for afi, ns in via.items() for n in ns]
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_nb AS
        SELECT {int(src)}::BIGINT AS v, unnest($afi)::INTEGER AS afi, unnest($n)::BIGINT AS n,
               unnest($ord)::BIGINT AS ord, unnest($rel)::VARCHAR AS rel""",
                {"afi": [a for a, _n in nbs], "n": [n.asn for _a, n in nbs], "ord": [n.order for _a, n in nbs],
                 "rel": [n.rel for _a, n in nbs]})
    ask(con, cfg, snaps, has_rel, inferred, progress)
    fams: dict = {}
    for key, afi, *row in con.execute("SELECT vp_group, afi, rule, n, n_is, route, stab, snaps FROM ev_fam").fetchall():
        fams[(int(key), afi)] = row
    return snaps, has_rel, targets, fams


def _why_not(src: int, d: int, afi: int, hop: int | None, nbrs: tuple, further: bool) -> str:
    """What each rule found for a family with no route (the reason of an unknown answer);
    `further`: rule 11 was tried (on, and the month has relationships)."""
    more = " or their neighbours in the month's relationships (rule 11)" if further else ""
    if hop is not None:
        return (f"no IPv{afi} path to AS{d} crosses the first hop AS{hop}; no route to AS{d} the source would be "
                f"given from the first hop AS{hop}{more} on the month's paths")
    tried = f"no VP's IPv{afi} path to AS{d} crosses AS{src}"
    if nbrs:
        tried += (f"; no route to AS{d} the source would be given from its IPv{afi} neighbours "
                  f"({', '.join(f'AS{n.asn}' for n in nbrs)}){more} on the month's paths")
    return tried


def _why(rule: str, n: int, n_is: str | None, route: list, d: int, traced: bool, afi: int) -> str:
    """How a family's route was found, for the answer's notes."""
    if rule == "first-hop":
        hop = f"the first hop AS{n}" if traced else f"its sole IPv{afi} neighbour AS{n}"
        return f"{hop} is the destination" if n == d else f"{hop} and its route"
    if rule == "through":
        return "VPs' paths cross the source"
    if rule == "neighbours":
        return f"its {n_is} AS{n} (Gao-Rexford preference)"
    return f"its {n_is} AS{n}, whose route is inferred from the month's relationships (AS{route[1]}'s)"


def _hint_of(month: str, src: int, d4: int | None, d6: int | None, fam: dict, snaps: int, fit, via: dict,
                first_hop: dict, how: str, further: bool = False) -> tuple[dict, str]:
    """The hint of one target from its families' route rows (_families; fam: afi -> row or
    None) and the rule it came from (`none` when a family has no path). `further`: rule 11 was
    tried (`inferred` on a month with relationships), which the reasons then name."""
    h = empty_hint(month, src)
    h.update(via_proxy=True, dest_asn=d4, dest_asn_v6=d6)
    paths, why, rule_of = {}, {}, {}
    for afi, d in ((4, d4), (6, d6)):
        row = fam.get(afi)
        hop = first_hop.get((afi, d))
        nbrs = via.get(afi, ())
        if d is None:
            why[afi] = f"no IPv{afi} destination"
        elif row is None:
            why[afi] = _why_not(src, d, afi, hop if hop is not None else nbrs[0].asn if rules.sole_neighbour(nbrs)
                                else None, nbrs, further)
        else:
            rule, n, n_is, route, stab, k = row
            path = list(route) if rule == "through" else [src, *route]
            paths[afi] = (path, stab, k)
            rule_of[afi] = rule
            why[afi] = _why(rule, n, n_is, list(route), d, hop is not None, afi)
            # the neighbour the path leaves through (rule 9's n is the source itself)
            h.update({f"v{afi}_path": path, f"stability_v{afi}": stab, f"via_v{afi}": path[1] if len(path) > 1 else d})
    if len(paths) == 2:
        (p4, s4, k4), (p6, s6, k6) = paths[4], paths[6]
        rule = rules.weakest([rule_of[4], rule_of[6]])
        cls, shared = rules.classify(p4, p6, src, d4, d6)
        h.update(shared_asns=shared, snapshots=min(k4, k6))
        h.update(rules.hint_fields(cls, s4, s6, len(p4) - 1, len(p6) - 1, min(k4, k6), snaps,
                                   proxy=rule != "first-hop", calibrated=calibration.confidence(fit, rule, cls)))
        rs = f"rules {rule_of[4]} and {rule_of[6]}" if rule_of[4] != rule_of[6] else f"rule {rule_of[4]}"
        h["how"] = f"AS{src} is not a vantage point; from its {how} evidence: IPv4 via {why[4]}, IPv6 via {why[6]} ({rs})"
        return h, rule
    if paths:
        h["how"] = "; ".join(f"IPv{a}: via {why[a]} (rule {rule_of[a]})" for a in sorted(paths))
    h.update(rules.hint_fields("unknown", h["stability_v4"], h["stability_v6"],
                               len(paths[4][0]) - 1 if 4 in paths else None,
                               len(paths[6][0]) - 1 if 6 in paths else None, None, None))
    found = sorted(paths)
    h["reason"] = "; ".join(f"IPv{a}: {w}" for a, w in why.items() if a not in paths) + (
        f": only IPv{found[0]} has a path" if found else "")
    return h, "none"


def source_hints(con, cfg: Config, month: str, src: int, targets: list[tuple[int | None, int | None]] | None,
                 via: dict, first_hop: dict, how: str, fit, inferred: bool = rules.INFERRED_ROUTES,
                 progress=None) -> tuple[list[tuple], list[tuple[dict, str]]]:
    """One source's hints by rules 8-11 through the engine: (the targets, per target its hint
    and the rule it came from): what advise, export, the run's site hints and `evaluate
    --truth --reveal` give. `targets`: (IPv4, IPv6) destination ASes (either None: no
    question), or None for every destination of the month's pairs; `via`: afi -> declared
    Neighbours; `first_hop`: (afi, destination) -> the neighbour a trace showed; `how`: where
    the evidence came from; `fit`: the calibration the confidence is read from (or None)."""
    snaps, has_rel, targets, fams = _families(con, cfg, month, src, targets, via, first_hop, inferred, progress)
    return targets, [_hint_of(month, src, d4, d6, {afi: fams.get((i, afi)) for afi in (4, 6)}, snaps, fit, via,
                              first_hop, how, inferred and has_rel) for i, (d4, d6) in enumerate(targets)]


# ------------------------------------------------------------------ the site's own advice
def site_hints(cfg: Config, month: str, src: int, via: dict, progress=None) -> pa.Table | None:
    """The hints of the operator's host (the config's [source]: its AS `src` and neighbours
    `via`, afi -> selector.question.Neighbour tuple) toward every destination of the month's
    pairs (source_hints): the rows `run`'s hints step adds to the month's tunnels export
    (HINTS' columns). None for a source that is a VP of the month: its own rows of the hints
    table are its advice, as advise says."""
    con = duck.connect(cfg)
    try:
        if is_vp(con, cfg, month, src):
            return None
        fit = (month_calibration(con, cfg, month) or {}).get("neighbours")
        _targets, got = source_hints(con, cfg, month, src, None, via, {}, "[source]", fit, progress=progress)
    finally:
        con.close()
    out = []
    for h, _rule in got:
        h["notes"] = [h.pop("how")] if "how" in h else []
        out.append(h)
    return pa.Table.from_pylist(out, schema=HINTS)
