"""One way to get a SparkSession: local mode by default, any master URL unchanged.

Under `spark-submit` (YARN, Kubernetes) the master and resources come from the submit
command and this only names the application.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

CONF_DIR = Path(__file__).with_name("sparkconf")
LOG4J = CONF_DIR / "log4j2.properties"


def java_problem() -> str | None:
    """Why Spark can't start here, in one line, or None."""
    java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    if not java or not Path(java).exists():
        return "Java 17 or newer is needed for Spark and was not found (apt-get install openjdk-17-jre-headless, or set JAVA_HOME)"
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True).stderr

    m = re.search(r'version "(\d+)', out)
    if m and int(m.group(1)) < 17:
        return f"Spark 4 needs Java 17 or newer; {java} is Java {m.group(1)}"
    return None


def session(master: str | None = "local[*]", conf: dict[str, str] | None = None, app: str = "bgp-congruency"):
    from pyspark.sql import SparkSession

    # Quiet logging from the first line the JVM prints, unless the user has a conf dir.
    os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))
    b = SparkSession.builder.appName(app)
    if master and not os.environ.get("SPARK_SUBMIT_DEPLOY_MODE") and "PYSPARK_GATEWAY_PORT" not in os.environ:
        b = b.master(master)
    defaults = {
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{LOG4J}",
        "spark.executor.extraJavaOptions": f"-Dlog4j.configurationFile=file:{LOG4J}",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "16",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": "4g",
        "spark.sql.parquet.compression.codec": "zstd",
    }
    for k, v in {**defaults, **(conf or {})}.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
