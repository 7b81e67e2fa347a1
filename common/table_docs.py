"""The documentation of every published table: for each column its meaning, unit and the
method step that makes it, and where the table lives under DATA_DIR. reports/schema_doc.py
renders it to docs/SCHEMA.md and lake/ makes every table listed here a catalog table and a
view, so a new table is documented and queryable by adding its schema (common/tables.py)
and one `document(...)` call here; `document` refuses a table whose columns and
documentation disagree."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from bgp_congruency.common.tables import (
    AS_RELATIONSHIPS,
    CLEANING_STATS,
    DIVERGENCE,
    HINTS,
    MANIFEST,
    MONTH_SUMMARY,
    PAIRS,
    PATHS,
    PREFIX_ORIGINS,
    PROVENANCE,
    RIB_ENTRIES,
    ROUTE_SNAPSHOTS,
    ROUTES,
    SELECTOR_EVAL,
    SENSITIVITY,
    TRACES,
    TRANSITIONS,
    VP_BUCKET,
    VPS,
)


class Col(NamedTuple):
    meaning: str
    unit: str  # "-" when the value has none (names, flags, lists)
    step: str  # the ingest/method step that computes it (METHOD.md section)


@dataclass(frozen=True)
class TableDoc:
    name: str
    schema: pa.Schema
    about: str
    layout: str  # path under DATA_DIR (a published table: one folder per publish below month=M)
    columns: dict[str, Col]


#: name -> TableDoc, in documentation order.
DOCS: dict[str, TableDoc] = {}


def document(name: str, schema: pa.Schema, about: str, layout: str, **columns: tuple) -> TableDoc:
    have, documented = list(schema.names), list(columns)
    if have != documented:
        raise ValueError(f"tables.{name}: columns {have} but documented {documented}")
    DOCS[name] = TableDoc(name, schema, about, layout, {k: Col(*v) for k, v in columns.items()})
    return DOCS[name]


_MONTH = ("calendar month of the RIB snapshots", "YYYY-MM", "ingest: month window")
_VP = {
    "vp_group": ("collector group of the vantage point (common/groups.toml)", "-", "3. Vantage points"),
    "vp_asn": ("peer ASN of the vantage point", "ASN", "3. Vantage points"),
}

document(
    "manifest", MANIFEST,
    "What ingest did with every snapshot slot of a month; the latest outcome per slot.",
    "manifest/month=YYYY-MM/collector=C.parquet",
    month=_MONTH,
    slot=("slot key: collector and target time of the snapshot", "-", "ingest: discovery"),
    collector=("collector name, e.g. route-views2, rrc00", "-", "ingest: catalogue"),
    project=("archive project: routeviews or ris", "-", "ingest: catalogue"),
    target_time=("time the slot asks for", "UTC timestamp", "ingest: discovery"),
    dump_time=("time of the RIB dump chosen for the slot; null when none", "UTC timestamp", "ingest: discovery"),
    substituted=("true when a dump within the tolerance stood in for the target time", "-", "ingest: discovery"),
    url=("archive URL or local path of the dump", "-", "ingest: discovery"),
    local_path=("cached copy that was decoded", "-", "ingest: download"),
    sha256=("SHA-256 of the dump file as read", "hex", "ingest: framing check"),
    bytes=("size of the dump file", "bytes", "ingest: download"),
    records=("MRT records read", "records", "ingest: framing check"),
    entries_v4=("IPv4 RIB entries written", "rows", "ingest: decode"),
    entries_v6=("IPv6 RIB entries written", "rows", "ingest: decode"),
    skipped=("MRT records skipped, by record type", "records", "ingest: framing check"),
    backend=("decoder that produced the entries (native, bgpdump, pybgpstream)", "-", "ingest: decode"),
    duration_s=("wall time to download and decode the slot", "seconds", "ingest"),
    status=("ok | failed | missing", "-", "ingest"),
    error=("one-line reason when status is not ok", "-", "ingest"),
    output=("where the slot's entries are, relative to the data dir: its collector's routes "
            "(routes/month=M/collector=C) once merged; before 2026-11-28 a Parquet file per dump", "-", "ingest"),
    ingested_at=("when the slot was ingested", "UTC timestamp", "ingest"),
    address_span=("JSON: the highest first IPv4 octet and first IPv6 16 bits among the dump's prefixes (a cut "
                  "sample's stay low: `congruency plan` does not learn sizes from those)", "-", "ingest: writer"),
)

_ROUTE_KEY = dict(
    peer_asn=("ASN of the BGP peer (the session's AS)", "ASN", "ingest: decode"),
    peer_ip=("IP address of the BGP peer", "-", "ingest: decode"),
    afi=("address family: 4 or 6", "-", "ingest: decode"),
    prefix=("announced prefix, e.g. 192.0.2.0/24", "-", "ingest: decode"),
    as_path=("AS path exactly as announced (prepending kept); null when has_as_set", "list of ASNs", "ingest: decode"),
    has_as_set=("true when the path has AS_SET or confederation segments", "-", "ingest: decode"),
    as_path_raw=("bgpdump-style text of the path, only for has_as_set rows", "-", "ingest: decode"),
    origin_asn=("last ASN of the path; null when it ends in a set or is empty", "ASN", "ingest: decode"),
)
_BUCKET = ("bucket of peer_asn's hash (0-31, common/vp_hash.py): the rows are in bucket order, so a compare "
           "partition reads only its row groups", "-", "ingest: merge")

document(
    "routes", pa.schema([pa.field("month", pa.string()), pa.field("collector", pa.string()), *ROUTES]),
    "The month's routes: one row per (collector, BGP session, prefix, AS path as announced), with the collector's "
    "snapshots that saw it (its bits; route_snapshots says which dump each bit is). The month is stored this way "
    "once, not once per snapshot (common/routes.py).",
    "routes/month=YYYY-MM/collector=NAME/gen-NNNNNN/part-*.parquet",
    month=_MONTH,
    collector=("collector name (from the directory name)", "-", "ingest"),
    **_ROUTE_KEY,
    as_path_repeats=("whether as_path holds an ASN twice (prepending or a loop): the compare cleans only those "
                     "paths; null in routes written before 2026-11-30, which readers take as true", "-",
                     "ingest: merge"),
    copy=("0; k for the (k+1)-th identical entry of one snapshot (an ADD-PATH RIB may hold a path twice): its bits "
          "are the snapshots with more than k of them", "-", "ingest: merge"),
    seen=("bit i set when the collector's snapshot i (route_snapshots) held the route; snapshots 0-62", "bits",
          "ingest: merge"),
    seen_more=("the bits of snapshots 63 and on, 63 a word (null when the collector has at most 63)", "bits",
               "ingest: merge"),
    vp_bucket=_BUCKET,
)

document(
    "route_snapshots", ROUTE_SNAPSHOTS,
    "Each collector's RIB dumps of the month, in time order: the bit `snapshot` of its routes' `seen` words.",
    "routes/month=YYYY-MM/collector=NAME/gen-NNNNNN/snapshots.json",
    month=_MONTH,
    collector=("collector name", "-", "ingest"),
    snapshot=("the dump's bit in the collector's routes (0 is its first dump of the month)", "-", "ingest: merge"),
    snapshot_time=("time of the dump (MRT header), not of the route", "UTC timestamp", "ingest: decode"),
    source_file=("dump file the routes came from", "-", "ingest"),
    project=("archive project: routeviews or ris", "-", "ingest"),
)

document(
    "rib_entries", pa.schema([pa.field("month", pa.string()), *RIB_ENTRIES]).append(VP_BUCKET),
    "One row per observation: a (BGP session, prefix, snapshot) from a RIB dump, as announced. A view: every "
    "route once per snapshot that saw it (routes joined with route_snapshots), the rows ingest decoded.",
    "a view of routes and route_snapshots",
    month=_MONTH,
    collector=("collector name", "-", "ingest"),
    project=("archive project: routeviews or ris", "-", "ingest"),
    snapshot_time=("time of the dump (MRT header), not of the route", "UTC timestamp", "ingest: decode"),
    **_ROUTE_KEY,
    source_file=("dump file the row came from", "-", "ingest"),
    vp_bucket=_BUCKET,
)

document(
    "cleaning_stats", CLEANING_STATS,
    "RIB entries per address family dropped by each cleaning rule, and kept.",
    "cleaning_stats/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    afi=("address family: 4 or 6", "-", "1. Cleaning"),
    reason=("first rule that applied: default_route, as_set, first_as_not_peer, reserved_asn, "
            "loop; or kept", "-", "1. Cleaning"),
    entries=("RIB entries with that reason", "rows", "1. Cleaning"),
)

document(
    "paths", PATHS,
    "The representative path of every (VP, origin, address family) triple.",
    "paths/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    **_VP,
    dest_asn=("origin AS: last AS of the cleaned path", "ASN", "4. Representative path"),
    afi=("address family: 4 or 6", "-", "4. Representative path"),
    path=("representative cleaned path (prepending removed), VP first, origin last", "list of ASNs",
          "2. Prepending removal; 4. Representative path"),
    observations=("observations of the triple, any path", "observations", "4. Representative path"),
    path_observations=("observations with the representative path", "observations", "4. Representative path"),
    stability=("path_observations / observations", "fraction 0-1", "4. Representative path"),
    prefixes=("distinct prefixes among the representative path's observations", "prefixes", "4. Representative path"),
    snapshots=("distinct snapshots among the representative path's observations", "snapshots", "4. Representative path"),
)

document(
    "vps", VPS,
    "Every vantage point of the month: sessions, coverage, class and its congruency.",
    "vps/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    **_VP,
    sessions_v4=("distinct IPv4 peer IPs of the VP, ascending (string order)", "-", "3. Vantage points"),
    sessions_v6=("distinct IPv6 peer IPs of the VP, ascending (string order)", "-", "3. Vantage points"),
    origins_v4=("distinct origins the VP has a cleaned IPv4 path to", "ASes", "5. Coverage"),
    origins_v6=("distinct origins the VP has a cleaned IPv6 path to", "ASes", "5. Coverage"),
    coverage_v4=("origins_v4 / distinct origins of all cleaned IPv4 paths of the month", "fraction 0-1", "5. Coverage"),
    coverage_v6=("origins_v6 / distinct origins of all cleaned IPv6 paths of the month", "fraction 0-1", "5. Coverage"),
    dual_stacked=("the VP has cleaned paths in both address families", "-", "5. Coverage"),
    default_free=("dual-stacked and both coverages >= min_coverage", "-", "5. Coverage"),
    vp_class=("transit if the VP's AS is an intermediate AS of any cleaned path, else edge", "-", "8. VP class"),
    pairs=("pairs of the VP", "pairs", "7. Pairs"),
    noncongruent_pairs=("pairs of the VP whose IPv4 and IPv6 paths differ", "pairs", "7. Pairs"),
    noncongruent_fraction=("noncongruent_pairs / pairs; null when pairs = 0", "fraction 0-1", "7. Pairs"),
)

document(
    "pairs", PAIRS,
    "One row per (default-free VP, dual-stacked destination) with a path in both families.",
    "pairs/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    **_VP,
    dest_asn=("dual-stacked destination (origin) AS", "ASN", "6. Dual-stacked destinations"),
    v4_path=("representative IPv4 path", "list of ASNs", "4. Representative path"),
    v6_path=("representative IPv6 path", "list of ASNs", "4. Representative path"),
    congruent=("the two paths are identical", "-", "7. Pairs"),
    hops_v4=("ASes on the IPv4 path - 1", "hops", "7. Pairs"),
    hops_v6=("ASes on the IPv6 path - 1", "hops", "7. Pairs"),
    shared_asns=("ASes on both paths other than the VP and the destination, ascending", "list of ASNs", "7. Pairs"),
    shared_adjacent=("every shared AS is second or second-to-last on both paths; null when none shared",
                     "-", "7. Pairs"),
    non_adopters=("intermediate ASes of the IPv4 path seen on no cleaned IPv6 path of the month",
                  "list of ASNs", "7. Pairs"),
    edit_distance=("Levenshtein distance between the two ASN sequences", "edits", "7. Pairs"),
)

_MS = "7. Pairs; Outputs: month_summary"
document(
    "month_summary", MONTH_SUMMARY,
    "One row per month: the study's section III figures over the month's pairs.",
    "month_summary/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    vps=("VPs seen", "VPs", "3. Vantage points"),
    vps_dual_stacked=("dual-stacked VPs", "VPs", "5. Coverage"),
    vps_default_free=("default-free VPs", "VPs", "5. Coverage"),
    vps_with_pairs=("VPs with at least one pair", "VPs", _MS),
    destinations=("dual-stacked destinations", "ASes", "6. Dual-stacked destinations"),
    pairs=("pairs", "pairs", _MS),
    noncongruent_pairs=("non-congruent pairs", "pairs", _MS),
    noncongruent_fraction=("noncongruent_pairs / pairs", "fraction 0-1", _MS),
    congruent_1hop=("congruent pairs with 1 hop", "pairs", _MS),
    congruent_2hop=("congruent pairs with 2 hops", "pairs", _MS),
    congruent_3plus_hops=("congruent pairs with 3 or more hops", "pairs", _MS),
    noncongruent_shared_0=("non-congruent pairs sharing no AS", "pairs", _MS),
    noncongruent_shared_1=("non-congruent pairs sharing exactly one AS", "pairs", _MS),
    noncongruent_shared_2plus=("non-congruent pairs sharing two or more ASes", "pairs", _MS),
    noncongruent_with_shared=("non-congruent pairs sharing at least one AS", "pairs", _MS),
    shared_all_adjacent=("of those, pairs whose shared ASes are all adjacent", "pairs", _MS),
    shared_all_adjacent_fraction=("shared_all_adjacent / noncongruent_with_shared", "fraction 0-1", _MS),
    noncongruent_with_non_adopter=("non-congruent pairs with at least one IPv6 non-adopter", "pairs", _MS),
    non_adopter_fraction=("noncongruent_with_non_adopter / noncongruent_pairs", "fraction 0-1", _MS),
    vp_noncongruent_min=("minimum per-VP non-congruent fraction (VPs with pairs)", "fraction 0-1", _MS),
    vp_noncongruent_q1=("first quartile of the per-VP fraction (linear interpolation)", "fraction 0-1", _MS),
    vp_noncongruent_median=("median of the per-VP fraction", "fraction 0-1", _MS),
    vp_noncongruent_q3=("third quartile of the per-VP fraction (linear interpolation)", "fraction 0-1", _MS),
    vp_noncongruent_max=("maximum per-VP non-congruent fraction", "fraction 0-1", _MS),
)

_DV = "7b. Divergence"
document(
    "divergence", DIVERGENCE,
    "One row per non-congruent pair: where its IPv4 and IPv6 paths part and rejoin, and the ASes on one path only.",
    "divergence/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    **_VP,
    dest_asn=("destination AS", "ASN", "6. Dual-stacked destinations"),
    common_prefix=("ASes both paths share from their start (>= 1: the VP)", "ASes", _DV),
    common_suffix=("ASes both paths share at their end (>= 1: the destination)", "ASes", _DV),
    part_asn=("last AS before the paths part (the VP when they part at once)", "ASN", _DV),
    rejoin_asn=("first AS of their shared end (the destination when they rejoin only there)", "ASN", _DV),
    only_v4=("ASes on the IPv4 path only, ascending", "list of ASNs", _DV),
    only_v6=("ASes on the IPv6 path only, ascending", "list of ASNs", _DV),
)

_SN = "Sensitivity (METHOD.md; pipeline/sensitivity.py)"
document(
    "sensitivity", SENSITIVITY,
    "The month's month_summary figures recomputed under each variant of each open choice of the method, "
    "one choice at a time against the month's own parameters (variant 'default').",
    "sensitivity/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    choice=("the open choice varied: min_coverage, first_as_rule, reserved_asns, grouping, representative, comparison, snapshots, as_set, destination", "-", _SN),
    variant=("its value in this row; 'default' where it equals the month's own parameters", "-", _SN),
    **{k: (f"as month_summary.{k}, under this variant", *DOCS["month_summary"].columns[k][1:2], _SN)
       for k in MONTH_SUMMARY.names if k != "month"},
)

_PV = "compare: publishing (pipeline/provenance.py)"
document(
    "provenance", PROVENANCE,
    "One row per published month: the snapshots and method that produced it, published with its tables.",
    "provenance/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    published_at=("when the month's tables were staged for publishing (ISO 8601, UTC; text: the same on both engines' files)",
                  "YYYY-MM-DDTHH:MM:SSZ", _PV),
    engine=("compare engine: duckdb or spark", "-", _PV),
    project_version=("bgp-congruency version: git describe of the checkout, else the package version", "-", _PV),
    method_version=("METHOD.md's version and the sha256 (12 hex digits) of its text", "-", _PV),
    min_coverage=("default-free threshold per AFI used", "fraction 0-1", "5. Coverage"),
    method_params=("every MethodParams value (min_coverage, reserved_asns, groups) as JSON", "JSON", _PV),
    collectors=("collectors with at least one snapshot used", "list of names", "ingest: manifest"),
    snapshots_used=("slot keys (collector@YYYYMMDDTHHMM) of the snapshots compared", "list of slots", "ingest: manifest"),
    snapshots_missing=("slots of active collectors the archive had no dump for", "list of slots", "ingest: manifest"),
    snapshots_failed=("slots whose download or decode failed", "list of slots", "ingest: manifest"),
    snapshots_inactive=("slots of listed collectors not running then (catalogue lifetimes)", "slots", "ingest: catalogue"),
    entries=("RIB entries compared (both families)", "rows", "ingest: decode"),
    input_files=("archive URL or path of each snapshot used, in snapshots_used order", "list of URLs", "ingest: manifest"),
    input_sha256=("SHA-256 of each input file, in the same order", "list of hex", "ingest: framing check"),
    coverage_policy=("the coverage policy and its decision for the month, as JSON (ingest/policy.py); "
                     "null when the compare ran alone", "JSON", "ingest: coverage policy"),
)

_TR = "Across months: transitions"
document(
    "transitions", TRANSITIONS,
    "Pairs congruent in the month that were not a congruent pair the month before.",
    "transitions/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    **_VP,
    dest_asn=("destination AS", "ASN", _TR),
    kind=("existing_pair | new_ipv6_destination | new_pair", "-", _TR),
    v4_path=("IPv4 path this month", "list of ASNs", _TR),
    v6_path=("IPv6 path this month", "list of ASNs", _TR),
    prev_v4_path=("IPv4 path the month before (existing_pair only)", "list of ASNs", _TR),
    prev_v6_path=("IPv6 path the month before (existing_pair only)", "list of ASNs", _TR),
)

_REL = "relationships (relationships/METHOD.md)"
document(
    "as_relationships", AS_RELATIONSHIPS,
    "One row per AS link of the month's paths and address family: its business relationship, inferred from "
    "that family's paths alone (AS-Rank's steps), and the evidence.",
    "as_relationships/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    afi=("address family whose paths show the link: 4 or 6", "-", _REL),
    as1=("the provider for p2c; the lower ASN for p2p and s2s", "ASN", _REL),
    as2=("the customer for p2c; the higher ASN for p2p and s2s", "ASN", _REL),
    rel=("p2c (as1 is a provider of as2) | p2p (peers) | s2s (siblings; never inferred from paths alone: "
         "CAIDA's serial-1 -1 and 0 as words)", "-", _REL),
    paths=("distinct (VP AS, path) items of the family with the two ASes next to each other", "paths", _REL),
    vps=("VP ASes whose paths show the link", "VPs", _REL),
    step=("the step that decided it: clique | top-down | partial-vp | larger-customer | provider-less | "
          "clique-stub | stub-providers | fold-p2p | rest-p2p", "-", _REL),
    decided=("whether valley-free evidence decided the link: false for rest-p2p and for the peerings the "
             "provider-less step assumes, whose rel is p2p by default (relationships/METHOD.md, decided and "
             "undecided links); NULL in a month published before the column", "-", _REL),
    evidence=("which of the two ASes the family's paths show passing the other's routes on: both-carry | "
              "as1-carries | as2-carries | vp-link-only (neither: only a VP's first hop). For p2c, as1-carries "
              "or both-carry is the view from above; as2-carries alone, only from below, which a peering shows "
              "too (relationships/METHOD.md, evidence levels)", "-", _REL),
)

document(
    "prefix_origins", PREFIX_ORIGINS,
    "One row per (address family, prefix, origin AS) of the month's RIB entries: what the longest-prefix match "
    "of addresses reads (advise, export, trace), one small table instead of every entry.",
    "prefix_origins/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    afi=("address family: 4 or 6", "-", "ingest: decode"),
    prefix=("announced prefix, as in rib_entries", "-", "ingest: decode"),
    origin_asn=("last ASN of the path (entries whose path ends in a set or is empty are left out)", "ASN",
                "ingest: decode"),
    entries=("RIB entries of the month with that prefix and origin", "rows", "selector/origins.py"),
)

_SEL = "path selector (selector/rules.py)"
document(
    "hints", HINTS,
    "Path selector advice for every pair of the month: class, confidence and tunnel settings.",
    "hints/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    source_asn=("AS the traffic leaves from (the VP's ASN in the table)", "ASN", _SEL),
    vp_group=("collector group of the VP whose paths are used (the source or its proxy)", "-", "3. Vantage points"),
    vp_asn=("ASN of the VP whose paths are used", "ASN", "3. Vantage points"),
    via_proxy=("true when the source is not a VP and other VPs' paths or pairs stand in (selector/rules.py rules 1-7)",
               "-", _SEL),
    proxies=("VPs standing in for a source that is no VP: those whose path to the destination crosses it; for a stub "
             "those showing its neighbours' routes; for the destination and one-neighbour rules those whose pairs show "
             "the class; else those seen right after it", "list of ASNs", _SEL),
    dest_asn=("destination AS (origin of the IPv4 address when a host was asked)", "ASN", "6. Dual-stacked destinations"),
    dest_asn_v6=("destination AS of the IPv6 path (differs from dest_asn only for split-origin hosts)", "ASN", _SEL),
    via_v4=("the source's neighbour the IPv4 path leaves through (its second AS); with the source's own evidence "
            "(--via4, traces) the neighbour rules 8-11 chose; null without a path", "ASN", _SEL),
    via_v6=("the same for the IPv6 path", "ASN", _SEL),
    query=("the destination as asked (ASN, prefix or address); null in the table", "-", _SEL),
    endpoint=("candidate tunnel endpoint name (--endpoints); null otherwise", "-", _SEL),
    addr_v4=("IPv4 address asked for; null otherwise", "-", _SEL),
    addr_v6=("IPv6 address asked for; null otherwise", "-", _SEL),
    prefix_v4=("longest month prefix covering the IPv4 address or prefix asked for", "-", _SEL + ": longest-prefix match"),
    prefix_v6=("longest month prefix covering the IPv6 address or prefix asked for", "-", _SEL + ": longest-prefix match"),
    v4_path=("representative IPv4 AS path from the source (a proxy's path from the source on, or prefixed with it)", "list of ASNs", "4. Representative path"),
    v6_path=("representative IPv6 AS path from the source", "list of ASNs", "4. Representative path"),
    hint_class=("disjoint | shared-edge | shared-core | congruent | unknown", "-", _SEL + ": class"),
    reason=("why the class is unknown; null otherwise", "-", _SEL),
    shared_asns=("ASes on both paths other than the ends, ascending", "list of ASNs", "7. Pairs"),
    stability_v4=("stability of the IPv4 representative path", "fraction 0-1", "4. Representative path"),
    stability_v6=("stability of the IPv6 representative path", "fraction 0-1", "4. Representative path"),
    snapshots=("the fewer of the two paths' snapshot counts", "snapshots", "4. Representative path"),
    confidence=("min stability x snapshot share x proxy factor (0.5) x proxy agreement; for the destination and "
                "one-neighbour rules the share of pairs showing the class; once the month is evaluated, a proxy "
                "answer's measured confidence (selector/calibration.py); 0 when unknown",
                "fraction 0-1", _SEL + ": confidence"),
    primary_afi=("family kept when only one is used: more stable, then shorter, IPv4 on ties", "4 | 6", _SEL),
    mode=("aggregate | backup | single-path", "-", _SEL + ": advice"),
    path_manager=("Linux MPTCP in-kernel path manager endpoint flags to use", "-", _SEL + ": advice"),
    congestion_control=("congestion control advice true for upstream Linux MPTCP", "-", _SEL + ": advice"),
    transport=("MPTCP (TCP) and/or MPT (GRE-in-UDP, TCP and UDP)", "-", _SEL + ": advice"),
    rationale=("one sentence: why this mode", "-", _SEL + ": advice"),
    mptcp_flags_v4=("`ip mptcp endpoint` flags for the local IPv4 address; null: no endpoint", "-", _SEL + ": advice"),
    mptcp_flags_v6=("`ip mptcp endpoint` flags for the local IPv6 address; null: no endpoint", "-", _SEL + ": advice"),
    mpt_weight_v4=("MPT weight_out of the IPv4 path; null: no path", "weight", _SEL + ": advice"),
    mpt_weight_v6=("MPT weight_out of the IPv6 path; null: no path", "weight", _SEL + ": advice"),
    mpt_status_v4=("MPT status of the IPv4 path: 0 in use, 255 disabled (backup)", "MPT status code", _SEL + ": advice"),
    mpt_status_v6=("MPT status of the IPv6 path: 0 in use, 255 disabled (backup)", "MPT status code", _SEL + ": advice"),
    notes=("caveats of this hint: proxy use, split origins, several origins of a prefix", "-", _SEL),
    caveat=("AS-level disjointness is a lower bound (the same sentence on every hint)", "-", _SEL),
)

_TR = "congruency trace (dataplane/)"
document(
    "traces", TRACES,
    "Traceroutes toward a destination checked against the month's BGP paths: one row per run of "
    "`congruency trace --store` and family.",
    "traces/month=YYYY-MM/PUBLISH/*.parquet",
    month=("the month whose RIB prefixes and paths the traces were checked against", "YYYY-MM", _TR),
    traced_at=("when the run was stored", "UTC time", _TR),
    source_asn=("the traces' source AS (--from, else the AS of their source address)", "ASN", _TR),
    destination=("the destination address traced in this family", "IP address", _TR),
    afi=("address family: 4 or 6", "-", _TR),
    dest_asn=("AS of the destination address by longest-prefix match; null when no prefix covers it", "ASN", _TR),
    traces=("traceroutes of this family read", "traces", _TR),
    methods=("probing methods of those traces (e.g. icmp-paris)", "-", _TR),
    stable=("a hop sequence holds at least 70% of the traces", "-", _TR),
    stable_share=("share of the traces that hold the most common hop sequence", "fraction 0-1", _TR),
    hop_addresses=("per TTL of that sequence, its addresses joined by '|' (load-balanced hop), '' for no answer", "-", _TR),
    hop_asns=("per TTL, the AS of the hop (null: no answer, private, unmapped or several ASes)", "list of ASNs", _TR),
    as_path=("the source AS and the hops' ASes in order, repeats folded", "list of ASNs", _TR),
    bgp_path=("the path `advise` gives for the source and destination in this family; null without one", "list of ASNs", _TR),
    agreement=("as_path against bgp_path: equal, consistent (in order, some ASes unseen), differs, no BGP path, no stable path", "-", _TR),
    as_level=("IPv4 against IPv6 stable AS paths, as the selector classes a pair (congruent, disjoint, shared-edge, "
              "shared-core); null unless both reach the destination", "-", _TR),
    shared_asns=("ASes on both families' AS paths besides the ends", "list of ASNs", _TR),
    shared_routers=("routers (alias sets) with an address on both families' paths; null without both", "routers", _TR),
    aliases_known=("alias data was given (--aliases); without it shared_routers is a lower bound", "-", _TR),
)

_EV = "congruency evaluate (selector/evaluate.py)"
document(
    "selector_eval", SELECTOR_EVAL,
    "The path selector held out: for every pair, the answer for the pair's VP AS with all of that AS's VPs "
    "hidden, against the pair's own observation; in a generated month also ASes that are no VP, against the "
    "generator's true paths.",
    "selector_eval/month=YYYY-MM/PUBLISH/*.parquet",
    month=_MONTH,
    **_VP,
    dest_asn=("the pair's destination AS", "ASN", "6. Dual-stacked destinations"),
    rule=("where the answer came from: through (a VP whose path crosses the source), provider (a stub: itself in "
          "front of its neighbours' routes), one-neighbour (a stub behind one AS, the same in both families: that "
          "AS's class, shared next to the source; no path), destination (the class most pairs to the destination "
          "show; no path), "
          "upstream (a VP the source hands traffic to, the source put in front), none (nothing stands in); with the "
          "source's evidence revealed (reveal): first-hop (its neighbour toward the destination known, or its one "
          "neighbour in the family: that neighbour's route), through (VPs' paths cross it: its own route), neighbours (its neighbours known: "
          "Gao-Rexford preference among them), inferred (the neighbour's route not observed: taken one AS further "
          "from the month's relationships, rule 11), destination (a family with no path: rule 6, measured and off "
          "in the product)", "-", _EV),
    proxies=("proxy VPs the answer considered (destination, one-neighbour: the VP ASes whose pairs show its class)",
             "VPs", _EV),
    observed_class=("the class of the pair's own paths (congruent, disjoint, shared-edge, shared-core)", "-", "7. Pairs"),
    predicted_class=("the selector's class with the VP held out (unknown: no answer)", "-", _EV),
    correct=("predicted_class = observed_class; null when the answer is unknown", "-", _EV),
    confidence=("the confidence the selector states for its answer", "fraction 0-1", _EV),
    observed_mode=("the advice's mode for the observed class", "-", _EV),
    predicted_mode=("the advice's mode of the answer", "-", _EV),
    v4_exact=("the predicted IPv4 path equals the observed one; null without a predicted path", "-", _EV),
    v6_exact=("the predicted IPv6 path equals the observed one; null without a predicted path", "-", _EV),
    v4_hop_distance=("edit distance between the predicted and the observed IPv4 path; null without one", "AS hops", _EV),
    v6_hop_distance=("edit distance between the predicted and the observed IPv6 path; null without one", "AS hops", _EV),
    kind=("vp: a VP AS held out, against its own pair; stub or transit: an AS that is no VP of a generated month, "
          "against the generator's true paths (congruency evaluate --truth); vp_group is null for those", "-", _EV),
    calibrated_confidence=("the measured confidence of such an answer (selector/calibration.py), fitted on the "
                           "month's other sources' rows of the same reveal only; null for unknown answers and rules "
                           "with too few answers", "fraction 0-1", _EV),
    reveal=("what the selector was told of the source (congruency evaluate --reveal): none (today's rules, only the "
            "month), first-hop (its neighbour toward each destination), neighbours (the set of its neighbours per "
            "family); null in rows from before it existed: none", "-", _EV),
)
