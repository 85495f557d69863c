-- Model errors that were retried (a later model call in the same turn) but whose turn
-- still did not complete: retries that did not help, by code.
SELECT coalesce(code, '(none)') AS code,
       count(*) AS retried_errors,
       sum(CASE WHEN recovered THEN 0 ELSE 1 END) AS never_recovered,
       round(100.0 * sum(CASE WHEN recovered THEN 0 ELSE 1 END) / count(*), 1) AS pct_never_recovered
FROM errors
WHERE source = 'model' AND retried
GROUP BY 1
ORDER BY never_recovered DESC, code;
