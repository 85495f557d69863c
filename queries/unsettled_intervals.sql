-- Intervals still open when their agent's log ended: no finish reason was recorded.
-- Shows how far each got (turns, model calls, errors) and the last event seen.
SELECT i.root,
       i.open_seq,
       i.opened_at,
       a.last_seq,
       a.last_ts,
       i.turns,
       i.model_calls,
       i.errors,
       i.seq_gaps
FROM intervals i
JOIN agents a ON a.root = i.root
WHERE i.status = 'unsettled'
ORDER BY a.last_ts DESC, i.root
LIMIT 100;
