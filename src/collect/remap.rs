//! A commit's mapping: spool lines read back and mapped by the OTLP importer as an ingest
//! of the spool file maps them (their own line numbers, the file's names), and the agents
//! of the groups wanted assembled by the ingest's own assembly. Mapped with the whole file
//! or with only these lines, a group's agents come out the same ([`super::groups`]): its
//! records are all on these lines, and each agent's events are numbered on their own.

use runlog_core::import::otlp::OtlpImporter;
use runlog_core::import::{FileContext, Format, Importer};
use runlog_core::ingest::{self, FileRead, Ingested};

use super::spool::Line;

/// Why lines could not be mapped as the spool's (a line the importer refused): the commit
/// reads the whole spool instead, as an ingest does.
#[derive(Debug)]
pub struct Refused {
    pub line: u64,
    pub reason: String,
}

/// Maps the spool lines `lines` ((1-based line number, the line), ascending, read as they
/// are mapped; a line kept as the importer reads it is taken as it) of the file `input` (`last_line`: its line count) and assembles the agents
/// whose root `wanted` says so. `Err` (outer): a line could not be read.
pub fn map<E>(
    input: &ingest::Input,
    lines: impl Iterator<Item = Result<(u64, Line), E>>,
    last_line: u64,
    mut wanted: impl FnMut(&str) -> bool,
) -> Result<Result<Ingested, Refused>, E> {
    let ctx = FileContext {
        file_idx: 0,
        name: input.name.clone(),
        rel: input.rel.clone(),
        keep: None,
    };
    let mut imp = OtlpImporter::new(&ctx);
    let mut events = Vec::new();
    for line in lines {
        let (no, line) = line?;
        let before = events.len();
        let taken = match line {
            Line::Text(bytes) => imp.line(no, &bytes, &mut events),
            Line::Ahead(a) => imp.line_ahead(no, a).map_err(|_| {
                "a line kept as read cannot be part of a pretty-printed document".to_string()
            }),
        };
        if let Err(reason) = taken {
            return Ok(Err(Refused { line: no, reason }));
        }
        for ev in &mut events[before..] {
            if ev.line == 0 {
                ev.line = no;
            }
        }
    }
    imp.finish(&mut events);
    if let Some((line, reason, _)) = imp.rejects().into_iter().next() {
        return Ok(Err(Refused { line, reason }));
    }
    events.retain(|ev| wanted(&ev.root));
    for ev in &mut events {
        if ev.line == 0 {
            ev.line = last_line.max(1);
        }
        ev.file = 0;
    }
    let mut read = FileRead {
        format: Format::Otlp,
        events,
        ..Default::default()
    };
    read.summary.file = input.name.clone();
    read.summary.format = Format::Otlp.name().to_string();
    Ok(Ok(ingest::assemble(vec![read])))
}
