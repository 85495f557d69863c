//! The core's integration tests, in one binary (one link instead of one per file): the
//! line decoders, the payload walker, splitting large files, the spill, and the oracle —
//! a second, deliberately simple implementation of SEMANTICS.md that must agree with the
//! reducer on generated agents.

// The tests were written against the `runlog` crate, which re-exports these modules.
extern crate runlog_core as runlog;

mod common;
mod decode_fast;
mod inferred_endings;
mod line_accounting;
mod oracle;
mod otlp_producers;
mod payload_walker;
mod spill;
mod split;
