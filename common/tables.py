"""Every table the pipeline publishes, as Arrow schemas: the one source of truth that
ingest, both compare engines, the reference, the catalog and its documentation share.

Column names are a contract with analysts and downstream tools: change them only with a
version bump of the method (congruency/METHOD.md).

Their documentation (meaning, unit and method step of every column) is common/table_docs.py.

`rib_entries`: `month` and `collector` are the Parquet partition keys: they live in the
directory names (`month=YYYY-MM/collector=NAME/`), not inside the files, so Spark, DuckDB
and pyarrow all read them back as columns without a clash.
"""
from __future__ import annotations

import pyarrow as pa

RIB_ENTRIES = pa.schema(
    [
        pa.field("collector", pa.string(), nullable=False),
        pa.field("project", pa.string(), nullable=False),
        # The dump's time (MRT header of the file), not the route's originated time.
        pa.field("snapshot_time", pa.timestamp("s", tz="UTC"), nullable=False),
        pa.field("peer_asn", pa.uint32(), nullable=False),
        pa.field("peer_ip", pa.string(), nullable=False),
        pa.field("afi", pa.int8(), nullable=False),
        pa.field("prefix", pa.string(), nullable=False),
        # Exactly as announced (prepending kept); null when has_as_set.
        pa.field("as_path", pa.list_(pa.field("item", pa.uint32())), nullable=True),
        # True when the path has AS_SET or confederation segments.
        pa.field("has_as_set", pa.bool_(), nullable=False),
        # bgpdump-style text of the path, kept only for has_as_set rows.
        pa.field("as_path_raw", pa.string(), nullable=True),
        # Last ASN of the path; null when the path ends in a set or is empty.
        pa.field("origin_asn", pa.uint32(), nullable=True),
        pa.field("source_file", pa.string(), nullable=False),
    ]
)

PARTITION_KEYS = ("month", "collector")

#: The row's VP bucket (common/vp_hash.py): a compare partition, and a merge in bucket ranges,
#: reads only the row groups of its buckets.
VP_BUCKET = pa.field("vp_bucket", pa.int8(), nullable=False)

#: The decoders' columns (partition keys live in the path): what ingest's writer is given.
DECODED_SCHEMA = pa.schema([f for f in RIB_ENTRIES if f.name not in PARTITION_KEYS])
#: A decoded dump's rows as ingest reads them (ingest/writer.py `entries`): the decoders'
#: columns and each row's VP bucket; the writer's batches, checked against it.
DECODED_FILE = DECODED_SCHEMA.append(VP_BUCKET)
#: What a decoded dump's file holds as ingest's writer stores it, every row group one bucket's
#: rows: DECODED_FILE with each AS path as the bytes of its ASNs (uint32, little-endian, the
#: list's own buffer). As a list column the paths took about half of the writer's time (their
#: repetition levels: 2.0 of 3.9 s for a 9M-entry dump). ingest/routes.py reads either form:
#: files of both exist (a run of an earlier version killed before its merge; files written
#: by DuckDB, as some tests do).
DECODED_STORED = DECODED_FILE.set(DECODED_FILE.get_field_index("as_path"), pa.field("as_path", pa.binary()))


#: The month's routes (common/routes.py): one row per (collector, BGP session, prefix, AS path
#: as decoded, copy), with the collector's snapshots that saw it as bits (63 a word). `month`
#: and `collector` live in the folder names, as rib_entries' did.
ROUTES = pa.schema(
    [
        pa.field("peer_asn", pa.uint32(), nullable=False),
        pa.field("peer_ip", pa.string(), nullable=False),
        pa.field("afi", pa.int8(), nullable=False),
        pa.field("prefix", pa.string(), nullable=False),
        pa.field("as_path", pa.list_(pa.field("item", pa.uint32())), nullable=True),
        pa.field("has_as_set", pa.bool_(), nullable=False),
        pa.field("as_path_raw", pa.string(), nullable=True),
        pa.field("origin_asn", pa.uint32(), nullable=True),
        # Whether as_path holds an ASN twice (prepending or a loop): the compare cleans only
        # those paths (congruency/METHOD.md steps 1-2). Routes written before 2026-11-30 lack
        # it; readers take them as true.
        pa.field("as_path_repeats", pa.bool_(), nullable=False),
        pa.field("copy", pa.int16(), nullable=False),
        pa.field("seen", pa.int64(), nullable=False),
        pa.field("seen_more", pa.list_(pa.field("element", pa.int64())), nullable=True),
        pa.field("vp_bucket", pa.int8(), nullable=False),
    ]
)

#: Each collector's snapshots of the month, as a routes generation's snapshots.json lists
#: them (common/routes.py): bit `snapshot` of a route's `seen` words is this dump.
ROUTE_SNAPSHOTS = pa.schema(
    [
        ("month", pa.string()),
        ("collector", pa.string()),
        ("snapshot", pa.int16()),
        ("snapshot_time", pa.timestamp("s", tz="UTC")),
        ("source_file", pa.string()),
        ("project", pa.string()),
    ]
)

# Spark has no unsigned integers: ASNs (0..2^32-1) are stored as int64, losslessly.
ASN = pa.int64()
ASN_LIST = pa.list_(pa.field("element", ASN))
STR_LIST = pa.list_(pa.field("element", pa.string()))

CLEANING_STATS = pa.schema(
    [
        ("month", pa.string()),
        ("afi", pa.int8()),
        ("reason", pa.string()),
        ("entries", pa.int64()),
    ]
)

PATHS = pa.schema(
    [
        ("month", pa.string()),
        ("vp_group", pa.string()),
        ("vp_asn", ASN),
        ("dest_asn", ASN),
        ("afi", pa.int8()),
        ("path", ASN_LIST),
        ("observations", pa.int64()),
        ("path_observations", pa.int64()),
        ("stability", pa.float64()),
        ("prefixes", pa.int64()),
        ("snapshots", pa.int64()),
    ]
)

VPS = pa.schema(
    [
        ("month", pa.string()),
        ("vp_group", pa.string()),
        ("vp_asn", ASN),
        ("sessions_v4", STR_LIST),  # distinct peer IPs, ascending (string order)
        ("sessions_v6", STR_LIST),
        ("origins_v4", pa.int64()),
        ("origins_v6", pa.int64()),
        ("coverage_v4", pa.float64()),
        ("coverage_v6", pa.float64()),
        ("dual_stacked", pa.bool_()),
        ("default_free", pa.bool_()),
        ("vp_class", pa.string()),  # 'transit' | 'edge'
        ("pairs", pa.int64()),
        ("noncongruent_pairs", pa.int64()),
        ("noncongruent_fraction", pa.float64()),  # null when pairs == 0
    ]
)

PAIRS = pa.schema(
    [
        ("month", pa.string()),
        ("vp_group", pa.string()),
        ("vp_asn", ASN),
        ("dest_asn", ASN),
        ("v4_path", ASN_LIST),
        ("v6_path", ASN_LIST),
        ("congruent", pa.bool_()),
        ("hops_v4", pa.int32()),
        ("hops_v6", pa.int32()),
        ("shared_asns", ASN_LIST),
        ("shared_adjacent", pa.bool_()),
        ("non_adopters", ASN_LIST),
        ("edit_distance", pa.int32()),
    ]
)

MONTH_SUMMARY = pa.schema(
    [
        ("month", pa.string()),
        ("vps", pa.int64()),
        ("vps_dual_stacked", pa.int64()),
        ("vps_default_free", pa.int64()),
        ("vps_with_pairs", pa.int64()),
        ("destinations", pa.int64()),
        ("pairs", pa.int64()),
        ("noncongruent_pairs", pa.int64()),
        ("noncongruent_fraction", pa.float64()),
        ("congruent_1hop", pa.int64()),
        ("congruent_2hop", pa.int64()),
        ("congruent_3plus_hops", pa.int64()),
        ("noncongruent_shared_0", pa.int64()),
        ("noncongruent_shared_1", pa.int64()),
        ("noncongruent_shared_2plus", pa.int64()),
        ("noncongruent_with_shared", pa.int64()),
        ("shared_all_adjacent", pa.int64()),
        ("shared_all_adjacent_fraction", pa.float64()),
        ("noncongruent_with_non_adopter", pa.int64()),
        ("non_adopter_fraction", pa.float64()),
        ("vp_noncongruent_min", pa.float64()),
        ("vp_noncongruent_q1", pa.float64()),
        ("vp_noncongruent_median", pa.float64()),
        ("vp_noncongruent_q3", pa.float64()),
        ("vp_noncongruent_max", pa.float64()),
    ]
)

#: Month M against the month before (METHOD.md, "Across months").
TRANSITIONS = pa.schema(
    [
        ("month", pa.string()),
        ("vp_group", pa.string()),
        ("vp_asn", ASN),
        ("dest_asn", ASN),
        ("kind", pa.string()),  # existing_pair | new_ipv6_destination | new_pair
        ("v4_path", ASN_LIST),
        ("v6_path", ASN_LIST),
        ("prev_v4_path", ASN_LIST),
        ("prev_v6_path", ASN_LIST),
    ]
)

#: Path selector advice per (source, destination) (selector/rules.py, selector/):
#: one row per pair of the month in the published table; the same fields in `advise` and
#: the JSON Lines export (selector/exports/jsonl.py adds the schema version).
HINTS = pa.schema(
    [
        ("month", pa.string()),
        ("source_asn", ASN),
        ("vp_group", pa.string()),
        ("vp_asn", ASN),
        ("via_proxy", pa.bool_()),
        ("proxies", ASN_LIST),
        ("dest_asn", ASN),
        ("dest_asn_v6", ASN),
        ("via_v4", ASN),
        ("via_v6", ASN),
        ("query", pa.string()),
        ("endpoint", pa.string()),
        ("addr_v4", pa.string()),
        ("addr_v6", pa.string()),
        ("prefix_v4", pa.string()),
        ("prefix_v6", pa.string()),
        ("v4_path", ASN_LIST),
        ("v6_path", ASN_LIST),
        ("hint_class", pa.string()),
        ("reason", pa.string()),
        ("shared_asns", ASN_LIST),
        ("stability_v4", pa.float64()),
        ("stability_v6", pa.float64()),
        ("snapshots", pa.int64()),
        ("confidence", pa.float64()),
        ("primary_afi", pa.int8()),
        ("mode", pa.string()),
        ("path_manager", pa.string()),
        ("congestion_control", pa.string()),
        ("transport", pa.string()),
        ("rationale", pa.string()),
        ("mptcp_flags_v4", pa.string()),
        ("mptcp_flags_v6", pa.string()),
        ("mpt_weight_v4", pa.int32()),
        ("mpt_weight_v6", pa.int32()),
        ("mpt_status_v4", pa.int32()),
        ("mpt_status_v6", pa.int32()),
        ("notes", STR_LIST),
        ("caveat", pa.string()),
    ]
)

#: One row per snapshot slot of a month: what ingest did with it (ingest/manifest.py).
MANIFEST = pa.schema(
    [
        ("month", pa.string()),
        ("slot", pa.string()),
        ("collector", pa.string()),
        ("project", pa.string()),
        ("target_time", pa.timestamp("s", tz="UTC")),
        ("dump_time", pa.timestamp("s", tz="UTC")),
        ("substituted", pa.bool_()),
        ("url", pa.string()),
        ("local_path", pa.string()),
        ("sha256", pa.string()),
        ("bytes", pa.int64()),
        ("records", pa.int64()),
        ("entries_v4", pa.int64()),
        ("entries_v6", pa.int64()),
        ("skipped", pa.map_(pa.string(), pa.int64())),
        ("backend", pa.string()),
        ("duration_s", pa.float64()),
        ("status", pa.string()),  # ok | failed | missing
        ("error", pa.string()),
        ("output", pa.string()),
        ("ingested_at", pa.timestamp("s", tz="UTC")),
        ("address_span", pa.string()),
    ]
)

#: One row per non-congruent pair: where its two paths part and rejoin (METHOD.md "Divergence").
DIVERGENCE = pa.schema(
    [
        ("month", pa.string()),
        ("vp_group", pa.string()),
        ("vp_asn", pa.int64()),
        ("dest_asn", pa.int64()),
        ("common_prefix", pa.int32()),
        ("common_suffix", pa.int32()),
        ("part_asn", pa.int64()),
        ("rejoin_asn", pa.int64()),
        ("only_v4", ASN_LIST),
        ("only_v6", ASN_LIST),
    ]
)

#: One row per published month: which inputs and which method produced it (pipeline/provenance.py).
PROVENANCE = pa.schema(
    [
        ("month", pa.string()),
        ("published_at", pa.string()),
        ("engine", pa.string()),
        ("project_version", pa.string()),
        ("method_version", pa.string()),
        ("min_coverage", pa.float64()),
        ("method_params", pa.string()),
        ("collectors", STR_LIST),
        ("snapshots_used", STR_LIST),
        ("snapshots_missing", STR_LIST),
        ("snapshots_failed", STR_LIST),
        ("snapshots_inactive", pa.int64()),
        ("entries", pa.int64()),
        ("input_files", STR_LIST),
        ("input_sha256", STR_LIST),
        ("coverage_policy", pa.string()),
    ]
)

#: The month's headline figures under each variant of each open choice (pipeline/sensitivity.py).
SENSITIVITY = pa.schema([("month", pa.string()), ("choice", pa.string()), ("variant", pa.string())]
                        + [f for f in MONTH_SUMMARY if f.name != "month"])

#: `congruency trace --store`: one row per (run, family) toward a destination (dataplane/).
TRACES = pa.schema(
    [
        ("month", pa.string()),
        ("traced_at", pa.timestamp("s", tz="UTC")),
        ("source_asn", ASN),
        ("destination", pa.string()),
        ("afi", pa.int8()),
        ("dest_asn", ASN),
        ("traces", pa.int32()),
        ("methods", STR_LIST),
        ("stable", pa.bool_()),
        ("stable_share", pa.float64()),
        ("hop_addresses", STR_LIST),
        ("hop_asns", ASN_LIST),
        ("as_path", ASN_LIST),
        ("bgp_path", ASN_LIST),
        ("agreement", pa.string()),
        ("as_level", pa.string()),
        ("shared_asns", ASN_LIST),
        ("shared_routers", pa.int32()),
        ("aliases_known", pa.bool_()),
    ]
)

#: `congruency evaluate`: the selector's answer for each pair with the pair's VP held out (selector/evaluate.py).
SELECTOR_EVAL = pa.schema(
    [
        ("month", pa.string()),
        ("vp_group", pa.string()),
        ("vp_asn", ASN),
        ("dest_asn", ASN),
        ("rule", pa.string()),
        ("proxies", pa.int32()),
        ("observed_class", pa.string()),
        ("predicted_class", pa.string()),
        ("correct", pa.bool_()),
        ("confidence", pa.float64()),
        ("observed_mode", pa.string()),
        ("predicted_mode", pa.string()),
        ("v4_exact", pa.bool_()),
        ("v6_exact", pa.bool_()),
        ("v4_hop_distance", pa.int32()),
        ("v6_hop_distance", pa.int32()),
        ("kind", pa.string()),
        ("calibrated_confidence", pa.float64()),
        ("reveal", pa.string()),
    ]
)

#: The month's AS relationships per family (relationships/METHOD.md), CAIDA serial-1's
#: convention in words: p2c with as1 the provider of as2, p2p with as1 < as2.
AS_RELATIONSHIPS = pa.schema(
    [
        ("month", pa.string()),
        ("afi", pa.int8()),
        ("as1", ASN),
        ("as2", ASN),
        ("rel", pa.string()),
        ("paths", pa.int64()),
        ("vps", pa.int64()),
        ("step", pa.string()),
        ("decided", pa.bool_()),
        ("evidence", pa.string()),
    ]
)

#: The month's prefixes and their origins, as many RIB entries as show each pair: the
#: longest-prefix match of addresses (selector/origins.py) reads it instead of rib_entries.
PREFIX_ORIGINS = pa.schema(
    [
        ("month", pa.string()),
        ("afi", pa.int8()),
        ("prefix", pa.string()),
        ("origin_asn", ASN),
        ("entries", pa.int64()),
    ]
)

#: Tables computed inside the compare from the engine's staged tables, in this order (each
#: may read those before it): pipeline/job.py's stagers, handed in by runner/steps.py.
STAGED_TABLES = ("as_relationships", "prefix_origins", "hints")
#: What one month's compare publishes in one catalog commit, in this order: the engine's
#: tables, the provenance row, the tables computed from them inside the compare
#: (STAGED_TABLES), month_summary last (its row says the month is published).
MONTH_TABLES = ("cleaning_stats", "paths", "vps", "pairs", "divergence", "transitions", "provenance",
                *STAGED_TABLES, "month_summary")
#: Tables computed later from a month's published tables (the sensitivity variants, the
#: selector's held-out evaluation): a re-publish of the month retires their rows in its own
#: commit, so no reader joins new pairs with an evaluation of the old ones; `run` computes
#: them again.
DERIVED_TABLES = ("sensitivity", "selector_eval")

#: The tables of one month computed from its rib_entries alone.
TABLES: dict[str, pa.Schema] = {
    "cleaning_stats": CLEANING_STATS,
    "paths": PATHS,
    "vps": VPS,
    "pairs": PAIRS,
    "divergence": DIVERGENCE,
    "month_summary": MONTH_SUMMARY,
}


# --- Type names per SQL dialect --------------------------------------------------------
# The one owner of how each dialect names the Arrow types above: both engines' casts and
# their check of the input's columns, the catalog's columns and views (lake/), and the
# schema docs (reports/schema_doc.py). A type missing here is a KeyError at the first use,
# not a guess.

#: Arrow type -> (DuckDB's name, Spark's name of the same Parquet column). Spark has no
#: unsigned integers: it reads UINT32 as bigint, UINT16 as int, UINT8 as smallint and
#: UINT64 as decimal(20,0).
_NAMES = {
    pa.string(): ("VARCHAR", "string"), pa.bool_(): ("BOOLEAN", "boolean"),
    pa.int8(): ("TINYINT", "tinyint"), pa.int16(): ("SMALLINT", "smallint"), pa.int32(): ("INTEGER", "int"),
    pa.int64(): ("BIGINT", "bigint"), pa.uint8(): ("UTINYINT", "smallint"), pa.uint16(): ("USMALLINT", "int"),
    pa.uint32(): ("UINTEGER", "bigint"), pa.uint64(): ("UBIGINT", "decimal(20,0)"),
    pa.float32(): ("FLOAT", "float"), pa.float64(): ("DOUBLE", "double"),
    pa.date32(): ("DATE", "date"), pa.binary(): ("BLOB", "binary"),
    # Timestamps as DuckDB names a Parquet column of each unit (TIMESTAMP is microseconds).
    pa.timestamp("s", tz="UTC"): ("TIMESTAMP WITH TIME ZONE", "timestamp"),
    pa.timestamp("us", tz="UTC"): ("TIMESTAMP WITH TIME ZONE", "timestamp"),
    pa.timestamp("s"): ("TIMESTAMP_S", "timestamp_ntz"), pa.timestamp("ms"): ("TIMESTAMP_MS", "timestamp_ntz"),
    pa.timestamp("us"): ("TIMESTAMP", "timestamp_ntz"), pa.timestamp("ns"): ("TIMESTAMP_NS", "timestamp_ntz"),
}
DIALECTS = ("duckdb", "spark")


def sql_type(t: pa.DataType, dialect: str) -> str:
    """An Arrow type in the dialect's SQL: DuckDB (`BIGINT[]`, `MAP(VARCHAR, BIGINT)`) or
    Spark (`array<bigint>`, `map<string,bigint>`)."""
    if pa.types.is_list(t):
        inner = sql_type(t.value_type, dialect)
        return f"array<{inner}>" if dialect == "spark" else f"{inner}[]"
    if pa.types.is_map(t):
        k, v = sql_type(t.key_type, dialect), sql_type(t.item_type, dialect)
        return f"map<{k},{v}>" if dialect == "spark" else f"MAP({k}, {v})"
    return _NAMES[t][DIALECTS.index(dialect)]


#: DuckDB's name of a column type -> Spark's name of the same Parquet column (the input
#: check names types alike on both engines).
_SPARK_OF_DUCKDB = {d: s for d, s in _NAMES.values()}


def spark_name(duckdb_type: str) -> str:
    """The name Spark gives a Parquet column that DuckDB names `duckdb_type` (lists too);
    a type of neither dialect's tables is shown as DuckDB names it, lower-cased."""
    if duckdb_type.endswith("[]"):
        return f"array<{spark_name(duckdb_type[:-2])}>"
    return _SPARK_OF_DUCKDB.get(duckdb_type, duckdb_type.lower())
