//! The core's integration tests, in one binary (one link instead of one per file): the
//! line decoders, the payload walker, splitting large files, the spill, one agent's read,
//! and the oracle —
//! a second, deliberately simple implementation of docs/semantics.md that must agree with the
//! reducer on generated agents.

mod common;
mod decode_fast;
mod inferred_endings;
mod line_accounting;
mod needs;
mod one_root;
#[cfg(feature = "opencode-db")]
mod opencode_db_damage;
mod oracle;
mod otlp_producers;
mod payload_walker;
mod spill;
mod split;
