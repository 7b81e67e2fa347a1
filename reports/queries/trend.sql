-- Per month: the per-VP non-congruent fraction's min, quartiles, median and max (2014 study, fig. 2b).
-- Computed from vps (VPs with at least one pair); quartiles by linear interpolation.
SELECT month,
       count(*) AS vps_with_pairs,
       sum(pairs)::BIGINT AS pairs,
       sum(noncongruent_pairs) / sum(pairs) AS noncongruent_fraction,
       min(noncongruent_fraction) AS vp_min,
       quantile_cont(noncongruent_fraction, 0.25) AS vp_q1,
       quantile_cont(noncongruent_fraction, 0.5) AS vp_median,
       quantile_cont(noncongruent_fraction, 0.75) AS vp_q3,
       max(noncongruent_fraction) AS vp_max
FROM vps
WHERE pairs > 0
GROUP BY month
ORDER BY month;
