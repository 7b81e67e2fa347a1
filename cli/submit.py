"""Entry file for spark-submit (YARN, Kubernetes, standalone):

    spark-submit --master yarn --deploy-mode cluster cli/submit.py compare --month 2026-07 --data-dir hdfs:///congruency

Takes the same arguments as the `congruency` command; the master and resources come from
spark-submit, so --master is not needed.
"""
import os
import sys

# Run as a script, Python puts cli/ first on sys.path, where cli/ingest.py would shadow the
# ingest package: put the project root there instead.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
