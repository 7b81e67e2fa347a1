"""The held-out evaluation of today's rules (rules 1-7, `--reveal none`), set-based (issue 47).

Every VP AS v of the month with pairs is held out in turn, as selector/evaluate.held_out does
one question at a time with selector/advice.proxy_answer (its reference: tests/test_proxies.py
holds the two equal), but all questions (v, destination d) are answered at once in SQL, a
destination partition at a time, and only the answers reach Python. "Held out" is a filter,
not a copy of the month: a row of VP AS v's own paths or pairs never serves v's questions.

What each rule reads:
- per source v, over the whole month (small: one row per AS seen before or after v): where
  v sits on the other VPs' paths (ev_at). v is a stub when nothing follows it; the ASes before
  it are its neighbours per family (rules 5, 7); the VPs right after it its upstreams (rule 1);
- per destination partition: the paths that cross v (rule 1's through proxies: VPs whose path
  crosses the source), each upstream VP's paths with v in front (rule 1's upstream proxies),
  and the neighbours' routes (rule 5: the routes table of selector/reveal.py);
- per pair: rules 6 and 7's votes, the month's counts less v's own pairs (reveal.votes).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.pipeline.steps import edit_distance_sql
from bgp_congruency.selector import reveal as R
from bgp_congruency.selector import rules
from bgp_congruency.selector.month import table_relation

#: The rules of today's evaluation, in the order an answer is looked for (advice.proxy_answer);
#: `through` and `upstream` also name an unknown answer of proxies that show no class.
RULES = ("through", "provider", "one-neighbour", "destination", "upstream", "none")
_CAUTION = "[" + ", ".join(f"'{c}'" for c in rules.CAUTION) + "]"


def _per_source(con, cfg: Config, month: str) -> None:
    """Per held-out VP AS, from the other VPs' paths (position 2 on: a path's first AS is its
    own VP, never v's): ev_at (afi, v, the AS before it, the AS after it or NULL at the end),
    ev_near (v's neighbours per family), ev_src (stub or not, and the one neighbour of rule 7),
    and ev_vps (the month's VPs with paths: who may be an upstream proxy)."""
    con.execute("CREATE OR REPLACE TEMP TABLE ev_qv AS SELECT DISTINCT vp_asn AS v, dest_asn AS d FROM ev_pairs")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_at AS
        SELECT DISTINCT afi, x AS v, path[i - 1] AS before, CASE WHEN i < len(path) THEN path[i + 1] END AS after
        FROM (SELECT afi, path, i, path[i] AS x FROM (SELECT afi, path, unnest(range(2, len(path) + 1)) AS i
                                                       FROM ev_paths))
        WHERE x IN (SELECT DISTINCT v FROM ev_qv)""")
    con.execute("CREATE OR REPLACE TEMP TABLE ev_near AS SELECT DISTINCT afi, v, before AS n FROM ev_at")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_src AS
        SELECT q.v, t.v IS NULL AS stub, o.p AS one
        FROM (SELECT DISTINCT v FROM ev_qv) q
        LEFT JOIN (SELECT DISTINCT v FROM ev_at WHERE after IS NOT NULL) t ON t.v = q.v
        LEFT JOIN (SELECT v, min(n) AS p FROM ev_near GROUP BY v
                   HAVING count(DISTINCT n) FILTER (WHERE afi = 4) = 1 AND count(DISTINCT n) FILTER (WHERE afi = 6) = 1
                      AND count(DISTINCT n) = 1) o ON o.v = q.v""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_vps AS
        SELECT DISTINCT vp_group AS g, vp_asn AS a FROM {table_relation(cfg, 'vps', month)}
        WHERE origins_v4 > 0 OR origins_v6 > 0""")


def _candidates(con, k: int, i: int, snaps: int) -> None:
    """ev_cand: partition i's proxy VPs (rule 1) of each question, one row per (v, d, kind,
    VP): its two paths as the source's (rules.from_source), their class, and its confidence as
    one proxy (0 without both paths)."""
    part = R.in_partition("dest_asn", k, i)
    qpart = R.in_partition("q.d", k, i)
    # through: each VP whose path to d crosses v (position 2 on), that path from v on
    through = f"""
        SELECT x AS v, dest_asn AS d, 'through' AS kind, vp_group AS g, vp_asn AS a,
               any_value(path[i:]) FILTER (WHERE afi = 4) AS q4, any_value(stability) FILTER (WHERE afi = 4) AS s4,
               any_value(snapshots) FILTER (WHERE afi = 4) AS k4,
               any_value(path[i:]) FILTER (WHERE afi = 6) AS q6, any_value(stability) FILTER (WHERE afi = 6) AS s6,
               any_value(snapshots) FILTER (WHERE afi = 6) AS k6
        FROM (SELECT *, path[i] AS x FROM (SELECT *, unnest(range(2, len(path) + 1)) AS i FROM ev_paths
                                           WHERE {part}))
        SEMI JOIN ev_qv q ON q.v = x AND q.d = dest_asn
        GROUP BY x, dest_asn, vp_group, vp_asn"""
    # upstream: each VP right after v on some path (any destination), with or without a path to
    # d; a path that crosses v from v on, else v in front; a guess beside a crossing dropped
    fam = lambda f: f"""CASE WHEN p{f} IS NULL THEN NULL WHEN list_position(p{f}, v) > 1 THEN 'through'
                             ELSE 'upstream' END"""  # noqa: E731
    built = lambda f: f"""CASE WHEN u{f} IS NULL OR (u{f} = 'upstream' AND u{6 if f == 4 else 4} = 'through') THEN NULL
                               WHEN u{f} = 'through' THEN p{f}[list_position(p{f}, v):] ELSE list_prepend(v, p{f}) END"""  # noqa: E731
    upstream = f"""
        SELECT v, d, 'upstream' AS kind, g, a, {built(4)} AS q4, s4, k4, {built(6)} AS q6, s6, k6
        FROM (SELECT *, {fam(4)} AS u4, {fam(6)} AS u6 FROM (
            SELECT q.v, q.d, u.g, u.a,
                   any_value(p.path) FILTER (WHERE p.afi = 4) AS p4, any_value(p.stability) FILTER (WHERE p.afi = 4) AS s4,
                   any_value(p.snapshots) FILTER (WHERE p.afi = 4) AS k4,
                   any_value(p.path) FILTER (WHERE p.afi = 6) AS p6, any_value(p.stability) FILTER (WHERE p.afi = 6) AS s6,
                   any_value(p.snapshots) FILTER (WHERE p.afi = 6) AS k6
            FROM ev_qv q
            JOIN (SELECT DISTINCT e.v, vp.g, vp.a FROM ev_at e JOIN ev_vps vp ON vp.a = e.after) u ON u.v = q.v
            LEFT JOIN ev_paths p ON p.vp_group = u.g AND p.vp_asn = u.a AND p.dest_asn = q.d
            WHERE {qpart}
            GROUP BY q.v, q.d, u.g, u.a))"""
    _shared, cls = R.class_sql("q4", "q6", "v", "d")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_cand AS
        SELECT *, list_position({_CAUTION}, cls) AS rank,
               CASE WHEN cls IS NULL THEN 0.0
                    ELSE round(least(s4, s6) * least(1.0, least(k4, k6) / {int(snaps)}) * {rules.PROXY_FACTOR}, 6)
               END AS conf
        FROM (SELECT *, CASE WHEN q4 IS NOT NULL AND q6 IS NOT NULL THEN {cls} END AS cls
              FROM ({through} UNION ALL {upstream}))""")


def _kinds() -> str:
    """Per (v, d, kind) of ev_cand, rules 3 and 4: the most cautious class among the proxies
    that give one, the share that agrees, and the proxy shown (the most confident of those, then
    the lowest group and ASN; with no class, the lowest group and ASN); proxies: their VP ASes."""
    return """
        WITH s AS (SELECT v, d, kind, count(DISTINCT a) AS proxies, count(cls) AS known, max(rank) AS top
                   FROM ev_cand GROUP BY ALL),
        c AS (SELECT c.*, s.proxies, s.known, s.top, c.rank IS NOT DISTINCT FROM s.top AND c.cls IS NOT NULL AS picked
              FROM ev_cand c JOIN s USING (v, d, kind))
        SELECT v, d, kind, proxies, known, cls, q4, q6, s4, s6, least(k4, k6) AS k,
               count(*) FILTER (WHERE picked) OVER (PARTITION BY v, d, kind) / greatest(known, 1) AS agree
        FROM c
        QUALIFY row_number() OVER (PARTITION BY v, d, kind ORDER BY picked DESC, conf DESC, g, a) = 1"""


def _provider(k: int, i: int) -> str:
    """Rule 5 for the stubs' questions of partition i: per family the neighbour whose route to d
    is the shortest (then the lowest ASN), each neighbour's route the one most VP ASes show
    (then the shortest, the lowest ASNs), neither from v's own paths nor crossing v."""
    return f"""
        WITH q AS (SELECT q.v, q.d, n.afi, n.n FROM ev_qv q JOIN ev_src s ON s.v = q.v AND s.stub
                   JOIN ev_near n ON n.v = q.v WHERE {R.in_partition('q.d', k, i)}),
        r AS (SELECT q.v, q.d, q.afi, q.n, r.route, count(DISTINCT r.vp) AS vps, max(r.stab) AS stab,
                     max(r.snaps) AS snaps, list(DISTINCT r.vp) AS who
              FROM q JOIN ev_routes r ON r.afi = q.afi AND r.dest = q.d AND r.n = q.n
              WHERE r.vp <> q.v AND NOT list_contains(r.route, q.v) GROUP BY q.v, q.d, q.afi, q.n, r.route
              QUALIFY row_number() OVER (PARTITION BY q.v, q.d, q.afi, q.n ORDER BY vps DESC, len(r.route), r.route) = 1)
        SELECT v, d, afi, n, route, stab, snaps, who FROM r
        QUALIFY row_number() OVER (PARTITION BY v, d, afi ORDER BY len(route), n) = 1"""


def answers(cfg: Config, month: str, progress=None, parts: int | None = None) -> pa.Table:
    """One row per pair of the month: today's rules' answer (advice.proxy_answer) for the
    pair's VP AS held out, with everything selector_eval records but the calibrated
    confidence. `parts`: destination partitions (default: as the memory limit needs)."""
    con = duck.connect(cfg)
    try:
        snaps, _has_rel = R.setup(con, cfg, month)
        _per_source(con, cfg, month)
        k = parts or R.partitions(con, cfg)
        con.execute("""CREATE OR REPLACE TEMP TABLE ev_kind (v BIGINT, d BIGINT, kind VARCHAR, proxies BIGINT,
            known BIGINT, cls VARCHAR, q4 BIGINT[], q6 BIGINT[], s4 DOUBLE, s6 DOUBLE, k BIGINT, agree DOUBLE)""")
        con.execute("""CREATE OR REPLACE TEMP TABLE ev_prov (v BIGINT, d BIGINT, afi INTEGER, n BIGINT,
            route BIGINT[], stab DOUBLE, snaps BIGINT, who BIGINT[])""")
        for i in range(k):
            R.routes(con, k, i)
            _candidates(con, k, i, snaps)
            con.execute(f"INSERT INTO ev_kind {_kinds()}")
            con.execute(f"INSERT INTO ev_prov {_provider(k, i)}")
            if progress:
                progress(i + 1, k)
        for t in ("ev_cand", "ev_routes"):
            con.execute(f"DROP TABLE IF EXISTS {t}")
        R.votes(con, "ev_dest")
        R.votes(con, "ev_one", behind=True)
        # through DuckDB's spill folder as reveal.answers does: never its tables and the answers at once
        out = Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0]) / "answers-none.parquet"
        try:
            con.execute(f"COPY ({_assemble()}) TO {duck.quote(str(out))} (FORMAT parquet)")
        except BaseException:
            out.unlink(missing_ok=True)
            raise
    finally:
        con.close()
    try:
        t = pq.read_table(out)
    finally:
        out.unlink(missing_ok=True)
    return _rows(t, month, snaps)


def _assemble() -> str:
    """Each pair's answer: the first rule in advice.proxy_answer's order that gives a class
    (through; for a stub provider, else one-neighbour; for any other source destination;
    upstream), else the first kind of proxy that exists (its answer unknown), else none (a
    stub's family that rule 5 found keeps its path)."""
    _shared, cls = R.class_sql("r4.route4", "r6.route6", "q.v", "q.d")
    rule = """CASE WHEN t.known > 0 THEN 'through'
                   WHEN s.stub AND r4.v IS NOT NULL AND r6.v IS NOT NULL THEN 'provider'
                   WHEN s.stub AND s.one IS NOT NULL AND o.cls IS NOT NULL THEN 'one-neighbour'
                   WHEN NOT s.stub AND e.cls IS NOT NULL THEN 'destination'
                   WHEN u.known > 0 THEN 'upstream'
                   WHEN t.v IS NOT NULL THEN 'through'
                   WHEN u.v IS NOT NULL THEN 'upstream' ELSE 'none' END"""
    pick = lambda through, upstream, provider, other="NULL": f"""CASE rule WHEN 'through' THEN {through}
        WHEN 'upstream' THEN {upstream} WHEN 'provider' THEN {provider} ELSE {other} END"""  # noqa: E731
    return f"""
        WITH a AS (
            SELECT q.v, q.d, {rule} AS rule, t.known AS t_known, u.known AS u_known,
                   t.cls AS t_cls, t.q4 AS t_q4, t.q6 AS t_q6, t.s4 AS t_s4, t.s6 AS t_s6, t.k AS t_k,
                   t.agree AS t_agree, t.proxies AS t_proxies,
                   u.cls AS u_cls, u.q4 AS u_q4, u.q6 AS u_q6, u.s4 AS u_s4, u.s6 AS u_s6, u.k AS u_k,
                   u.agree AS u_agree, u.proxies AS u_proxies,
                   r4.route4, r6.route6, r4.stab AS r_s4, r6.stab AS r_s6, least(r4.snaps, r6.snaps) AS r_k,
                   len(list_distinct(list_concat(r4.who, r6.who))) AS r_proxies,
                   CASE WHEN r4.v IS NOT NULL AND r6.v IS NOT NULL THEN {cls} END AS r_cls,
                   o.cls AS o_cls, o.share AS o_share, o.vps AS o_vps, e.cls AS e_cls, e.share AS e_share, e.vps AS e_vps
            FROM ev_qv q JOIN ev_src s ON s.v = q.v
            LEFT JOIN ev_kind t ON t.v = q.v AND t.d = q.d AND t.kind = 'through'
            LEFT JOIN ev_kind u ON u.v = q.v AND u.d = q.d AND u.kind = 'upstream'
            LEFT JOIN (SELECT *, list_prepend(v, route) AS route4 FROM ev_prov WHERE afi = 4) r4
                   ON r4.v = q.v AND r4.d = q.d
            LEFT JOIN (SELECT *, list_prepend(v, route) AS route6 FROM ev_prov WHERE afi = 6) r6
                   ON r6.v = q.v AND r6.d = q.d
            LEFT JOIN ev_one o ON o.v = q.v AND o.d = q.d AND s.one IS NOT NULL
            LEFT JOIN ev_dest e ON e.v = q.v AND e.d = q.d),
        b AS (
            SELECT v, d, rule,
                   {pick('t_cls', 'u_cls', 'r_cls', "CASE rule WHEN 'one-neighbour' THEN o_cls WHEN 'destination' THEN e_cls END")} AS cls,
                   {pick('t_q4', 'u_q4', 'route4', "CASE rule WHEN 'none' THEN route4 END")} AS p4,
                   {pick('t_q6', 'u_q6', 'route6', "CASE rule WHEN 'none' THEN route6 END")} AS p6,
                   {pick('t_s4', 'u_s4', 'r_s4')} AS s4, {pick('t_s6', 'u_s6', 'r_s6')} AS s6,
                   {pick('t_k', 'u_k', 'r_k')} AS k, {pick('t_agree', 'u_agree', '1.0')} AS agree,
                   CASE rule WHEN 'one-neighbour' THEN o_share WHEN 'destination' THEN e_share END AS share,
                   {pick('t_proxies', 'u_proxies', 'r_proxies', "CASE rule WHEN 'one-neighbour' THEN o_vps WHEN 'destination' THEN e_vps ELSE 0 END")} AS proxies
            FROM a)
        SELECT p.vp_group, p.vp_asn, p.dest_asn, p.observed, b.rule, b.cls, b.s4, b.s6, b.k, b.agree, b.share,
               b.proxies, b.p4 = p.v4_path AS e4, b.p6 = p.v6_path AS e6,
               CASE WHEN b.p4 IS NULL THEN NULL ELSE ({edit_distance_sql('b.p4', 'p.v4_path')})::INTEGER END AS h4,
               CASE WHEN b.p6 IS NULL THEN NULL ELSE ({edit_distance_sql('b.p6', 'p.v6_path')})::INTEGER END AS h6
        FROM ev_pairs p JOIN b ON b.v = p.vp_asn AND b.d = p.dest_asn
        ORDER BY p.vp_asn, p.vp_group, p.dest_asn"""


def _rows(t: pa.Table, month: str, snaps: int) -> pa.Table:
    """selector_eval's columns from the assembled answers, over whole columns (numpy): the
    stated confidence and the advice's mode as selector/rules.hint_fields gives them."""
    classes = rules.CLASSES
    unknown = classes.index("unknown")
    rule = R.codes(t.column("rule"), RULES)
    pred_c = R.codes(t.column("cls"), classes)
    pred_c = np.where(pred_c < 0, unknown, pred_c)
    obs_c = R.codes(t.column("observed"), classes)
    col = lambda c: pc.fill_null(t.column(c).cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)  # noqa: E731
    s4, s6, k, agree, share = col("s4"), col("s6"), col("k"), col("agree"), col("share")
    voted = np.isin(rule, [RULES.index("one-neighbour"), RULES.index("destination")])
    proxies = np.isin(rule, [RULES.index("through"), RULES.index("upstream")])
    stated = rules.confidence_array(s4, s6, k, snaps, factor=rules.PROXY_FACTOR * np.nan_to_num(agree, nan=1.0))
    conf = np.where(pred_c == unknown, 0.0, np.where(voted, share, stated))
    # an aggregate class held back to backup where proxies disagree, pairs are split, or the confidence is low
    cautious = np.where(voted, share < 1, (proxies & (agree < 1)) | (conf < rules.PROXY_MIN_CONFIDENCE))
    mode_of = np.array([R.MODE_OF[c] for c in classes], dtype=object)
    modes = mode_of[pred_c]
    modes = np.where((modes == "aggregate") & cautious, "backup", modes)
    n = t.num_rows
    return pa.table({
        "month": pa.array([month] * n, pa.string()),
        "vp_group": t.column("vp_group"), "vp_asn": t.column("vp_asn"), "dest_asn": t.column("dest_asn"),
        "rule": t.column("rule"), "proxies": t.column("proxies").cast(pa.int32()),
        "observed_class": t.column("observed"), "predicted_class": pa.array(np.array(classes, dtype=object)[pred_c],
                                                                            pa.string()),
        "correct": pa.array(pred_c == obs_c, pa.bool_(), mask=pred_c == unknown),
        "confidence": pa.array(conf, pa.float64()),
        "observed_mode": pa.array(mode_of[obs_c], pa.string()), "predicted_mode": pa.array(modes, pa.string()),
        "v4_exact": t.column("e4"), "v6_exact": t.column("e6"),
        "v4_hop_distance": t.column("h4").cast(pa.int32()), "v6_hop_distance": t.column("h6").cast(pa.int32()),
        "kind": pa.array(["vp"] * n, pa.string()), "reveal": pa.array(["none"] * n, pa.string())})
