//! runlog's core: everything between a log line and the reduced rows, with no Arrow or
//! DataFusion in it, so that it builds in seconds, its tests run alone
//! (`cargo test -p runlog-core`) and the fuzz targets link it as it is.
//!
//! Data flows one way. The modules, in order:
//! [`error`] (the error type) → [`event`] (the event, its kind and payload index) →
//! [`table`] (the warehouse's tables and their columns' definition) → [`decode`] (a line
//! into an event) → [`import`] (the runtimes' own formats into events) → [`shard`] (which
//! shard and partition a root belongs to) → [`fingerprint`] (tells an appended input file
//! from one read before) → [`ingest`] (files into validated, ordered agents and rejects;
//! [`ingest::spill`] for inputs larger than memory) → [`reduce`] (the interval reducer,
//! docs/semantics.md; its `rows` declare the derived tables) → [`summary`] (the
//! accounting) → [`replay`] (timelines and snapshots of one agent, a live monitor).
//!
//! The rule: modules are declared below in this order, and a module's code names
//! (`crate::...`) only modules declared before it (the root crate's test `layers::*` checks
//! it), each by the module that defines the item, not through another module's re-export. (A
//! unit test may build its input with a later module: `event::payload`'s tests decode
//! lines.) Production-like logs for tests, demos and benchmarks come from the `runlog-gen`
//! crate, which depends on this one.

// Layer order (each module names only those above it; rustfmt keeps groups apart).
pub mod error;

pub mod event;

pub mod table;

pub mod decode;

pub mod import;

pub mod shard;

pub mod fingerprint;

pub mod ingest;

pub mod reduce;

pub mod summary;

pub mod replay;

#[cfg(feature = "mimalloc")]
pub mod alloc;

pub use error::{Error, Location, Result};
pub use event::Event;
pub use ingest::{IngestOptions, Ingested};
pub use reduce::{reduce_agents, reduce_all, reduce_parts, Derived, Reducer};
pub use summary::{summarize, Summary};
