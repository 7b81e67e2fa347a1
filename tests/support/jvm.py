"""The suite's JVMs stop at the JIT's first tier (-XX:TieredStopAtLevel=1), through a Spark
conf dir of the suite's own: every JVM a test starts reads it (the suite's local session,
`congruency compare --engine spark` in a subprocess, spark-submit, the DAG's operator, a
standalone cluster's executors, which take the driver's settings).

Why: the tests' months are tiny and most JVMs live a minute or two, so C2 compiling Spark's
code costs more than it saves. bench/suite_jvm.py (a fresh session, three hand-made months,
two rounds alternating; this 2-core machine, 2026-12-01 21:42): the first month's compare on
the cold JVM 28.6 and 30.5 -> 23.6 and 23.4 s, the next two 9.9-13.1 -> 8.9-9.5 s, the
session's start the same (7.4-8.9 s); 61 -> 50 s a run. Results do not depend on the JIT;
the product leaves it at the JVM's default (a real month runs minutes of hot loops, where
C2 pays)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from bgp_congruency.pipeline.spark_session import LOG4J

OPTIONS = "-XX:TieredStopAtLevel=1"
#: spark-defaults.conf: Spark prepends the *default* Java options to the extra ones, which
#: the product's session sets (its log4j file), so neither replaces the other.
DEFAULTS = f"spark.driver.defaultJavaOptions {OPTIONS}\nspark.executor.defaultJavaOptions {OPTIONS}\n"


def conf_dir() -> Path:
    """The suite's Spark conf dir (the product's log4j file, and DEFAULTS), made once per
    content in the temp folder; each process of the suite may call it (written atomically)."""
    log4j = LOG4J.read_text()
    key = hashlib.sha256((log4j + DEFAULTS).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"congruency-sparkconf-{os.getuid()}-{key}"
    if not (folder / "spark-defaults.conf").is_file():
        tmp = Path(tempfile.mkdtemp(prefix=".sparkconf-", dir=folder.parent))
        (tmp / LOG4J.name).write_text(log4j)
        (tmp / "spark-defaults.conf").write_text(DEFAULTS)
        try:
            tmp.rename(folder)
        except OSError:  # another process of the suite made it first
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
    return folder
