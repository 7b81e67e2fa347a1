-- Per-VP congruency for one month: pairs, non-congruent pairs and fraction, class and coverage.
-- param month: YYYY-MM
SELECT vp_group, vp_asn, vp_class, pairs, noncongruent_pairs, noncongruent_fraction,
       coverage_v4, coverage_v6, len(sessions_v4) AS sessions_v4, len(sessions_v6) AS sessions_v6
FROM vps
WHERE month = $month AND pairs > 0
ORDER BY noncongruent_fraction DESC, vp_group, vp_asn;
