"""The `traces` table: `congruency trace --store` keeps a run's answer with its month, one row
per family, so queries join it with `pairs` and `hints` (docs/SCHEMA.md). Each run adds its
rows in a catalog commit of its own (common/published.write_rows, appended): a reader sees a
run's rows whole or not at all, and runs never overwrite each other."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from bgp_congruency.common import layout
from bgp_congruency.common.tables import TRACES
from bgp_congruency.lake import published


def rows(answer: dict, traced_at: datetime) -> list[dict]:
    """The answer of dataplane.analysis.analyse as the table's rows (one per family)."""
    c = answer["comparison"]
    routers = c["router_level"]
    out = []
    for fam, f in sorted(answer["families"].items()):
        out.append({
            "month": answer["month"], "traced_at": traced_at, "source_asn": answer["source_asn"],
            "destination": f["destination"], "afi": int(fam), "dest_asn": f["destination_asn"],
            "traces": f["traces"], "methods": f["methods"], "stable": f["stable"], "stable_share": f["stable_share"],
            "hop_addresses": ["|".join(h["addresses"]) for h in f["hops"]],
            "hop_asns": [h["asn"] for h in f["hops"]], "as_path": f["as_path"], "bgp_path": f["bgp_path"],
            "agreement": f["agreement"], "as_level": c["as_level"], "shared_asns": c["shared_asns"],
            "shared_routers": len(routers["shared_routers"]) if routers else None,
            "aliases_known": routers["aliases_known"] if routers else None})
    return out


def store(data_dir, answer: dict) -> Path:
    """Add the answer's rows to the month's `traces` table; returns the file written."""
    root = layout.local(data_dir, "congruency trace --store")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    return published.write_rows(root, "traces", answer["month"], rows(answer, now), TRACES, replace=False)
