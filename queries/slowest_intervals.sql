-- The slowest settled intervals, from the opening receipt to the closing idle.
SELECT root,
       open_seq,
       finish_reason,
       opened_at,
       CAST(to_unixtime(closed_at) - to_unixtime(opened_at) AS DOUBLE) AS seconds,
       turns,
       model_calls,
       tool_calls,
       errors
FROM intervals
WHERE status = 'settled'
ORDER BY seconds DESC, root, open_seq
LIMIT 20;
