//! runlog-gen: deterministic, production-like session logs (docs/events.md) for tests, demos
//! and benchmarks (`runlog gen`).
//!
//! The engine needs realistic input at any size without shipping gigabytes of logs: this
//! crate writes what a fleet of agents would have recorded — owned run intervals with
//! steering, multi-step turns with streamed deltas, tool calls with every result status,
//! callbacks, subagent trees, retried model errors across the whole error-code table,
//! every kind of turn ending, runner-stream attempts (some dying mid-stream) and agents
//! whose log ends unsettled. With an anomaly rate it also writes what real pipelines
//! deliver: duplicates, conflicting re-deliveries, bad lines, truncated agents, lost
//! lines, malformed turn ends, lines out of `seq` order and agents split over two files.
//!
//! Each agent is drawn from its own small PRNG seeded by (seed, agent index), so agents are
//! independent: they are generated in parallel, in batches, and written in index order.
//! The same options always give the same bytes, and memory stays bounded whatever the size.
//!
//! Its parts, each a file: `options` (what to generate, and what was written), `write`
//! (one stream or a folder in one of three layouts), `rng` (the seeded random streams),
//! `text` (JSON strings, timestamps, the line buffer), `vocab` (the words lines are drawn
//! from) and `generator` (one agent's events, its endings and errors, turns, runner streams
//! and anomalies). It depends on the core only for its error type; the core's tests and the
//! `runlog` crate's use it.

mod generator;
mod options;
mod rng;
mod text;
mod vocab;
mod write;

pub use options::{GenOptions, GenStats, Layout, Mix};
pub use write::{agent_lines, part_name, write, write_to};
