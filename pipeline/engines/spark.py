"""The Spark engine of the compare job: runs pipeline/steps.py's Spark SQL on a SparkSession.

Path work uses higher-order functions, never Python UDFs, and nothing data-sized is
collected to the driver (the driver sees the schema, two AFI counts and the one-row
summary). Intermediates used more than once are staged as Parquet in the month's staging
folder: on array columns that is ~5x faster than Spark's in-memory cache and survives
executor loss.
"""
from __future__ import annotations

from collections import Counter

from bgp_congruency.common import routes, s3
from bgp_congruency.common.errors import BadInput
from bgp_congruency.common.params import MethodParams
from bgp_congruency.common.tables import TABLES, TRANSITIONS, sql_type
from bgp_congruency.pipeline import s3a
from bgp_congruency.pipeline import steps as S
from bgp_congruency.pipeline.publish import HadoopStore, S3AStore

#: Output tables written as one file (they are small); the others keep Spark's partitions.
SMALL = {"cleaning_stats", "vps", "month_summary", "transitions", "provenance"}


def literal(path: str) -> str:
    """`path` as a Hadoop glob matching only itself: Spark globs every path it reads, so a
    data dir named `run[1]` or `a{b,c}` is escaped (a backslash before each glob character).
    Writes take paths literally and need nothing."""
    scheme, sep, rest = path.partition("://")
    head, tail = (scheme + sep + rest.split("/", 1)[0], "/" + rest.split("/", 1)[1] if "/" in rest else "") \
        if sep else ("", path)  # a URL's authority (hdfs://[::1]:8020) is no glob
    return head + "".join("\\" + c if c in "{}[]*?\\" else c for c in tail)


def check_s3(spark, root) -> None:
    """BadInput for an s3:// data dir when the session was started without S3A (a session
    handed in: job.open_engine starts its own with pipeline/s3a.conf)."""
    if s3.is_s3(root) and not s3a.reaches(spark):
        raise BadInput(f"{root}: this Spark session was started without S3A for s3:// "
                       "(its settings: pipeline/s3a.conf; under spark-submit, --jars from "
                       "python -m bgp_congruency.pipeline.s3a jars)")


class SparkEngine:
    name = "spark"

    def __init__(self, spark, own: bool = False):
        self.spark, self.own = spark, own
        self.variant = False  # a sensitivity variant's run (keep): steps.VARIANT_VIEWS stay views
        self._kept = None  # each step's SQL in the last kept run, whose views stand
        self.computed = Counter()  # step -> runs that computed it (per_path's: the cleanings)

    def store(self, root: str) -> HadoopStore:
        """The data dir through Hadoop: S3A's store on S3 (its staging in the bucket, where
        every executor writes), else HadoopStore."""
        check_s3(self.spark, root)
        return (S3AStore if s3.is_s3(root) else HadoopStore)(self.spark, root)

    def resumable(self, store, month: str) -> None:
        """Spark reruns a killed month whole (its stages are retried within a run)."""
        return None

    def open(self, store, src: str, staged: str) -> dict[int, int]:
        """Register the month's routes as `month_entries` (each collector's current generation,
        common/routes.py); check their schema; entries per AFI. Spark spills to its own local
        dirs, not `staged`."""
        from pyspark.sql import functions as F

        self._kept = None  # a kept run's views are another month's

        inputs = routes.month_input(src, store)
        self.plan = S.SnapshotPlan.of(inputs)
        dfs = [self.spark.read.parquet(*[literal(f) for f in fs]).withColumn("collector", F.lit(c))
               for c, (fs, _s) in sorted(inputs.items()) if fs]
        if not dfs:
            raise S.JobError(f"{src}: no routes (run congruency ingest for the month first)")
        df = dfs[0]
        for d in dfs[1:]:  # a collector whose routes an earlier version wrote lacks the OPTIONAL columns
            df = df.unionByName(d, allowMissingColumns=True)
        have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        S.check_columns(have, src)
        df.selectExpr(*S.REQUIRED, *S.optional_columns(have)).createOrReplaceTempView("month_entries")
        # The month pass gives only the entries per AFI here: Spark runs one partition, and the
        # snapshots are the routes' own (SnapshotPlan), so it is not kept.
        self.spark.sql(S.render(S.MONTH_COUNTS, "spark", MethodParams(), self.plan)).createOrReplaceTempView(
            "month_counts")
        return S.counts(self.spark.sql(S.COUNTS).collect())

    def vp_entries(self) -> list[tuple[int, int]]:
        """Spark runs the month as one partition (its aggregates and shuffles spill on their own)."""
        return []

    def pin(self) -> None:
        """Cache the month's entries: later runs (the sensitivity variants) share them."""
        self.spark.table("month_entries").cache().createOrReplaceTempView("month_entries")

    def run(self, params, staged: str, prev: dict[str, list[str]] | None, step, keep: bool = False,
            partitions: int = 1) -> None:
        """Every step, as one partition: each name the month-level steps read (MONTH_OF) is a
        view of the step's own output; output tables end up as Parquet folders staged/<table>
        (`keep`, a sensitivity variant: steps.VARIANT_VIEWS stay views, as on DuckDB, and every
        step's output stays registered: the next kept run skips each step that renders the same
        and reads only kept steps (steps.kept_steps: the cleaning, `paths`, ...), reading the
        output of the run that computed it (this one or an earlier kept one) from that run's
        `staged`, which must outlive it: the sensitivity run's staging folder does)."""
        self.variant = keep
        rendered = [(s, S.render(s, "spark", params, self.plan)) for s in S.MONTH_STEPS]
        stand = S.kept_steps(self._kept, rendered) if keep else set()
        self._kept = None
        self.spark.table("month_entries").createOrReplaceTempView("entries")
        for s, sql in rendered:
            if s.name in stand:  # the kept run's view (and its month_* name) stands
                continue
            step(s.name)
            self.computed[s.name] += 1
            self._run_step(s, sql, staged)
            if s.name in S.MONTH_OF:
                self.spark.table(s.name).createOrReplaceTempView(S.MONTH_OF[s.name])
        self._kept = {s.name: sql for s, sql in rendered} if keep else None
        step("transitions")
        if prev is None:  # the empty table, built in SQL (no Python rows, no Python worker)

            self._write(self.spark.sql(S.empty_select(TRANSITIONS, "spark")), "transitions", staged)
            return

        for t, files in prev.items():  # the catalog's files of the month before (pipeline/job.py)
            df = (self.spark.read.parquet(*[literal(f) for f in files]) if files else
                  self.spark.sql(S.empty_select(TABLES[t], "spark")))  # a table with no rows has no file
            df.createOrReplaceTempView(f"prev_{t}")
        self._run_step(S.PREV_V6_DESTS, S.PREV_V6_DESTS.spark, staged)
        self._run_step(S.TRANSITIONS, S.render(S.TRANSITIONS, "spark", params, self.plan), staged)

    def _run_step(self, s: S.SqlStep, sql: str, staged: str) -> None:
        split, column, table = S.SPARK_SPLIT
        if s.name == table:  # staged by the split step's write (this run's, or a kept run's)
            df = self.spark.table(f"_{table}_split")
            want = self.spark.sql(sql).schema  # the table's SQL, analysed (no job): the split must give it
            if [(f.name, f.dataType) for f in df.schema] != [(f.name, f.dataType) for f in want]:
                raise S.JobError(f"steps.SPARK_SPLIT: {split}'s part where {column} is true has columns "
                                 f"{df.schema.simpleString()}, not {table}'s {want.simpleString()}")
        elif s.name == split:
            df = self._write_split(self.spark.sql(sql), split, column, table, staged)
        else:
            df = self.spark.sql(sql)
            lazy = self.variant and s.name in S.VARIANT_VIEWS
            if s.kind in ("work", "table") and not lazy:  # a fact is small and read once here, a scratch step read in place: views
                df = self._write(df, s.name if s.kind == "table" else f"_work/{s.name}", staged)
        df.createOrReplaceTempView(s.name)

    def _write_split(self, df, split: str, column: str, table: str, staged: str):
        """The split step (steps.SPARK_SPLIT) written once, split by `column`: the part where
        it is true moved to staged/<table> (registered as _<table>_split for the table's
        step), the rest left in staged/_work; returns both parts as the step's rows. On S3 the
        move is S3A's copy of each object (HDFS and local disk rename)."""
        from pyspark.sql.types import StructType

        out, dst, store = f"{staged}/_work/{split}", f"{staged}/{table}", self.store(staged)
        if store.exists(dst):  # Hadoop would move the part into it, not in its place
            raise S.JobError(f"{dst}: exists, where {split}'s part where {column} is true goes")
        schema = df.schema
        df.write.mode("error").partitionBy(column).parquet(out)
        part = f"{out}/{column}=true"
        moved = store.exists(part)
        if moved and not store.rename(part, dst):
            raise S.JobError(f"{dst}: could not move {part} there")
        rest = self.spark.read.schema(schema).parquet(literal(out))  # listed after the move: `column` false
        data = StructType([f for f in schema.fields if f.name != column])  # the files' columns
        kept = (self.spark.read.schema(data).parquet(literal(dst)) if moved else
                self._write(rest.drop(column).limit(0), table, staged))  # no row on that side: an empty table
        kept.createOrReplaceTempView(f"_{table}_split")
        return rest.unionByName(kept.selectExpr("*", f"true AS {column}"))

    def _write(self, df, name: str, staged: str):
        out = df.coalesce(1) if name in SMALL else df
        out.write.mode("error").parquet(f"{staged}/{name}")
        # Read back with the schema it was written with: inferring it from the files is one
        # more Spark job per step (about 0.1 s each, an eighth of a tiny month's compare).
        return self.spark.read.schema(df.schema).parquet(literal(f"{staged}/{name}"))

    def read_rows(self, path: str) -> list[dict]:
        """A small Parquet file's rows (a manifest file), on a data dir only Hadoop reaches."""
        fs = self.store_for(path)
        if not fs.exists(path):
            return []
        return [r.asDict(recursive=True) for r in self.spark.read.parquet(literal(path)).collect()]

    def store_for(self, path: str) -> HadoopStore:
        return HadoopStore(self.spark, path)

    def write_rows(self, staged: str, name: str, rows: list[dict], schema) -> None:
        """A few rows computed outside SQL (provenance) as staged/<name>, like the SQL tables."""
        fields = [f for f in schema if f.name != "month"]
        df = self.spark.createDataFrame([tuple(r[f.name] for f in fields) for r in rows],
                                        schema=", ".join(f"{f.name} {sql_type(f.type, 'spark')}" for f in fields))
        self._write(df, name, staged)

    def summary(self, staged: str) -> dict | None:
        rows = self.spark.read.parquet(literal(f"{staged}/month_summary")).collect()
        return rows[0].asDict() if rows else None

    def failure(self, exc: BaseException, src: str) -> str | None:
        from pyspark.errors import PySparkException

        if isinstance(exc, PySparkException):
            return f"{src}: Spark failed: {str(exc).splitlines()[0]}"
        return None

    def end_month(self) -> None:
        self._kept = None
        self.spark.catalog.clearCache()
        for t in self.spark.catalog.listTables():
            if t.isTemporary:
                self.spark.catalog.dropTempView(t.name)

    def close(self) -> None:
        if self.own:
            self.spark.stop()
