-- Token use per finish reason: where the spend goes, and what it bought.
-- finish_class groups the runtimes' raw finish reasons (docs/finish-class.md).
SELECT status,
       coalesce(finish_class, '-') AS finish_class,
       coalesce(finish_reason, '-') AS finish_reason,
       count(*) AS intervals,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       round(avg(input_tokens + output_tokens), 0) AS avg_tokens_per_interval
FROM intervals
GROUP BY 1, 2, 3
ORDER BY input_tokens DESC, status, finish_class, finish_reason;
