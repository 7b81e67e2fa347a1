"""The inference's evidence (relationships/infer.Evidence) in SQL, from a relation holding a
month's `paths` rows: DuckDB aggregates the links, triplets and reach (spilling under the
connection's memory limit), and only those aggregates reach Python. Two passes per family,
as the method reads the paths twice: every path for the clique, then the paths the clique
does not show poisoned (relationships/METHOD.md). `infer.evidence_of` is the same in pure
Python; tests/test_relationships.py holds the two equal."""
from __future__ import annotations

from bgp_congruency.common.params import MethodParams, RelationshipParams
from bgp_congruency.relationships.infer import Evidence, Graph, Relationship, Trip, find_clique, infer

#: Rows per Arrow batch when the aggregates are read into Python.
BATCH_ROWS = 200_000


def _in(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in sorted(values)) + "]::BIGINT[]"


def _items_sql(con, relation: str, afi: int, route_servers, method: MethodParams) -> str:
    """The distinct (VP AS, path) items of one family: route servers taken out, paths with a
    reserved ASN or a loop left out (infer.sanitise). Only the route servers the family's
    paths hold are looked for, in the paths that hold one (a list_filter over 172 route
    servers for each of 9M paths was most of the step at synthetic scale 50)."""
    reserved = " OR ".join(f"a BETWEEN {lo} AND {hi}" for lo, hi in method.reserved_asns) or "false"
    present = [a for (a,) in con.execute(
        f"SELECT DISTINCT a FROM (SELECT unnest(path) AS a FROM {relation} WHERE afi = {int(afi)}) "
        f"WHERE a IN (SELECT unnest({_in(route_servers)}))").fetchall()] if route_servers else []
    path = (f"CASE WHEN list_has_any(path, {_in(present)}) THEN list_filter(path, a -> NOT list_contains("
            f"{_in(present)}, a)) ELSE path END") if present else "path"
    return f"""
        SELECT DISTINCT vp_asn, path FROM (
            SELECT CAST(vp_asn AS BIGINT) AS vp_asn, CAST({path} AS BIGINT[]) AS path FROM {relation}
            WHERE afi = {int(afi)})
        WHERE len(path) > 0 AND len(list_distinct(path)) = len(path)
          AND NOT list_bool_or(list_transform(path, a -> {reserved}))"""


def _poisoned_sql(clique) -> str:
    """DuckDB SQL, true for an item's path that the clique poisons (infer.poisoned: a member
    after a run of non-members after a member); only a path with two members or more can be."""
    flags = (f"array_to_string(list_transform(path, a -> CASE WHEN list_contains({_in(clique)}, a) THEN '1' "
             "ELSE '0' END), '')")
    return f"(len(list_intersect(path, {_in(clique)})) >= 2 AND regexp_matches({flags}, '10+1'))"


def evidence(con, relation: str, afi: int, route_servers, method: MethodParams, clique=None) -> Evidence:
    """One family's Evidence from the paths in `relation` (a table or a read_parquet(...));
    with `clique`, the paths it poisons left out."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE rel_items AS {_items_sql(con, relation, afi, route_servers, method)}")
    try:
        if clique:
            con.execute(f"DELETE FROM rel_items WHERE {_poisoned_sql(clique)}")
        return _aggregate(con)
    finally:
        con.execute("DROP TABLE IF EXISTS rel_items")


def _aggregate(con) -> Evidence:
    """The Evidence of the items in `rel_items`: links, triplets and reach."""
    ev = Evidence()
    for a, b, n, v in con.execute("""
            SELECT least(path[i - 1], path[i]), greatest(path[i - 1], path[i]), count(*), count(DISTINCT vp_asn)
            FROM (SELECT vp_asn, path, unnest(range(2, len(path) + 1)) AS i FROM rel_items)
            GROUP BY ALL""").fetchall():
        ev.links[(int(a), int(b))] = (int(n), int(v))
    reader = con.execute("""
        SELECT path[i - 1] AS near, path[i] AS mid, path[i + 1] AS far, count(*) AS paths,
               count(DISTINCT path[len(path)]) AS dests,
               count(*) FILTER (WHERE i + 1 = len(path)) AS ends, count(*) FILTER (WHERE len(path) = 3) AS whole
        FROM (SELECT path, unnest(range(2, len(path))) AS i FROM rel_items)
        GROUP BY ALL""").to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        cols = [batch.column(i).to_pylist() for i in range(7)]
        for near, mid, far, n, d, e, w in zip(*cols):
            ev.trips[(near, mid, far)] = Trip(n, d, e, w)
    ev.reach = {int(v): int(n) for v, n in con.execute(
        "SELECT vp_asn, count(DISTINCT path[len(path)]) FROM rel_items GROUP BY ALL").fetchall()}
    return ev


def infer_family(con, relation: str, afi: int, p: RelationshipParams, method: MethodParams
                 ) -> tuple[frozenset[int], list[Relationship]]:
    """(the clique, the relationships) of one family of the paths in `relation`: the clique
    from every path, the steps on the paths it does not show poisoned. The items are made
    once; the evidence is computed again only when the clique poisons one of them."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE rel_items AS {_items_sql(con, relation, afi, p.route_servers, method)}")
    try:
        ev = _aggregate(con)
        clique = find_clique(Graph(ev), p, p.missing(afi))
        if clique and con.execute(f"SELECT count(*) FROM rel_items WHERE {_poisoned_sql(clique)}").fetchone()[0]:
            con.execute(f"DELETE FROM rel_items WHERE {_poisoned_sql(clique)}")
            ev = _aggregate(con)
        return infer(ev, p, afi, clique)
    finally:
        con.execute("DROP TABLE IF EXISTS rel_items")
