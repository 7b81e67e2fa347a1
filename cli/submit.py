"""Entry file for spark-submit (YARN, Kubernetes, standalone):

    spark-submit --master yarn --deploy-mode cluster cli/submit.py compare --month 2026-07 --data-dir hdfs:///congruency

Takes the same arguments as the `congruency` command; the master and resources come from
spark-submit, so --master is not needed.
"""
import os
import sys
import types

# Run as a script, Python puts cli/ first on sys.path, where cli/ingest.py would shadow the
# ingest package: take it off. Where the project is not installed (a checkout shipped to the
# driver), its root is the bgp_congruency namespace.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    import bgp_congruency.cli  # noqa: F401
except ModuleNotFoundError:
    _ns = types.ModuleType("bgp_congruency")
    _ns.__path__ = [os.path.dirname(_here)]
    sys.modules["bgp_congruency"] = _ns

from bgp_congruency.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
