-- Finish reasons per day (UTC, by the interval's opening time): did something change?
SELECT date_trunc('day', opened_at) AS day,
       status,
       coalesce(finish_reason, '-') AS finish_reason,
       count(*) AS intervals
FROM intervals
GROUP BY 1, 2, 3
ORDER BY day, intervals DESC, status, finish_reason;
