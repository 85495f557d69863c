//! The side-by-side chart of a baseline comparison's section ([`crate::baseline`]): a
//! baseline and a current bar per row, significant shifts flagged.

use super::bars::{hbars, Bar, BarRow};
use super::charts::empty_chart;
use crate::baseline::{fmt_num, fmt_pp, ComparedSection};

/// The side-by-side chart of a compared section: per row a baseline and a current bar of
/// its share (or, without shares, its count); rows with a significant shift of that figure
/// are flagged with their change.
pub(super) fn comparison_chart(s: &ComparedSection) -> Option<String> {
    let mi = s
        .measures
        .iter()
        .position(|m| m == "share")
        .or_else(|| (!s.measures.is_empty()).then_some(0))?;
    let is_share = s.measures[mi] == "share";
    let rows: Vec<BarRow> = s
        .rows
        .iter()
        .filter_map(|r| {
            let m = r.measures.get(mi)?;
            let cell = |v: Option<f64>| match v {
                None => "-".to_string(),
                Some(v) if is_share => format!("{v:.1}%"),
                Some(v) => fmt_num(v),
            };
            let parts: Vec<&str> = r
                .key
                .iter()
                .map(String::as_str)
                .filter(|v| *v != "-")
                .collect();
            Some(BarRow {
                label: if parts.is_empty() {
                    "-".to_string()
                } else {
                    parts.join(" · ")
                },
                flagged: m.significant,
                bars: vec![
                    Bar {
                        cell: cell(m.baseline),
                        value: m.baseline,
                        class: "s-total",
                        series: "baseline".to_string(),
                    },
                    Bar {
                        cell: cell(m.current),
                        value: m.current,
                        class: "s-rec",
                        series: "current".to_string(),
                    },
                ],
                note: m.significant.then(|| fmt_pp(m.change.unwrap_or(0.0))),
            })
        })
        .collect();
    if rows.is_empty() {
        return Some(empty_chart());
    }
    let series = [
        ("baseline".to_string(), "s-total"),
        ("current".to_string(), "s-rec"),
    ];
    Some(hbars(
        &s.title,
        &rows,
        &series,
        None,
        if is_share { "%" } else { "" },
    ))
}
