#[test]
fn scratch() {
    use runlog::report::{Report, Section};
    let mut rows = Vec::new();
    for h in 0..48 {
        let (d, hh) = (1 + h / 24, h % 24);
        let b = format!("2026-11-0{d} {hh:02}:00");
        rows.push(vec![
            b.clone(),
            "settled".into(),
            "completed".into(),
            format!("{}", 20 + (h * 7) % 13),
        ]);
        rows.push(vec![
            b.clone(),
            "settled".into(),
            "error".into(),
            format!("{}", 1 + h % 4),
        ]);
        if h % 5 == 0 {
            rows.push(vec![b, "unsettled".into(), "-".into(), "2".into()]);
        }
    }
    let r = Report {
        totals: vec![],
        sections: vec![Section {
            id: "finish_reasons_over_time".into(),
            title: "Finish reasons over time (by hour, UTC)".into(),
            note: "n".into(),
            columns: vec![
                "hour".into(),
                "status".into(),
                "finish_reason".into(),
                "intervals".into(),
            ],
            rows,
        }],
    };
    std::fs::write("/tmp/hours.html", runlog::html::render_html(&r)).unwrap();
}
