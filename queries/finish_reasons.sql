-- Finish-reason distribution of settled intervals: why did owned runs end?
-- finish_reason is the raw kind of the last root-session turn end of each interval
-- (NULL when the interval held no root turn end).
SELECT coalesce(finish_reason, '(no turn end)') AS finish_reason,
       count(*) AS intervals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 2) AS pct
FROM intervals
WHERE status = 'settled'
GROUP BY 1
ORDER BY intervals DESC, finish_reason;
