"""`congruency query` command line: named queries and the analyst's own SQL on the warehouse."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import atomic, console
from common.config import Config

FORMATS = ("table", "csv", "json", "parquet")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "query",
        parents=parents,
        help="run a named query (reports/queries/NAME.sql) or your own SQL on the warehouse",
        description=(
            "Run a named query from reports/queries/ with bound parameters, or --sql on a "
            "read-only connection to DATA_DIR/warehouse.duckdb (run `congruency warehouse` "
            "first). --list shows the named queries and their parameters."
        ),
    )
    p.add_argument("name", nargs="?", help="named query (see --list)")
    p.add_argument("--list", action="store_true", help="list the named queries, one line each")
    p.add_argument("--sql", metavar="SQL", help="your own SELECT statement(s); statements that write are refused")
    p.add_argument("--month", metavar="YYYY-MM", help="the $month parameter")
    p.add_argument("--vp", metavar="ASN", help="the $vp parameter (a VP's ASN)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="any other parameter, e.g. --param other=2026-01 --param limit=50")
    p.add_argument("--format", default="table", choices=FORMATS, help="output format (default table)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout (required for parquet)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, cfg: Config) -> int:
    from common import published
    from reports import query, warehouse

    if args.list:
        for q in query.named().values():
            ps = " ".join(f"--{p}" if p in ("month", "vp") else f"--param {p}=" for p in q.params)
            print(f"{q.name:<16} {q.summary}{f'  [{ps}]' if ps else ''}")
        return 0
    if bool(args.name) == bool(args.sql):
        console.error("give a query NAME or --sql \"...\" (or --list)")
        return 2
    if args.format == "parquet" and not args.out:
        console.error("--format parquet: needs --out FILE")
        return 2
    given = {"month": args.month, "vp": args.vp}
    for kv in args.param:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            console.error(f"--param: expected NAME=VALUE, got {kv!r}")
            return 2
        given[k] = v
    try:
        if args.sql:
            if any(v is not None for v in given.values()):
                raise query.QueryError("--sql takes no parameters (they are for named queries)")
        else:
            q = query.get(args.name)
            query.check_months(q, query.bind(q, given), warehouse.data_root(cfg))
    except (query.QueryError, published.NoResults, warehouse.WarehouseError) as exc:
        console.error(str(exc))
        return 2
    try:
        con = warehouse.connect(cfg)
    except warehouse.WarehouseError as exc:
        console.error(str(exc))
        return 1
    try:
        table = query.run_sql(con, args.sql) if args.sql else query.run_named(con, args.name, given)
    except query.BadValue as exc:
        console.error(str(exc))
        return 2
    except query.QueryError as exc:
        console.error(str(exc))
        return 1
    finally:
        con.close()
    write(table, args.format, Path(args.out) if args.out else None)
    return 0


def write(table, fmt: str, out: Path | None) -> None:
    """The result on stdout, or atomically into `out` (dot-temp name, then rename)."""
    import io

    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if fmt == "parquet":
        with atomic.replacing(out) as tmp:
            pq.write_table(table, tmp)
        return
    buf = io.StringIO()
    if fmt == "csv":
        b = io.BytesIO()
        pacsv.write_csv(_flat(table), b)
        buf.write(b.getvalue().decode())
    elif fmt == "json":
        import pyarrow as pa

        maps = [f.name for f in table.schema if pa.types.is_map(f.type)]
        rows = table.to_pylist()
        for r in rows:  # a map as a JSON object, as in the csv and table formats
            for m in maps:
                r[m] = None if r[m] is None else dict(r[m])
        json.dump(rows, buf, indent=1, default=_plain)
        buf.write("\n")
    else:
        _table(table, buf)
    if out is None:
        sys.stdout.write(buf.getvalue())
    else:
        atomic.write_text(out, buf.getvalue())


def _nested(t) -> bool:
    import pyarrow as pa

    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_struct(t) or pa.types.is_map(t)


def _json_cell(v, t) -> str:
    """A list, struct or map value as JSON text: the same spelling in the csv and table formats
    (a map, which Arrow hands out as (key, value) pairs, as a JSON object)."""
    import pyarrow as pa

    if pa.types.is_map(t):
        v = dict(v)
    return json.dumps(v, default=_plain)


def _iso(v) -> str:
    """A timestamp as ISO 8601 UTC (2026-07-30T14:00:00Z), the one spelling in every format
    (naive timestamps are UTC, as every table stores them)."""
    from datetime import timezone

    if v.tzinfo is not None:
        v = v.astimezone(timezone.utc)
    return v.strftime("%Y-%m-%dT%H:%M:%S") + (f".{v.microsecond:06d}" if v.microsecond else "") + "Z"


def _plain(v):
    """JSON's fallback: timestamps as _iso, anything else (decimals, dates) as its text."""
    from datetime import datetime

    return _iso(v) if isinstance(v, datetime) else str(v)


def _flat(table):
    """CSV has no nested values: list, struct and map columns become JSON text; timestamps
    are spelled as in the other formats."""
    import pyarrow as pa

    cols = []
    for col in table.columns:
        if _nested(col.type):
            col = pa.array([None if v is None else _json_cell(v, col.type) for v in col.to_pylist()], pa.string())
        elif pa.types.is_timestamp(col.type):
            col = pa.array([None if v is None else _iso(v) for v in col.to_pylist()], pa.string())
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def _cell(v, t) -> str:
    if v is None:
        return "NULL"  # an empty string prints as nothing: the two stay apart
    if _nested(t):
        return _json_cell(v, t)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.6g}"
    return _plain(v)


def _table(table, buf) -> None:
    """A boxed text table, columns as wide as their widest cell (no wrapping)."""
    types = [f.type for f in table.schema]
    rows = [[_cell(v, t) for v, t in zip(r.values(), types)] for r in table.to_pylist()]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(table.column_names)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+\n"
    fmt = lambda cells: "|" + "|".join(f" {c:<{w}} " for c, w in zip(cells, widths)) + "|\n"
    buf.write(line + fmt(table.column_names) + line + "".join(fmt(r) for r in rows) + line)
    buf.write(f"({table.num_rows} rows)\n")
