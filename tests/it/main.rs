//! The integration tests of the `runlog` crate, in one binary (each test binary links
//! DataFusion again: one link instead of one per file). The core's own tests (decoders,
//! reducer, oracle) are in `crates/runlog-core/tests/it`.

mod append;
mod ballista;
mod baseline;
mod cli;
mod commit;
mod damaged;
mod golden;
mod html;
mod queries;
mod reliability;
#[cfg(feature = "s3")]
mod s3;
mod shards;
mod timeline;
