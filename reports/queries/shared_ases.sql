-- ASes most often shared by the two paths of non-congruent pairs in one month, and how often adjacent.
-- An AS is adjacent in a pair when it is second or second-to-last on both paths (METHOD.md step 7).
-- param month: YYYY-MM
-- param limit: integer, number of ASes, default 20
WITH shared AS (
    SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, unnest(shared_asns) AS asn
    FROM pairs
    WHERE month = $month AND NOT congruent
)
SELECT asn,
       count(*) AS pairs,
       count(*) FILTER (WHERE list_position(v4_path, asn) IN (2, len(v4_path) - 1)
                          AND list_position(v6_path, asn) IN (2, len(v6_path) - 1)) AS adjacent_pairs,
       adjacent_pairs / count(*) AS adjacent_fraction,
       count(DISTINCT (vp_group, vp_asn)) AS vps
FROM shared
GROUP BY asn
ORDER BY pairs DESC, asn
LIMIT $limit;
