"""`congruency query` command line: named queries and the analyst's own SQL on the published tables."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bgp_congruency.cli.main import command_help, snapshot_id
from bgp_congruency.common import atomic, console
from bgp_congruency.common.config import Config

FORMATS = ("table", "csv", "json", "parquet")


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "query",
        parents=parents,
        help=command_help('query'),
        description=(
            "Run a named query from reports/queries/ with bound parameters, or --sql, on a "
            "read-only connection to the published tables (the catalog's snapshot current when it "
            "starts, or --as-of SNAPSHOT: the answer as it was then). --list shows the named "
            "queries and their parameters."
        ),
    )
    p.add_argument("name", nargs="?", help="named query (see --list)")
    p.add_argument("--list", action="store_true", help="list the named queries, one line each")
    p.add_argument("--sql", metavar="SQL", help="your own SELECT statement (one); statements that write are refused")
    p.add_argument("--month", metavar="YYYY-MM", help="the $month parameter")
    p.add_argument("--vp", metavar="ASN", help="the $vp parameter (a VP's ASN)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="any other parameter, e.g. --param other=2026-01 --param limit=50")
    p.add_argument("--format", default="table", choices=FORMATS,
                   help=f"output format (default table: the first {TABLE_ROWS} rows and how many there are; "
                        "csv, json and parquet give every row, streamed a batch at a time)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout (required for parquet)")
    p.add_argument("--as-of", type=snapshot_id, metavar="SNAPSHOT", dest="as_of",
                   help="read the tables as this catalog snapshot had them (congruency lake snapshots; "
                        "provenance.catalog_snapshot names the one that published each month)")
    p.set_defaults(func=main)


def named_lines() -> list[str]:
    """The named queries, one line each with their parameters (`--list`, docs/commands.md)."""
    from bgp_congruency.reports import query

    out = []
    for q in query.named().values():
        ps = " ".join(f"--{p}" if p in ("month", "vp") else f"--param {p}=" for p in q.params)
        out.append(f"{q.name:<16} {q.summary}{f'  [{ps}]' if ps else ''}")
    return out


def main(args: argparse.Namespace, cfg: Config) -> int:
    from bgp_congruency.lake.attach import pinned
    from bgp_congruency.reports import query, warehouse

    if args.list:
        print("\n".join(named_lines()))
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
    if args.sql:
        if any(v is not None for v in given.values()):
            raise query.BadValue("--sql takes no parameters (they are for named queries)")
    else:
        q = query.get(args.name)
        with pinned(warehouse.data_root(cfg), args.as_of):
            query.check_months(q, query.bind(q, given), warehouse.data_root(cfg))
    con = warehouse.connect(cfg, args.as_of)
    import duckdb
    import pyarrow as pa

    try:
        reader = query.run_sql(con, args.sql) if args.sql else query.run_named(con, args.name, given)
        write(reader, args.format, Path(args.out) if args.out else None)
    except (duckdb.Error, pa.ArrowException) as exc:  # while the result streams
        from bgp_congruency.lake.attach import unreadable

        line = unreadable(warehouse.data_root(cfg), exc, args.as_of) if isinstance(exc, duckdb.IOException) else None
        console.error(line or ("--sql: " if args.sql else "") + query._first(exc))
        # a statement the locked connection refuses (COPY TO a file, another extension) is a bad argument
        return 2 if isinstance(exc, duckdb.PermissionException) else 1
    finally:
        con.close()
    return 0


#: Rows the table format shows, like the duckdb CLI's (its default max_rows is 40); the rest
#: are counted and said, and --format csv or json gives them all.
TABLE_ROWS = 40


def write(reader, fmt: str, out: Path | None) -> None:
    """The result (a pyarrow RecordBatchReader) on stdout, or atomically into `out`
    (dot-temp name, then rename), a batch at a time: memory holds one batch, whatever the
    result's size."""
    if out is None:
        _write(reader, fmt, getattr(sys.stdout, "buffer", None) or _Text(sys.stdout))
        return
    with atomic.replacing(out) as tmp, open(tmp, "wb") as f:
        _write(reader, fmt, f)


class _Text:
    """A text stream (an in-process caller's redirect_stdout(StringIO())) as the binary file
    the writers write to."""

    def __init__(self, stream):
        import codecs

        self.stream, self.closed = stream, False
        self.decode = codecs.getincrementaldecoder("utf-8")().decode  # a character may span two writes

    def write(self, data) -> int:
        self.stream.write(self.decode(bytes(data)))
        return len(data)

    def flush(self) -> None:
        self.stream.flush()


def _write(reader, fmt: str, f) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if fmt == "parquet":
        with pq.ParquetWriter(f, reader.schema) as w:
            for batch in reader:
                w.write_batch(batch)
        return
    if fmt == "csv":
        writer = None
        for batch in reader:
            flat = _flat(pa.Table.from_batches([batch], reader.schema))
            if writer is None:
                writer = pacsv.CSVWriter(f, flat.schema)
            writer.write_table(flat)
        if writer is None:  # no rows: the header alone
            pacsv.write_csv(_flat(reader.schema.empty_table()), f)
        else:
            writer.close()
        return
    if fmt == "json":
        maps = [fd.name for fd in reader.schema if pa.types.is_map(fd.type)]
        n = 0
        for batch in reader:
            for r in batch.to_pylist():
                for m in maps:  # a map as a JSON object, as in the csv and table formats
                    r[m] = None if r[m] is None else dict(r[m])
                text = json.dumps(r, indent=1, default=_plain, ensure_ascii=True).replace("\n", "\n ")
                f.write((("[\n " if n == 0 else ",\n ") + text).encode())
                n += 1
        f.write(("[]\n" if n == 0 else "\n]\n").encode())
        return
    _table(reader, f)


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


def _table(reader, f) -> None:
    """A boxed text table of the first TABLE_ROWS rows, columns as wide as their widest cell
    (no wrapping); the rows left out are counted (read, not kept) and said."""
    types = [fd.type for fd in reader.schema]
    names = reader.schema.names
    rows, total = [], 0
    for batch in reader:
        if len(rows) < TABLE_ROWS:
            rows += [[_cell(v, t) for v, t in zip(r.values(), types)]
                     for r in batch.slice(0, TABLE_ROWS - len(rows)).to_pylist()]
        total += batch.num_rows
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+\n"

    def fmt(cells):
        return "|" + "|".join(f" {c:<{w}} " for c, w in zip(cells, widths)) + "|\n"

    more = (f"({total:,} rows, the first {len(rows)} shown; --format csv or json gives them all)"
            if total > len(rows) else f"({total} rows)")
    f.write((line + fmt(names) + line + "".join(fmt(r) for r in rows) + line + more + "\n").encode())
