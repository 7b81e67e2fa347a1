"""AS relationships per month and per address family, inferred from the month's paths
(relationships/METHOD.md), published as `as_relationships` in the month's commit, read by
the path selector's neighbour choice and by the month report."""
