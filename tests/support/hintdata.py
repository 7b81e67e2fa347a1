"""A published month for the path-selector tests whose relationships are known by
construction, computed by the pure-Python reference (congruency/reference.py) and written in
the published layout (no Spark needed).
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from bgp_congruency.common.params import MethodParams, load_groups
from bgp_congruency.common.tables import TABLES
from bgp_congruency.congruency import reference

MONTH = "2026-03"
P0 = MethodParams(min_coverage=0.0, groups=load_groups())
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
T1 = datetime(2026, 3, 2, tzinfo=timezone.utc)


def v4(origin: int) -> str:
    return f"10.{origin // 256 % 256}.{origin % 256}.0/24"


def v6(origin: int) -> str:
    return f"2001:db8:{origin:x}::/48"


#: (vp, origin) -> (IPv4 path, IPv6 path or None), and the class each must get.
PATHS = {
    (10, 100): ([10, 1, 100], [10, 2, 100]),              # no shared AS
    (10, 200): ([10, 1, 3, 200], [10, 1, 4, 200]),        # AS1 second on both paths
    (10, 300): ([10, 1, 5, 6, 300], [10, 2, 5, 7, 300]),  # AS5 mid-path on both
    (10, 400): ([10, 1, 400], [10, 1, 400]),              # identical
    (10, 500): ([10, 1, 500], None),                      # no IPv6 path
    (10, 600): ([10, 8, 600], [10, 9, 8, 11, 600]),       # AS8 adjacent on IPv4 only
    (20, 100): ([20, 1, 100], [20, 2, 100]),
    (20, 700): ([20, 30, 700], [20, 30, 700]),            # AS30 (no VP) right after VP 20
    (20, 400): ([20, 2, 400], [20, 2, 400]),
    (20, 300): ([20, 5, 6, 9, 300], [20, 5, 7, 9, 300]),  # AS5 (no VP) after VP 20, as after VP 10
    (10, 800): ([10, 40, 20, 800], None),                 # AS40 (no VP) hands traffic to VP 20
}
CLASSES = {
    (10, 100): "disjoint", (10, 200): "shared-edge", (10, 300): "shared-core", (10, 400): "congruent",
    (10, 600): "shared-core", (20, 100): "disjoint", (20, 700): "congruent", (20, 400): "congruent",
    (20, 300): "shared-edge",
}


def row(peer, afi, path, prefix, t):
    ip = f"192.0.2.{peer}" if afi == 4 else f"2001:db8::{peer:x}"
    return dict(collector="rrc00", project="test", snapshot_time=t, peer_asn=peer, peer_ip=ip, afi=afi,
                prefix=prefix, as_path=list(path), has_as_set=False, as_path_raw=None,
                origin_asn=path[-1], source_file="hand")


def synthetic_rows() -> list[dict]:
    rows = []
    for (vp, origin), (p4, p6) in PATHS.items():
        for t in (T0, T1):
            rows.append(row(vp, 4, p4, v4(origin), t))
            if p6:
                rows.append(row(vp, 6, p6, v6(origin), t))
    # A second IPv4 prefix of AS100 seen once over another path: stability 2/3 for (10, 100, 4).
    rows.append(row(10, 4, [10, 3, 100], "10.1.100.0/24", T1))
    # A covering /16 from AS200 (it holds AS100's 10.0.100.0/24).
    rows += [row(10, 4, [10, 1, 3, 200], "10.0.0.0/16", t) for t in (T0, T1)]
    # A prefix with two origins: AS300 on two entries, AS400 on one.
    rows += [row(10, 4, [10, 1, 5, 6, 300], "10.9.0.0/24", t) for t in (T0, T1)]
    rows.append(row(20, 4, [20, 2, 400], "10.9.0.0/24", T0))
    return rows


def write_entries(data: Path, month: str, rows: list[dict]) -> None:
    """The rows (of collector rrc00) as the month's routes, as ingest makes them."""
    from tests.support.month import write_entries as write

    write(data, month, rows)


def write_tables(data: Path, month: str, tables: dict[str, list[dict]]) -> None:
    """The reference's tables, published as the job publishes them."""
    from tests.support.month import publish_rows

    publish_rows(data, month, {name: tables[name] for name in TABLES})


def publish_synthetic(data: Path, month: str = MONTH, extra_rows: list[dict] = ()) -> dict[str, list[dict]]:
    """The month of synthetic_rows() (and `extra_rows`, e.g. router prefixes) published in `data`."""
    rows = synthetic_rows() + list(extra_rows)
    write_entries(data, month, rows)
    tables = reference.compute_month(rows, month, P0)
    write_tables(data, month, tables)
    return tables
