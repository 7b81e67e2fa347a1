"""The inference's evidence (relationships/infer.Evidence) in SQL, from a relation holding a
month's `paths` rows: DuckDB aggregates the links, triplets and reach (spilling under the
connection's memory limit), and only those aggregates reach Python. Two passes per family,
as the method reads the paths twice: every path for the clique, then the paths the clique
does not show poisoned (relationships/METHOD.md). `infer.evidence_of` is the same in pure
Python; tests/test_relationships.py holds the two equal."""
from __future__ import annotations

import gc
from contextlib import contextmanager

from bgp_congruency.common.params import RelationshipParams
from bgp_congruency.relationships.infer import Evidence, Graph, Relationship, Trip, find_clique, infer

#: Rows per Arrow batch when the aggregates are read into Python.
BATCH_ROWS = 200_000


def _in(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in sorted(values)) + "]::BIGINT[]"


def _items_sql(con, relation: str, afi: int, route_servers) -> str:
    """The distinct (VP AS, path) items of one family, route servers taken out (infer.sanitise).
    The compare's paths hold no reserved ASN and no loop (congruency/METHOD.md step 1, with the
    month's own ranges), so neither is looked for again: those two checks were most of the
    step (5 of 6.6 s for 5.1M IPv4 paths of a generated month). Only the route servers the
    family's paths hold are looked for, in the paths that hold one (a list_filter over 172
    route servers for each of 9M paths was most of the step at synthetic scale 50)."""
    present = [a for (a,) in con.execute(
        f"SELECT DISTINCT a FROM (SELECT unnest(path) AS a FROM {relation} WHERE afi = {int(afi)}) "
        f"WHERE a IN (SELECT unnest({_in(route_servers)}))").fetchall()] if route_servers else []
    path = (f"CASE WHEN list_has_any(path, {_in(present)}) THEN list_filter(path, a -> NOT list_contains("
            f"{_in(present)}, a)) ELSE path END") if present else "path"
    return f"""
        SELECT DISTINCT vp_asn, path FROM (
            SELECT CAST(vp_asn AS BIGINT) AS vp_asn, CAST({path} AS BIGINT[]) AS path FROM {relation}
            WHERE afi = {int(afi)})
        WHERE len(path) > 0"""


def _drop_poisoned(con, clique) -> int:
    """Delete the items of `rel_items` whose path the clique poisons (infer.poisoned: a member
    after a run of non-members after a member, that is, the members' positions on the path
    are not one run); returns how many. Per path, the members' positions (an IN over the
    members' literals inside one lambda): at synthetic scale 50, 1.13 and 0.34 s for the
    IPv4 and IPv6 items against 1.76 and 0.57 s unnesting every path and joining it to the
    members (2026-11-30); list_contains against a member list, or a regex, took longer."""
    if not clique:
        return 0
    members = ", ".join(str(int(m)) for m in sorted(clique))
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE rel_poisoned AS
        SELECT r FROM (SELECT rowid AS r, list_filter(list_transform(path, lambda a, i: CASE WHEN a IN ({members})
                                                                                          THEN i END),
                                                      lambda x: x IS NOT NULL) AS pos FROM rel_items)
        WHERE list_max(pos) - list_min(pos) + 1 > len(pos)""")
    try:
        n = con.execute("SELECT count(*) FROM rel_poisoned").fetchone()[0]
        if n:
            con.execute("DELETE FROM rel_items WHERE rowid IN (SELECT r FROM rel_poisoned)")
        return n
    finally:
        con.execute("DROP TABLE IF EXISTS rel_poisoned")


def evidence(con, relation: str, afi: int, route_servers, clique=None) -> Evidence:
    """One family's Evidence from the compare's paths in `relation` (a table or a
    read_parquet(...)); with `clique`, the paths it poisons left out."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE rel_items AS {_items_sql(con, relation, afi, route_servers)}")
    try:
        _drop_poisoned(con, clique)
        return _aggregate(con)
    finally:
        con.execute("DROP TABLE IF EXISTS rel_items")


#: Every item's triplets, one row each: its shifted slices unnested side by side, with the
#: item's destination and length (the triplets _aggregate counts and _count_dests looks up).
_TRIPLETS = """SELECT unnest(path[1:-3]) AS near, unnest(path[2:-2]) AS mid, unnest(path[3:]) AS far,
                      path[-1] AS dest, len(path) AS n FROM rel_items"""


def _aggregate(con, dests: bool = True) -> Evidence:
    """The Evidence of the items in `rel_items`: links, triplets and reach. A path's pairs and
    triplets are its shifted slices unnested side by side; a triplet ends at the origin when
    its far AS is the path's last (the paths have no loops). Without `dests`, the triplets'
    destinations are left uncounted (None; _count_dests counts those the clique search reads)."""
    ev = Evidence()
    for a, b, n, v in con.execute("""
            SELECT least(a, b), greatest(a, b), count(*), count(DISTINCT vp_asn)
            FROM (SELECT vp_asn, unnest(path[1:-2]) AS a, unnest(path[2:]) AS b FROM rel_items)
            GROUP BY ALL""").fetchall():
        ev.links[(int(a), int(b))] = (int(n), int(v))
    reader = con.execute(f"""
        SELECT near, mid, far, count(*) AS paths, {"count(DISTINCT dest)" if dests else "NULL"} AS dests,
               count(*) FILTER (WHERE far = dest) AS ends, count(*) FILTER (WHERE n = 3) AS whole
        FROM ({_TRIPLETS})
        GROUP BY ALL""").to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        cols = [batch.column(i).to_pylist() for i in range(7)]
        ev.trips.update(zip(zip(*cols[:3]), map(Trip, *cols[3:])))
    ev.reach = {int(v): int(n) for v, n in con.execute(
        "SELECT vp_asn, count(DISTINCT path[-1]) FROM rel_items GROUP BY ALL").fetchall()}
    return ev


def _count_dests(con, ev: Evidence, trips: list[tuple[int, int, int]]) -> None:
    """infer.CountDests over the items in `rel_items`: the distinct destinations of these
    triplets, into `ev`. Every path's triplets are unnested and joined to them: 0.52 s for
    102 triplets over the 9.0M IPv4 items of synthetic scale 50, against 2.32 s unnesting
    only the paths through one of their middle ASes (list_has_any is the cost)."""
    if not trips:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE rel_trips AS SELECT unnest($n::BIGINT[]) AS near, "
                "unnest($m::BIGINT[]) AS mid, unnest($f::BIGINT[]) AS far",
                {"n": [k[0] for k in trips], "m": [k[1] for k in trips], "f": [k[2] for k in trips]})
    try:
        for near, mid, far, n in con.execute(f"""
                SELECT near, mid, far, count(DISTINCT dest) FROM ({_TRIPLETS}) t
                SEMI JOIN rel_trips k USING (near, mid, far)
                GROUP BY ALL""").fetchall():
            ev.trips[(near, mid, far)].dests = n
    finally:
        con.execute("DROP TABLE IF EXISTS rel_trips")


@contextmanager
def _no_cycle_collection():
    """The cyclic garbage collector paused: the evidence and its graph are millions of
    tuples, sets and Trips, none in a cycle, and each collection walked those made so far
    again (the 549,368 IPv4 triplets of synthetic scale 50 read into Trips in 0.91-1.30 s
    with it, 0.26-0.27 s without, 2026-12-02)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def infer_family(con, relation: str, afi: int, p: RelationshipParams) -> tuple[frozenset[int], list[Relationship]]:
    """(the clique, the relationships) of one family of the paths in `relation`: the clique
    from every path, the steps on the paths it does not show poisoned. The items are made
    once; the evidence is computed again only when the clique poisons one of them. The
    triplets' destinations are counted only where the clique search reads them."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE rel_items AS {_items_sql(con, relation, afi, p.route_servers)}")
    try:
        with _no_cycle_collection():
            g = Graph(_aggregate(con, dests=False))
            clique = find_clique(g, p, p.missing(afi), lambda trips: _count_dests(con, g.ev, trips))
            if _drop_poisoned(con, clique):
                g = Graph(_aggregate(con, dests=False))
            return infer(g.ev, p, afi, clique, g)
    finally:
        con.execute("DROP TABLE IF EXISTS rel_items")
