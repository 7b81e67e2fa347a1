-- Each AS's customer cone per family (as_relationships): the AS itself and every AS below it
-- through p2c links, the largest first; the cones' sizes in ASes (AS-Rank's ranking).
-- param month: YYYY-MM
-- param limit: integer, number of ASes, default 20
WITH RECURSIVE below(afi, top, asn) AS (
    SELECT afi, as1, as2 FROM as_relationships WHERE month = $month AND rel = 'p2c'
    UNION
    SELECT b.afi, b.top, r.as2
    FROM below b JOIN as_relationships r ON r.month = $month AND r.rel = 'p2c' AND r.afi = b.afi AND r.as1 = b.asn
), ases AS (
    SELECT afi, as1 AS asn FROM as_relationships WHERE month = $month
    UNION SELECT afi, as2 FROM as_relationships WHERE month = $month
), cones AS (
    SELECT a.afi, a.asn, 1 + count(b.asn) AS cone
    FROM ases a LEFT JOIN below b ON b.afi = a.afi AND b.top = a.asn
    GROUP BY ALL
)
SELECT asn, max(cone) FILTER (WHERE afi = 4) AS cone_v4, max(cone) FILTER (WHERE afi = 6) AS cone_v6
FROM cones
GROUP BY asn
ORDER BY greatest(coalesce(cone_v4, 0), coalesce(cone_v6, 0)) DESC, asn
LIMIT $limit;
