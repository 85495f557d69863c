-- Finish-reason distribution of settled intervals: why did owned runs end?
-- finish_class is one vocabulary across runtimes (docs/finish-class.md); finish_reason is the
-- raw kind of the last root-session turn end of each interval, as the runtime wrote it
-- (NULL when the interval held no root turn end). Classes by size, their raw kinds beneath.
SELECT coalesce(finish_class, '-') AS finish_class,
       coalesce(finish_reason, '(no turn end)') AS finish_reason,
       count(*) AS intervals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 2) AS pct,
       sum(count(*)) OVER (PARTITION BY finish_class) AS class_intervals
FROM intervals
WHERE status = 'settled'
GROUP BY finish_class, finish_reason
ORDER BY class_intervals DESC, finish_class, intervals DESC, finish_reason;
