-- Run attempts whose stream died mid-answer: unsettled, and the last event was a text or
-- reasoning delta, so what a UI showed last was never committed (provisional_tail).
SELECT root,
       run_id,
       attempt,
       start_seq,
       assistant_deltas,
       reasoning_deltas,
       tool_events
FROM runs
WHERE provisional_tail
ORDER BY root, run_id, attempt;
