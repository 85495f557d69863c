-- Callbacks still open at the end of the log (never answered, turn never ended):
-- agents waiting on a human or a client.
SELECT root, session, turn, callback_id, kind, title, open_seq
FROM callbacks
WHERE closed_by IS NULL
ORDER BY root, open_seq;
