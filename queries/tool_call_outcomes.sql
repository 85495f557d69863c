-- Tool-call outcomes per tool: which tools fail, get denied, or never return.
SELECT coalesce(name, '(unnamed)') AS tool,
       count(*) AS calls,
       sum(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) AS ok,
       sum(CASE WHEN status IS NULL THEN 1 ELSE 0 END) AS no_result,
       sum(CASE WHEN status NOT IN ('ok') THEN 1 ELSE 0 END) AS not_ok
FROM tool_calls
GROUP BY 1
ORDER BY calls DESC, tool;
