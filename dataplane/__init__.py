"""The data plane: router-level congruency from traceroutes (issue 32).

- traces.py: traceroutes read into one model (RIPE Atlas JSON, scamper warts, a live scamper run).
- stable.py: the study's stable path (the hop sequence of at least 70% of the traces): pure.
- analysis.py: hops to ASes over the month's RIB prefixes, the AS path against `advise`'s BGP
  paths, and the two families compared at AS and router level.
The multipath gain itself is measured by bench/multipath.py.
"""
