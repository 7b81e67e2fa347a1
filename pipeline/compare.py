"""The Spark congruency job (METHOD.md steps 1-8), native Spark SQL only.

Path work uses higher-order functions (filter, exists, forall, aggregate, array_*),
never Python UDFs, and nothing data-sized is collected to the driver: the only values
the driver sees are two origin counts and the schema. The pure-Python twin in
congruency/reference.py must give the same rows (tests/test_compare.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from common.params import MethodParams

REQUIRED = {
    "collector": "string",
    "snapshot_time": "timestamp",
    "peer_asn": "bigint",
    "peer_ip": "string",
    "afi": "tinyint",
    "prefix": "string",
    "as_path": "array<bigint>",
    "has_as_set": "boolean",
}


class JobError(Exception):
    """Bad input for the job; one line, names the path or month."""


def _reserved_sql(params: MethodParams, col: str = "x") -> str:
    return " OR ".join(
        f"{col} = {lo}" if lo == hi else f"({col} BETWEEN {lo} AND {hi})" for lo, hi in params.reserved_asns
    ) or "false"


def _groups_sql(params: MethodParams) -> str:
    if not params.groups:
        return "collector"
    pairs = ", ".join(f"'{k}', '{v}'" for k, v in sorted(params.groups.items()))
    return f"coalesce(element_at(map({pairs}), collector), collector)"


# Levenshtein distance over two ASN arrays: one DP row per element of b, folded with
# aggregate; the inner aggregate builds the next row left to right.
EDIT_DISTANCE = """
element_at(aggregate(
  {b},
  sequence(0, size({a})),
  (prev, y) -> aggregate(
      sequence(1, size({a})),
      array(element_at(prev, 1) + 1),
      (row, i) -> concat(row, array(least(
          element_at(prev, i + 1) + 1,
          element_at(row, -1) + 1,
          element_at(prev, i) + IF(element_at({a}, i) = y, 0, 1))))
  )
), -1)
"""


@dataclass
class MonthFrames:
    cleaning_stats: object
    paths: object
    vps: object
    pairs: object
    month_summary: object

    def items(self):
        return {
            "cleaning_stats": self.cleaning_stats,
            "paths": self.paths,
            "vps": self.vps,
            "pairs": self.pairs,
            "month_summary": self.month_summary,
        }.items()


def check_schema(df, where: str) -> None:
    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    for name, typ in REQUIRED.items():
        if name not in have:
            raise JobError(f"{where}: column {name!r} is missing (not a rib_entries table?)")
        if have[name] != typ:
            raise JobError(f"{where}: column {name!r} is {have[name]}, expected {typ}")


def compute(entries, month: str, params: MethodParams, materialize, step=lambda name: None) -> MonthFrames:
    """All tables of one month from its rib_entries DataFrame.

    `materialize(df, name) -> df` stores an intermediate that is used more than once and
    returns it read back (the job writes Parquet into the month's staging folder: on
    arrays that is ~5x faster than Spark's in-memory cache and survives executor loss);
    names without a leading '_work/' are final output tables."""
    from pyspark.sql import functions as F

    E = F.expr
    step("cleaning")
    stripped = "filter(as_path, (x, i) -> i = 0 OR x != element_at(as_path, i))"
    # The stripped path is computed once (a column of its own) and then tested: Spark
    # does not inline a higher-order function into the expressions that reuse it.
    rows = entries.select(
        E(_groups_sql(params)).alias("vp_group"),
        F.col("peer_asn").alias("vp_asn"),
        "peer_ip",
        "afi",
        "prefix",
        "snapshot_time",
        "as_path",
        "has_as_set",
        E(stripped).alias("path"),
    ).select(
        "vp_group", "vp_asn", "peer_ip", "afi", "prefix", "snapshot_time", "path",
        E(
            f"""CASE
              WHEN prefix IN ('0.0.0.0/0', '::/0') THEN 'default_route'
              WHEN has_as_set THEN 'as_set'
              WHEN as_path IS NULL OR size(as_path) = 0 OR as_path[0] != vp_asn THEN 'first_as_not_peer'
              WHEN exists(as_path, x -> {_reserved_sql(params)}) THEN 'reserved_asn'
              WHEN size(array_distinct(path)) != size(path) THEN 'loop'
            END"""
        ).alias("reason"),
    )

    # Two passes over the entries, each ending in a small aggregate; everything after
    # works on those. (1) per (VP, AFI, session, reason): cleaning stats and sessions.
    by_session = materialize(
        rows.groupBy("vp_group", "vp_asn", "afi", "peer_ip", "reason").agg(F.count(F.lit(1)).alias("entries")),
        "_work/by_session",
    )
    cleaning_stats = (
        by_session.groupBy("afi", F.coalesce("reason", F.lit("kept")).alias("reason"))
        .agg(F.sum("entries").alias("entries"))
    )

    # (2) per (VP, AFI, cleaned path): observations, distinct prefixes and snapshots.
    step("representative paths")
    key = ["vp_group", "vp_asn", "dest_asn", "afi"]
    per_path = materialize(
        rows.filter("reason IS NULL")
        .groupBy("vp_group", "vp_asn", "afi", "path")
        .agg(
            F.count(F.lit(1)).alias("path_observations"),
            E("size(collect_set(prefix))").alias("prefixes"),
            E("size(collect_set(snapshot_time))").alias("snapshots"),
        )
        .withColumn("dest_asn", E("element_at(path, -1)")),
        "_work/per_path",
    )
    # The representative path: most observations, then fewer ASes, then the smallest
    # sequence; min_by over that ordering is one hash aggregate, no sort.
    paths = materialize(
        per_path.groupBy(*key)
        .agg(
            F.sum("path_observations").alias("observations"),
            E("min_by(struct(path, path_observations, prefixes, snapshots), "
              "struct(-path_observations, size(path), path))").alias("best"),
        )
        .select(
            *key, "best.path", "observations", "best.path_observations",
            (F.col("best.path_observations") / F.col("observations")).alias("stability"),
            "best.prefixes", "best.snapshots",
        ),
        "paths",
    )

    step("vantage points")
    origins_month = per_path.groupBy("afi").agg(F.countDistinct("dest_asn").alias("n"))
    total = {r["afi"]: r["n"] for r in origins_month.collect()}  # two numbers
    t4, t6 = total.get(4, 0), total.get(6, 0)

    def cov(n: str, t: int):
        return F.lit(None).cast("double") if t == 0 else (F.col(n) / F.lit(t)).cast("double")

    transit = (
        per_path.select(F.explode(E("slice(path, 2, greatest(size(path) - 2, 0))")).alias("vp_asn"))
        .distinct()
        .withColumn("is_transit", F.lit(True))
    )
    sessions = by_session.filter("reason IS NULL").groupBy("vp_group", "vp_asn").agg(
        E("array_sort(collect_set(CASE WHEN afi = 4 THEN peer_ip END))").alias("sessions_v4"),
        E("array_sort(collect_set(CASE WHEN afi = 6 THEN peer_ip END))").alias("sessions_v6"),
    )
    origins = paths.groupBy("vp_group", "vp_asn").agg(
        F.count(F.when(F.col("afi") == 4, 1)).alias("origins_v4"),
        F.count(F.when(F.col("afi") == 6, 1)).alias("origins_v6"),
    )
    thr = float(params.min_coverage)
    vp_base = materialize(
        sessions.join(origins, ["vp_group", "vp_asn"])
        .join(F.broadcast(transit), "vp_asn", "left")
        .select(
            "vp_group", "vp_asn", "sessions_v4", "sessions_v6", "origins_v4", "origins_v6",
            cov("origins_v4", t4).alias("coverage_v4"),
            cov("origins_v6", t6).alias("coverage_v6"),
            ((F.col("origins_v4") > 0) & (F.col("origins_v6") > 0)).alias("dual_stacked"),
            F.when(F.col("is_transit"), "transit").otherwise("edge").alias("vp_class"),
        )
        .withColumn(
            "default_free",
            F.col("dual_stacked")
            & F.coalesce(F.col("coverage_v4") >= thr, F.lit(False))
            & F.coalesce(F.col("coverage_v6") >= thr, F.lit(False)),
        ),
        "_work/vp_base",
    )

    step("pairs")
    pk = ["vp_group", "vp_asn", "dest_asn"]
    p4 = paths.filter("afi = 4").select(*pk, F.col("path").alias("v4_path"))
    p6 = paths.filter("afi = 6").select(*pk, F.col("path").alias("v6_path"))
    dfree = vp_base.filter("default_free").select("vp_group", "vp_asn")
    base = materialize(
        p4.join(p6, pk)
        .join(F.broadcast(dfree), ["vp_group", "vp_asn"])
        .filter("dest_asn != vp_asn")
        .select(
            *pk, "v4_path", "v6_path",
            E("v4_path = v6_path").alias("congruent"),
            E("size(v4_path) - 1").alias("hops_v4"),
            E("size(v6_path) - 1").alias("hops_v6"),
            E("array_sort(array_except(array_intersect(v4_path, v6_path), array(vp_asn, dest_asn)))")
            .alias("shared_asns"),
            E(EDIT_DISTANCE.format(a="v4_path", b="v6_path")).alias("edit_distance"),
        )
        .withColumn(
            "shared_adjacent",
            E(
                """CASE WHEN size(shared_asns) = 0 THEN NULL ELSE forall(shared_asns, a ->
                    (a = try_element_at(v4_path, 2) OR a = try_element_at(v4_path, -2)) AND
                    (a = try_element_at(v6_path, 2) OR a = try_element_at(v6_path, -2))) END"""
            ),
        ),
        "_work/pairs_base",
    )
    v6_asns = per_path.filter("afi = 6").select(F.explode("path").alias("x")).distinct()
    inner = base.select(*pk, F.explode(E("slice(v4_path, 2, greatest(size(v4_path) - 2, 0))")).alias("x"))
    non_adopt = (
        inner.join(v6_asns, "x", "left_anti")
        .groupBy(*pk)
        .agg(E("array_sort(collect_set(x))").alias("non_adopters"))
    )
    pairs = materialize(
        base.join(non_adopt, pk, "left").select(
            *pk, "v4_path", "v6_path", "congruent", "hops_v4", "hops_v6", "shared_asns",
            "shared_adjacent",
            E("coalesce(non_adopters, cast(array() AS array<bigint>))").alias("non_adopters"),
            "edit_distance",
        ),
        "pairs",
    )

    per_vp = pairs.groupBy("vp_group", "vp_asn").agg(
        F.count(F.lit(1)).alias("pairs"),
        F.count(F.when(~F.col("congruent"), 1)).alias("noncongruent_pairs"),
    )
    vps = materialize(
        vp_base.join(per_vp, ["vp_group", "vp_asn"], "left")
        .select(
            "vp_group", "vp_asn", "sessions_v4", "sessions_v6", "origins_v4", "origins_v6",
            "coverage_v4", "coverage_v6", "dual_stacked", "default_free", "vp_class",
            F.coalesce("pairs", F.lit(0)).alias("pairs"),
            F.coalesce("noncongruent_pairs", F.lit(0)).alias("noncongruent_pairs"),
        )
        .withColumn(
            "noncongruent_fraction",
            F.when(F.col("pairs") > 0, F.col("noncongruent_pairs") / F.col("pairs")),
        ),
        "vps",
    )

    step("month summary")
    dests = per_path.groupBy("dest_asn").agg(F.countDistinct("afi").alias("n")).filter("n = 2")
    vp_sum = vps.agg(
        F.count(F.lit(1)).alias("vps"),
        F.count(F.when(F.col("dual_stacked"), 1)).alias("vps_dual_stacked"),
        F.count(F.when(F.col("default_free"), 1)).alias("vps_default_free"),
        F.count(F.when(F.col("pairs") > 0, 1)).alias("vps_with_pairs"),
        E("min(noncongruent_fraction)").alias("vp_noncongruent_min"),
        E("percentile(noncongruent_fraction, array(0.25, 0.5, 0.75))").alias("q"),
        E("max(noncongruent_fraction)").alias("vp_noncongruent_max"),
    )
    nc = "NOT congruent"
    pair_sum = pairs.agg(
        F.count(F.lit(1)).alias("pairs"),
        E(f"count_if({nc})").alias("noncongruent_pairs"),
        E("count_if(congruent AND hops_v4 = 1)").alias("congruent_1hop"),
        E("count_if(congruent AND hops_v4 = 2)").alias("congruent_2hop"),
        E("count_if(congruent AND hops_v4 >= 3)").alias("congruent_3plus_hops"),
        E(f"count_if({nc} AND size(shared_asns) = 0)").alias("noncongruent_shared_0"),
        E(f"count_if({nc} AND size(shared_asns) = 1)").alias("noncongruent_shared_1"),
        E(f"count_if({nc} AND size(shared_asns) >= 2)").alias("noncongruent_shared_2plus"),
        E(f"count_if({nc} AND size(shared_asns) >= 1)").alias("noncongruent_with_shared"),
        E(f"count_if({nc} AND shared_adjacent)").alias("shared_all_adjacent"),
        E(f"count_if({nc} AND size(non_adopters) > 0)").alias("noncongruent_with_non_adopter"),
    )

    def frac(a: str, b: str):
        return F.when(F.col(b) > 0, F.col(a) / F.col(b))

    month_summary = (
        vp_sum.crossJoin(pair_sum)
        .crossJoin(dests.agg(F.count(F.lit(1)).alias("destinations")))
        .select(
            "vps", "vps_dual_stacked", "vps_default_free", "vps_with_pairs", "destinations",
            "pairs", "noncongruent_pairs",
            frac("noncongruent_pairs", "pairs").alias("noncongruent_fraction"),
            "congruent_1hop", "congruent_2hop", "congruent_3plus_hops",
            "noncongruent_shared_0", "noncongruent_shared_1", "noncongruent_shared_2plus",
            "noncongruent_with_shared", "shared_all_adjacent",
            frac("shared_all_adjacent", "noncongruent_with_shared").alias("shared_all_adjacent_fraction"),
            "noncongruent_with_non_adopter",
            frac("noncongruent_with_non_adopter", "noncongruent_pairs").alias("non_adopter_fraction"),
            "vp_noncongruent_min",
            E("q[0]").alias("vp_noncongruent_q1"),
            E("q[1]").alias("vp_noncongruent_median"),
            E("q[2]").alias("vp_noncongruent_q3"),
            "vp_noncongruent_max",
        )
    )
    return MonthFrames(cleaning_stats, paths, vps, pairs, month_summary)


def transitions(spark, pairs, prev: dict | None):
    """Congruent pairs of this month that were not congruent pairs the month before
    (METHOD.md, "Across months"). `prev` maps 'pairs', 'vps', 'paths' to the previous
    month's published DataFrames; None gives the empty table."""
    from pyspark.sql import functions as F

    pk = ["vp_group", "vp_asn", "dest_asn"]
    if prev is None:  # the empty table, built in SQL (no Python rows, no Python worker)
        return spark.range(0).selectExpr(
            *(f"CAST(NULL AS {typ}) AS {name}" for name, typ in
              (c.strip().split(" ", 1) for c in TRANSITIONS_DDL.split(", ")))
        )
    before = prev["pairs"].select(*pk, F.col("congruent").alias("prev_congruent"),
                                  F.col("v4_path").alias("prev_v4_path"),
                                  F.col("v6_path").alias("prev_v6_path"))
    old_vps = prev["vps"].select("vp_group", "vp_asn").distinct()
    had_v6 = prev["paths"].filter("afi = 6").select("dest_asn").distinct().withColumn("had_v6", F.lit(True))
    return (
        pairs.filter("congruent")
        .join(old_vps, ["vp_group", "vp_asn"], "left_semi")
        .join(before, pk, "left")
        .filter("prev_congruent IS NULL OR NOT prev_congruent")
        .join(had_v6, "dest_asn", "left")
        .select(
            *pk,
            F.when(F.col("prev_congruent").isNotNull(), "existing_pair")
            .when(F.col("had_v6").isNull(), "new_ipv6_destination")
            .otherwise("new_pair").alias("kind"),
            "v4_path", "v6_path",
            F.when(F.col("prev_congruent").isNotNull(), F.col("prev_v4_path")).alias("prev_v4_path"),
            F.when(F.col("prev_congruent").isNotNull(), F.col("prev_v6_path")).alias("prev_v6_path"),
        )
    )


TRANSITIONS_DDL = (
    "vp_group string, vp_asn bigint, dest_asn bigint, kind string, v4_path array<bigint>, "
    "v6_path array<bigint>, prev_v4_path array<bigint>, prev_v6_path array<bigint>"
)
