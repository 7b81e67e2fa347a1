-- The transit-free clique of each family (as_relationships, step clique) side by side: every AS
-- in either clique, whether it is in each, and its providers, customers and peers per family.
-- param month: YYYY-MM
WITH r AS (SELECT * FROM as_relationships WHERE month = $month),
members AS (SELECT DISTINCT afi, unnest([as1, as2]) AS asn FROM r WHERE step = 'clique'),
ases AS (SELECT DISTINCT asn FROM members),
role AS (
    SELECT a.asn, r.afi,
           list(r.as1 ORDER BY r.as1) FILTER (WHERE r.rel = 'p2c' AND r.as2 = a.asn) AS providers,
           count(*) FILTER (WHERE r.rel = 'p2c' AND r.as1 = a.asn) AS customers,
           count(*) FILTER (WHERE r.rel <> 'p2c') AS peers
    FROM ases a JOIN r ON a.asn IN (r.as1, r.as2)
    GROUP BY ALL
),
flags AS (
    SELECT asn, bool_or(afi = 4) AS in_v4_clique, bool_or(afi = 6) AS in_v6_clique FROM members GROUP BY asn
)
SELECT f.asn, f.in_v4_clique, f.in_v6_clique,
       r4.providers AS v4_providers, r4.customers AS v4_customers, r4.peers AS v4_peers,
       r6.providers AS v6_providers, r6.customers AS v6_customers, r6.peers AS v6_peers
FROM flags f LEFT JOIN role r4 ON r4.asn = f.asn AND r4.afi = 4 LEFT JOIN role r6 ON r6.asn = f.asn AND r6.afi = 6
ORDER BY f.in_v4_clique AND f.in_v6_clique DESC, f.in_v6_clique DESC, f.asn;
