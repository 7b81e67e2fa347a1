"""Reading one published month for the selector: which month, its paths and VPs (DuckDB over
the published Parquet), and the longest-prefix match of addresses to origin ASes over the
month's rib_entries."""
from __future__ import annotations

from pathlib import Path

from bgp_congruency.common import duck, layout, routes
from bgp_congruency.common.config import Config
from bgp_congruency.common.duck import quote
from bgp_congruency.common.months import parse_month
from bgp_congruency.common.table_docs import DOCS
from bgp_congruency.lake import published
from bgp_congruency.pipeline.steps import empty_select
from bgp_congruency.selector import rules
from bgp_congruency.selector.question import HintError


def data_root(cfg: Config) -> Path | str:
    """The data dir the selector reads in place: a local folder or s3://."""
    return layout.readable(cfg.data_dir, "the path selector")


def resolve_month(cfg: Config, month: str | None) -> str:
    """The month asked for (it must be published), or the latest published one."""
    if month is None:
        months = published.months(data_root(cfg))
        if not months:
            raise HintError(f"{data_root(cfg)}: no published month (run congruency run for the month first)")
        return months[-1]
    try:
        parse_month(str(month))
        published.require(data_root(cfg), month)
    except ValueError as exc:
        raise HintError(str(exc)) from None
    return month


def table_relation(cfg: Config, table: str, month: str) -> str:
    """The month's rows of a published table, as a relation for FROM: the catalog's files
    (lake/published.py; of the snapshot the command reads, attach.pinned), an empty typed
    relation where the table has no rows (no file), or for ingest's `routes` the month's (with
    `n`, the entries each stands for: common/routes.relation_sql)."""
    if table == "routes":
        return routes.relation_sql(routes.month_files(data_root(cfg), month)) or \
            "(SELECT NULL::TINYINT AS afi, NULL AS prefix, NULL::UINTEGER AS origin_asn, 0::BIGINT AS n LIMIT 0)"
    return files_relation(published.files(data_root(cfg), [table], month)[table], table)


def files_relation(files: list[str], table: str) -> str:
    """Parquet files of a documented table as a relation for FROM; an empty typed one where
    there are none."""
    if not files:
        return f"({empty_select(DOCS[table].schema, 'duckdb')})"
    return "read_parquet([" + ", ".join(quote(duck.glob_literal(f)) for f in files) + "])"  # names, not patterns


def month_snapshots(con, cfg: Config, month: str, paths: str | None = None) -> int:
    """The month's distinct snapshots (the most any path was seen in), from its published paths
    or the relation `paths` holding them."""
    src = paths or table_relation(cfg, 'paths', month)
    return con.execute(f"SELECT max(snapshots) FROM {src}").fetchall()[0][0] or 0


# ------------------------------------------------------------------ longest-prefix match
def _covering(net) -> list[tuple[str, int]]:
    """Every prefix that covers `net` (itself included, the default route excluded), as text."""
    return [(str(net.supernet(new_prefix=n)) if n < net.prefixlen else str(net), n)
            for n in range(net.prefixlen, 0, -1)]


def lookup_origins(con, cfg: Config, month: str, nets: dict) -> dict:
    """key -> (matched prefix, origin ASN, other origins) for each key -> network, by
    longest-prefix match over the month's prefixes of the network's family.

    DuckDB joins the entries against every covering prefix of each network (at most 32 or
    128 per network), so one scan answers all networks. The origin of a prefix is the one
    seen on most of its entries (ties: the lowest ASN); the others are returned too.
    """
    if not nets:
        return {}
    keys, afis, cands, lens = [], [], [], []
    for key, net in nets.items():
        for text, n in _covering(net):
            keys.append(str(key))
            afis.append(net.version)
            cands.append(text)
            lens.append(n)
    # bound lists, not an Arrow table: registering one makes DuckDB import pyarrow.dataset
    # (125 ms of a one-question `advise`)
    cand = ("(SELECT unnest($k::VARCHAR[]) AS k, unnest($a::TINYINT[]) AS afi, unnest($p::VARCHAR[]) AS prefix, "
            "unnest($l::INTEGER[]) AS plen)")
    if month in published.months(data_root(cfg), "prefix_origins"):  # the month's prefix table, small
        src, n = table_relation(cfg, "prefix_origins", month), "sum(e.entries)"
    else:  # a month published before it: every route, counted by its entries
        src, n = table_relation(cfg, "routes", month), "sum(e.n)"
    rows = con.execute(f"""
        SELECT c.k, c.plen, e.prefix, e.origin_asn, {n} AS n
        FROM {src} e
        JOIN {cand} c ON e.prefix = c.prefix AND e.afi = c.afi
        WHERE e.origin_asn IS NOT NULL
        GROUP BY ALL
    """, {"k": keys, "a": afis, "p": cands, "l": lens}).fetchall()
    best: dict[str, tuple] = {}
    for k, plen, prefix, origin, n in rows:
        cur = best.get(k)
        if cur is None or plen > cur[0]:
            best[k] = (plen, prefix, {})
            cur = best[k]
        if plen == cur[0]:
            cur[2][int(origin)] = cur[2].get(int(origin), 0) + n
    out = {}
    for key in nets:
        hit = best.get(str(key))
        if hit:
            origins = sorted(hit[2].items(), key=lambda kv: (-kv[1], kv[0]))
            out[key] = (hit[1], origins[0][0], [a for a, _ in origins[1:]])
    return out


#: The vps table's rows of VPs with a path in the month (a VP with no origin has none).
WITH_PATHS = "(origins_v4 > 0 OR origins_v6 > 0)"


def is_vp(con, cfg: Config, month: str, asn: int) -> bool:
    """Whether `asn` is a VP of the month with a path."""
    return bool(con.execute(f"SELECT count(*) > 0 FROM {table_relation(cfg, 'vps', month)} WHERE vp_asn = $a "
                            f"AND {WITH_PATHS}", {"a": int(asn)}).fetchone()[0])


class Month:
    """The month's paths and VPs, read once per question with DuckDB.

    `hidden`: ASNs whose VPs the selector must not see (the held-out evaluation,
    selector/evaluate.py, asks as if each were an AS no collector peers with); `paths`,
    `pairs`: relations holding the month's paths and pairs tables where a caller has them at
    hand already."""

    def __init__(self, con, cfg: Config, month: str, hidden: frozenset[int] = frozenset(), paths: str | None = None,
                 pairs: str | None = None):
        self.con, self.cfg, self.month = con, cfg, month
        #: The month's calibration (selector/calibration.py) where answers should use it.
        self.calibration = None
        self._all_paths = paths or table_relation(cfg, 'paths', month)
        self._all_pairs = pairs or table_relation(cfg, 'pairs', month)
        self._vps_table = table_relation(cfg, 'vps', month)
        self.snapshots = month_snapshots(con, cfg, month, self._all_paths)  # the month's, hidden VPs included
        #: The month's as_relationships as a relation (None: not published for the month).
        self.relationships = (table_relation(cfg, "as_relationships", month)
                              if month in published.months(data_root(cfg), "as_relationships") else None)
        self._hide(hidden)

    def hiding(self, hidden: frozenset[int]) -> Month:
        """The same month with the VPs of `hidden` out of sight: the held-out evaluation's one
        Month per VP AS, without finding the month's tables again for each."""
        m = object.__new__(Month)
        m.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_per_as"})
        m._hide(hidden)
        return m

    def _hide(self, hidden: frozenset[int]) -> None:
        keep = f" WHERE vp_asn NOT IN ({','.join(str(int(a)) for a in sorted(hidden))})" if hidden else ""
        self.paths = f"(SELECT * FROM {self._all_paths}{keep})"
        self.pairs = f"(SELECT * FROM {self._all_pairs}{keep})"
        self._per_as = {}
        # the VPs with a path (the vps table's row of each, not a scan of the paths)
        self.vps = {(g, int(a)) for g, a in self.con.execute(
            f"SELECT DISTINCT vp_group, vp_asn FROM {self._vps_table} "
            f"WHERE {WITH_PATHS}{keep.replace(' WHERE', ' AND')}").fetchall()}

    def seen(self, asn: int) -> bool:
        """On any path of the month: a VP, or an end of a link of the month's relationships
        (every AS of a path of two or more ASes; a small table), else a scan of the paths
        (only for an AS the month's relationships do not name: a relationships table replaced
        or cut by hand is no proof of absence)."""
        if any(a == asn for _g, a in self.vps):
            return True
        if self.relationships is not None and self.con.execute(
                f"SELECT count(*) > 0 FROM {self.relationships} WHERE as1 = $a OR as2 = $a", {"a": asn}).fetchall()[0][0]:
            return True
        return bool(self.con.execute(f"SELECT bool_or(list_contains(path, ?)) FROM {self.paths}",
                                     [asn]).fetchall()[0][0])

    def through_vps(self, asn: int, d4: int | None, d6: int | None) -> list[tuple[str, int]]:
        """VPs whose IPv4 path to `d4` or IPv6 path to `d6` crosses `asn`: they show its own route."""
        return sorted((g, int(a)) for g, a in self.con.execute(f"""
            SELECT DISTINCT vp_group, vp_asn FROM {self.paths}
            WHERE ((afi = 4 AND dest_asn = $d4) OR (afi = 6 AND dest_asn = $d6)) AND list_position(path, $a::BIGINT) > 1""",
            {"a": asn, "d4": d4, "d6": d6}).fetchall())

    def _once(self, what: str, asn: int, compute):
        """Answers about one AS that do not depend on the destination (is_stub, neighbours,
        upstream_vps), kept: a source asks them for each of its destinations (evaluate's
        held-out AS, a site's hints), and the month does not change under a Month."""
        key = (what, int(asn))
        if key not in self._per_as:
            self._per_as[key] = compute()
        return self._per_as[key]

    def upstream_vps(self, asn: int) -> list[tuple[str, int]]:
        """VPs seen right after `asn` on the month's paths: `asn` hands traffic to them, so
        each is its provider or peer (a VP seen right before it routes through it instead)."""
        def compute():
            ups = {int(r[0]) for r in self.con.execute(f"""
                SELECT DISTINCT path[list_position(path, ?::BIGINT) + 1] FROM {self.paths}
                WHERE list_position(path, ?::BIGINT) BETWEEN 1 AND len(path) - 1""", [asn, asn]).fetchall()}
            return tuple(sorted(vp for vp in self.vps if vp[1] in ups))
        return list(self._once("upstream", asn, compute))

    def is_stub(self, asn: int) -> bool:
        """Never seen handing traffic on: no AS after it on any path of the month."""
        return self._once("stub", asn, lambda: not self.con.execute(
            f"SELECT bool_or(list_position(path, ?::BIGINT) BETWEEN 1 AND len(path) - 1) FROM {self.paths}",
            [asn]).fetchall()[0][0])

    def neighbours(self, asn: int) -> dict[int, set[int]]:
        """afi -> the ASes seen right before `asn` on the month's paths of that family (who
        hands traffic to it: for a stub its providers and peers)."""
        def compute():
            got = {4: set(), 6: set()}
            for afi, n in self.con.execute(f"""
                    SELECT DISTINCT afi, path[list_position(path, $a::BIGINT) - 1] FROM {self.paths}
                    WHERE list_position(path, $a::BIGINT) > 1""", {"a": asn}).fetchall():
                got[int(afi)].add(int(n))
            return {afi: frozenset(ns) for afi, ns in got.items()}
        return {afi: set(ns) for afi, ns in self._once("neighbours", asn, compute).items()}

    def destination_classes(self, dest: int) -> dict[tuple, list[int]]:
        """(congruent, no shared AS, shared_adjacent) -> the VP ASes of the pairs to `dest`
        that show it, one entry per pair (a VP in two collector groups counts twice): the
        pairs table's columns a class is made of (rules.hint_class), counted in SQL."""
        return {(bool(c), bool(e), a if a is None else bool(a)): [int(v) for v in who] for c, e, a, who in self.con.execute(f"""
            SELECT congruent, len(shared_asns) = 0, shared_adjacent, list(vp_asn ORDER BY vp_asn)
            FROM {self.pairs} WHERE dest_asn = ? GROUP BY ALL""", [dest]).fetchall()}

    def provider_routes(self, asn: int, dest: int, afi: int) -> dict[int, tuple]:
        """neighbour -> (its route to `dest` in family `afi`, stability, snapshots, VPs showing
        it), for each AS seen right before `asn` on the month's paths of that family (who
        `asn` is reached through: for a stub its providers and peers). A neighbour's route is
        the suffix from it on of the paths to `dest` that cross it (a BGP speaker exports its
        best route only), the one most VP ASes show (then the shortest, then the lowest
        ASNs); neighbours no path to `dest` crosses, or whose route crosses `asn`, are left out."""
        rows = self.con.execute(f"""
            WITH nb AS (SELECT DISTINCT path[list_position(path, $a::BIGINT) - 1] AS n FROM {self.paths}
                        WHERE afi = $f AND list_position(path, $a::BIGINT) > 1),
                 ev AS (SELECT nb.n, p.path[list_position(p.path, nb.n):] AS route, p.vp_asn, p.stability, p.snapshots
                        FROM {self.paths} p JOIN nb ON list_position(p.path, nb.n) >= 1
                        WHERE p.afi = $f AND p.dest_asn = $d)
            SELECT n, route, count(DISTINCT vp_asn) AS vps, max(stability), max(snapshots),
                   list(DISTINCT vp_asn ORDER BY vp_asn)
            FROM ev WHERE NOT list_contains(route, $a::BIGINT) GROUP BY n, route""",
            {"a": asn, "f": afi, "d": dest}).fetchall()
        best: dict[int, tuple] = {}
        for n, route, vps, stab, snaps, who in rows:
            key = (-vps, len(route), list(route))  # ties: the lower ASNs, so no answer depends on row order
            if int(n) not in best or key < best[int(n)][0]:
                best[int(n)] = (key, (tuple(int(x) for x in route), stab, snaps, [int(v) for v in who]))
        return {n: v for n, (_k, v) in best.items()}

    def routes(self, asns: set[int], dest: int, afi: int, src: int) -> dict[int, tuple]:
        """asn -> (its route to `dest` in family `afi` from it on, stability, snapshots, VP ASes
        showing it) for each of `asns` the month's paths show (rules.best_route: its own path
        where it is a VP, else the suffix most VP ASes show, the shortest, the lowest ASNs);
        a route on which `src` follows the AS is left out (the source would loop)."""
        if not asns:
            return {}
        rows = self.con.execute(f"""
            WITH q AS (SELECT unnest($a::BIGINT[]) AS n)
            SELECT q.n, p.path[list_position(p.path, q.n):] AS route, bool_or(p.path[1] = q.n) AS own,
                   count(DISTINCT p.vp_asn) AS vps, max(p.stability), max(p.snapshots),
                   list(DISTINCT p.vp_asn ORDER BY p.vp_asn)
            FROM {self.paths} p JOIN q ON list_position(p.path, q.n) >= 1
            WHERE p.afi = $f AND p.dest_asn = $d
            GROUP BY ALL""", {"a": sorted(asns), "f": afi, "d": dest}).fetchall()
        cands: dict[int, list] = {}
        for n, route, own, vps, stab, snaps, who in rows:
            route = tuple(int(x) for x in route)
            if src in route[1:]:
                continue
            cands.setdefault(int(n), []).append((bool(own), int(vps), route, stab, snaps, [int(v) for v in who]))
        out = {}
        for n, cs in cands.items():
            c = cs[rules.best_route([(own, vps, route) for own, vps, route, *_ in cs])]
            out[n] = (c[2], c[3], c[4], c[5])
        return out

    def relations(self, afi: int, ases: set[int]) -> dict[tuple[int, int], str] | None:
        """(a, b) -> what b is to a (provider, peer, customer) for the month's as_relationships
        links of family `afi` that touch `ases`; None when the month has no relationships."""
        if self.relationships is None:
            return None
        if not ases:
            return {}
        out = {}
        for a, b, rel in self.con.execute(f"""
                SELECT as1, as2, rel FROM {self.relationships}
                WHERE afi = $f AND (list_contains($a::BIGINT[], as1) OR list_contains($a::BIGINT[], as2))""",
                {"f": afi, "a": sorted(ases)}).fetchall():
            a, b = int(a), int(b)
            if rel == "p2c":
                out[(a, b)], out[(b, a)] = "customer", "provider"
            else:
                out[(a, b)] = out[(b, a)] = "peer"
        return out

    def paths_of(self, vps: list[tuple[str, int]], dests: set[int]) -> dict:
        """(group, vp_asn, dest, afi) -> (path, stability, snapshots)."""
        if not vps or not dests:
            return {}
        rows = self.con.execute(f"""
            SELECT p.vp_group, p.vp_asn, p.dest_asn, p.afi, p.path, p.stability, p.snapshots
            FROM {self.paths} p JOIN (SELECT unnest($g::VARCHAR[]) AS g, unnest($a::BIGINT[]) AS a) v
                 ON p.vp_group = v.g AND p.vp_asn = v.a
            WHERE p.dest_asn IN ({",".join(str(int(d)) for d in dests)})""",
            {"g": [g for g, _ in vps], "a": [int(a) for _, a in vps]}).fetchall()
        return {(g, int(a), int(d), int(afi)): (tuple(int(x) for x in p), s, n) for g, a, d, afi, p, s, n in rows}
