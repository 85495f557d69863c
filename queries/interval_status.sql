-- How did intervals end at all? settled, unsettled (the log ended first: transport loss,
-- timeout, a cut log) or protocol_error (the last root turn end had no string reason.kind).
SELECT status,
       count(*) AS intervals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 2) AS pct,
       count(DISTINCT root) AS agents
FROM intervals
GROUP BY status
ORDER BY intervals DESC;
