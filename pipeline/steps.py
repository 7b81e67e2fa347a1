"""The compare job (congruency/METHOD.md steps 1-8 and "Across months") as SQL steps that
both engines run: each step is one SELECT over the views of the steps before it, written
twice, side by side, in Spark SQL and in DuckDB SQL, so a reader compares them line for
line. Where the dialects agree the text is shared (`both`).

Why two texts and not one transpiled with sqlglot: sqlglot 30.30 (Spark -> DuckDB) turned
3 of the job's 15 distinct path expressions into valid DuckDB SQL with other results: the
0-based lambda index of Spark's `filter((x, i) -> ...)` kept as is (DuckDB's is 1-based),
`exists(arr, x -> ...)` dropped its lambda, and `percentile` became DuckDB's discrete
`quantile` (Spark's is continuous). Silent wrong rows are worse than a second text that
the tests hold to the same rows (tests/test_engines.py), so the dialects are written out.

The pure-Python twin in congruency/reference.py is the independent check of both.

Phases (congruency/METHOD.md "Partitions"): the month pass (MONTH_COUNTS, over
`month_entries`), then PARTITION_STEPS per VP partition (over `entries`, the partition's
rows), FACTS once over every partition's outputs (the MONTH_OF names), VP_STEPS per
partition again, SUMMARY_STEPS once. An engine running one partition (Spark) runs them in
that order with each MONTH_OF name a view of its step.

Step kinds: `view` (inlined where used), `scratch` (a partition's intermediate that DuckDB
materializes for the steps after it and drops at the partition's end; a view in Spark),
`work` (an intermediate used more than once, materialized), `fact` (small and month-level: materialized by an engine running several
partitions, a view otherwise), `table` (an output table; columns in the order of
common/tables.py). The input views have the columns of REQUIRED (ASNs as int64) and OPTIONAL.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from bgp_congruency.common import routes
from bgp_congruency.common.duck import quote
from bgp_congruency.common.errors import CongruencyError
from bgp_congruency.common.params import MethodParams
from bgp_congruency.common.tables import sql_type
from bgp_congruency.congruency.method import SET_HASH_MOD


def empty_select(schema: pa.Schema, dialect: str) -> str:
    """A SELECT of no rows with the columns of `schema` but month, typed: a published table
    with no rows (the catalog registers no file for it, lake/commit.py)."""
    cols = ", ".join(f"CAST(NULL AS {sql_type(f.type, dialect)}) AS {f.name}" for f in schema if f.name != "month")
    return f"SELECT {cols} FROM range(0)"


#: Columns the job reads from the month's routes (common/routes.py), with the types it needs
#: (Spark's names); `collector` comes from the folder names.
REQUIRED = {
    "collector": "string",
    "peer_asn": "bigint",
    "peer_ip": "string",
    "afi": "tinyint",
    "prefix": "string",
    "as_path": "array<bigint>",
    "has_as_set": "boolean",
    "as_path_raw": "string",
    "seen": "bigint",
    "seen_more": "array<bigint>",
}


#: Columns the job reads where the routes have them, and what stands in where they do not
#: (a month ingested before the column was written): as_path_repeats, true (clean every path).
OPTIONAL = {"as_path_repeats": ("boolean", "true")}


class JobError(CongruencyError):
    """Bad input for the job; one line, names the path or month."""


def check_columns(have: dict[str, str], where: str) -> None:
    """`have`: column -> type in Spark's names (each engine maps its own types to them)."""
    for name, typ in REQUIRED.items():
        if name not in have:
            raise JobError(f"{where}: column {name!r} is missing (not a month's routes?)")
        if have[name] != typ:
            raise JobError(f"{where}: column {name!r} is {have[name]}, expected {typ}")
    for name, (typ, _default) in OPTIONAL.items():
        if name in have and have[name] != typ:
            raise JobError(f"{where}: column {name!r} is {have[name]}, expected {typ}")


def optional_columns(have) -> list[str]:
    """The OPTIONAL columns as SELECT items over a relation with the columns `have`: a
    column, NULL where some collector's routes lack it (a union by name), or its stand-in."""
    return [f"coalesce({name}, {default}) AS {name}" if name in have else f"{default} AS {name}"
            for name, (_typ, default) in OPTIONAL.items()]


#: The input's shape from the month pass (MONTH_COUNTS): entries per AFI.
COUNTS = "SELECT afi, sum(n) AS n FROM month_counts GROUP BY afi"


def counts(rows) -> dict[int, int]:
    """COUNTS' rows -> entries per AFI."""
    return {int(afi): int(n) for afi, n in rows}


@dataclass(frozen=True)
class SnapshotPlan:
    """The month's snapshots as the compare numbers them: its distinct snapshot times over
    every collector, in time order (`times`; a path's `snapshots` counts these), and for
    each collector the position in `times` of each bit of its routes' `seen` (`local`: its
    own snapshots, in time order, common/routes.py). A collector whose bits are already in
    place (the same times as the month, the usual case) needs no remapping."""

    times: tuple
    local: dict

    @classmethod
    def of(cls, inputs: dict) -> SnapshotPlan:
        """From common/routes.month_input: collector -> (files, snapshots)."""
        times = tuple(sorted({sn.time for _f, snaps in inputs.values() for sn in snaps}))
        at = {t: i for i, t in enumerate(times)}
        return cls(times, {c: tuple(at[sn.time] for sn in snaps) for c, (_f, snaps) in sorted(inputs.items())})

    @property
    def count(self) -> int:
        return len(self.times)

    def moved(self) -> dict:
        """collector -> its bits' positions, for collectors whose bits are not in place."""
        return {c: pos for c, pos in self.local.items() if any(i != g for i, g in enumerate(pos))}

    def local_words(self) -> int:
        return max([routes.words(len(pos)) for pos in self.local.values()] or [1])

    def words(self) -> int:
        return max(1, -(-self.count // WORD))


@dataclass(frozen=True)
class SqlStep:
    name: str
    kind: str  # view | work | table
    spark: str
    duckdb: str

    def sql(self, engine: str) -> str:
        return self.spark if engine == "spark" else self.duckdb


def literal(s: str, engine: str) -> str:
    """A string literal in the engine's dialect: Spark reads a backslash as an escape,
    DuckDB does not."""
    if engine == "spark":
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return quote(s)


#: Bits per word of a snapshot mask (per_path), as in the routes' `seen`: a BIGINT, sign bit unused.
WORD = routes.WORD


def _local_words(engine: str, k: int, first: bool) -> list[str]:
    """The routes' own snapshot words, as columns lw0.. (`first`: only each collector's first
    snapshot, its bit 0, on the rows that have it)."""
    if first:
        return ["1 AS lw0"] + [f"0 AS lw{i}" for i in range(1, k)]
    more = "coalesce(try_element_at(seen_more, {i}), 0L)" if engine == "spark" else "coalesce(seen_more[{i}], 0)"
    return ["seen AS lw0"] + [f"{more.format(i=i)} AS lw{i}" for i in range(1, k)]


def _masks(engine: str, plan: SnapshotPlan, k: int) -> list[str]:
    """The month's snapshot masks m0.. (global numbering, SnapshotPlan) of each row from its
    local words: in place, or each bit moved where its collector's bits are not."""
    bit = ("shiftleft(shiftright(lw{w}, {b}) & 1, {s})" if engine == "spark" else "(((lw{w} >> {b}) & 1) << {s})")
    out = []
    for g in range(plan.words()):
        whens = []
        for c, pos in plan.moved().items():
            terms = [bit.format(w=i // WORD, b=i % WORD, s=p % WORD) for i, p in enumerate(pos) if p // WORD == g]
            whens.append(f"WHEN {literal(c, engine)} THEN {' | '.join(terms) if terms else '0'}")
        same = f"lw{g}" if g < k else "0"
        out.append(f"CAST(CASE collector {' '.join(whens)} ELSE {same} END AS BIGINT) AS m{g}" if whens
                   else f"CAST({same} AS BIGINT) AS m{g}")
    return out


def _entries(engine: str, k: int, first: bool) -> str:
    """A row's entries: the bits of its local words (`first`: its first snapshot's, one)."""
    if first:
        return "CAST(1 AS BIGINT)"
    return "CAST(" + " + ".join(f"bit_count(lw{i})" for i in range(k)) + " AS BIGINT)"


def _fill(params: MethodParams, engine: str, plan: SnapshotPlan) -> dict[str, str]:
    reserved = " OR ".join(
        f"x = {lo}" if lo == hi else f"(x BETWEEN {lo} AND {hi})" for lo, hi in params.reserved_asns
    ) or "false"
    group = ("CASE collector " + " ".join(f"WHEN {literal(k, engine)} THEN {literal(v, engine)}"
                                          for k, v in sorted(params.groups.items()))
             + " ELSE collector END") if params.groups else "collector"
    # The snapshot masks of per_path: word k holds the bits of the month's snapshots 63k..63k+62.
    words = range(plan.words())
    k = plan.local_words()
    first = params.snapshots == "first"  # each collector's first snapshot of the month
    mask_cols = ", ".join(f"m{i}" for i in words)
    or_masks = ", ".join(f"bit_or(m{i}) AS m{i}" for i in words)
    count = " + ".join(f"coalesce(CAST(bit_count(bit_or(m{i})) AS BIGINT), 0)" for i in words)
    on = params.first_as_rule
    size = "size" if engine == "spark" else "len"
    order = {"observations": f"path_observations DESC, {size}(path), path",
             "prefixes": f"prefixes DESC, path_observations DESC, {size}(path), path",
             "snapshots": f"snapshots DESC, path_observations DESC, {size}(path), path",
             "lowest": "path"}[params.representative]
    # as_set "hop": a path whose only segments besides plain ASNs are AS_SETs, and which ends in
    # a plain ASN, is kept with each set as one hop: -1 - (a polynomial hash of its sorted
    # members mod 2^61 - 1), the same number in both dialects and in the reference.
    hop = params.as_set == "hop"
    sets_only = "as_path_raw RLIKE '^([0-9]+ |[{{][0-9,]+[}}] )*[0-9]+$'" if engine == "spark" else \
        "regexp_matches(as_path_raw, '^([0-9]+ |[{{][0-9,]+[}}] )*[0-9]+$')"
    sets_only = sets_only.replace("{{", "{").replace("}}", "}")
    parse = {
        "spark": "transform(split(as_path_raw, ' '), t -> CASE WHEN t LIKE '{%' THEN -1 - CAST(aggregate("
                 "array_sort(transform(split(regexp_replace(t, '[{}]', ''), ','), m -> CAST(m AS DECIMAL(38,0)))), "
                 "CAST(0 AS DECIMAL(38,0)), (a, x) -> CAST((a * 1000003 + x) % " + str(SET_HASH_MOD) +
                 " AS DECIMAL(38,0))) AS BIGINT) ELSE CAST(t AS BIGINT) END)",
        "duckdb": "list_transform(string_split(as_path_raw, ' '), lambda t: CASE WHEN t LIKE '{%' THEN (-1 - list_reduce("
                  "list_sort(list_transform(string_split(trim(t, '{}'), ','), lambda m: m::HUGEINT)), "
                  "lambda a, x: (a * 1000003 + x) % " + str(SET_HASH_MOD) + ", 0::HUGEINT))::BIGINT "
                  "ELSE TRY_CAST(t AS BIGINT) END)",
    }[engine]
    eff_path = f"CASE WHEN has_as_set AND coalesce({sets_only}, false) THEN {parse} ELSE as_path END" if hop \
        else "as_path"
    # destination "prefix": a representative path per (VP, AFI, prefix), and a pair per IPv4
    # and IPv6 prefix whose representatives end at the same origin (non-adopters per pair).
    by_prefix = params.destination == "prefix"
    anyq = params.comparison != "representative"
    share = {"any": "0", "share": repr(params.SHARE_CONGRUENT)}.get(params.comparison, "0")
    rep_key = ("prefix" if by_prefix else "dest_asn", "vp_asn", "afi", "vp_group")
    return {"reserved": reserved, "group": group, "thr": repr(float(params.min_coverage)),
            "local_words": ", ".join(_local_words(engine, k, first)), "entries": _entries(engine, k, first),
            "all_entries": _entries(engine, k, False), "all_words": ", ".join(_local_words(engine, k, False)),
            "row_masks": ", ".join(_masks(engine, plan, k)), "first_snapshot": " WHERE (seen & 1) = 1" if first else "",
            "mask_cols": mask_cols, "or_masks": or_masks, "mask_bits": count, "rep_order": order,
            "any_join": (" LEFT JOIN any_equal e ON e.vp_group = p4.vp_group AND e.vp_asn = p4.vp_asn "
                         "AND e.dest_asn = p4.dest_asn") if anyq else "",
            "congruent": {"representative": "p4.path = p6.path", "any": "p4.path = p6.path OR e.dest_asn IS NOT NULL",
                          "share": "e.dest_asn IS NOT NULL"}[params.comparison],
            "share": share,
            "unit_cols": ", prefix" if by_prefix else "",
            "origin_rows": "(SELECT DISTINCT vp_group, vp_asn, afi, dest_asn FROM paths)" if by_prefix else "paths",
            "rep_partition": ", ".join(rep_key),
            # NULL-safe, as the window's PARTITION BY is: no key column is NULL today
            "rep_on": " AND ".join(f"p.{c} IS NOT DISTINCT FROM m.{c}" for c in rep_key),
            "na_key": ", na_v4" if by_prefix else "", "na_key_inner": ", v4_path AS na_v4" if by_prefix else "",
            "na_join": " AND n.na_v4 = b.v4_path" if by_prefix else "",
            "as_path": eff_path,
            # a path parsed from its text (as_set "hop") is not the one as_path_repeats describes
            "repeats": "(as_path_repeats OR has_as_set)" if hop else "as_path_repeats",
            "has_as_set": f"(has_as_set AND NOT coalesce({sets_only}, false))" if hop else "has_as_set",
            "first_as_spark": " OR as_path[0] != vp_asn" if on else "",
            "first_as_duckdb": " OR as_path[1] != vp_asn" if on else ""}


def both(name: str, kind: str, sql: str) -> SqlStep:
    return SqlStep(name, kind, sql, sql)


#: The month pass, the one scan of every route before the partitions (and of five narrow
#: columns): routes and entries per (collector, peer ASN, AFI). The month's shape comes from
#: it (COUNTS) and the partitions' sizes (pipeline/partitions.py); the snapshots are the
#: routes' own (SnapshotPlan).
MONTH_COUNTS = both("month_counts", "work", """
SELECT collector, peer_asn, afi, count(*) AS routes, sum({all_entries}) AS n
FROM (SELECT collector, peer_asn, afi, {all_words} FROM month_entries)
GROUP BY collector, peer_asn, afi""")


# Levenshtein distance over two ASN arrays a (v4) and b (v6): one DP row per element of b,
# folded with aggregate / list_reduce; the inner fold builds the next row left to right.
# Only computed for non-congruent pairs (identical paths are at distance 0). Spark's
# sequence(1, 0) counts down, so the inner fold runs over sequence(0, n) less its first
# element: empty for an empty v4 list, whose distance is then the v6 list's length.
_EDIT_SPARK = """element_at(aggregate(v6_path, sequence(0, size(v4_path)),
      (prev, y) -> aggregate(slice(sequence(0, size(v4_path)), 2, size(v4_path)), array(element_at(prev, 1) + 1),
          (row, i) -> concat(row, array(least(element_at(prev, i + 1) + 1, element_at(row, -1) + 1,
                                              element_at(prev, i) + IF(element_at(v4_path, i) = y, 0, 1)))))), -1)"""
# DuckDB before 2.0 (1.5.x, whose extension wheels DuckLake needs) wants list_reduce's initial
# value of the list's element type: both folds run over one-element lists ([y], [i]) so the
# row (a list) is the element type; the same SQL runs on 1.5 and 2.0 (tests/test_method.py).
def edit_distance_sql(a: str, b: str, engine: str = "duckdb") -> str:
    """Levenshtein distance between two ASN-list expressions, in the engine's SQL (method.edit_distance).

    Two lists with no ASN in common are max(len) apart, without the DP: every aligned pair is
    a substitution, so the cost is len(a) + len(b) - substitutions, least with min(len)
    substitutions (either list empty included). Once the pairs step has cut off a pair's
    common ends, 1,906,305 of the 1,914,571 non-congruent pairs of the generated scale-50
    month share no ASN: the step's distances took 0.52 s against 2.28 s with the DP for
    every pair (DuckDB, 2026-11-30)."""
    sql = _EDIT_SPARK if engine == "spark" else _EDIT_DUCKDB
    if engine == "spark":
        sql = ("CASE WHEN NOT arrays_overlap(v4_path, v6_path) THEN greatest(size(v4_path), size(v6_path)) "
               f"ELSE {sql} END")
    else:
        # list_has_any builds a set per row: at synthetic scale 50, over the pairs' 3.3M trimmed
        # paths, 0.36 s against 0.11 s filtering the one list by the other (2026-12-02)
        # (a NULL second list goes to the DP, NULL, as it did with list_has_any)
        sql = (f"CASE WHEN v6_path IS NOT NULL AND len(list_filter(v4_path, lambda x: list_contains(v6_path, x))) = 0 "
               f"THEN greatest(len(v4_path), len(v6_path)) ELSE {sql} END")
    return sql.replace("v4_path", "__A__").replace("v6_path", "__B__").replace("__A__", a).replace("__B__", b)


_EDIT_DUCKDB = """list_reduce(list_transform(v6_path, lambda y: [y]),
      lambda prev, ys: list_reduce(list_transform(range(1, len(v4_path) + 1), lambda i: [i]),
          lambda row, iw: list_append(row, least(prev[iw[1] + 1] + 1, row[-1] + 1,
                                                 prev[iw[1]] + CASE WHEN v4_path[iw[1]] = ys[1] THEN 0 ELSE 1 END)),
          [prev[1] + 1]),
      range(0, len(v4_path) + 1))[-1]"""

def _first_difference(engine: str, from_end: bool = False) -> str:
    """The 1-based position, from the start (or from the end), of the first AS where v4_path
    and v6_path differ within the shorter of the two: Spark's array_position gives 0 when none
    does, DuckDB's list_position NULL. Read by the edit distance's trim and the divergence."""
    i = "-i" if from_end else "i"
    if engine == "spark":
        return (f"array_position(transform(sequence(1, least(size(v4_path), size(v6_path))), "
                f"i -> element_at(v4_path, {i}) = element_at(v6_path, {i})), false)")
    return (f"list_position(list_transform(range(1, least(len(v4_path), len(v6_path)) + 1), "
            f"lambda i: v4_path[{i}] = v6_path[{i}]), false)")


def _trimmed_pairs(engine: str) -> str:
    """pairs_base with ed_v4 and ed_v6: each pair's paths with their common prefix (`ed_pre`
    ASes) and common suffix (`ed_suf`, bounded so the two do not overlap) cut off, both 0 for a
    congruent pair (distance 0). A pair's edit distance is that of the two remainders
    (Levenshtein's distance does not change, and its DP is quadratic: most pairs share the VP,
    the origin and more). At synthetic scale 30: 5.0 -> 3.2 s for 434,566 non-congruent pairs
    (DuckDB)."""
    size = "size" if engine == "spark" else "len"
    shorter = f"least({size}(v4_path), {size}(v6_path))"

    def common(from_end: bool) -> str:  # the whole shorter path when no AS differs
        return f"coalesce(nullif({_first_difference(engine, from_end)}, 0) - 1, {shorter})"

    def cut(p: str) -> str:
        return (f"slice({p}, ed_pre + 1, size({p}) - ed_pre - ed_suf)" if engine == "spark"
                else f"{p}[ed_pre + 1:len({p}) - ed_suf]")
    return f"""
SELECT *, {cut("v4_path")} AS ed_v4, {cut("v6_path")} AS ed_v6
FROM (SELECT *, CASE WHEN congruent THEN 0 ELSE least({shorter} - ed_pre, {common(True)}) END AS ed_suf
      FROM (SELECT *, CASE WHEN congruent THEN 0 ELSE {common(False)} END AS ed_pre FROM pairs_base))"""


#: Spark's join of a pair's two sides as a hash join on the shuffled rows: its default, a
#: sort-merge join, sorts both sides first. At synthetic scale 50 (2026-12-01, the same rows),
#: each query alone over the compare's staged inputs, twice: pairs_base (VPs joined first)
#: 8.8-10.8 s against 15.7-22.8 s, pairs 6.8-7.9 s against 12.3-16.7 s; in the whole job,
#: with the views they pay for, pairs_base 18.0-21.0 s before either change and 12.7-14.3 s
#: after both (bench/steps.py). The hinted side is held in memory a shuffle partition at a
#: time, where a sort-merge join would spill: the IPv6 paths of the default-free VPs, the
#: pairs' non-adopters. Tested up to synthetic scale 250 (6.2M pairs, one 4g driver, the
#: tables the DuckDB engine's); a month far larger on few shuffle partitions may need more
#: of them (spark.sql.shuffle.partitions, docs/operations.md). DuckDB hash-joins already.
SHUFFLE_HASH = "/*+ SHUFFLE_HASH({side}) */"


def _pairs_from(engine: str) -> str:
    """pairs_base's joins: each VP's IPv4 paths with its IPv6 paths to the same destination,
    for default-free VPs. The VPs are joined first, to either side, so that only their paths
    meet in the join of the two families: Spark joins in the order written, and at synthetic
    scale 50 (101 of 203 VPs default-free) the query alone over the staged paths took
    14.1-15.8 s against 19.0-26.7 s joining the families first (2026-12-01, the same rows)."""
    semi = "LEFT SEMI JOIN" if engine == "spark" else "SEMI JOIN"
    vps = "(SELECT vp_group, vp_asn FROM vp_base WHERE default_free)"
    return f"""
      FROM paths p4
      JOIN {vps} d
        ON d.vp_group = p4.vp_group AND d.vp_asn = p4.vp_asn
      JOIN (SELECT p.* FROM paths p {semi} {vps} d6
              ON d6.vp_group = p.vp_group AND d6.vp_asn = p.vp_asn WHERE p.afi = 6) p6
        ON p4.vp_group = p6.vp_group AND p4.vp_asn = p6.vp_asn AND p4.dest_asn = p6.dest_asn
{{any_join}}
      WHERE p4.afi = 4 AND p4.dest_asn != p4.vp_asn)"""


#: Per partition of the month (a set of VPs), over `entries`, the partition's rows: the cleaning
#: and the per-path aggregate, the only steps that read every entry. An engine running K
#: partitions keeps each partition's by_session and per_path apart; the month-level steps read
#: all of them as month_by_session and month_per_path (MONTH_OF).
PARTITION_STEPS: tuple[SqlStep, ...] = (
    # The observations: one row per route (common/routes.py: a VP's session, prefix and path
    # as announced, with the snapshots that saw it) with the entries it stands for (n) and the
    # month's snapshot bits (m0, m1...: one 63-bit word per 63 snapshots). Every rule of steps
    # 1-2 depends only on these columns, so the cleaning runs once per route, not once per
    # entry (bench/RESULTS.md "Compare job by step"). A view on both engines: only `rows`
    # reads it. Materialized by DuckDB until 2026-11-30, it held the partition's routes in
    # memory until the partition's end: the engine steps at synthetic scale 50 took 46.0 and
    # 46.2 s with it, 39.2 and 39.5 s without (bench/steps.py, runs interleaved).
    both("observed", "view", """
SELECT {group} AS vp_group, peer_asn AS vp_asn, peer_ip, afi, prefix, {as_path} AS as_path,
       {has_as_set} AS has_as_set, {repeats} AS repeats, {entries} AS n, {row_masks}
FROM (SELECT *, {local_words} FROM entries{first_snapshot}) e"""),
    # 1-2. Cleaning: each row gets the first reason that applies; kept rows get the
    # prepending-free path (computed once, then tested). A loop is an ASN whose first
    # position is not its own (cheaper than a distinct set per row on both engines:
    # measured 3.5 vs 4.7 s in Spark, ~2.5 vs ~18 s in DuckDB, at scale 10). Only a path
    # holding an ASN twice (`repeats`, ingest's as_path_repeats) can hold prepending or a
    # loop, so only those are cleaned and checked (14% of the routes of the scale-50 month
    # with churn; the step took 5.8 s against 9.0 s cleaning every path, 2026-11-30). DuckDB
    # materializes it (two passes read it), Spark inlines it.
    SqlStep("rows", "scratch",
         spark="""
SELECT vp_group, vp_asn, peer_ip, afi, prefix, n, {mask_cols}, path, CASE
    WHEN prefix IN ('0.0.0.0/0', '::/0') THEN 'default_route'
    WHEN has_as_set THEN 'as_set'
    WHEN as_path IS NULL OR size(as_path) = 0{first_as_spark} THEN 'first_as_not_peer'
    WHEN exists(as_path, x -> {reserved}) THEN 'reserved_asn'
    WHEN repeats AND size(filter(path, (x, i) -> array_position(path, x) != i + 1)) > 0 THEN 'loop'
  END AS reason
FROM (SELECT *, CASE WHEN repeats THEN filter(as_path, (x, i) -> i = 0 OR x != element_at(as_path, i))
                     ELSE as_path END AS path FROM observed)""",
         duckdb="""
SELECT vp_group, vp_asn, peer_ip, afi, prefix, n, {mask_cols}, path, CASE
    WHEN prefix IN ('0.0.0.0/0', '::/0') THEN 'default_route'
    WHEN has_as_set THEN 'as_set'
    WHEN as_path IS NULL OR len(as_path) = 0{first_as_duckdb} THEN 'first_as_not_peer'
    WHEN list_bool_or(list_transform(as_path, lambda x: {reserved})) THEN 'reserved_asn'
    WHEN repeats AND list_bool_or(list_transform(path, lambda x, i: list_position(path, x) != i)) THEN 'loop'
  END AS reason
FROM (SELECT *, CASE WHEN repeats THEN list_filter(as_path, lambda x, i: i = 1 OR x != as_path[i - 1])
                     ELSE as_path END AS path FROM observed)"""),
    # Pass (1): per (VP, AFI, session, reason); cleaning stats and sessions.
    both("by_session", "work", """
SELECT vp_group, vp_asn, afi, peer_ip, reason, CAST(sum(n) AS BIGINT) AS entries
FROM rows GROUP BY vp_group, vp_asn, afi, peer_ip, reason"""),
    # Pass (2): per (VP, AFI, cleaned path): observations, distinct prefixes and snapshots,
    # in two plain aggregations and no DISTINCT. First per (VP, AFI, path, prefix), OR-ing the
    # rows' snapshot masks; then per path: prefixes are the rows, snapshots the bits set in
    # the OR of the masks. At scale 10, with a no-op sink: Spark 15.9 s against 26.4 s for
    # two dense_rank windows (39.9 s for collect_set, 107-121 s for count(DISTINCT)),
    # shuffling once for both aggregations; DuckDB 3.8 s against 7.1 s for two
    # count(DISTINCT), each of which hashes every row's keys once more.
    # Spark also ranks the paths here for `paths` (step 4): its one shuffle is by the
    # representative's key (VP, AFI, destination), which both aggregations' keys contain, so
    # the window needs no shuffle of its own, only a sort. Ranked in `paths`, per_path was
    # read back and shuffled once more: at synthetic scale 50 per_path and paths took 38.4 +
    # 33.2 s, here 52.1 + 9.0 s (bench/steps.py --engine spark, the same data, 2026-12-02),
    # and 53.6 + 0 s with the rows written split into `paths` and the rest (SPARK_SPLIT), so
    # Spark's per_path has the columns of `paths`. The price: a variant of the representative
    # cleans again on Spark (pipeline/sensitivity.py).
    SqlStep("per_path", "work",
         spark="""
SELECT vp_group, vp_asn, dest_asn, afi, path, observations, path_observations,
       path_observations / observations AS stability, prefixes, snapshots, rank = 1 AS representative
FROM (SELECT *, sum(path_observations) OVER w AS observations,
             row_number() OVER (PARTITION BY {rep_partition} ORDER BY {rep_order}) AS rank
      FROM (SELECT vp_group, vp_asn, afi, path{unit_cols}, sum(n) AS path_observations, count(*) AS prefixes,
                   {mask_bits} AS snapshots, dest_asn
            FROM (SELECT vp_group, vp_asn, afi, dest_asn, path, prefix, sum(n) AS n, {or_masks}
                  FROM (SELECT *, element_at(path, -1) AS dest_asn FROM rows WHERE reason IS NULL
                        DISTRIBUTE BY {rep_partition})
                  GROUP BY vp_group, vp_asn, afi, dest_asn, path, prefix)
            GROUP BY vp_group, vp_asn, afi, dest_asn, path{unit_cols})
      WINDOW w AS (PARTITION BY {rep_partition}))""",
         duckdb="""
SELECT vp_group, vp_asn, afi, path{unit_cols}, sum(n)::BIGINT AS path_observations, count(*) AS prefixes,
       {mask_bits} AS snapshots, path[-1] AS dest_asn
FROM (SELECT vp_group, vp_asn, afi, path, prefix, sum(n) AS n, {or_masks}
      FROM rows WHERE reason IS NULL
      GROUP BY vp_group, vp_asn, afi, path, prefix)
GROUP BY vp_group, vp_asn, afi, path{unit_cols}"""),
)

#: The month-level facts, from every partition's by_session and per_path (small: one row per
#: (AFI, reason), per ASN or one row): kind "fact" is materialized once by an engine running
#: partitions, read in place by one that does not.
FACTS: tuple[SqlStep, ...] = (
    SqlStep("cleaning_stats", "table",
         spark="""
SELECT afi, coalesce(reason, 'kept') AS reason, sum(entries) AS entries
FROM month_by_session GROUP BY afi, coalesce(reason, 'kept')""",
         duckdb="""
SELECT afi, coalesce(reason, 'kept') AS reason, sum(entries)::BIGINT AS entries
FROM month_by_session GROUP BY afi, coalesce(reason, 'kept')"""),
    # 5. Coverage: distinct origins per AFI over the whole month (one row).
    both("totals", "fact", """
SELECT count(DISTINCT CASE WHEN afi = 4 THEN dest_asn END) AS t4,
       count(DISTINCT CASE WHEN afi = 6 THEN dest_asn END) AS t6
FROM month_per_path"""),
    # 8. Transit VPs: ASNs seen as an intermediate AS of any cleaned path.
    SqlStep("transit", "fact",
         spark="""
SELECT DISTINCT vp_asn FROM (SELECT explode(slice(path, 2, greatest(size(path) - 2, 0))) AS vp_asn FROM month_per_path)""",
         duckdb="""
SELECT DISTINCT vp_asn FROM (SELECT unnest(path[2:len(path) - 1]) AS vp_asn FROM month_per_path)"""),
    # Non-adopters: inner ASes of the IPv4 path on no cleaned IPv6 path of the month.
    SqlStep("v6_asns", "fact",
         spark="SELECT DISTINCT x FROM (SELECT explode(path) AS x FROM month_per_path WHERE afi = 6)",
         duckdb="SELECT DISTINCT x FROM (SELECT unnest(path) AS x FROM month_per_path WHERE afi = 6)"),
    # 6. Dual-stacked destinations: origins with a cleaned path in both families (month_summary).
    both("destinations", "fact", """
SELECT count(*) AS destinations FROM (
  SELECT dest_asn FROM month_per_path GROUP BY dest_asn HAVING count(DISTINCT afi) = 2) d"""),
)

#: Per partition again, with the facts: everything the method does per VP. Output tables are
#: written a partition at a time; vps and pair_counts are also read by month_summary as
#: month_vps and month_pair_counts.
VP_STEPS: tuple[SqlStep, ...] = (
    # 4. The representative path: most observations, then fewer ASes, then the smallest
    # sequence. Nearly every (VP, AFI, destination) has one path (all but 9,550 of 14.4M at
    # synthetic scale 50).
    # - DuckDB takes those as their own representative and sends only the keys with more than
    #   one (`multi`, a hash aggregate) through the window: the SELECT alone on that month's
    #   per_path took 2.6-2.8 s against 3.1-6.4 s for one window over every row (three runs
    #   each, 2026-11-30; the window's time varies with what else DuckDB holds in memory).
    # - Spark keeps one window over every row, computed with per_path (its `representative`):
    #   DuckDB's way (`multi`) took Spark's `paths` from 27.5 to 49.2 s (bench/steps.py
    #   --engine spark, run each way on the same data, 2026-11-30; its plan read per_path
    #   twice and shuffled it for the aggregate and the joins).
    # A window, not an aggregate: DuckDB's arg_min over a struct key was ~3x slower, Spark's
    # min_by over a struct holding the path array forces a sort-based aggregate. dest_asn
    # leads the partition key: Spark sorts on a prefix of the first key, a bigint tells rows
    # apart where vp_group ('route-views...') does not.
    SqlStep("paths", "table",
         spark="""
SELECT vp_group, vp_asn, dest_asn, afi, path, observations, path_observations, stability, prefixes, snapshots
FROM per_path WHERE representative""",
         duckdb="""
WITH multi AS MATERIALIZED (SELECT {rep_partition} FROM per_path GROUP BY {rep_partition} HAVING count(*) > 1)
SELECT vp_group, vp_asn, dest_asn, afi, path, observations, path_observations,
       path_observations / observations AS stability, prefixes, snapshots
FROM (SELECT p.*, p.path_observations::BIGINT AS observations, 1 AS rank FROM per_path p ANTI JOIN multi m ON {rep_on}
      UNION ALL
      SELECT *, sum(path_observations) OVER w::BIGINT AS observations,
             row_number() OVER (w ORDER BY {rep_order}) AS rank
      FROM (SELECT p.* FROM per_path p SEMI JOIN multi m ON {rep_on}) WINDOW w AS (PARTITION BY {rep_partition}))
WHERE rank = 1"""),
    # 3. Sessions: distinct peer IPs of the kept rows per VP and AFI, ascending.
    SqlStep("sessions", "view",
         spark="""
SELECT vp_group, vp_asn,
       array_sort(collect_set(CASE WHEN afi = 4 THEN peer_ip END)) AS sessions_v4,
       array_sort(collect_set(CASE WHEN afi = 6 THEN peer_ip END)) AS sessions_v6
FROM by_session WHERE reason IS NULL GROUP BY vp_group, vp_asn""",
         duckdb="""
SELECT vp_group, vp_asn,
       coalesce(list_sort(list(DISTINCT peer_ip) FILTER (WHERE afi = 4)), []) AS sessions_v4,
       coalesce(list_sort(list(DISTINCT peer_ip) FILTER (WHERE afi = 6)), []) AS sessions_v6
FROM by_session WHERE reason IS NULL GROUP BY vp_group, vp_asn"""),
    # Distinct origins per VP and family: under destination "origin" a VP's paths are one per
    # (destination, family) already, so its rows are counted. At synthetic scale 50 the
    # query alone over the staged paths took Spark 6.4-8.4 s with a count(DISTINCT) of each
    # family, 0.9-1.1 s counting (two distinct aggregates make Spark copy every row once per
    # aggregate); the whole vp_base step 9.3-11.2 s before, 4.9-5.2 s after (2026-12-01).
    both("origins", "view", """
SELECT vp_group, vp_asn, count(CASE WHEN afi = 4 THEN 1 END) AS origins_v4,
       count(CASE WHEN afi = 6 THEN 1 END) AS origins_v6
FROM {origin_rows} GROUP BY vp_group, vp_asn"""),
    # 5. Dual-stacked and default-free VPs.
    both("vp_base", "work", """
SELECT vp_group, vp_asn, sessions_v4, sessions_v6, origins_v4, origins_v6, coverage_v4, coverage_v6,
       dual_stacked,
       dual_stacked AND coalesce(coverage_v4 >= {thr}, false) AND coalesce(coverage_v6 >= {thr}, false)
         AS default_free,
       vp_class
FROM (SELECT s.vp_group, s.vp_asn, sessions_v4, sessions_v6, origins_v4, origins_v6,
             CASE WHEN t4 = 0 THEN NULL ELSE CAST(origins_v4 AS DOUBLE) / t4 END AS coverage_v4,
             CASE WHEN t6 = 0 THEN NULL ELSE CAST(origins_v6 AS DOUBLE) / t6 END AS coverage_v6,
             origins_v4 > 0 AND origins_v6 > 0 AS dual_stacked,
             CASE WHEN tr.vp_asn IS NULL THEN 'edge' ELSE 'transit' END AS vp_class
      FROM sessions s JOIN origins o ON s.vp_group = o.vp_group AND s.vp_asn = o.vp_asn
      CROSS JOIN totals
      LEFT JOIN transit tr ON tr.vp_asn = s.vp_asn)"""),
    # 7, comparison "any" / "share" (sensitivity variants): the (VP, destination)s where at
    # least one, or at least MethodParams.SHARE_CONGRUENT of the n4 x n6, (IPv4 path, IPv6 path)
    # combinations of their cleaned paths are equal; read by pairs_base only under them.
    both("any_equal", "view", """
SELECT e.vp_group, e.vp_asn, e.dest_asn
FROM (SELECT a.vp_group, a.vp_asn, a.dest_asn, count(*) AS c
      FROM per_path a JOIN per_path b ON b.afi = 6 AND a.vp_group = b.vp_group AND a.vp_asn = b.vp_asn
                                      AND a.dest_asn = b.dest_asn AND a.path = b.path
      WHERE a.afi = 4 GROUP BY a.vp_group, a.vp_asn, a.dest_asn) e
JOIN (SELECT vp_group, vp_asn, dest_asn, count(CASE WHEN afi = 4 THEN 1 END) AS n4,
             count(CASE WHEN afi = 6 THEN 1 END) AS n6
      FROM per_path GROUP BY vp_group, vp_asn, dest_asn) n
  ON n.vp_group = e.vp_group AND n.vp_asn = e.vp_asn AND n.dest_asn = e.dest_asn
WHERE CAST(e.c AS DOUBLE) >= {share} * n.n4 * n.n6"""),
    # 7. Pairs: default-free VP x destination with a representative path in both AFIs. The
    # shared ASes are the IPv4 path's ASes that the IPv6 path holds: a cleaned path holds no
    # AS twice (the loop rule; ingest's as_path_repeats where the rule is not run), so these
    # are the intersection's, which builds a set per row. At synthetic scale 50, over the
    # 3.3M pairs, the expression alone took DuckDB 0.43 s against 1.80 s for list_intersect,
    # and Spark's pairs_base query 8.5-9.3 s against 9.2-11.3 s with array_intersect and
    # array_except (5.2-8.3 s without the column), the same lists (2026-12-02).
    SqlStep("pairs_base", "work",
         spark=f"""
SELECT *, CASE WHEN size(shared_asns) = 0 THEN NULL ELSE forall(shared_asns, a ->
            (a = try_element_at(v4_path, 2) OR a = try_element_at(v4_path, -2)) AND
            (a = try_element_at(v6_path, 2) OR a = try_element_at(v6_path, -2))) END AS shared_adjacent
FROM (SELECT {SHUFFLE_HASH.format(side="p6")} p4.vp_group, p4.vp_asn, p4.dest_asn, p4.path AS v4_path, p6.path AS v6_path,
             ({{congruent}}) AS congruent,
             size(p4.path) - 1 AS hops_v4, size(p6.path) - 1 AS hops_v6,
             array_sort(filter(p4.path, x -> x != p4.vp_asn AND x != p4.dest_asn AND array_contains(p6.path, x)))
               AS shared_asns
{_pairs_from("spark")}""",
         duckdb=f"""
SELECT *, CASE WHEN len(shared_asns) = 0 THEN NULL ELSE list_bool_and(list_transform(shared_asns, lambda a:
            (a = v4_path[2] OR a = v4_path[-2]) AND
            (a = v6_path[2] OR a = v6_path[-2]))) END AS shared_adjacent
FROM (SELECT p4.vp_group, p4.vp_asn, p4.dest_asn, p4.path AS v4_path, p6.path AS v6_path,
             ({{congruent}}) AS congruent,
             (len(p4.path) - 1)::INTEGER AS hops_v4, (len(p6.path) - 1)::INTEGER AS hops_v6,
             list_sort(list_filter(p4.path, lambda x: x != p4.vp_asn AND x != p4.dest_asn AND list_contains(p6.path, x)))
               AS shared_asns
{_pairs_from("duckdb")}"""),
    SqlStep("non_adopt", "view",
         spark="""
SELECT vp_group, vp_asn, dest_asn{na_key}, array_sort(collect_set(x)) AS non_adopters
FROM (SELECT vp_group, vp_asn, dest_asn{na_key_inner}, explode(slice(v4_path, 2, greatest(size(v4_path) - 2, 0))) AS x
      FROM pairs_base) i
LEFT ANTI JOIN v6_asns v ON i.x = v.x
GROUP BY vp_group, vp_asn, dest_asn{na_key}""",
         duckdb="""
SELECT vp_group, vp_asn, dest_asn{na_key}, list_sort(list(DISTINCT x)) AS non_adopters
FROM (SELECT vp_group, vp_asn, dest_asn{na_key_inner}, unnest(v4_path[2:len(v4_path) - 1]) AS x FROM pairs_base) i
ANTI JOIN v6_asns v ON i.x = v.x
GROUP BY vp_group, vp_asn, dest_asn{na_key}"""),
    SqlStep("pairs", "table",
         spark=f"""
SELECT {SHUFFLE_HASH.format(side="n")} b.vp_group, b.vp_asn, b.dest_asn, b.v4_path, v6_path, congruent, hops_v4, hops_v6, shared_asns,
       shared_adjacent, coalesce(non_adopters, CAST(array() AS array<bigint>)) AS non_adopters,
       CASE WHEN congruent THEN 0 ELSE {edit_distance_sql("ed_v4", "ed_v6", "spark")} END AS edit_distance
FROM ({_trimmed_pairs("spark")}) b LEFT JOIN non_adopt n
  ON n.vp_group = b.vp_group AND n.vp_asn = b.vp_asn AND n.dest_asn = b.dest_asn{{na_join}}""",
         duckdb=f"""
SELECT b.vp_group, b.vp_asn, b.dest_asn, b.v4_path, v6_path, congruent, hops_v4, hops_v6, shared_asns,
       shared_adjacent, coalesce(non_adopters, []::BIGINT[]) AS non_adopters,
       CASE WHEN congruent THEN 0 ELSE ({edit_distance_sql("ed_v4", "ed_v6")})::INTEGER END AS edit_distance
FROM ({_trimmed_pairs("duckdb")}) b LEFT JOIN non_adopt n
  ON n.vp_group = b.vp_group AND n.vp_asn = b.vp_asn AND n.dest_asn = b.dest_asn{{na_join}}"""),
    # 7b. Divergence of each non-congruent pair. Both paths start at the VP and end at the
    # destination, without loops, so neither is a prefix of the other: the first differing
    # position lies within the shorter one (array_position / list_position finds it).
    SqlStep("divergence", "table",
         spark=f"""
SELECT vp_group, vp_asn, dest_asn, pre AS common_prefix, suf AS common_suffix,
       element_at(v4_path, pre) AS part_asn, element_at(v4_path, size(v4_path) - suf + 1) AS rejoin_asn,
       array_sort(filter(v4_path, x -> NOT array_contains(v6_path, x))) AS only_v4,
       array_sort(filter(v6_path, x -> NOT array_contains(v4_path, x))) AS only_v6
FROM (SELECT *,
        CAST({_first_difference("spark")} AS INT) - 1 AS pre,
        CAST({_first_difference("spark", from_end=True)} AS INT) - 1 AS suf
      FROM pairs WHERE NOT congruent)""",
         duckdb=f"""
SELECT vp_group, vp_asn, dest_asn, pre AS common_prefix, suf AS common_suffix,
       v4_path[pre] AS part_asn, v4_path[len(v4_path) - suf + 1] AS rejoin_asn,
       list_sort(list_filter(v4_path, lambda x: NOT list_contains(v6_path, x))) AS only_v4,
       list_sort(list_filter(v6_path, lambda x: NOT list_contains(v4_path, x))) AS only_v6
FROM (SELECT *,
        ({_first_difference("duckdb")} - 1)::INTEGER AS pre,
        ({_first_difference("duckdb", from_end=True)} - 1)::INTEGER AS suf
      FROM pairs WHERE NOT congruent)"""),
    both("vps", "table", """
SELECT v.vp_group, v.vp_asn, sessions_v4, sessions_v6, origins_v4, origins_v6, coverage_v4, coverage_v6,
       dual_stacked, default_free, vp_class, coalesce(pairs, 0) AS pairs,
       coalesce(noncongruent_pairs, 0) AS noncongruent_pairs,
       CASE WHEN pairs > 0 THEN CAST(noncongruent_pairs AS DOUBLE) / pairs END AS noncongruent_fraction
FROM vp_base v LEFT JOIN (
    SELECT vp_group, vp_asn, count(*) AS pairs, count(CASE WHEN NOT congruent THEN 1 END) AS noncongruent_pairs
    FROM pairs GROUP BY vp_group, vp_asn) p
  ON p.vp_group = v.vp_group AND p.vp_asn = v.vp_asn"""),
    # The pair counts of month_summary, one row per partition (summed there).
    SqlStep("pair_counts", "view",
         spark="""
SELECT count(*) AS pairs, count_if(NOT congruent) AS noncongruent_pairs,
                   count_if(congruent AND hops_v4 = 1) AS congruent_1hop,
                   count_if(congruent AND hops_v4 = 2) AS congruent_2hop,
                   count_if(congruent AND hops_v4 >= 3) AS congruent_3plus_hops,
                   count_if(NOT congruent AND size(shared_asns) = 0) AS noncongruent_shared_0,
                   count_if(NOT congruent AND size(shared_asns) = 1) AS noncongruent_shared_1,
                   count_if(NOT congruent AND size(shared_asns) >= 2) AS noncongruent_shared_2plus,
                   count_if(NOT congruent AND size(shared_asns) >= 1) AS noncongruent_with_shared,
                   count_if(NOT congruent AND shared_adjacent) AS shared_all_adjacent,
                   count_if(NOT congruent AND size(non_adopters) > 0) AS noncongruent_with_non_adopter
            FROM pairs""",
         duckdb="""
SELECT count(*) AS pairs, count(*) FILTER (WHERE NOT congruent) AS noncongruent_pairs,
                   count(*) FILTER (WHERE congruent AND hops_v4 = 1) AS congruent_1hop,
                   count(*) FILTER (WHERE congruent AND hops_v4 = 2) AS congruent_2hop,
                   count(*) FILTER (WHERE congruent AND hops_v4 >= 3) AS congruent_3plus_hops,
                   count(*) FILTER (WHERE NOT congruent AND len(shared_asns) = 0) AS noncongruent_shared_0,
                   count(*) FILTER (WHERE NOT congruent AND len(shared_asns) = 1) AS noncongruent_shared_1,
                   count(*) FILTER (WHERE NOT congruent AND len(shared_asns) >= 2) AS noncongruent_shared_2plus,
                   count(*) FILTER (WHERE NOT congruent AND len(shared_asns) >= 1) AS noncongruent_with_shared,
                   count(*) FILTER (WHERE NOT congruent AND shared_adjacent) AS shared_all_adjacent,
                   count(*) FILTER (WHERE NOT congruent AND len(non_adopters) > 0) AS noncongruent_with_non_adopter
            FROM pairs"""),
)

#: Once, from every partition's vps and pair_counts and the facts.
SUMMARY_STEPS: tuple[SqlStep, ...] = (
    # The month in one row: the VP figures over every partition's vps, the pair counts summed
    # over their pair_counts. Quartiles by linear interpolation: Spark's percentile is
    # DuckDB's quantile_cont.
    SqlStep("month_summary", "table",
         spark="""
SELECT vps, vps_dual_stacked, vps_default_free, vps_with_pairs, destinations, pairs, noncongruent_pairs,
       CASE WHEN pairs > 0 THEN noncongruent_pairs / pairs END AS noncongruent_fraction,
       congruent_1hop, congruent_2hop, congruent_3plus_hops,
       noncongruent_shared_0, noncongruent_shared_1, noncongruent_shared_2plus,
       noncongruent_with_shared, shared_all_adjacent,
       CASE WHEN noncongruent_with_shared > 0 THEN shared_all_adjacent / noncongruent_with_shared END
         AS shared_all_adjacent_fraction,
       noncongruent_with_non_adopter,
       CASE WHEN noncongruent_pairs > 0 THEN noncongruent_with_non_adopter / noncongruent_pairs END
         AS non_adopter_fraction,
       vp_noncongruent_min, q[0] AS vp_noncongruent_q1, q[1] AS vp_noncongruent_median,
       q[2] AS vp_noncongruent_q3, vp_noncongruent_max
FROM (SELECT count(*) AS vps, count_if(dual_stacked) AS vps_dual_stacked,
             count_if(default_free) AS vps_default_free, count_if(pairs > 0) AS vps_with_pairs,
             min(noncongruent_fraction) AS vp_noncongruent_min,
             percentile(noncongruent_fraction, array(0.25, 0.5, 0.75)) AS q,
             max(noncongruent_fraction) AS vp_noncongruent_max
      FROM month_vps)
CROSS JOIN (SELECT sum(pairs) AS pairs,
                   sum(noncongruent_pairs) AS noncongruent_pairs,
                   sum(congruent_1hop) AS congruent_1hop,
                   sum(congruent_2hop) AS congruent_2hop,
                   sum(congruent_3plus_hops) AS congruent_3plus_hops,
                   sum(noncongruent_shared_0) AS noncongruent_shared_0,
                   sum(noncongruent_shared_1) AS noncongruent_shared_1,
                   sum(noncongruent_shared_2plus) AS noncongruent_shared_2plus,
                   sum(noncongruent_with_shared) AS noncongruent_with_shared,
                   sum(shared_all_adjacent) AS shared_all_adjacent,
                   sum(noncongruent_with_non_adopter) AS noncongruent_with_non_adopter
            FROM month_pair_counts)
CROSS JOIN destinations""",
         duckdb="""
SELECT vps, vps_dual_stacked, vps_default_free, vps_with_pairs, destinations, pairs, noncongruent_pairs,
       CASE WHEN pairs > 0 THEN noncongruent_pairs / pairs END AS noncongruent_fraction,
       congruent_1hop, congruent_2hop, congruent_3plus_hops,
       noncongruent_shared_0, noncongruent_shared_1, noncongruent_shared_2plus,
       noncongruent_with_shared, shared_all_adjacent,
       CASE WHEN noncongruent_with_shared > 0 THEN shared_all_adjacent / noncongruent_with_shared END
         AS shared_all_adjacent_fraction,
       noncongruent_with_non_adopter,
       CASE WHEN noncongruent_pairs > 0 THEN noncongruent_with_non_adopter / noncongruent_pairs END
         AS non_adopter_fraction,
       vp_noncongruent_min, q[1] AS vp_noncongruent_q1, q[2] AS vp_noncongruent_median,
       q[3] AS vp_noncongruent_q3, vp_noncongruent_max
FROM (SELECT count(*) AS vps, count(*) FILTER (WHERE dual_stacked) AS vps_dual_stacked,
             count(*) FILTER (WHERE default_free) AS vps_default_free, count(*) FILTER (WHERE pairs > 0) AS vps_with_pairs,
             min(noncongruent_fraction) AS vp_noncongruent_min,
             quantile_cont(noncongruent_fraction, [0.25, 0.5, 0.75]) AS q,
             max(noncongruent_fraction) AS vp_noncongruent_max
      FROM month_vps)
CROSS JOIN (SELECT sum(pairs)::BIGINT AS pairs,
                   sum(noncongruent_pairs)::BIGINT AS noncongruent_pairs,
                   sum(congruent_1hop)::BIGINT AS congruent_1hop,
                   sum(congruent_2hop)::BIGINT AS congruent_2hop,
                   sum(congruent_3plus_hops)::BIGINT AS congruent_3plus_hops,
                   sum(noncongruent_shared_0)::BIGINT AS noncongruent_shared_0,
                   sum(noncongruent_shared_1)::BIGINT AS noncongruent_shared_1,
                   sum(noncongruent_shared_2plus)::BIGINT AS noncongruent_shared_2plus,
                   sum(noncongruent_with_shared)::BIGINT AS noncongruent_with_shared,
                   sum(shared_all_adjacent)::BIGINT AS shared_all_adjacent,
                   sum(noncongruent_with_non_adopter)::BIGINT AS noncongruent_with_non_adopter
            FROM month_pair_counts)
CROSS JOIN destinations"""),
)

MONTH_STEPS: tuple[SqlStep, ...] = PARTITION_STEPS + FACTS + VP_STEPS + SUMMARY_STEPS

#: A sensitivity variant's run writes month_summary alone; on both engines these tables are
#: views there, so the columns it never reads (the edit distance, the divergence) are never
#: computed.
VARIANT_VIEWS = ("pairs", "divergence")

#: (step, boolean column, table): Spark writes the step's rows split by the column
#: (partitionBy), and the part where it is true, moved, is the table, whose SQL is that
#: filter: per_path's representative rows are `paths` row for row. Writing and reading back
#: every representative once more cost `paths` 9.0 s of the scale-50 month's Spark compare;
#: the split write costs per_path 1.5 s more, 53.6 against 52.1 s (bench/steps.py --engine
#: spark, 2026-12-02).
SPARK_SPLIT = ("per_path", "representative", "paths")

#: The names the month-level steps read, for the per-partition steps' outputs: an engine running
#: one partition makes each a view of the other; one running K makes each the union of K.
MONTH_OF = {"entries": "month_entries", "by_session": "month_by_session", "per_path": "month_per_path",
            "vps": "month_vps", "pair_counts": "month_pair_counts"}
_NAMES = frozenset(s.name for s in MONTH_STEPS)

# Across months: congruent pairs of month M that were not congruent pairs in the month
# before, for VPs present then. Reads the previous month's published tables as the views
# prev_pairs, prev_vps (a partition's VPs), prev_paths (the month's: through the fact
# prev_v6_dests, the origins the month before reached over IPv6).
PREV_V6_DESTS = both("prev_v6_dests", "fact", "SELECT DISTINCT dest_asn FROM prev_paths WHERE afi = 6")
TRANSITIONS = both("transitions", "table", """
SELECT p.vp_group, p.vp_asn, p.dest_asn,
       CASE WHEN b.congruent IS NOT NULL THEN 'existing_pair'
            WHEN h.dest_asn IS NULL THEN 'new_ipv6_destination' ELSE 'new_pair' END AS kind,
       p.v4_path, p.v6_path,
       CASE WHEN b.congruent IS NOT NULL THEN b.v4_path END AS prev_v4_path,
       CASE WHEN b.congruent IS NOT NULL THEN b.v6_path END AS prev_v6_path
FROM pairs p
JOIN (SELECT DISTINCT vp_group, vp_asn FROM prev_vps) o ON o.vp_group = p.vp_group AND o.vp_asn = p.vp_asn
LEFT JOIN prev_pairs b ON b.vp_group = p.vp_group AND b.vp_asn = p.vp_asn AND b.dest_asn = p.dest_asn
LEFT JOIN prev_v6_dests h ON h.dest_asn = p.dest_asn
WHERE p.congruent AND (b.congruent IS NULL OR NOT b.congruent)""")


def render(step: SqlStep, engine: str, params: MethodParams, plan: SnapshotPlan) -> str:
    """The step's SELECT in the engine's dialect, with the method's parameters filled in;
    `plan`: the month's snapshots (per_path's masks, and where each collector's bits go)."""
    return step.sql(engine).format(**_fill(params, engine, plan))


def reads(sql: str) -> set[str]:
    """The steps a rendered step reads: the step names (and their MONTH_OF names) its SQL
    holds as words. A column spelled like a step (vps' `pairs`) adds a dependency that is not
    one: that only ever keeps less."""
    words = set(re.findall(r"[a-z_0-9]+", sql))
    return {n for n in _NAMES if n in words} | {n for n, m in MONTH_OF.items() if m in words and n in _NAMES}


def kept_steps(kept: dict[str, str] | None, rendered: list[tuple[SqlStep, str]]) -> set[str]:
    """The steps of MONTH_STEPS (`rendered`: each with its SQL) that an engine running one
    partition need not run again after a kept run (`kept`: its steps' SQL): those rendered
    the same whose every input was kept too (a step run again is a new relation for the
    steps that read it). Never SUMMARY_STEPS: a run reads its own month_summary back. For the
    sensitivity variants: a variant of min_coverage or comparison keeps the month's `paths`,
    one of comparison its vp_base too (only vp_base reads the threshold)."""
    out: set[str] = set()
    if not kept:
        return out
    for s, sql in rendered:
        if s not in SUMMARY_STEPS and kept.get(s.name) == sql and reads(sql) - {s.name} <= out:
            out.add(s.name)
    return out


def partition_sql(params: MethodParams, engine: str, plan: SnapshotPlan) -> list[str]:
    """PARTITION_STEPS rendered: two runs on the same entries whose texts are equal share the
    cleaning and per-path aggregates (an engine keeps the last run's for the next, the
    sensitivity variants run in an order that groups them: pipeline/sensitivity.py)."""
    return [render(s, engine, params, plan) for s in PARTITION_STEPS]
