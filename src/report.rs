//! Report: the headline numbers of a warehouse — why intervals ended (by finish class,
//! then by raw finish reason), how turns ended, which errors occurred and how retryable
//! they were, how run attempts settled — computed once with SQL into a [`Report`] value
//! that is then rendered as text, JSON or Markdown.

use std::fmt::Write as _;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::error::Result;
use crate::query::{restrict_to_window, run_sql, TimeWindow};

/// One section of the report: a titled table of strings.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub note: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The whole report: a header of totals and the sections in order.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub totals: Vec<(String, String)>,
    pub sections: Vec<Section>,
}

/// The tables the report reads: every table (`events` only for each root's `source`, in
/// `turn_ends_by_format`).
pub fn tables_used() -> Vec<runlog_core::table::Table> {
    crate::store::TABLES.to_vec()
}

/// The SQL of every section: (id, title, note, query). `{unit}` and `{format}` are filled in
/// by [`build`] with the time bucket that fits the data's span (see [`time_unit`]).
pub const SECTIONS: &[(&str, &str, &str, &str)] = &[
    (
        "finish_reasons",
        "Intervals by status and finish reason",
        "finish reason = kind of the last root-session turn end; unsettled = the log ended first",
        "SELECT status, coalesce(finish_reason, '-') AS finish_reason, count(*) AS intervals,
                round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct
         FROM intervals GROUP BY status, finish_reason ORDER BY intervals DESC, status, finish_reason",
    ),
    (
        "interval_status",
        "Intervals by status",
        "settled = a turn end closed it; unsettled = the log ended first; protocol_error = its last root turn end had no reason kind",
        "SELECT status, count(*) AS intervals,
                round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct
         FROM intervals GROUP BY status ORDER BY intervals DESC, status",
    ),
    (
        "finish_classes",
        "Intervals by finish class",
        "finish class = the finish reason's class, one vocabulary across runtimes (docs/finish-class.md); (all) = the class's total, its raw finish reasons beneath; (none) = no finish reason: unsettled, protocol error, or no root turn end",
        "WITH k AS (
             SELECT coalesce(finish_class, '(none)') AS finish_class,
                    CASE WHEN finish_reason IS NOT NULL THEN finish_reason
                         WHEN status = 'settled' THEN '(no turn end)'
                         ELSE concat('(', status, ')') END AS finish_reason
             FROM intervals),
         g AS (
             SELECT finish_class, finish_reason, count(*) AS n
             FROM k GROUP BY GROUPING SETS ((finish_class), (finish_class, finish_reason))),
         w AS (
             SELECT finish_class, finish_reason, n,
                    sum(CASE WHEN finish_reason IS NULL THEN n END) OVER (PARTITION BY finish_class) AS total,
                    sum(CASE WHEN finish_reason IS NULL THEN n END) OVER () AS grand
             FROM g)
         SELECT finish_class, coalesce(finish_reason, '(all)') AS finish_reason, n AS intervals,
                round(100.0 * n / grand, 1) AS pct
         FROM w
         ORDER BY CASE WHEN finish_class = '(none)' THEN 1 ELSE 0 END, total DESC, finish_class,
                  CASE WHEN finish_reason IS NULL THEN 0 ELSE 1 END, n DESC, finish_reason",
    ),
    // `opened_at` is in UTC: truncated as a timestamp without a time zone it gives the same
    // buckets without a look-up in the zone database per row (`runlog query` of this
    // statement alone over a warehouse of 64,000 intervals: median 80 -> 57 ms).
    (
        "finish_reasons_over_time",
        "Finish reasons over time (by {unit}, UTC)",
        "intervals by the {unit} they opened in (the unit follows the data's span); settled ones by the 5 most common finish reasons, the rest as (other)",
        "WITH ranked AS (
             SELECT finish_reason, row_number() OVER (ORDER BY count(*) DESC, finish_reason) AS rank
             FROM intervals WHERE status = 'settled' AND finish_reason IS NOT NULL GROUP BY finish_reason),
         buckets AS (
             SELECT date_trunc('{unit}', arrow_cast(i.opened_at, 'Timestamp(Microsecond, None)')) AS bucket, i.status,
                    CASE WHEN i.status <> 'settled' THEN coalesce(i.finish_reason, '-')
                         WHEN r.rank <= 5 THEN i.finish_reason ELSE '(other)' END AS finish_reason,
                    count(*) AS intervals
             FROM intervals i LEFT JOIN ranked r ON i.finish_reason = r.finish_reason
             GROUP BY 1, 2, 3)
         SELECT to_char(bucket, '{format}') AS {unit}, status, finish_reason, intervals
         FROM buckets ORDER BY 1, intervals DESC, status, finish_reason",
    ),
    (
        "turn_states",
        "Turn states",
        "detail = stop reason (Completed), cause (Interrupted), error code (Failed), outcome (UnknownOutcome)",
        "SELECT coalesce(state, 'protocol_error') AS state,
                coalesce(stop_reason, cause, error_code, outcome, '-') AS detail,
                count(*) AS turns, round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
                sum(CASE WHEN is_root THEN 1 ELSE 0 END) AS root_turns
         FROM turns GROUP BY 1, 2 ORDER BY turns DESC, state, detail",
    ),
    (
        "error_codes",
        "Top error codes",
        "recorded = retryable flag as recorded; expected = the code table's rule; retried/recovered = shares of the model errors",
        "SELECT coalesce(code, '(none)') AS code, count(*) AS errors,
                round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
                sum(CASE WHEN retryable THEN 1 ELSE 0 END) AS recorded_retryable,
                sum(CASE WHEN retryable_expected THEN 1 ELSE 0 END) AS expected_retryable,
                sum(CASE WHEN retryable_mismatch THEN 1 ELSE 0 END) AS mismatches,
                sum(CASE WHEN status_consistent = false THEN 1 ELSE 0 END) AS odd_status,
                sum(CASE WHEN source = 'model' THEN 1 ELSE 0 END) AS model_errors,
                CASE WHEN sum(CASE WHEN source = 'model' THEN 1 ELSE 0 END) = 0 THEN '-'
                     ELSE concat(CAST(round(100.0 * sum(CASE WHEN retried THEN 1 ELSE 0 END)
                          / sum(CASE WHEN source = 'model' THEN 1 ELSE 0 END), 1) AS VARCHAR), '%') END AS retried,
                CASE WHEN sum(CASE WHEN source = 'model' THEN 1 ELSE 0 END) = 0 THEN '-'
                     ELSE concat(CAST(round(100.0 * sum(CASE WHEN recovered THEN 1 ELSE 0 END)
                          / sum(CASE WHEN source = 'model' THEN 1 ELSE 0 END), 1) AS VARCHAR), '%') END AS recovered
         FROM errors GROUP BY 1 ORDER BY errors DESC, code LIMIT 20",
    ),
    (
        "runs",
        "Run attempts by settle and output status",
        "provisional tail = unsettled attempt whose last event was a text or reasoning delta",
        "SELECT settle, coalesce(output_status, '-') AS output_status,
                coalesce(wait_for_kind, '-') AS wait_for, count(*) AS attempts,
                round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
                sum(CASE WHEN provisional_tail THEN 1 ELSE 0 END) AS provisional_tails
         FROM runs GROUP BY 1, 2, 3 ORDER BY attempts DESC, settle, output_status, wait_for",
    ),
    (
        "tool_calls",
        "Tool-call outcomes",
        "status of the first tool result with the call's id; '(no result)' when none was recorded",
        "SELECT coalesce(status, '(no result)') AS status, count(*) AS calls,
                round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
                count(DISTINCT name) AS tools
         FROM tool_calls GROUP BY 1 ORDER BY calls DESC, status",
    ),
    (
        "callbacks",
        "Callbacks by kind and how they closed",
        "open = neither answered nor closed by the end of the turn that opened it",
        "SELECT coalesce(kind, '-') AS kind, coalesce(closed_by, 'open') AS closed_by,
                count(*) AS callbacks
         FROM callbacks GROUP BY 1, 2 ORDER BY callbacks DESC, kind, closed_by",
    ),
    (
        "tokens",
        "Token totals by finish reason",
        "sums of model-call usage inside each interval",
        "SELECT status, coalesce(finish_reason, '-') AS finish_reason, count(*) AS intervals,
                sum(model_calls) AS model_calls, sum(input_tokens) AS input_tokens,
                sum(output_tokens) AS output_tokens
         FROM intervals GROUP BY 1, 2 ORDER BY input_tokens DESC, status, finish_reason",
    ),
    (
        "turn_ends_by_format",
        "Turn ends by format: recorded vs inferred",
        "recorded = the log wrote the turn's end; inferred = the importer deduced it (next prompt, final answer with nothing pending, compaction; turns.inferred); none = still open (log cut mid-turn)",
        "WITH src AS (SELECT root, min(source) AS source FROM events GROUP BY root)
         SELECT coalesce(s.source, '-') AS format, count(*) AS turns,
                sum(CASE WHEN t.end_seq IS NOT NULL AND NOT t.inferred THEN 1 ELSE 0 END) AS recorded,
                sum(CASE WHEN t.end_seq IS NOT NULL AND t.inferred THEN 1 ELSE 0 END) AS inferred,
                sum(CASE WHEN t.end_seq IS NULL THEN 1 ELSE 0 END) AS no_end
         FROM turns t LEFT JOIN src s ON t.root = s.root
         GROUP BY 1 ORDER BY turns DESC, format",
    ),
];

const TOTALS_SQL: &str = "SELECT
    (SELECT count(*) FROM agents) AS agents,
    (SELECT count(*) FROM events) AS events,
    (SELECT count(*) FROM intervals) AS intervals,
    (SELECT count(*) FROM turns) AS turns,
    (SELECT count(*) FROM errors) AS errors,
    (SELECT count(*) FROM rejects) AS rejects,
    (SELECT CAST(min(ts) AS VARCHAR) FROM events) AS first_event,
    (SELECT CAST(max(ts) AS VARCHAR) FROM events) AS last_event,
    (SELECT CAST(max(ts) AS BIGINT) - CAST(min(ts) AS BIGINT) FROM events) AS span,
    (SELECT count(*) FROM files) AS files";

/// The input files, for the header.
const FILES_SQL: &str = "SELECT file FROM files ORDER BY file";

/// Every SQL statement [`build`] runs (the sections with a time bucket filled in; the
/// bucket changes no table or column read): what a report over raw logs must compute
/// ([`crate::plan_tables::Demand`]).
pub fn statements() -> Vec<String> {
    let (unit, format) = time_unit(0);
    let mut out: Vec<String> = [TOTALS_SQL, FILES_SQL, INTERVAL_SPAN_SQL]
        .iter()
        .map(|s| s.to_string())
        .collect();
    out.extend(
        SECTIONS
            .iter()
            .map(|s| s.3.replace("{unit}", unit).replace("{format}", format)),
    );
    out
}

/// The span of the intervals' opening times in microseconds: it picks the time bucket.
const INTERVAL_SPAN_SQL: &str =
    "SELECT CAST(max(opened_at) AS BIGINT) - CAST(min(opened_at) AS BIGINT) AS span FROM intervals";

/// Input files named in the header before the rest are only counted.
const INPUTS_NAMED: usize = 4;

/// The time bucket of `finish_reasons_over_time` for data spanning `span_us` microseconds,
/// as (`date_trunc` unit, `to_char` format): hours up to two days, days up to 60 days, weeks
/// up to a year, months beyond — at most about 60 buckets, so a chart's columns stay readable.
pub fn time_unit(span_us: i64) -> (&'static str, &'static str) {
    const DAY: i64 = 86_400_000_000;
    if span_us <= 2 * DAY {
        ("hour", "%Y-%m-%d %H:00")
    } else if span_us <= 60 * DAY {
        ("day", "%Y-%m-%d")
    } else if span_us <= 366 * DAY {
        ("week", "%Y-%m-%d")
    } else {
        ("month", "%Y-%m")
    }
}

/// A duration in microseconds for people: `8.5 s`, `12 min 5 s`, `3 h 20 min`, `4.2 days`.
pub fn human_span(us: i64) -> String {
    let s = us as f64 / 1e6;
    if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{} min {} s", (s / 60.0) as i64, (s % 60.0) as i64)
    } else if s < 2.0 * 86_400.0 {
        format!(
            "{} h {} min",
            (s / 3600.0) as i64,
            ((s % 3600.0) / 60.0) as i64
        )
    } else {
        format!("{:.1} days", s / 86_400.0)
    }
}

/// The input files for the header: all names when few, else the first ones and a count.
fn inputs_label(files: &[String]) -> String {
    if files.is_empty() {
        return "-".to_string();
    }
    if files.len() <= INPUTS_NAMED {
        return files.join(", ");
    }
    format!(
        "{} and {} more",
        files[..INPUTS_NAMED - 1].join(", "),
        files.len() - (INPUTS_NAMED - 1)
    )
}

fn to_strings(batches: &[RecordBatch]) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    let mut columns = Vec::new();
    let mut rows = Vec::new();
    let opts = FormatOptions::default().with_null("-");
    for b in batches {
        if columns.is_empty() {
            columns = b
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
        }
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for i in 0..b.num_rows() {
            rows.push(fmts.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    Ok((columns, rows))
}

/// Computes the report over a context holding the warehouse tables, restricted to `window`
/// first (see [`crate::query::restrict_to_window`]; a set window is named in the totals).
pub async fn build_in(ctx: &SessionContext, window: &TimeWindow) -> Result<Report> {
    restrict_to_window(ctx, window).await?;
    let mut report = build(ctx).await?;
    if !window.is_all() {
        report
            .totals
            .push(("window".to_string(), window.to_string()));
    }
    Ok(report)
}

/// Computes the report over a context holding the warehouse tables. The statements read
/// the tables only, so they run at once, each as its own task: a report's dozen small
/// queries then share the cores instead of waiting on one another.
pub async fn build(ctx: &SessionContext) -> Result<Report> {
    let (_, batches) = run_sql(ctx, INTERVAL_SPAN_SQL).await?;
    let span_us = to_strings(&batches)?
        .1
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0);
    let (unit, format) = time_unit(span_us);
    let fill = |t: &str| t.replace("{unit}", unit).replace("{format}", format);

    let mut sqls = vec![TOTALS_SQL.to_string(), FILES_SQL.to_string()];
    sqls.extend(SECTIONS.iter().map(|s| fill(s.3)));
    let tasks: Vec<_> = sqls
        .into_iter()
        .map(|sql| {
            let ctx = ctx.clone();
            tokio::spawn(async move { run_sql(&ctx, &sql).await })
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        let done = task
            .await
            .map_err(|e| crate::error::Error::Invalid(format!("a report query stopped: {e}")))?;
        results.push(done?);
    }
    let sections_done = results.split_off(2);

    let (cols, rows) = to_strings(&results[0].1)?;
    let mut totals: Vec<(String, String)> = cols
        .into_iter()
        .zip(rows.into_iter().next().unwrap_or_default())
        .collect();
    for (k, v) in totals.iter_mut() {
        if k == "span" {
            if let Ok(us) = v.parse::<i64>() {
                *v = human_span(us);
            }
        }
    }
    let files: Vec<String> = to_strings(&results[1].1)?
        .1
        .into_iter()
        .filter_map(|r| r.into_iter().next())
        .collect();
    totals.push(("inputs".to_string(), inputs_label(&files)));

    let mut sections = Vec::new();
    for ((id, title, note, _), (schema, batches)) in SECTIONS.iter().zip(sections_done) {
        let (mut columns, rows) = to_strings(&batches)?;
        if columns.is_empty() {
            columns = schema.fields().iter().map(|f| f.name().clone()).collect();
        }
        sections.push(Section {
            id: id.to_string(),
            title: fill(title),
            note: fill(note),
            columns,
            rows,
        });
    }
    Ok(Report { totals, sections })
}

/// A cell as a number: `"3"` → 3, `"50.0%"` → 50; `None` for `-` and text.
pub fn cell_number(s: &str) -> Option<f64> {
    s.trim().trim_end_matches('%').parse().ok()
}

/// A cell that reads as a number (optionally a percentage): right-aligned in tables.
pub fn is_numeric(s: &str) -> bool {
    let s = s.trim_end_matches('%');
    !s.is_empty() && s.parse::<f64>().is_ok()
}

/// Renders the report as aligned text tables.
pub fn render_text(r: &Report) -> String {
    let mut out = String::new();
    let totals: Vec<String> = r.totals.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = writeln!(out, "runlog report — {}", totals.join(", "));
    for s in &r.sections {
        let _ = writeln!(
            out,
            "\n{}\n{}",
            s.title,
            "=".repeat(s.title.chars().count())
        );
        if s.rows.is_empty() {
            let _ = writeln!(out, "(none)");
            continue;
        }
        let mut widths: Vec<usize> = s.columns.iter().map(|c| c.chars().count()).collect();
        for row in &s.rows {
            for (w, v) in widths.iter_mut().zip(row) {
                *w = (*w).max(v.chars().count());
            }
        }
        let line = |cells: &[String], out: &mut String, header: bool| {
            let parts: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(v, &w)| {
                    if !header && is_numeric(v) {
                        format!("{v:>w$}")
                    } else {
                        format!("{v:<w$}")
                    }
                })
                .collect();
            let _ = writeln!(out, "  {}", parts.join("  ").trim_end());
        };
        line(&s.columns, &mut out, true);
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        let _ = writeln!(out, "  {}", rule.join("  "));
        for row in &s.rows {
            line(row, &mut out, false);
        }
        let _ = writeln!(out, "  ({})", s.note);
    }
    out
}

/// Renders the report as Markdown.
pub fn render_markdown(r: &Report) -> String {
    let mut out = String::from("# runlog report\n\n");
    for (k, v) in &r.totals {
        let _ = writeln!(out, "- **{k}**: {v}");
    }
    for s in &r.sections {
        let _ = writeln!(out, "\n## {}\n\n_{}_\n", s.title, s.note);
        if s.rows.is_empty() {
            let _ = writeln!(out, "(none)");
            continue;
        }
        let _ = writeln!(out, "| {} |", s.columns.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(s.columns.len()));
        for row in &s.rows {
            let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    out
}

/// Renders the report as one JSON document.
pub fn render_json(r: &Report) -> String {
    let sections: Vec<serde_json::Value> = r
        .sections
        .iter()
        .map(|s| {
            let rows: Vec<serde_json::Value> = s
                .rows
                .iter()
                .map(|row| {
                    serde_json::Value::Object(
                        s.columns
                            .iter()
                            .cloned()
                            .zip(row.iter().map(|v| serde_json::Value::String(v.clone())))
                            .collect(),
                    )
                })
                .collect();
            serde_json::json!({"id": s.id, "title": s.title, "note": s.note, "rows": rows})
        })
        .collect();
    let totals: serde_json::Map<String, serde_json::Value> = r
        .totals
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({"totals": totals, "sections": sections}))
        .unwrap_or_default()
}
