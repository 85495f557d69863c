-- Token use per finish reason: where the spend goes, and what it bought.
SELECT status,
       coalesce(finish_reason, '-') AS finish_reason,
       count(*) AS intervals,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       round(avg(input_tokens + output_tokens), 0) AS avg_tokens_per_interval
FROM intervals
GROUP BY 1, 2
ORDER BY input_tokens DESC, status, finish_reason;
