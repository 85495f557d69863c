-- Why input lines were rejected, with one example location each.
SELECT regexp_replace(reason, '[0-9]+', 'N', 'g') AS reason,
       count(*) AS lines,
       min(concat(file, ':', CAST(line AS VARCHAR))) AS example
FROM rejects
GROUP BY 1
ORDER BY lines DESC, reason;
