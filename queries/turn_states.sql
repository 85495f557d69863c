-- Turn states of root and subagent turns, with the detail each state carries.
SELECT CASE WHEN is_root THEN 'root' ELSE 'subagent' END AS session_kind,
       coalesce(state, 'protocol_error') AS state,
       coalesce(stop_reason, cause, error_code, outcome, '-') AS detail,
       count(*) AS turns
FROM turns
GROUP BY 1, 2, 3
ORDER BY session_kind, turns DESC, state, detail;
