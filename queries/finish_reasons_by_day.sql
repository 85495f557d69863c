-- Finish reasons per day (UTC, by the interval's opening time): did something change?
-- finish_class groups the runtimes' raw finish reasons (docs/finish-class.md).
SELECT date_trunc('day', opened_at) AS day,
       status,
       coalesce(finish_class, '-') AS finish_class,
       coalesce(finish_reason, '-') AS finish_reason,
       count(*) AS intervals
FROM intervals
GROUP BY 1, 2, 3, 4
ORDER BY day, intervals DESC, status, finish_class, finish_reason;
