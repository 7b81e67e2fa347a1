"""The path selector: from a month's published tables to advice on which paths are disjoint.

- rules.py: the definitions (class, confidence, advice, proxies, the k-path choice): pure.
- question.py: parsing a question (source, destinations, endpoints file).
- month.py: reading a published month and the longest-prefix match of addresses.
- advice.py: `advise` (one question) and `select` (k of the endpoints' paths).
- table.py: the month's `hints` table, built and published.
- gain.py: what the multipath testbed measured (bench/multipath.py), cited by the rationales.
- evaluate.py: the held-out evaluation (`congruency evaluate`): its questions, references one
  question at a time, summary and publishing; answered set-based by proxies.py (today's rules,
  --reveal none) and reveal.py (the source's evidence revealed); calibration.py fits the
  measured confidence.
- exports/: the hints rendered for tools (JSON Lines, Linux MPTCP script, MPT files).
"""
