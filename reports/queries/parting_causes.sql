-- Why the IPv4 and IPv6 paths of non-congruent pairs part (divergence.part_asn), from the
-- month's relationships (as_relationships): the link one family takes is missing from the
-- other family's paths; or the links exist in both but a relationship differs; or the same
-- links and relationships, and the parting AS chose differently. With what the next AS is to
-- the parting AS on each family's path (customer, peer, provider).
-- param month: YYYY-MM
WITH rel AS (
    SELECT afi, as1 AS a, as2 AS b, CASE rel WHEN 'p2c' THEN 'customer' ELSE 'peer' END AS b_is
    FROM as_relationships WHERE month = $month
    UNION ALL
    SELECT afi, as2, as1, CASE rel WHEN 'p2c' THEN 'provider' ELSE 'peer' END
    FROM as_relationships WHERE month = $month
), parts AS (
    SELECT d.part_asn AS p, pr.v4_path[d.common_prefix + 1] AS n4, pr.v6_path[d.common_prefix + 1] AS n6
    FROM divergence d JOIN pairs pr
      ON pr.month = d.month AND pr.vp_group = d.vp_group AND pr.vp_asn = d.vp_asn AND pr.dest_asn = d.dest_asn
    WHERE d.month = $month
), looked AS (
    SELECT x44.b_is AS v4_next_in_v4, x64.b_is AS v4_next_in_v6, x46.b_is AS v6_next_in_v4, x66.b_is AS v6_next_in_v6
    FROM parts
    LEFT JOIN rel x44 ON x44.afi = 4 AND x44.a = p AND x44.b = n4
    LEFT JOIN rel x64 ON x64.afi = 6 AND x64.a = p AND x64.b = n4
    LEFT JOIN rel x46 ON x46.afi = 4 AND x46.a = p AND x46.b = n6
    LEFT JOIN rel x66 ON x66.afi = 6 AND x66.a = p AND x66.b = n6
)
SELECT CASE WHEN v4_next_in_v6 IS NULL OR v6_next_in_v4 IS NULL THEN 'a link in one family only'
            WHEN v4_next_in_v4 <> v4_next_in_v6 OR v6_next_in_v4 <> v6_next_in_v6 THEN 'a relationship differs'
            ELSE 'the same links, chosen differently' END AS cause,
       v4_next_in_v4 AS ipv4_next_is, v6_next_in_v6 AS ipv6_next_is,
       count(*) AS pairs, round(count(*) / sum(count(*)) OVER (), 4) AS share
FROM looked
GROUP BY ALL
ORDER BY pairs DESC, cause, ipv4_next_is, ipv6_next_is;
