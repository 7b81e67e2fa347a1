-- AS links whose relationship differs between the families (hybrid), or that one family's paths
-- show while both ASes are on the other family's paths too (as_relationships, per family):
-- each family's relationship seen from the lower ASN (customer: it provides the other;
-- provider; p2p) and the step that labelled it (decided false: no valley-free evidence, p2p by default).
-- param month: YYYY-MM
-- param limit: integer, number of links, default 50
WITH r AS (
    SELECT afi, least(as1, as2) AS low, greatest(as1, as2) AS high,
           CASE WHEN rel = 'p2c' AND as1 < as2 THEN 'provider of' WHEN rel = 'p2c' THEN 'customer of' ELSE rel END AS low_is,
           step, coalesce(decided, step <> 'rest-p2p') AS decided, paths
    FROM as_relationships WHERE month = $month
), v4 AS (SELECT * FROM r WHERE afi = 4), v6 AS (SELECT * FROM r WHERE afi = 6),
on6 AS (SELECT low AS asn FROM v6 UNION SELECT high FROM v6),
on4 AS (SELECT low AS asn FROM v4 UNION SELECT high FROM v4)
SELECT coalesce(v4.low, v6.low) AS as_low, coalesce(v4.high, v6.high) AS as_high,
       v4.low_is AS ipv4, v6.low_is AS ipv6,
       CASE WHEN v4.low IS NULL THEN 'IPv6 only' WHEN v6.low IS NULL THEN 'IPv4 only' ELSE 'differs' END AS kind,
       v4.step AS ipv4_step, v6.step AS ipv6_step,
       coalesce(v4.decided AND v6.decided, false) AS both_by_evidence,
       coalesce(v4.paths, 0) AS ipv4_paths, coalesce(v6.paths, 0) AS ipv6_paths
FROM v4 FULL JOIN v6 ON v4.low = v6.low AND v4.high = v6.high
WHERE (v4.low IS NOT NULL AND v6.low IS NOT NULL AND v4.low_is <> v6.low_is)
   OR (v6.low IS NULL AND v4.low IN (SELECT asn FROM on6) AND v4.high IN (SELECT asn FROM on6))
   OR (v4.low IS NULL AND v6.low IN (SELECT asn FROM on4) AND v6.high IN (SELECT asn FROM on4))
ORDER BY kind = 'differs' DESC, both_by_evidence DESC, ipv4_paths + ipv6_paths DESC, as_low, as_high
LIMIT $limit;
