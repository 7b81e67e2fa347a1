-- ASes that appear on only one family's path of non-congruent pairs (METHOD.md 7b), over the
-- month or for one VP: on how many pairs each is IPv4-only or IPv6-only, and for how many VPs.
-- param month: YYYY-MM
-- param vp: integer, a VP's ASN (0: every VP), default 0
-- param limit: integer, number of ASes, default 20
WITH one_side AS (
    SELECT vp_group, vp_asn, dest_asn, 4 AS afi, unnest(only_v4) AS asn
    FROM divergence WHERE month = $month AND ($vp = 0 OR vp_asn = $vp)
    UNION ALL
    SELECT vp_group, vp_asn, dest_asn, 6 AS afi, unnest(only_v6) AS asn
    FROM divergence WHERE month = $month AND ($vp = 0 OR vp_asn = $vp)
)
SELECT asn,
       count(*) FILTER (WHERE afi = 4) AS v4_only_pairs,
       count(*) FILTER (WHERE afi = 6) AS v6_only_pairs,
       count(*) AS pairs,
       count(DISTINCT (vp_group, vp_asn)) AS vps
FROM one_side
GROUP BY asn
ORDER BY pairs DESC, asn
LIMIT $limit;
