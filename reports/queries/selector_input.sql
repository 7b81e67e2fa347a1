-- Non-congruent pairs of one VP in one month whose two paths share no AS: the path selector's input.
-- param month: YYYY-MM
-- param vp: integer, ASN of the vantage point
SELECT vp_group, vp_asn, dest_asn, v4_path, v6_path, hops_v4, hops_v6, non_adopters, edit_distance
FROM pairs
WHERE month = $month AND vp_asn = $vp AND NOT congruent AND len(shared_asns) = 0
ORDER BY vp_group, dest_asn;
