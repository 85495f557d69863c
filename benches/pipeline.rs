//! Criterion benchmarks of each pipeline stage on a generated log, declared with
//! throughputs so results read as MB/s (decode, ingest, end to end, gen) and events/s
//! (reduce).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use runlog_core::ingest::{self, IngestOptions};
use runlog_gen::{self as gen, GenOptions};

/// The allocator the `runlog` binary uses (src/main.rs), so that the figures are the
/// binary's: with the system allocator, malloc/free took about 30 % of the reduce bench.
#[global_allocator]
static GLOBAL: runlog_core::alloc::Mimalloc = runlog_core::alloc::Mimalloc;

fn log_bytes(agents: u64) -> Vec<u8> {
    log_bytes_of(agents, gen::Mix::Deltas)
}

fn log_bytes_of(agents: u64, mix: gen::Mix) -> Vec<u8> {
    let opts = GenOptions {
        agents,
        seed: 7,
        mix,
        ..Default::default()
    };
    let mut buf = Vec::new();
    gen::write_to(&opts, &mut buf).expect("generate");
    buf
}

fn bench_decode(c: &mut Criterion) {
    let bytes = log_bytes(200);
    let lines: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("parse_line", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                n += ingest::parse_line(l).is_ok() as usize;
            }
            n
        })
    });
    // The serde_json decoder alone (what every line took before the fast path).
    g.bench_function("parse_line_general", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                n += runlog_core::decode::parse_line_general(l).is_ok() as usize;
            }
            n
        })
    });
    g.bench_function("read_stream+assemble", |b| {
        b.iter(|| {
            let fr = ingest::read_stream(0, "bench", bytes.as_slice(), &IngestOptions::default())
                .expect("read");
            ingest::assemble(vec![fr]).agents.len()
        })
    });
    g.finish();
}

/// The reducer on one core, on the delta mix (`one_core`, 200 agents) and on the persisted
/// mix (`persisted_one_core`, 800 agents: few deltas, mostly structural events).
fn bench_reduce(c: &mut Criterion) {
    for (name, agents, mix) in [
        ("one_core", 200, gen::Mix::Deltas),
        ("persisted_one_core", 800, gen::Mix::Persisted),
    ] {
        bench_reduce_mix(c, name, log_bytes_of(agents, mix));
    }
}

fn bench_reduce_mix(c: &mut Criterion, name: &str, bytes: Vec<u8>) {
    let fr =
        ingest::read_stream(0, "bench", bytes.as_slice(), &IngestOptions::default()).expect("read");
    let ing = ingest::assemble(vec![fr]);
    let events: u64 = ing.agents.iter().map(|a| a.events.len() as u64).sum();
    let mut g = c.benchmark_group("reduce");
    g.throughput(Throughput::Elements(events));
    g.bench_function(BenchmarkId::new(name, events), |b| {
        // As ingest reduces a part of its agents: one reducer from agent to agent.
        b.iter(|| runlog_core::reduce::reduce_agents(&ing.agents).turns.len())
    });
    g.finish();
}

fn bench_end_to_end(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let bytes = log_bytes(400);
    std::fs::write(&path, &bytes).expect("write");
    let mut g = c.benchmark_group("end_to_end");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("load+batches", |b| {
        b.iter(|| {
            let loaded =
                runlog::pipeline::load(std::slice::from_ref(&path), &IngestOptions::default())
                    .expect("load");
            loaded.batches().expect("batches").len()
        })
    });
    g.bench_function("load+warehouse", |b| {
        let wh = dir.path().join("wh");
        b.iter(|| {
            let loaded =
                runlog::pipeline::load(std::slice::from_ref(&path), &IngestOptions::default())
                    .expect("load");
            let batches = loaded.batches().expect("batches");
            runlog::pipeline::write_batches(&wh, &batches, serde_json::Value::Null).expect("write")
        })
    });
    g.finish();
}

/// The generator (`runlog gen`) writing 200 agents to nowhere, as MB/s of log written.
fn bench_gen(c: &mut Criterion) {
    let opts = GenOptions {
        agents: 200,
        seed: 7,
        ..Default::default()
    };
    let bytes = log_bytes(opts.agents).len() as u64;
    let mut g = c.benchmark_group("gen");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("write_to", |b| {
        b.iter(|| gen::write_to(&opts, &mut std::io::sink()).expect("generate"))
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_decode,
    bench_reduce,
    bench_end_to_end,
    bench_gen
);
criterion_main!(benches);
