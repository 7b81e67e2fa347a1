"""The path selector: from a month's published tables to advice on which paths are disjoint.

- rules.py: the definitions (class, confidence, advice, proxies, the k-path choice): pure.
- question.py: parsing a question (source, destinations, endpoints file).
- month.py: reading a published month and the longest-prefix match of addresses.
- advice.py: `advise` (one question) and `select` (k of the endpoints' paths).
- table.py: the month's `hints` table, built and published.
- gain.py: what the multipath testbed measured (bench/multipath.py), cited by the rationales.
- evaluate.py: the held-out evaluation (`congruency evaluate`): its questions, summary and
  publishing; answered by proxies.py (today's rules, --reveal none) and reveal.py (the
  source's evidence revealed); calibration.py fits the measured confidence.
- proxies.py: the one engine of rules 1-7 (a source that is no VP, with no evidence), which
  advise, export, `evaluate --reveal none` and `evaluate --truth` answer through; reveal.py:
  the one engine of the evidence rules (8-11), which advise, export, the run's site hints and
  the evaluations with evidence answer through; reference.py: every rule one question at a
  time in Python, which no command answers through (the tests hold the engines to it).
- exports/: the hints rendered for tools (JSON Lines, Linux MPTCP script, MPT files).
"""
