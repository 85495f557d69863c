-- Error codes by the provider's HTTP status, with whether the status fits the code
-- (status_consistent: NULL where no status was recorded or the code is unknown).
SELECT coalesce(code, '(none)') AS code,
       http_status,
       status_consistent,
       count(*) AS errors,
       sum(CASE WHEN retryable THEN 1 ELSE 0 END) AS recorded_retryable
FROM errors
GROUP BY 1, 2, 3
ORDER BY code, errors DESC, http_status;
