-- Errors whose recorded retryable flag disagrees with the code's documented rule:
-- a runtime that retries what it should not, or gives up on what it could retry.
SELECT coalesce(code, '(none)') AS code,
       source,
       retryable AS recorded,
       retryable_expected AS expected,
       details_reason,
       count(*) AS errors,
       count(DISTINCT root) AS agents
FROM errors
WHERE retryable_mismatch
GROUP BY 1, 2, 3, 4, 5
ORDER BY errors DESC, code;
