//! Ingest and reduce, without Arrow or Parquet: the core's share of `runlog ingest`, for
//! callgrind (instruction counts of read, assembly and the reducer on a chosen log shape).
//!
//!     ingest_reduce gen OUT LAYOUT MIX AGENTS FILES    write a log with `runlog gen`'s generator
//!     ingest_reduce bench PATH...                      ingest + reduce_all only, timed; then
//!                                                      the reducer once on one thread over
//!                                                      the agents as ingest left them
//!     ingest_reduce run PATH...                        ingest + reduce_all; prints counts and a
//!                                                      digest of every row (sorted), to check
//!                                                      that a change keeps the tables identical
//!     ingest_reduce reduce MIX AGENTS SECS [each]      the reducer on one thread, as the
//!                                                      criterion bench `reduce/*` runs it (seed
//!                                                      7), for SECS seconds: events/s, without
//!                                                      building DataFusion for `cargo bench`;
//!                                                      `each`: a new reducer per agent, its rows
//!                                                      appended to the part (ingest before)

use std::path::PathBuf;

use runlog_core::ingest::{ingest_paths, IngestOptions};
use runlog_core::reduce::reduce_all;
use runlog_core::shard::{fnv1a64_more, FNV1A64_START};
use runlog_gen::{write, GenOptions};

/// The allocator of the `runlog` binary, set up as it sets it up (`src/main.rs`), so that
/// instruction and page-fault counts are the binary's.
#[global_allocator]
static GLOBAL: runlog_core::alloc::Mimalloc = runlog_core::alloc::Mimalloc;

fn main() {
    runlog_core::alloc::small_pages();
    runlog_core::alloc::keep_freed_memory();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") => {
            let opts = GenOptions {
                agents: args[4].parse().expect("AGENTS"),
                files: args[5].parse().expect("FILES"),
                layout: args[2].parse().expect("LAYOUT"),
                mix: args[3].parse().expect("MIX"),
                ..Default::default()
            };
            let st = write(&opts, &PathBuf::from(&args[1])).expect("gen");
            println!("{} lines, {} bytes", st.lines, st.bytes);
        }
        Some("bench") => {
            // Ingest and reduce only (what callgrind should count).
            let paths: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
            let start = std::time::Instant::now();
            let ing = ingest_paths(&paths, &IngestOptions::default()).expect("ingest");
            let read = start.elapsed().as_secs_f64();
            let start = std::time::Instant::now();
            let d = reduce_all(&ing);
            let reduce = start.elapsed().as_secs_f64();
            // The reducer on one thread over the agents where ingest left them (cold in
            // cache, as ingest reduces them), once.
            let start = std::time::Instant::now();
            let one = runlog_core::reduce_agents(&ing.agents);
            let alone = start.elapsed().as_secs_f64();
            let events: usize = ing.agents.iter().map(|a| a.events.len()).sum();
            println!(
                "agents {} intervals {} ({}): read+assemble {read:.3} s, reduce_all {reduce:.3} \
                 s; one thread {alone:.3} s, {:.2} M events/s",
                ing.agents.len(),
                d.intervals.len(),
                one.intervals.len(),
                events as f64 / alone / 1e6
            );
        }
        Some("run") => {
            let paths: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
            let ing = ingest_paths(&paths, &IngestOptions::default()).expect("ingest");
            let d = reduce_all(&ing);
            let mut rows: Vec<String> = Vec::new();
            for a in &ing.agents {
                for e in &a.events {
                    rows.push(format!(
                        "{} {} {} {} {:?} {} {}",
                        e.root, e.seq, e.ts, e.session, e.turn, e.kind, e.data
                    ));
                }
            }
            rows.extend(d.intervals.iter().map(|r| format!("{r:?}")));
            rows.extend(d.turns.iter().map(|r| format!("{r:?}")));
            rows.extend(d.errors.iter().map(|r| format!("{r:?}")));
            rows.extend(d.tool_calls.iter().map(|r| format!("{r:?}")));
            rows.extend(d.callbacks.iter().map(|r| format!("{r:?}")));
            rows.extend(d.runs.iter().map(|r| format!("{r:?}")));
            rows.extend(d.agents.iter().map(|r| format!("{r:?}")));
            rows.sort_unstable();
            let mut h = FNV1A64_START;
            for r in &rows {
                h = fnv1a64_more(h, r.as_bytes());
                h = fnv1a64_more(h, b"\n");
            }
            let t = ing.totals();
            println!(
                "agents {} kept {} rejects {} rows {} digest {h:016x}",
                ing.agents.len(),
                t.kept,
                t.rejects,
                rows.len()
            );
        }
        Some("reduce") => {
            let opts = GenOptions {
                agents: args[2].parse().expect("AGENTS"),
                seed: 7,
                mix: args[1].parse().expect("MIX"),
                ..Default::default()
            };
            let secs: f64 = args[3].parse().expect("SECS");
            let mut bytes = Vec::new();
            runlog_gen::write_to(&opts, &mut bytes).expect("gen");
            let opt = IngestOptions::default();
            let fr =
                runlog_core::ingest::read_stream(0, "bench", bytes.as_slice(), &opt).expect("read");
            let ing = runlog_core::ingest::assemble(vec![fr]);
            let events: usize = ing.agents.iter().map(|a| a.events.len()).sum();
            let start = std::time::Instant::now();
            let (mut rounds, mut rows) = (0u64, 0usize);
            // As ingest reduces (`reduce_agents`: one reducer, its room kept, from agent to
            // agent), or with `each`, a new reducer per agent (`reduce_agent`).
            let each = args.get(4).map(String::as_str) == Some("each");
            while start.elapsed().as_secs_f64() < secs {
                if each {
                    let mut part = runlog_core::Derived::default();
                    for a in &ing.agents {
                        part.append(runlog_core::reduce::reduce_agent(&a.root, &a.events));
                    }
                    rows += part.turns.len();
                } else {
                    rows += runlog_core::reduce_agents(&ing.agents).turns.len();
                }
                rounds += 1;
            }
            let per_sec = (rounds as f64 * events as f64) / start.elapsed().as_secs_f64();
            println!(
                "events {events} rounds {rounds} turns/round {} M events/s {:.2}",
                rows as u64 / rounds.max(1),
                per_sec / 1e6
            );
        }
        _ => eprintln!(
            "usage: ingest_reduce gen OUT LAYOUT MIX AGENTS FILES | bench PATH... | run PATH... \
             | reduce MIX AGENTS SECS [each]"
        ),
    }
}
