"""The held-out evaluation of today's rules (rules 1-7, `--reveal none`), set-based (issue 47).

Every VP AS v of the month with pairs is held out in turn, as selector/evaluate.held_out does
one question at a time with selector/advice.proxy_answer (its reference: tests/test_proxies.py
holds the two equal), but all questions (v, destination d) are answered at once in SQL, a
destination partition at a time, and only the answers reach Python. "Held out" is a filter,
not a copy of the month: a row of VP AS v's own paths or pairs never serves v's questions.

What each rule reads:
- per source v, over the whole month (the size of v's adjacencies): the ASes right before v
  on the other VPs' paths (ev_near: its neighbours per family, rules 5 and 7) and right after
  it (ev_after: none makes v a stub; the VPs among them are its upstreams, rule 1);
- per destination partition: the paths that cross v (rule 1's through proxies), the
  neighbours' routes (rule 5: the routes table of selector/reveal.py), and for the questions
  still without a class, each upstream VP's paths with v in front (rule 1's upstream proxies);
- per pair: rules 6 and 7's votes, the month's counts less v's own pairs (reveal.votes).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.pipeline.steps import edit_distance_sql
from bgp_congruency.selector import reveal as R
from bgp_congruency.selector import rules
from bgp_congruency.selector.month import WITH_PATHS, table_relation

#: The rules of today's evaluation, in the order an answer is looked for (advice.proxy_answer);
#: `through` and `upstream` also name an unknown answer of proxies that show no class.
RULES = ("through", "provider", "one-neighbour", "destination", "upstream", "none")


def _per_source(con, cfg: Config, month: str) -> None:
    """Per held-out VP AS v, from the other VPs' paths (a row of a path whose VP is v never
    counts: v is hidden): ev_near (afi, v, n: an AS right before v, its neighbours per family),
    ev_after (v, u: an AS right after v), ev_src (v a stub: nothing after it; and the one
    neighbour of rule 7) and ev_vps (the month's VPs with paths: who may be an upstream proxy).
    The neighbour and the next-AS sets are the size of v's adjacencies, whatever the month."""
    con.execute("CREATE OR REPLACE TEMP TABLE ev_qv AS SELECT DISTINCT vp_asn AS v, dest_asn AS d FROM ev_pairs")
    at = """(SELECT * FROM (SELECT afi, vp_asn, path, i, path[i] AS x
                           FROM (SELECT afi, vp_asn, path, unnest(range(1, len(path) + 1)) AS i FROM ev_paths))
             WHERE x IN (SELECT DISTINCT v FROM ev_qv) AND vp_asn <> x)"""
    con.execute(f"CREATE OR REPLACE TEMP TABLE ev_near AS SELECT DISTINCT afi, x AS v, path[i - 1] AS n FROM {at} WHERE i > 1")
    con.execute(f"CREATE OR REPLACE TEMP TABLE ev_after AS SELECT DISTINCT x AS v, path[i + 1] AS u FROM {at} "
                "WHERE i < len(path)")
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_src AS
        SELECT q.v, t.v IS NULL AS stub, o.p AS one
        FROM (SELECT DISTINCT v FROM ev_qv) q
        LEFT JOIN (SELECT DISTINCT v FROM ev_after) t ON t.v = q.v
        LEFT JOIN (SELECT v, min(n) AS p FROM ev_near GROUP BY v
                   HAVING count(DISTINCT n) FILTER (WHERE afi = 4) = 1 AND count(DISTINCT n) FILTER (WHERE afi = 6) = 1
                      AND count(DISTINCT n) = 1) o ON o.v = q.v""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_vps AS
        SELECT DISTINCT vp_group AS g, vp_asn AS a FROM {table_relation(cfg, 'vps', month)}
        WHERE {WITH_PATHS}""")


def _through(k: int, i: int) -> str:
    """Rule 1's through proxies of partition i's questions, one row per (v, d, VP): each VP
    whose path to d crosses v (position 2 on), that path from v on per family (rules.from_source;
    a family whose path does not cross v has none)."""
    return f"""
        SELECT x AS v, dest_asn AS d, vp_group AS g, vp_asn AS a,
               any_value(path[i:]) FILTER (WHERE afi = 4) AS q4, any_value(stability) FILTER (WHERE afi = 4) AS s4,
               any_value(snapshots) FILTER (WHERE afi = 4) AS k4,
               any_value(path[i:]) FILTER (WHERE afi = 6) AS q6, any_value(stability) FILTER (WHERE afi = 6) AS s6,
               any_value(snapshots) FILTER (WHERE afi = 6) AS k6
        FROM (SELECT *, path[i] AS x FROM (SELECT *, unnest(range(2, len(path) + 1)) AS i FROM ev_paths
                                           WHERE {R.in_partition("dest_asn", k, i)}))
        SEMI JOIN ev_qv q ON q.v = x AND q.d = dest_asn
        GROUP BY x, dest_asn, vp_group, vp_asn"""


def _upstream(k: int, i: int) -> str:
    """Rule 1's upstream proxies of the questions still without an answer (ev_need), one row per
    (v, d, VP): each VP right after v on some path, with or without a path to d; per family its
    path from v on where it crosses v, else v in front; a guess beside a crossing dropped
    (rules.from_source)."""
    fam = lambda f: f"""CASE WHEN p{f} IS NULL THEN NULL WHEN list_position(p{f}, v) > 1 THEN 'through'
                             ELSE 'upstream' END"""  # noqa: E731
    built = lambda f: f"""CASE WHEN u{f} IS NULL OR (u{f} = 'upstream' AND u{6 if f == 4 else 4} = 'through') THEN NULL
                               WHEN u{f} = 'through' THEN p{f}[list_position(p{f}, v):] ELSE list_prepend(v, p{f}) END"""  # noqa: E731
    return f"""
        SELECT v, d, g, a, {built(4)} AS q4, s4, k4, {built(6)} AS q6, s6, k6
        FROM (SELECT *, {fam(4)} AS u4, {fam(6)} AS u6 FROM (
            SELECT q.v, q.d, u.g, u.a,
                   any_value(p.path) FILTER (WHERE p.afi = 4) AS p4, any_value(p.stability) FILTER (WHERE p.afi = 4) AS s4,
                   any_value(p.snapshots) FILTER (WHERE p.afi = 4) AS k4,
                   any_value(p.path) FILTER (WHERE p.afi = 6) AS p6, any_value(p.stability) FILTER (WHERE p.afi = 6) AS s6,
                   any_value(p.snapshots) FILTER (WHERE p.afi = 6) AS k6
            FROM ev_need q
            JOIN (SELECT DISTINCT e.v, vp.g, vp.a FROM ev_after e JOIN ev_vps vp ON vp.a = e.u) u ON u.v = q.v
            LEFT JOIN (SELECT * FROM ev_paths WHERE {R.in_partition("dest_asn", k, i)}) p
                   ON p.vp_group = u.g AND p.vp_asn = u.a AND p.dest_asn = q.d
            GROUP BY q.v, q.d, u.g, u.a))"""


def _kinds(cands: str, snaps: int) -> str:
    """Per question, rules 2-4 over its proxies (`cands`: _through's or _upstream's rows): the
    most cautious class among those that give one, the share that agrees, and the proxy shown
    (the most confident of those, then the lowest group and ASN; with no class, the lowest group
    and ASN); proxies: their VP ASes. A proxy's confidence is rounded as Python's round(c, 6)
    (printf's %.6f: exact; DuckDB's round takes halves away from zero) so ties break alike."""
    _shared, cls = R.class_sql("q4", "q6", "v", "d")
    return f"""
        WITH c0 AS (
            SELECT *, list_position({R.CAUTION_SQL}, cls) AS rank,
                   CASE WHEN cls IS NULL THEN 0.0 ELSE printf('%.6f', least(s4, s6) * least(1.0, least(k4, k6) / {int(snaps)})
                                                         * {rules.PROXY_FACTOR})::DOUBLE END AS conf
            FROM (SELECT *, CASE WHEN q4 IS NOT NULL AND q6 IS NOT NULL THEN {cls} END AS cls FROM ({cands}))),
        s AS (SELECT v, d, count(DISTINCT a) AS proxies, count(cls) AS known, max(rank) AS top FROM c0 GROUP BY ALL),
        c AS (SELECT c0.*, s.proxies, s.known, s.top, c0.rank IS NOT DISTINCT FROM s.top AND c0.cls IS NOT NULL AS picked
              FROM c0 JOIN s USING (v, d))
        SELECT v, d, proxies, known, cls, q4, q6, s4, s6, least(k4, k6) AS k,
               count(*) FILTER (WHERE picked) OVER (PARTITION BY v, d) / greatest(known, 1) AS agree
        FROM c
        QUALIFY row_number() OVER (PARTITION BY v, d ORDER BY picked DESC, conf DESC, g, a) = 1"""


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
        snaps, _has_rel = R.setup(con, cfg, month, groups=True)
        _per_source(con, cfg, month)
        k = parts or R.partitions(con, cfg)
        R.votes(con, "ev_dest")
        R.votes(con, "ev_one", behind=True)
        con.execute("""CREATE OR REPLACE TEMP TABLE ev_ans (v BIGINT, d BIGINT, rule VARCHAR, cls VARCHAR,
            p4 BIGINT[], p6 BIGINT[], s4 DOUBLE, s6 DOUBLE, k BIGINT, agree DOUBLE, share DOUBLE, proxies BIGINT)""")
        for i in range(k):  # each partition's questions answered whole: no step joins every question's candidates
            R.routes(con, k, i)
            con.execute(f"CREATE OR REPLACE TEMP TABLE ev_t AS {_kinds(_through(k, i), snaps)}")
            con.execute(f"CREATE OR REPLACE TEMP TABLE ev_prov AS {_provider(k, i)}")
            # the upstream proxies only where rules 1 (through) and 5-7 give no class: few questions
            con.execute(f"CREATE OR REPLACE TEMP TABLE ev_need AS SELECT q.v, q.d {_joined(k, i)} AND NOT {_ANSWERED}")
            con.execute(f"CREATE OR REPLACE TEMP TABLE ev_u AS {_kinds(_upstream(k, i), snaps)}")
            con.execute(f"INSERT INTO ev_ans {_decide(k, i)}")
            if progress:
                progress(i + 1, k)
        for t in ("ev_routes", "ev_t", "ev_u", "ev_need", "ev_prov"):
            con.execute(f"DROP TABLE IF EXISTS {t}")
        t = R.read_closing(con, _assemble(), "answers-none.parquet")
    finally:
        con.close()
    return _rows(t, month, snaps)


#: Rules 5-7 answer (a stub in front of its neighbours' routes in both families, or behind one
#: neighbour with a class; any other source with the destination's class), over _joined's names.
_BY_PROVIDER = "s.stub AND r4.v IS NOT NULL AND r6.v IS NOT NULL"
_BY_ONE = "s.stub AND s.one IS NOT NULL AND o.cls IS NOT NULL"
_BY_DESTINATION = "NOT s.stub AND e.cls IS NOT NULL"
#: A question answered before the upstream proxies are asked.
_ANSWERED = f"coalesce(t.known > 0 OR ({_BY_PROVIDER}) OR ({_BY_ONE}) OR ({_BY_DESTINATION}), false)"


def _joined(k: int, i: int, more: str = "") -> str:
    """FROM and WHERE of partition i's questions q with their source s, through proxies t, rule
    5's routes r4 and r6, rules 7 and 6's votes o and e, and the joins `more`."""
    return f"""FROM ev_qv q JOIN ev_src s ON s.v = q.v
            LEFT JOIN ev_t t ON t.v = q.v AND t.d = q.d
            LEFT JOIN (SELECT *, list_prepend(v, route) AS route4 FROM ev_prov WHERE afi = 4) r4
                   ON r4.v = q.v AND r4.d = q.d
            LEFT JOIN (SELECT *, list_prepend(v, route) AS route6 FROM ev_prov WHERE afi = 6) r6
                   ON r6.v = q.v AND r6.d = q.d
            LEFT JOIN ev_one o ON o.v = q.v AND o.d = q.d
            LEFT JOIN ev_dest e ON e.v = q.v AND e.d = q.d {more}
            WHERE {R.in_partition('q.d', k, i)}"""


def _decide(k: int, i: int) -> str:
    """The answer to each question of partition i: the first rule in advice.proxy_answer's
    order that gives a class (through; for a stub provider, else one-neighbour; for any other
    source destination; upstream), else the first kind of proxy that exists (its answer
    unknown), else none (a stub's family that rule 5 found keeps its path)."""
    _shared, cls = R.class_sql("r4.route4", "r6.route6", "q.v", "q.d")
    rule = f"""CASE WHEN t.known > 0 THEN 'through'
                   WHEN {_BY_PROVIDER} THEN 'provider' WHEN {_BY_ONE} THEN 'one-neighbour'
                   WHEN {_BY_DESTINATION} THEN 'destination'
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
            {_joined(k, i, "LEFT JOIN ev_u u ON u.v = q.v AND u.d = q.d")}),
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
        SELECT * FROM b"""


def _assemble() -> str:
    """Each pair (a VP AS in several collector groups has a row per group) with its VP AS's
    answer, scored against the pair's own paths."""
    return f"""
        SELECT p.vp_group, p.vp_asn, p.dest_asn, p.observed, b.rule, b.cls, b.s4, b.s6, b.k, b.agree, b.share,
               b.proxies, b.p4 = p.v4_path AS e4, b.p6 = p.v6_path AS e6,
               CASE WHEN b.p4 IS NULL THEN NULL ELSE ({edit_distance_sql('b.p4', 'p.v4_path')})::INTEGER END AS h4,
               CASE WHEN b.p6 IS NULL THEN NULL ELSE ({edit_distance_sql('b.p6', 'p.v6_path')})::INTEGER END AS h6
        FROM ev_pairs p JOIN ev_ans b ON b.v = p.vp_asn AND b.d = p.dest_asn
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
