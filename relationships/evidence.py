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


def _items_sql(relation: str, afi: int, route_servers, method: MethodParams, clique=None) -> str:
    """The distinct (VP AS, path) items of one family: route servers taken out, paths with a
    reserved ASN or a loop left out (infer.sanitise), and with `clique`, the poisoned ones
    (infer.poisoned: a member after a gap after a member)."""
    reserved = " OR ".join(f"a BETWEEN {lo} AND {hi}" for lo, hi in method.reserved_asns) or "false"
    rs = f"list_filter(path, a -> NOT list_contains({_in(route_servers)}, a))" if route_servers else "path"
    poison = ""
    if clique:
        # 1 where a member, 0 elsewhere; a member after a run of non-members after a member
        # shows as "10+1" in the string of flags.
        flags = f"array_to_string(list_transform(path, a -> CASE WHEN list_contains({_in(clique)}, a) THEN '1' ELSE '0' END), '')"
        poison = f" AND NOT regexp_matches({flags}, '10+1')"
    return f"""
        SELECT DISTINCT vp_asn, path FROM (
            SELECT CAST(vp_asn AS BIGINT) AS vp_asn, CAST({rs} AS BIGINT[]) AS path FROM {relation} WHERE afi = {int(afi)})
        WHERE len(path) > 0 AND len(list_distinct(path)) = len(path)
          AND NOT list_bool_or(list_transform(path, a -> {reserved})){poison}"""


def evidence(con, relation: str, afi: int, route_servers, method: MethodParams, clique=None) -> Evidence:
    """One family's Evidence from the paths in `relation` (a table or a read_parquet(...))."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE rel_items AS {_items_sql(relation, afi, route_servers, method, clique)}")
    ev = Evidence()
    try:
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
    finally:
        con.execute("DROP TABLE IF EXISTS rel_items")
    return ev


def infer_family(con, relation: str, afi: int, p: RelationshipParams, method: MethodParams
                 ) -> tuple[frozenset[int], list[Relationship]]:
    """(the clique, the relationships) of one family of the paths in `relation`: the clique
    from every path, the steps on the paths it does not show poisoned."""
    clique = find_clique(Graph(evidence(con, relation, afi, p.route_servers, method)), p, p.missing(afi))
    return infer(evidence(con, relation, afi, p.route_servers, method, clique), p, afi, clique)
