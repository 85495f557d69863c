//! A commit's mapping: spool lines read back and mapped by the OTLP importer as an ingest
//! of the spool file maps them (their own line numbers, the file's names), and the agents
//! of the groups wanted assembled by the ingest's own assembly. Mapped with the whole file
//! or with only these lines, a group's agents come out the same ([`super::groups`]): its
//! records are all on these lines, and each agent's events are numbered on their own.

use runlog_core::import::{self, FileContext, Format};
use runlog_core::ingest::{self, FileRead, Ingested};

/// Why lines could not be mapped as the spool's (a line the importer refused): the commit
/// reads the whole spool instead, as an ingest does.
#[derive(Debug)]
pub struct Refused {
    pub line: u64,
    pub reason: String,
}

/// Maps the spool lines `lines` ((1-based line number, bytes), ascending) of the file
/// `input` (`last_line`: its line count) and assembles the agents whose root `wanted` says
/// so.
pub fn map(
    input: &ingest::Input,
    lines: Vec<(u64, Vec<u8>)>,
    last_line: u64,
    mut wanted: impl FnMut(&str) -> bool,
) -> Result<Ingested, Refused> {
    let ctx = FileContext {
        file_idx: 0,
        name: input.name.clone(),
        rel: input.rel.clone(),
    };
    let Some(mut imp) = import::importer(Format::Otlp, &ctx) else {
        return Err(Refused {
            line: 0,
            reason: "no OTLP importer".into(),
        });
    };
    let mut events = Vec::new();
    for (no, bytes) in lines {
        let before = events.len();
        imp.line(no, &bytes, &mut events)
            .map_err(|reason| Refused { line: no, reason })?;
        for ev in &mut events[before..] {
            if ev.line == 0 {
                ev.line = no;
            }
        }
    }
    imp.finish(&mut events);
    if let Some((line, reason, _)) = imp.rejects().into_iter().next() {
        return Err(Refused { line, reason });
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
    Ok(ingest::assemble(vec![read]))
}
