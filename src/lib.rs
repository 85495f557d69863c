//! runlog: event-log analytics and replay for AI-agent runtimes.
//!
//! The pipeline, one module per stage, data flowing one way. The core crate (`runlog_core`:
//! event → decode → import → ingest → reduce, no Arrow or DataFusion) turns files into
//! validated, ordered events, rejects and derived rows; this crate stores and answers:
//! [`store`] (Arrow schemas and batches from the table definitions, Parquet files, reading
//! them back) → [`commit`] (the warehouse's version log, lock and garbage collection, on any
//! [`objstore`], and the fingerprint index) → [`loaded`] (logs read into memory) →
//! [`append`] (only what is new) → [`spilled_tables`] (the tables a question reads from logs
//! too large to hold) → [`pipeline`] (the one way logs become tables: inputs listed by
//! [`inputs`]; in memory, spilled, a full, shard or append commit) →
//! [`query`] (SQL; [`plan_tables`] builds from raw logs only what a statement reads) /
//! [`engine`] (local or Ballista) → [`report`] (rendered as text, JSON, Markdown or
//! [`html`]; [`baseline`] compares two reports, testing shifts with [`stats`]) / [`replay`]
//! (and its pages, [`timeline`]); [`collect`] receives OTLP/HTTP exports and commits them,
//! [`export`] writes turns as OpenTelemetry traces; [`bench`] times the stages.
//!
//! The rule: modules are declared below in this order, and a module's code names
//! (`crate::...`) only modules declared before it (the test `layers::*` checks it). The core's
//! stages are named by their own crate (`runlog_core::ingest`), never through this one.

// Layer order (each module names only those above it; rustfmt keeps groups apart).
pub mod error;

pub mod owner;

pub mod location;

pub mod objstore;

pub mod inputs;

pub mod store;

pub mod commit;

pub mod loaded;

pub mod append;

pub mod events_projected;

pub mod spilled_tables;

pub mod pipeline;

pub mod query;

pub mod plan_tables;

pub mod engine;

pub mod report;

pub mod stats;

pub mod baseline;

pub mod html;

pub mod replay;

pub mod timeline;

pub mod bench;

pub mod collect;

pub mod export;
