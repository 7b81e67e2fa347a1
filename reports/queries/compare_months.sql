-- The study's section III figures of one month beside another's, with the difference.
-- param month: YYYY-MM
-- param other: YYYY-MM, the month to compare with
WITH long AS (
    UNPIVOT (SELECT * REPLACE (CAST(vps AS DOUBLE) AS vps) FROM month_summary WHERE month IN ($month, $other))
    ON COLUMNS(* EXCLUDE (month)) INTO NAME metric VALUE value
)
SELECT metric,
       max(value) FILTER (WHERE month = $month) AS this_month,
       max(value) FILTER (WHERE month = $other) AS other_month,
       this_month - other_month AS difference
FROM long
GROUP BY metric
ORDER BY metric;
