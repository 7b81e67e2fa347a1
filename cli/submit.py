"""Entry file for spark-submit (YARN, Kubernetes, standalone):

    spark-submit --master yarn --deploy-mode cluster cli/submit.py compare --month 2026-07 --data-dir hdfs:///congruency

Takes the same arguments as the `congruency` command; the master and resources come from
spark-submit, so --master is not needed.
"""
import sys

from cli.main import main

if __name__ == "__main__":
    sys.exit(main())
