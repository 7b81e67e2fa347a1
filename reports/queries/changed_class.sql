-- Pairs whose class (congruent or not) changed since the month before: one row per VP and destination.
-- param month: YYYY-MM
WITH prev AS (
    SELECT * FROM pairs
    WHERE month = strftime(strptime($month, '%Y-%m') - INTERVAL 1 MONTH, '%Y-%m')
)
SELECT n.vp_group, n.vp_asn, n.dest_asn,
       CASE WHEN p.congruent THEN 'congruent' ELSE 'non-congruent' END AS was,
       CASE WHEN n.congruent THEN 'congruent' ELSE 'non-congruent' END AS now,
       p.v4_path AS prev_v4_path, p.v6_path AS prev_v6_path, n.v4_path, n.v6_path
FROM pairs n
JOIN prev p USING (vp_group, vp_asn, dest_asn)
WHERE n.month = $month AND n.congruent <> p.congruent
ORDER BY n.vp_group, n.vp_asn, n.dest_asn;
