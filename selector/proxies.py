"""The one answering engine of today's rules (rules 1-7 of selector/rules.py: a source that is
no VP and gives no evidence): `ask`, over a table of questions. advise and export (through
`sources_answers`), `evaluate --reveal none` (`answers`: every VP AS held out in turn) and
`evaluate --truth` all answer through it, so they cannot disagree. Its reference is
selector/reference.proxy_answer, one question at a time, which no command answers through
(tests/test_proxies.py holds the two equal, field by field and note by note).

All questions (source v, IPv4 destination d4, IPv6 destination d6) are answered at once in SQL,
a destination partition at a time, and only the answers reach Python. "Held out" is a filter,
not a copy of the month: a row of VP AS v's own paths or pairs never serves v's questions (for
a source that is no VP it filters nothing).

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

from bgp_congruency.common import duck
from bgp_congruency.common.config import Config
from bgp_congruency.pipeline.steps import edit_distance_sql
from bgp_congruency.selector import calibration, rules
from bgp_congruency.selector import reveal as R
from bgp_congruency.selector.month import WITH_PATHS, table_relation

#: The rules of today's evaluation, in the order an answer is looked for (`_decide`);
#: `through` and `upstream` also name an unknown answer of proxies that show no class.
RULES = ("through", "provider", "one-neighbour", "destination", "upstream", "none")


#: Up to this many sources, _per_source finds each one's paths with a scan of its own
#: (list_contains: 0.6 s over the scale-250 month's 27.5 M paths); past it, with one scan for all
#: (list_has_any: 2.9 s there, whatever the number).
FEW_SOURCES = 4


def _per_source(con, cfg: Config, month: str, few: str | None = None) -> None:
    """Per question source v (a held-out VP AS, or an AS that is no VP), from the other VPs'
    paths of the whole month (ev_paths; `few`: the month's paths relation where ev_paths holds
    only the asked destinations' and the sources are a few ASes that are no VP; a row of a path
    whose VP is v never counts: v is hidden), read once: ev_near (afi, v, n: an AS right before v, its neighbours per family), ev_after (v, u: an AS
    right after v), ev_src (v a stub: nothing after it; the one neighbour of rule 7) and ev_vps (the month's VPs with paths: who may be
    an upstream proxy). The neighbour and the next-AS sets are the size of v's adjacencies,
    whatever the month."""
    paths = few or "ev_paths"

    def positions(where: str = "") -> str:  # every AS of the paths `where` says, with its place
        return f"""SELECT afi, vp_asn, path, i, path[i] AS x
                   FROM (SELECT afi, vp_asn, path, unnest(range(1, len(path) + 1)) AS i FROM {paths}{where})"""

    sources = "SELECT DISTINCT v FROM ev_qv"
    crossing = f"SELECT * FROM ({positions()}) WHERE x IN ({sources}) AND vp_asn <> x"
    if few:  # a few sources over the whole month: only the paths that cross them
        srcs = [int(v) for (v,) in con.execute(sources).fetchall()]
        if len(srcs) <= FEW_SOURCES:  # a source's place in each path that has it (a cleaned path has no loop)
            crossing = " UNION ALL ".join(
                f"SELECT afi, vp_asn, path, list_position(path, {v}::BIGINT) AS i, {v}::BIGINT AS x FROM {paths} "
                f"WHERE list_contains(path, {v}::BIGINT) AND vp_asn <> {v}" for v in srcs)
        else:
            crossing = (f"SELECT * FROM ({positions(f' WHERE list_has_any(path, {srcs}::BIGINT[])')}) "
                        f"WHERE x IN ({sources}) AND vp_asn <> x")
    # each source's places on the other VPs' paths: (family, source, the AS before it, the AS after it)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE ev_at AS
        SELECT DISTINCT afi, x, CASE WHEN i > 1 THEN path[i - 1] END AS n, CASE WHEN i < len(path) THEN path[i + 1] END AS u
        FROM ({crossing})""")
    con.execute("CREATE OR REPLACE TEMP TABLE ev_near AS SELECT DISTINCT afi, x AS v, n FROM ev_at WHERE n IS NOT NULL")
    con.execute("CREATE OR REPLACE TEMP TABLE ev_after AS SELECT DISTINCT x AS v, u FROM ev_at WHERE u IS NOT NULL")
    con.execute("DROP TABLE ev_at")  # not held through the answers
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
    # each question's families, with the destination of each (a family without one asks nothing)
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_qf AS
        SELECT * FROM (SELECT qk, v, d4, 4 AS afi, d4 AS d FROM ev_qv UNION ALL SELECT qk, v, d4, 6, d6 FROM ev_qv)
        WHERE d IS NOT NULL""")


def _through(k: int, i: int) -> str:
    """Rule 1's through proxies of partition i's questions, one row per (question, VP): each VP
    whose IPv4 path to the question's IPv4 destination or IPv6 path to its IPv6 one crosses v
    (position 2 on), that path from v on per family (rules.from_source; a family whose path
    does not cross v has none)."""
    return f"""
        SELECT q.qk, any_value(q.v) AS v, c.vp_group AS g, c.vp_asn AS a,
               any_value(c.path[c.i:]) FILTER (WHERE c.afi = 4) AS q4, any_value(c.stability) FILTER (WHERE c.afi = 4) AS s4,
               any_value(c.snapshots) FILTER (WHERE c.afi = 4) AS k4,
               any_value(c.path[c.i:]) FILTER (WHERE c.afi = 6) AS q6, any_value(c.stability) FILTER (WHERE c.afi = 6) AS s6,
               any_value(c.snapshots) FILTER (WHERE c.afi = 6) AS k6
        FROM (SELECT *, path[i] AS x FROM (SELECT *, unnest(range(2, len(path) + 1)) AS i FROM ev_paths
                                           WHERE {R.in_partition("dest_asn", k, i)})) c
        JOIN ev_qf q ON q.v = c.x AND q.afi = c.afi AND q.d = c.dest_asn
        GROUP BY q.qk, c.vp_group, c.vp_asn"""


def _upstream(k: int, i: int) -> str:
    """Rule 1's upstream proxies of the questions still without an answer (ev_need), one row per
    (question, VP): each VP right after v on some path, with or without a path to the
    destination; per family its path from v on where it crosses v, else v in front; a guess
    beside a crossing dropped (rules.from_source)."""
    fam = lambda f: f"""CASE WHEN p{f} IS NULL THEN NULL WHEN list_position(p{f}, v) > 1 THEN 'through'
                             ELSE 'upstream' END"""  # noqa: E731
    built = lambda f: f"""CASE WHEN u{f} IS NULL OR (u{f} = 'upstream' AND u{6 if f == 4 else 4} = 'through') THEN NULL
                               WHEN u{f} = 'through' THEN p{f}[list_position(p{f}, v):] ELSE list_prepend(v, p{f}) END"""  # noqa: E731
    return f"""
        SELECT qk, v, g, a, {built(4)} AS q4, s4, k4, {built(6)} AS q6, s6, k6
        FROM (SELECT *, {fam(4)} AS u4, {fam(6)} AS u6 FROM (
            SELECT q.qk, q.v, q.g, q.a,
                   any_value(p.path) FILTER (WHERE p.afi = 4) AS p4, any_value(p.stability) FILTER (WHERE p.afi = 4) AS s4,
                   any_value(p.snapshots) FILTER (WHERE p.afi = 4) AS k4,
                   any_value(p.path) FILTER (WHERE p.afi = 6) AS p6, any_value(p.stability) FILTER (WHERE p.afi = 6) AS s6,
                   any_value(p.snapshots) FILTER (WHERE p.afi = 6) AS k6
            FROM (SELECT q.qk, q.v, u.g, u.a, f.afi, f.d FROM ev_need q
                  JOIN (SELECT DISTINCT e.v, vp.g, vp.a FROM ev_after e JOIN ev_vps vp ON vp.a = e.u) u ON u.v = q.v
                  JOIN ev_qf f ON f.qk = q.qk) q
            LEFT JOIN (SELECT * FROM ev_paths WHERE {R.in_partition("dest_asn", k, i)}) p
                   ON p.vp_group = q.g AND p.vp_asn = q.a AND p.afi = q.afi AND p.dest_asn = q.d
            GROUP BY q.qk, q.v, q.g, q.a))"""


def _kinds(cands: str, snaps: int, lists: bool) -> str:
    """Per question, rules 2-4 over its proxies (`cands`: _through's or _upstream's rows): the
    most cautious class among those that give one, the share that agrees, and the proxy shown
    (g, a: the most confident of those, then the lowest group and ASN; with no class, the lowest
    group and ASN); n: the proxies; with `lists` (what advise says of one question; null
    otherwise) who: their VP ASes, classes: the classes they give. A
    proxy's confidence is rounded as Python's round(c, 6) (printf's %.6f: exact; DuckDB's round
    takes halves away from zero) so ties break alike."""
    _shared, cls = R.class_sql("q4", "q6", "q.v", "q.d4", "q.d6")
    listed = ("l.who, l.classes FROM pick JOIN (SELECT qk, list(DISTINCT a ORDER BY a) AS who, "
              "list(cls) FILTER (WHERE cls IS NOT NULL) AS classes FROM c0 GROUP BY qk) l USING (qk)" if lists else
              "NULL::BIGINT[] AS who, NULL::VARCHAR[] AS classes FROM pick")
    return f"""
        WITH c0 AS (
            SELECT *, list_position({R.CAUTION_SQL}, cls) AS rank,
                   CASE WHEN cls IS NULL THEN 0.0 ELSE printf('%.6f', least(s4, s6) * least(1.0, least(k4, k6) / {int(snaps)})
                                                         * {rules.PROXY_FACTOR})::DOUBLE END AS conf
            FROM (SELECT cand.*, CASE WHEN q4 IS NOT NULL AND q6 IS NOT NULL THEN {cls} END AS cls
                  FROM ({cands}) cand JOIN ev_qv q USING (qk))),
        s AS (SELECT qk, count(DISTINCT a) AS proxies, count(*) AS n, count(cls) AS known, max(rank) AS top
              FROM c0 GROUP BY ALL),
        c AS (SELECT c0.*, s.proxies, s.n, s.known, s.top, c0.rank IS NOT DISTINCT FROM s.top AND c0.cls IS NOT NULL AS picked
              FROM c0 JOIN s USING (qk)),
        pick AS (
            SELECT qk, proxies, n, known, cls, g, a, q4, q6, CASE WHEN q4 IS NOT NULL THEN s4 END AS s4,
                   CASE WHEN q6 IS NOT NULL THEN s6 END AS s6, least(k4, k6) AS k,
                   count(*) FILTER (WHERE picked) OVER (PARTITION BY qk) / greatest(known, 1) AS agree
            FROM c
            QUALIFY row_number() OVER (PARTITION BY qk ORDER BY picked DESC, conf DESC, g, a) = 1)
        SELECT pick.*, {listed}"""


def _provider(k: int, i: int) -> str:
    """Rule 5 for the stubs' questions of partition i: per family the neighbour whose route to
    the family's destination is the shortest (then the lowest ASN), each neighbour's route the
    one most VP ASes show (then the shortest, the lowest ASNs), neither from v's own paths nor
    crossing v."""
    return f"""
        WITH q AS (SELECT DISTINCT q.qk, q.v, q.d, n.afi, n.n FROM ev_qf q JOIN ev_src s ON s.v = q.v AND s.stub
                   JOIN ev_near n ON n.v = q.v AND n.afi = q.afi WHERE {R.in_partition('q.d4', k, i)}),
        r AS (SELECT q.qk, q.v, q.afi, q.n, r.route, count(*) AS vps, max(r.stab) AS stab,
                     max(r.snaps) AS snaps, list(r.vp) AS who
              FROM q JOIN ev_routes r ON r.afi = q.afi AND r.dest = q.d AND r.n = q.n
              WHERE r.vp <> q.v AND NOT list_contains(r.route, q.v) GROUP BY q.qk, q.v, q.afi, q.n, r.route
              QUALIFY row_number() OVER (PARTITION BY q.qk, q.afi, q.n ORDER BY vps DESC, len(r.route), r.route) = 1)
        SELECT qk, v, afi, n, route, stab, snaps, who FROM r
        QUALIFY row_number() OVER (PARTITION BY qk, afi ORDER BY len(route), n) = 1"""


def ask(con, cfg: Config, snaps: int, parts: int | None = None, progress=None, lists: bool = False) -> None:
    """The one answering engine of rules 1-7: every question of ev_qv (key qk, source v, IPv4
    destination d4, IPv6 destination d6; either may be null) answered into ev_ans, over the
    temp tables R.setup and _per_source made (the paths, pairs, the sources' neighbours).
    `parts`: destination partitions (default: as the memory limit needs; one where a question's
    families go to different destinations, as only advise asks, a handful at a time). `lists`:
    each answer's proxies and the classes they gave (what advise shows of a handful of
    questions; at the evaluation's millions, lists the size of each source's VPs)."""
    split = con.execute("SELECT count(*) FROM ev_qv WHERE d4 IS DISTINCT FROM d6").fetchone()[0]
    k = 1 if split else parts or R.partitions(con, cfg)
    same = "SELECT DISTINCT v, d4 AS d FROM ev_qv WHERE d4 = d6"  # rules 6 and 7 ask about one destination
    R.votes(con, "ev_dest", questions=same, who=lists)
    R.votes(con, "ev_one", behind=True, questions=same, who=lists)
    for i in range(k):  # each partition's questions answered whole: no step joins every question's candidates
        R.routes(con, k, i)
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev_t AS {_kinds(_through(k, i), snaps, lists)}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev_prov AS {_provider(k, i)}")
        # the upstream proxies only where rules 1 (through) and 5-7 give no class: few questions
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev_need AS SELECT q.qk, q.v {_joined(k, i)} AND NOT {_ANSWERED}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE ev_u AS {_kinds(_upstream(k, i), snaps, lists)}")
        con.execute(f"{'CREATE OR REPLACE TEMP TABLE ev_ans AS' if i == 0 else 'INSERT INTO ev_ans'} {_decide(k, i)}")
        if progress:
            progress(i + 1, k)
    for t in ("ev_routes", "ev_t", "ev_u", "ev_need", "ev_prov"):
        con.execute(f"DROP TABLE IF EXISTS {t}")


def answers(cfg: Config, month: str, progress=None, parts: int | None = None) -> pa.Table:
    """One row per pair of the month: today's rules' answer (`ask`) for the pair's VP AS held
    out, with everything selector_eval records but the calibrated confidence. `parts`:
    destination partitions (default: as the memory limit needs)."""
    con = duck.connect(cfg)
    try:
        snaps, _has_rel = R.setup(con, cfg, month, groups=True)
        con.execute("""CREATE OR REPLACE TEMP TABLE ev_qv AS
            SELECT row_number() OVER (ORDER BY v, d) AS qk, v, d AS d4, d AS d6
            FROM (SELECT DISTINCT vp_asn AS v, dest_asn AS d FROM ev_pairs)""")
        _per_source(con, cfg, month)
        ask(con, cfg, snaps, parts, progress)
        t = R.read_closing(con, _assemble(), "answers-none.parquet")
    finally:
        con.close()
    return _rows(t, month, snaps)


def sources_answers(con, cfg: Config, month: str, asked: list[tuple[int, int | None, int | None]],
                    fit=None) -> list[tuple[dict, str | None, list[str]] | None]:
    """Answers by rules 1-7 through `ask` for sources that are no VP (what advise gives such a
    source without evidence, and `evaluate --truth`): per question (source, IPv4 destination
    AS, IPv6 destination AS; both None: no question, None back) its hint, its rule (None:
    nothing stands in) and the notes that say how. `fit`: the calibration the confidence is
    read from (or None)."""
    dests = {d for _s, *ds in asked for d in ds if d is not None}
    snaps, _has_rel = R.setup(con, cfg, month, groups=True, dests=dests)
    keep = [(i, *q) for i, q in enumerate(asked) if (q[1], q[2]) != (None, None)]
    con.execute("""CREATE OR REPLACE TEMP TABLE ev_qv AS
        SELECT unnest($k)::BIGINT AS qk, unnest($v)::BIGINT AS v, unnest($d4)::BIGINT AS d4, unnest($d6)::BIGINT AS d6""",
                {"k": [q[0] for q in keep], "v": [q[1] for q in keep], "d4": [q[2] for q in keep],
                 "d6": [q[3] for q in keep]})
    _per_source(con, cfg, month, table_relation(cfg, "paths", month))  # the sources' neighbours: every path
    ask(con, cfg, snaps, lists=True)
    near: dict = {}  # the sources' neighbours per family, for what an unknown answer says
    for v, afi, n in con.execute("SELECT v, afi, n FROM ev_near ORDER BY v, afi, n").fetchall():
        near.setdefault((v, afi), []).append(n)
    cur = con.execute("SELECT * FROM ev_ans")
    names = [c[0] for c in cur.description]
    rows = {r["qk"]: r for r in (dict(zip(names, row)) for row in cur.fetchall())}
    return [hint_of(rows[i], month, q[0], snaps, fit, {afi: near.get((q[0], afi), []) for afi in (4, 6)})
            if i in rows else None for i, q in enumerate(asked)]


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
            LEFT JOIN ev_t t ON t.qk = q.qk
            LEFT JOIN (SELECT *, list_prepend(v, route) AS route4 FROM ev_prov WHERE afi = 4) r4 ON r4.qk = q.qk
            LEFT JOIN (SELECT *, list_prepend(v, route) AS route6 FROM ev_prov WHERE afi = 6) r6 ON r6.qk = q.qk
            LEFT JOIN ev_one o ON o.v = q.v AND o.d = q.d4 AND o.d = q.d6
            LEFT JOIN ev_dest e ON e.v = q.v AND e.d = q.d4 AND e.d = q.d6 {more}
            WHERE {R.in_partition('q.d4', k, i)}"""


def _decide(k: int, i: int) -> str:
    """The answer to each question of partition i: the first rule in order that gives a class
    (through; for a stub provider, else one-neighbour; for any other source destination;
    upstream), else the first kind of proxy that exists (its answer unknown), else none (a
    stub's family that rule 5 found keeps its path). With what advise says of it: the proxy
    shown (g, a), the proxies (who, n: how many, classes: the classes they give), rule 5's
    neighbours (n4, n6), rule 7's one neighbour, the votes' pairs (votes of total)."""
    _shared, cls = R.class_sql("r4.route4", "r6.route6", "q.v", "q.d4", "q.d6")
    rule = f"""CASE WHEN t.known > 0 THEN 'through'
                   WHEN {_BY_PROVIDER} THEN 'provider' WHEN {_BY_ONE} THEN 'one-neighbour'
                   WHEN {_BY_DESTINATION} THEN 'destination'
                   WHEN u.known > 0 THEN 'upstream'
                   WHEN t.qk IS NOT NULL THEN 'through'
                   WHEN u.qk IS NOT NULL THEN 'upstream' ELSE 'none' END"""
    pick = lambda through, upstream, provider, other="NULL": f"""CASE rule WHEN 'through' THEN {through}
        WHEN 'upstream' THEN {upstream} WHEN 'provider' THEN {provider} ELSE {other} END"""  # noqa: E731
    voted = lambda o, e: f"CASE rule WHEN 'one-neighbour' THEN {o} WHEN 'destination' THEN {e} END"  # noqa: E731
    return f"""
        WITH a AS (
            SELECT q.qk, q.v, q.d4, q.d6, {rule} AS rule, s.stub, s.one,
                   t.cls AS t_cls, t.q4 AS t_q4, t.q6 AS t_q6, t.s4 AS t_s4, t.s6 AS t_s6, t.k AS t_k,
                   t.agree AS t_agree, t.proxies AS t_proxies, t.who AS t_who, t.n AS t_n, t.known AS t_known,
                   t.classes AS t_classes, t.g AS t_g, t.a AS t_a,
                   u.cls AS u_cls, u.q4 AS u_q4, u.q6 AS u_q6, u.s4 AS u_s4, u.s6 AS u_s6, u.k AS u_k,
                   u.agree AS u_agree, u.proxies AS u_proxies, u.who AS u_who, u.n AS u_n, u.known AS u_known,
                   u.classes AS u_classes, u.g AS u_g, u.a AS u_a,
                   r4.route4, r6.route6, r4.n AS n4, r6.n AS n6, r4.stab AS r_s4, r6.stab AS r_s6,
                   least(r4.snaps, r6.snaps) AS r_k, list_sort(list_distinct(list_concat(r4.who, r6.who))) AS r_who,
                   CASE WHEN r4.v IS NOT NULL AND r6.v IS NOT NULL THEN {cls} END AS r_cls,
                   o.cls AS o_cls, o.share AS o_share, o.vps AS o_vps, o.who AS o_who, o.n AS o_n, o.total AS o_total,
                   e.cls AS e_cls, e.share AS e_share, e.vps AS e_vps, e.who AS e_who, e.n AS e_n, e.total AS e_total
            {_joined(k, i, "LEFT JOIN ev_u u ON u.qk = q.qk")})
        SELECT qk, v, d4, d6, rule, stub, one, n4, n6,
               {pick('t_cls', 'u_cls', 'r_cls', voted('o_cls', 'e_cls'))} AS cls,
               {pick('t_q4', 'u_q4', 'route4', "CASE rule WHEN 'none' THEN route4 END")} AS p4,
               {pick('t_q6', 'u_q6', 'route6', "CASE rule WHEN 'none' THEN route6 END")} AS p6,
               {pick('t_s4', 'u_s4', 'r_s4', "CASE rule WHEN 'none' THEN r_s4 END")} AS s4,
               {pick('t_s6', 'u_s6', 'r_s6', "CASE rule WHEN 'none' THEN r_s6 END")} AS s6,
               {pick('t_k', 'u_k', 'r_k')} AS k, {pick('t_agree', 'u_agree', '1.0')} AS agree,
               {voted('o_share', 'e_share')} AS share,
               {pick('t_proxies', 'u_proxies', 'len(r_who)', voted('o_vps', 'e_vps').replace(' END', ' ELSE 0 END'))} AS proxies,
               {pick('t_who', 'u_who', 'r_who', voted('o_who', 'e_who'))} AS who,
               {pick('t_n', 'u_n', 'NULL')} AS n, {pick('t_known', 'u_known', 'NULL')} AS known,
               {pick('t_classes', 'u_classes', 'NULL')} AS classes,
               {pick('t_g', 'u_g', 'NULL')} AS g, {pick('t_a', 'u_a', 'NULL')} AS a,
               {voted('o_n', 'e_n')} AS votes, {voted('o_total', 'e_total')} AS total
        FROM a"""


def _assemble() -> str:
    """Each pair (a VP AS in several collector groups has a row per group) with its VP AS's
    answer, scored against the pair's own paths."""
    return f"""
        SELECT p.vp_group, p.vp_asn, p.dest_asn, p.observed, b.rule, b.cls, b.s4, b.s6, b.k, b.agree, b.share,
               b.proxies, b.p4 = p.v4_path AS e4, b.p6 = p.v6_path AS e6,
               CASE WHEN b.p4 IS NULL THEN NULL ELSE ({edit_distance_sql('b.p4', 'p.v4_path')})::INTEGER END AS h4,
               CASE WHEN b.p6 IS NULL THEN NULL ELSE ({edit_distance_sql('b.p6', 'p.v6_path')})::INTEGER END AS h6
        FROM ev_pairs p JOIN ev_ans b ON b.v = p.vp_asn AND b.d4 = p.dest_asn
        ORDER BY p.vp_asn, p.vp_group, p.dest_asn"""


def _rows(t: pa.Table, month: str, snaps: int) -> pa.Table:
    """selector_eval's columns from the assembled answers, over whole columns (numpy): the
    stated confidence and the advice's mode as selector/rules.hint_fields gives them."""
    import pyarrow.compute as pc  # not at the top: 80 ms of import that advise does not need

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


def _ases(asns) -> str:
    return ", ".join(f"AS{a}" for a in sorted(asns)) or "none"


def _unknown(h: dict, reason: str) -> dict:
    hops = {afi: len(h[f"v{afi}_path"]) - 1 if h[f"v{afi}_path"] else None for afi in (4, 6)}
    h.update(rules.hint_fields("unknown", h["stability_v4"], h["stability_v6"], hops[4], hops[6], None, None))
    h["reason"] = reason
    return h


def hint_of(r: dict, month: str, src: int, snaps: int, fit, near: dict[int, list[int]]) -> tuple[dict, str | None, list[str]]:
    """(the hint, its rule (None: nothing stands in), the notes that say how) of one answer of
    `ask` with `lists` (a row of ev_ans) for the source `src` that is no VP: what advise shows.
    `near`: afi -> the ASes seen right before it."""
    d4, d6, rule, cls = r["d4"], r["d6"], r["rule"], r["cls"]
    h = R.empty_hint(month, src)
    h.update(dest_asn=d4, dest_asn_v6=d6)
    for afi in (4, 6):
        if r[f"p{afi}"] is not None:
            p = [int(x) for x in r[f"p{afi}"]]
            h.update({f"v{afi}_path": p, f"stability_v{afi}": r[f"s{afi}"], f"via_v{afi}": p[1] if len(p) > 1 else None})
    calibrated = calibration.confidence(fit, rule, cls) if cls else None
    hops = [len(h[f"v{afi}_path"]) - 1 if h[f"v{afi}_path"] else None for afi in (4, 6)]
    if rule in ("through", "upstream"):
        h.update(vp_group=r["g"], vp_asn=int(r["a"]), via_proxy=True, proxies=[int(a) for a in r["who"]])
        how = (f"the paths of VP {r['g']}:AS{r['a']}, whose route crosses AS{src}, from AS{src} on" if rule == "through"
               else f"AS{src} in front of the paths of its upstream VP {r['g']}:AS{r['a']}")
        if not r["known"]:
            missing = " and ".join(f"IPv{a}" for a in (4, 6) if not h[f"v{a}_path"])
            dests = f"AS{d4 or d6}" if d4 == d6 or None in (d4, d6) else f"AS{d4}/AS{d6}"
            _unknown(h, f"no {missing} path from VP {r['g']}:AS{r['a']} (proxy for AS{src}) to {dests} in {month}")
            return h, rule, [f"AS{src} is not a vantage point: {how}; none of its {r['n']} proxy VP(s) shows both "
                             "families"]
        h["shared_asns"] = rules.classify(h["v4_path"], h["v6_path"], src, d4, d6)[1]
        h["snapshots"] = r["k"]
        h.update(rules.hint_fields(cls, h["stability_v4"], h["stability_v6"], *hops, r["k"], snaps, proxy=True,
                                   agreement=r["agree"], calibrated=calibrated))
        split = ", ".join(f"{r['classes'].count(c)} {c}" for c in rules.CAUTION if c in r["classes"])
        return h, rule, [f"AS{src} is not a vantage point: {how}; {r['known']} of {r['n']} proxy VP(s) give a class "
                         f"({split}): the most cautious is used, {r['agree']:.0%} agree; lower confidence",
                         *calibration.note(fit, rule, cls)]
    if rule == "provider":
        h.update(via_proxy=True, via_v4=r["n4"], via_v6=r["n6"], proxies=[int(a) for a in r["who"]], snapshots=r["k"])
        h["shared_asns"] = rules.classify(h["v4_path"], h["v6_path"], src, d4, d6)[1]
        h.update(rules.hint_fields(cls, h["stability_v4"], h["stability_v6"], *hops, r["k"], snaps, proxy=True,
                                   calibrated=calibrated))
        return h, rule, [f"AS{src} is not a vantage point and never hands traffic on (a stub): its path is itself in "
                         f"front of the route of its neighbour AS{r['n4']} in IPv4 and AS{r['n6']} in IPv6 (the shortest "
                         "route among the ASes seen right before it, shown by the paths that cross them)",
                         *calibration.note(fit, rule, cls)]
    if rule in ("destination", "one-neighbour"):
        behind = r["one"] if rule == "one-neighbour" else None
        h.update(via_proxy=True, proxies=[int(a) for a in r["who"]],
                 shared_asns=[] if behind is None or cls == "congruent" else [int(behind)])
        h.update(rules.hint_fields(cls, None, None, None, None, None, snaps, proxy=True, agreement=r["share"],
                                   calibrated=calibrated, stated=r["share"]))
        most = f"{r['votes']} of the {r['total']} pairs of the month's VPs to AS{d4} ({r['share']:.0%})"
        how = (f"AS{src} is not a vantage point and no VP's path to AS{d4} shows its route in both families: "
               f"{cls}, the class of {most}; no path is known" if behind is None else
               f"AS{src} is not a vantage point and never hands traffic on (a stub) and AS{behind} is the one AS "
               f"seen right before it in both families: {cls}, the class of {most} seen behind AS{behind} (shared "
               "next to the source); no path is known")
        return h, rule, [how, *calibration.note(fit, rule, cls)]
    # none: say what each rule found (a stub's family that rule 5 found keeps its path)
    h.update(via_v4=r["n4"], via_v6=r["n6"])
    why = [f"through rule: no VP's path to the destination crosses AS{src}"]
    if r["stub"]:
        for afi, d in ((4, d4), (6, d6)):
            if d is None:
                why.append(f"no IPv{afi} destination")
            elif r[f"n{afi}"] is None:
                why.append(f"provider rule: no IPv{afi} path to AS{d} crosses an AS seen right before AS{src} in "
                           f"IPv{afi} ({_ases(near[afi])})")
        if r["one"] is not None:
            why.append(f"one-neighbour rule: no pair to AS{d4} to take the class of AS{r['one']}'s from")
        else:
            why.append("one-neighbour rule: the ASes seen right before it differ between the families "
                       f"(IPv4 {_ases(near[4])}, IPv6 {_ases(near[6])})")
    else:
        why.append(f"destination rule: no pair of the month goes to AS{d4}" if d4 == d6 else
                   "destination rule: the families go to different origins")
    why.append("upstream rule: no VP is seen right after it on the month's paths")
    only = [a for a in (4, 6) if h[f"v{a}_path"]]
    return _unknown(h, f"AS{src} is not a vantage point in {month}; " + "; ".join(why)
                    + (f": only IPv{only[0]} has a path" if only else "")), None, []
