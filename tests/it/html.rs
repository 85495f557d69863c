//! The HTML report (`runlog report --html FILE`): one self-contained page whose charts and
//! tables show the same figures as the text report, built from the same `Report` value.

use std::path::{Path, PathBuf};
use std::process::Command;

use runlog::html::render_html;
use runlog::report::{render_text, Report, Section};

/// Every chart of the page: (chart id, section id).
const CHARTS: &[(&str, &str)] = &[
    ("finish_classes", "finish_classes"),
    ("finish_reasons", "finish_reasons"),
    ("interval_status", "interval_status"),
    ("finish_reasons_over_time", "finish_reasons_over_time"),
    ("turn_states", "turn_states"),
    ("error_codes_retryable", "error_codes"),
    ("error_codes_rates", "error_codes"),
    ("runs", "runs"),
    ("tool_calls", "tool_calls"),
    ("callbacks", "callbacks"),
    ("tokens", "tokens"),
];

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs")
}

fn sample_report() -> Report {
    let loaded = runlog::pipeline::load(&[samples()], &Default::default()).expect("load samples");
    let ctx =
        runlog::query::context_from_batches(loaded.batches().expect("batches")).expect("context");
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(runlog::report::build(&ctx))
        .expect("report")
}

pub(crate) fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The text between `start` (found at or after `from`) and the next `end`.
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = s.find(start)? + start.len();
    let j = s[i..].find(end)? + i;
    Some(&s[i..j])
}

/// The `<section data-section="id">` element of the page.
fn section_html<'a>(html: &'a str, id: &str) -> &'a str {
    between(html, &format!(r#"data-section="{id}">"#), "</section>")
        .unwrap_or_else(|| panic!("no section {id}"))
}

/// The body cells of a section's table, unescaped.
fn table_rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let table = between(html, &format!(r#"<table data-table="{id}">"#), "</table>")
        .unwrap_or_else(|| panic!("no table {id}"));
    let body = between(table, "<tbody>", "</tbody>").expect("tbody");
    body.split("</tr>")
        .filter(|r| r.contains("<td"))
        .map(|r| {
            r.split("</td>")
                .filter_map(|c| c.find("<td").map(|i| &c[i..]))
                .map(|c| unescape(&c[c.find('>').expect("td") + 1..]))
                .collect()
        })
        .collect()
}

/// The rows of a section in the text report (between the rule under the header and the
/// note), cells split at runs of two or more spaces.
fn text_rows(text: &str, title: &str, note: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .windows(2)
        .position(|w| w[0] == title && w[1].starts_with("=="))
        .unwrap_or_else(|| panic!("no text section {title:?}"));
    if lines[at + 2] == "(none)" {
        return Vec::new();
    }
    lines[at + 4..]
        .iter()
        .take_while(|l| **l != format!("  ({note})"))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

/// Every `data-value` of the bars inside a piece of the page.
fn bar_values(html: &str) -> Vec<String> {
    html.split(r#"<g class="bar""#)
        .skip(1)
        .map(|g| unescape(between(g, r#"data-value=""#, "\"").expect("data-value")))
        .collect()
}

fn every_chart_is_present_in_its_section() {
    let report = sample_report();
    let html = render_html(&report);
    for (chart, section) in CHARTS {
        let tag = format!(r#"data-chart="{chart}""#);
        assert_eq!(html.matches(&tag).count(), 1, "chart {chart} once");
        let sec = section_html(&html, section);
        let fig = between(sec, &tag, "</figure>").unwrap_or_else(|| panic!("{chart} in {section}"));
        assert!(fig.contains("<svg"), "{chart} is an inline SVG");
        assert!(
            !bar_values(fig).is_empty(),
            "{chart} draws bars on the samples"
        );
    }
    for s in &report.sections {
        assert!(
            html.contains(&format!(r#"data-section="{}""#, s.id)),
            "section {}",
            s.id
        );
    }
}

fn tables_hold_the_numbers_of_the_text_report() {
    let report = sample_report();
    let html = render_html(&report);
    let text = render_text(&report);
    for s in &report.sections {
        let in_html = table_rows(&html, &s.id);
        assert_eq!(in_html, s.rows, "{}: HTML table = report rows", s.id);
        assert_eq!(
            text_rows(&text, &s.title, &s.note),
            in_html,
            "{}: HTML table = text report",
            s.id
        );
        assert!(!in_html.is_empty(), "{} has rows on the samples", s.id);
    }
    for (k, v) in &report.totals {
        let shown = match k.as_str() {
            "first_event" | "last_event" | "span" | "inputs" => continue,
            _ => format!("<dd>{v}</dd>"),
        };
        assert!(html.contains(&shown), "total {k} = {v} in the header");
        assert!(text.contains(&format!("{k}: {v}")), "total {k} in the text");
    }
    for k in ["inputs", "first_event", "last_event", "span"] {
        let v = &report.totals.iter().find(|(x, _)| x == k).expect(k).1;
        assert!(html.contains(v.as_str()), "{k} = {v} in the header");
    }
}

fn bars_draw_cells_of_their_sections_table() {
    let report = sample_report();
    let html = render_html(&report);
    for s in &report.sections {
        let sec = section_html(&html, &s.id);
        let cells: Vec<&String> = s.rows.iter().flatten().collect();
        for v in bar_values(sec) {
            assert!(cells.contains(&&v), "{}: bar value {v:?} is a cell", s.id);
        }
    }
    // The finish-reason chart draws exactly the settled rows, with their counts.
    let fr = report
        .sections
        .iter()
        .find(|s| s.id == "finish_reasons")
        .unwrap();
    let settled: Vec<String> = fr
        .rows
        .iter()
        .filter(|r| r[0] == "settled")
        .map(|r| r[2].clone())
        .collect();
    assert_eq!(bar_values(section_html(&html, "finish_reasons")), settled);
}

fn the_page_references_nothing_outside_itself() {
    let html = render_html(&sample_report()).to_ascii_lowercase();
    for bad in [
        "http://",
        "https://",
        "src=",
        "<script",
        "@import",
        "url(",
        "<link",
        "<img",
        "<iframe",
        "@font-face",
    ] {
        assert!(!html.contains(bad), "page contains {bad:?}");
    }
    for href in html.split("href=\"").skip(1) {
        let link: String = href.chars().take(30).collect();
        assert!(href.starts_with('#'), "only in-page links: {link}");
    }
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("prefers-color-scheme:dark"));
    assert!(html.contains("@media print"));
}

fn strings_from_the_logs_are_escaped() {
    let evil = r#"<script>alert("x")</script>"#;
    let attr = r#"" onmouseover="alert(1)"#;
    let section = |id: &str, columns: &[&str], rows: Vec<Vec<&str>>| Section {
        id: id.to_string(),
        title: format!("{id} {evil}"),
        note: evil.to_string(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .into_iter()
            .map(|r| r.into_iter().map(String::from).collect())
            .collect(),
    };
    let report = Report {
        totals: vec![
            ("agents".into(), evil.into()),
            ("inputs".into(), format!("a{attr}.jsonl")),
            ("first_event".into(), evil.into()),
            ("last_event".into(), "x".into()),
        ],
        sections: vec![
            section(
                "finish_reasons",
                &["status", "finish_reason", "intervals", "pct"],
                vec![
                    vec!["settled", evil, "3", "50.0"],
                    vec!["settled", attr, "3", "50.0"],
                ],
            ),
            section(
                "finish_reasons_over_time",
                &["hour", "status", "finish_reason", "intervals"],
                vec![vec![evil, "settled", attr, "2"], vec![attr, evil, "-", "1"]],
            ),
            section(
                "error_codes",
                &[
                    "code",
                    "errors",
                    "pct",
                    "recorded_retryable",
                    "expected_retryable",
                    "mismatches",
                    "odd_status",
                    "retried",
                    "recovered",
                ],
                vec![vec![evil, "2", "100.0", "2", "1", "1", "0", "50.0%", "-"]],
            ),
            section(&format!("x{attr}"), &[evil], vec![vec![evil]]),
        ],
    };
    let html = render_html(&report);
    assert!(!html.contains("<script"), "a raw <script> tag");
    assert!(
        !html.contains(r#"" onmouseover"#),
        "an attribute broken out of"
    );
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
    // The escaped strings read back as the originals in the tables.
    assert_eq!(table_rows(&html, "error_codes")[0][0], evil);
    assert_eq!(table_rows(&html, "finish_reasons")[1][1], attr);
    // A mismatch is flagged in the chart and the table.
    let errors = section_html(&html, "error_codes");
    assert!(errors.contains("1 mismatch") && errors.contains(r#"class="flagged""#));
}

fn the_time_bucket_follows_the_span() {
    use runlog::report::time_unit;
    let hour = 3_600_000_000;
    assert_eq!(time_unit(0).0, "hour");
    assert_eq!(time_unit(48 * hour).0, "hour");
    assert_eq!(time_unit(49 * hour).0, "day");
    assert_eq!(time_unit(60 * 24 * hour).0, "day");
    assert_eq!(time_unit(61 * 24 * hour).0, "week");
    assert_eq!(time_unit(400 * 24 * hour).0, "month");
    let report = sample_report();
    let s = report
        .sections
        .iter()
        .find(|s| s.id == "finish_reasons_over_time")
        .unwrap();
    assert!(s.title.contains("(by "), "{}", s.title);
    assert!(!s.title.contains('{') && !s.note.contains('{'));
}

fn cli_writes_the_page_and_prints_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let run = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .arg("report")
        .arg(samples())
        .arg("--html")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.stdout.is_empty(), "--quiet prints nothing on stdout");
    assert!(String::from_utf8_lossy(&run.stderr).contains(&out.display().to_string()));
    let page = std::fs::read_to_string(&out).unwrap();
    assert_eq!(page, render_html(&sample_report()));

    // Without --quiet the text report still goes to stdout.
    let run = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .arg("report")
        .arg(samples())
        .arg("--html")
        .arg(dir.path().join("again.html"))
        .output()
        .unwrap();
    assert!(run.status.success());
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        render_text(&sample_report())
    );
}

trials! {
    every_chart_is_present_in_its_section,
    tables_hold_the_numbers_of_the_text_report,
    bars_draw_cells_of_their_sections_table,
    the_page_references_nothing_outside_itself,
    strings_from_the_logs_are_escaped,
    the_time_bucket_follows_the_span,
    cli_writes_the_page_and_prints_its_path,
}
