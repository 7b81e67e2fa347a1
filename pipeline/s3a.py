"""Spark's way to an s3:// data dir: Hadoop's S3A connector, its three jars and its settings.

Spark 4.3 bundles Hadoop 3.5.0 without S3A; the jars come from Maven Central into the
user's Maven cache (`make s3a-jars`: `python -m bgp_congruency.pipeline.s3a fetch`), each
checked against the SHA-256 pinned here. A session the project starts (local, or on a
master it names) lists them in `spark.jars`, so the driver ships them to its executors: a
worker needs no copy. Under spark-submit the driver's own JVM is already up, so give it
`--jars "$(python -m bgp_congruency.pipeline.s3a jars)"` (docs/operations.md).

The data dir stays `s3://...` everywhere (the catalog registers those URLs, DuckDB reads
them): Hadoop maps the s3 scheme to S3A (common/s3.hadoop_conf).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bgp_congruency.common import s3
from bgp_congruency.common.errors import BadInput


@dataclass(frozen=True)
class Jar:
    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def path(self, repo: Path) -> Path:
        return repo.joinpath(*self.group.split("."), self.artifact, self.version,
                             f"{self.artifact}-{self.version}.jar")


#: Hadoop 3.5.0's S3A and what it needs at run time (hadoop-aws's pom: the AWS SDK bundle and
#: the analytics accelerator); their SHA-256 as Maven Central served them on 2026-11-29.
JARS = (
    Jar("org.apache.hadoop", "hadoop-aws", "3.5.0",
        "66bd9eefb938b1a1657487324b63c13df2d8b17164a1dd24e0ef37b905bc5baa"),
    Jar("software.amazon.awssdk", "bundle", "2.35.4",
        "db4b55f24ad1b4e70f17eb1717a4de76a8dadc5a27d764be7c44ff67b2c1c677"),
    Jar("software.amazon.s3.analyticsaccelerator", "analyticsaccelerator-s3", "1.3.1",
        "4959a9747cbb479c73c3ffbcd479bee5b014f8b2880994585a8693fb9d24675e"),
)


def maven_repo() -> Path:
    """The user's Maven cache: $MAVEN_REPO_LOCAL (as `-Dmaven.repo.local`), else ~/.m2/repository."""
    return Path(os.environ.get("MAVEN_REPO_LOCAL") or Path.home() / ".m2" / "repository")


def jars(repo: Path | None = None) -> list[Path]:
    """The jars' paths in the Maven cache; BadInput naming the first missing one."""
    repo = repo or maven_repo()
    for j in JARS:
        if not j.path(repo).is_file():
            raise BadInput(f"{j.path(repo)}: S3A's jar {j.coordinate} is not in the Maven cache; "
                           "Spark reaches s3:// data dirs through it (run make s3a-jars)")
    return [j.path(repo) for j in JARS]


#: S3A's settings that hold secrets: set on the running session (give_credentials), never in
#: its launch settings, which pyspark passes to the driver JVM's command line (`ps` shows it).
SECRETS = ("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token")


def submitted() -> bool:
    """Whether this driver was started by spark-submit: its JVM is up with the jars it was
    given (--jars), and the job cannot add to its class path."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or bool(os.environ.get("SPARK_SUBMIT_DEPLOY_MODE"))


def conf(root: str, extra_jars: str = "") -> dict[str, str]:
    """The Spark settings of a session that reaches `root`'s bucket: the jars (beside
    `extra_jars`, the user's spark.jars; not under spark-submit, which was given them) and
    S3A's settings but the secrets, as spark.hadoop.* options."""
    out = {f"spark.hadoop.{k}": v for k, v in s3.hadoop_conf(root).items() if k not in SECRETS}
    if not submitted():
        out["spark.jars"] = ",".join([*(j for j in extra_jars.split(",") if j), *(str(p) for p in jars())])
    return out


def give_credentials(spark, root: str) -> None:
    """S3A's credentials on a running session's Hadoop configuration, which each job hands
    its executors (and the driver's own FileSystem reads)."""
    hconf = spark._jsc.hadoopConfiguration()
    for k, v in s3.hadoop_conf(root).items():
        if k in SECRETS:
            hconf.set(k, v)


def reaches(spark) -> bool:
    """Whether a running session reaches s3:// through S3A: its Hadoop configuration binds the
    scheme to S3A (the launch's spark.hadoop.* settings are copied there), and the class is on
    the driver's class path (spark-submit without --jars has not)."""
    if spark._jsc.hadoopConfiguration().get("fs.s3.impl") != s3.S3A_CLASS:
        return False
    jvm = spark._jvm
    try:
        jvm.java.lang.Class.forName(s3.S3A_CLASS, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Exception:
        return False
    return True


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fetch(repo: Path | None = None, out=sys.stderr) -> list[Path]:
    """Each jar missing from the Maven cache, fetched by Maven (`mvn dependency:get`, Maven's
    own checksums strict), then every jar checked against its pinned SHA-256: a jar that
    differs is deleted and named."""
    repo = repo or maven_repo()
    missing = [j for j in JARS if not j.path(repo).is_file()]
    if missing and not shutil.which("mvn"):
        raise BadInput("mvn: Maven is not installed; S3A's jars come through it "
                       "(apt-get install maven), or put them in " + str(repo))
    for j in missing:
        print(f"fetching {j.coordinate} into {repo}", file=out)
        p = subprocess.run(["mvn", "-q", "-B", "--strict-checksums", f"-Dmaven.repo.local={repo}",
                            "dependency:get", f"-Dartifact={j.coordinate}", "-Dtransitive=false"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            lines = (p.stdout + p.stderr).strip().splitlines()
            first = next((ln for ln in lines if ln.startswith("[ERROR]")), lines[-1] if lines else "no output")
            raise BadInput(f"{j.coordinate}: Maven could not fetch it: {first}")
    for j in JARS:
        got = _sha256(j.path(repo))
        if got != j.sha256:
            j.path(repo).unlink()
            raise BadInput(f"{j.path(repo)}: SHA-256 {got}, pinned {j.sha256}; deleted it")
    return jars(repo)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bgp_congruency.pipeline.s3a", description=(
        "S3A's jars for Spark on an s3:// data dir: fetch them into the Maven cache (checked "
        "against pinned SHA-256), or print them for spark-submit --jars."))
    ap.add_argument("action", choices=("fetch", "jars"),
                    help="fetch: into the Maven cache ($MAVEN_REPO_LOCAL or ~/.m2/repository); "
                         "jars: print their paths, comma-separated (spark-submit --jars)")
    args = ap.parse_args(argv)
    try:
        paths = fetch() if args.action == "fetch" else jars()
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(",".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
