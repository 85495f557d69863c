//! Gen: deterministic, production-like session logs for tests, demos and benchmarks.
