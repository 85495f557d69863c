-- How each runtime's turns ended, in one vocabulary: turns by log format and finish class
-- (docs/finish-class.md); '(not ended)' = running, blocked, or an end without a kind.
WITH src AS (SELECT root, min(source) AS source FROM events GROUP BY root)
SELECT coalesce(s.source, '-') AS format,
       coalesce(t.finish_class, '(not ended)') AS finish_class,
       count(*) AS turns,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY s.source), 1) AS pct
FROM turns t LEFT JOIN src s ON t.root = s.root
GROUP BY s.source, t.finish_class
ORDER BY format, turns DESC, finish_class;
