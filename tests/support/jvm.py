"""The suite's JVMs stop at the JIT's first tier (-XX:TieredStopAtLevel=1), through a Spark
conf dir of the suite's own: every JVM a test starts reads it (the suite's local session,
`congruency compare --engine spark` in a subprocess, spark-submit, the DAG's operator, a
standalone cluster's executors, which take the driver's settings).

Why: the tests' months are tiny and most JVMs live a minute or two, so C2 compiling Spark's
code costs more than it saves. bench/suite_jvm.py (a fresh session, three hand-made months,
two rounds alternating; this 2-core machine, 2026-12-01 21:45): the first month's compare on
the cold JVM 28.6 and 30.5 -> 23.6 and 23.4 s, the next two 9.9-13.1 -> 8.9-9.5 s, the three
53.3 -> 41.9 s; the session's start the same (7.4-8.9 s). Results do not depend on the JIT;
the product leaves it at the JVM's default (a real month runs minutes of hot loops, where
C2 pays)."""
from __future__ import annotations

import os
from pathlib import Path

from bgp_congruency.pipeline.spark_session import LOG4J
from tests.support.data import ROOT

OPTIONS = "-XX:TieredStopAtLevel=1"
#: spark-defaults.conf: Spark prepends the *default* Java options to the extra ones, which
#: the product's session sets (its log4j file), so neither replaces the other.
DEFAULTS = f"spark.driver.defaultJavaOptions {OPTIONS}\nspark.executor.defaultJavaOptions {OPTIONS}\n"
#: The suite's own local session's Spark settings (tests/conftest.py `spark`; bench/suite_jvm.py
#: starts its sessions the same). Whole-stage code generation off: the tests' months are tiny,
#: so compiling each query's Java costs more than it saves (measured: the Spark tests of a
#: month 30% faster); results are the same, and the cluster and spark-submit tests keep the
#: product's Spark settings (every JVM of the suite, theirs too, stops at the first tier).
SESSION_CONF = {"spark.sql.shuffle.partitions": "4", "spark.sql.codegen.wholeStage": "false"}
#: In the checkout's build folder (`make clean` removes it), not a shared temp folder that
#: another user could have made first.
FOLDER = ROOT / "build" / "spark-conf"


def conf_dir() -> Path:
    """The suite's Spark conf dir: the product's log4j file and DEFAULTS, each file written
    whole (a temp file replaced into place), so every process of the suite may call it."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, text in ((LOG4J.name, LOG4J.read_text()), ("spark-defaults.conf", DEFAULTS)):
        target = FOLDER / name
        if not target.is_file() or target.read_text() != text:
            part = FOLDER / f".{name}.{os.getpid()}"
            part.write_text(text)
            os.replace(part, target)
    return FOLDER


def check(spark) -> None:
    """That a session's JVM was started with OPTIONS (a conf dir that stopped reaching it would
    make the suite slower, not wrong: nothing else would say so)."""
    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert OPTIONS in args, f"the suite's JVM options did not reach the session's JVM: {args}"
