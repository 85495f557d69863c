//! `runlog ingest`: logs into a warehouse, through the one write pipeline
//! ([`runlog::pipeline`]), with a progress bar on a terminal and the accounting after it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use runlog::pipeline::{CommitMode, Made, MaxRejects, Memory, Target, WriteOptions};

use super::{download_progress, memory_for, parse_format, progress_options, ReadArgs};

#[derive(Args)]
pub struct IngestArgs {
    /// Log files and folders; or objects and prefixes in a store (s3://BUCKET/PREFIX,
    /// gs://BUCKET/PREFIX, az://CONTAINER/PREFIX), downloaded first (with --append, only
    /// the objects not known unchanged).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The warehouse: a folder (a path or a file:// URL, created if missing) or a prefix in
    /// an object store: s3://BUCKET/PREFIX (feature `s3`, AWS_* environment),
    /// gs://BUCKET/PREFIX (feature `gcs`, GOOGLE_*) or az://CONTAINER/PREFIX (feature
    /// `azure`, AZURE_*).
    #[arg(long, short = 'w')]
    pub warehouse: PathBuf,
    #[command(flatten)]
    pub read: ReadArgs,
    /// Fail (and write nothing) when rejects exceed N lines, or a share like 0.5%.
    #[arg(long, value_name = "N|P%")]
    pub max_rejects: Option<String>,
    /// Also write the summary as JSON to this file ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    /// Print no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Keep only the agents of shard I of N (stable hash of the root) and commit them
    /// beside the other shards of N in the warehouse: the N shards together equal one
    /// full ingest. Every shard reads the same inputs; shard 0 also writes the rejects
    /// and files tables. With --append: N machines share one append (N divides 64: 1, 2,
    /// 4, ..., 64); shard I writes the buckets b with b % N == I, and the warehouse equals
    /// one --append of the inputs once all N have landed (in any order, or at once); until
    /// then the fingerprint index stays as it was and another append is refused.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<runlog_core::shard::Shard>,
    /// With --shard: when the warehouse holds a full ingest or shards of another N, drop
    /// them (without it, such a shard is refused).
    #[arg(long, requires = "shard")]
    pub reshard: bool,
    /// The format of the input files (the same as --input-format): auto, runlog,
    /// harness, kestrel, codex, claude-code, anthropic, openai, gemini-cli.
    #[arg(long = "format", value_name = "FORMAT", value_parser = parse_format, conflicts_with = "input_format")]
    pub format: Option<runlog_core::import::Format>,
    /// Ingest through P partitions on disk (by hash of root), so that memory holds one
    /// partition's agents per thread at a time: peak memory stays under 1 GB at any input
    /// size. 0 ingests in memory. Default: in memory below 256 MiB of input, else one
    /// partition per 64 MiB of input
    /// (compressed files counted 8x). With --shard too.
    #[arg(long, value_name = "P")]
    pub spill_partitions: Option<usize>,
    /// Garbage collection after the commit keeps every file named by one of the last K
    /// versions of the warehouse (queries still reading an older version keep their files).
    #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_versions: u64,
    /// Garbage collection also keeps every file younger than this (90s, 30m, 1h, 2d): what
    /// a running query or an ingest that has not committed yet is using is never removed.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = runlog::commit::log::parse_duration)]
    pub retention: std::time::Duration,
    /// Add PATHS to the warehouse instead of replacing it (a missing warehouse is
    /// created). A file already ingested with the same bytes is skipped; a plain file that
    /// only grew at its end has only its new lines read (numbered on); a file whose earlier
    /// content changed is read again whole and its old rows retracted. Only the buckets of
    /// the agents it touches are written again, and the tables equal a full ingest of every
    /// file ever given, row for row. When that cannot be told from the warehouse (see
    /// docs/warehouse.md) every input is read again, and the output says why. Run it
    /// from the folder the earlier ingests ran in: inputs are known by the names they were
    /// given (objects by their URLs). Objects in stores (s3://BUCKET/PREFIX/, ...) are
    /// listed first: one listed with the size and e_tag recorded when it was read is
    /// skipped without being downloaded; the others are downloaded once and compared as
    /// files are. In memory. With --shard I/N, one of N machines sharing the append (see
    /// --shard); without it while a round of shards is open for the same inputs, it does
    /// the missing shards.
    #[arg(long, conflicts_with_all = ["reshard", "spill_partitions", "max_rejects"])]
    pub append: bool,
}

pub fn run(args: IngestArgs) -> Result<()> {
    let IngestArgs {
        paths,
        warehouse,
        mut read,
        max_rejects,
        summary_json,
        quiet,
        shard,
        reshard,
        spill_partitions,
        format,
        keep_versions,
        retention,
        append,
    } = args;
    if let Some(f) = format {
        read.input_format = f;
    }
    let gc = runlog::commit::GcPolicy {
        keep_versions: keep_versions as usize,
        retention,
    };
    let commit = if append {
        CommitMode::Append { shard }
    } else if let Some(shard) = shard {
        CommitMode::Shard { shard, reshard }
    } else {
        CommitMode::Full
    };
    // Listed, not downloaded: the pipeline downloads what the commit needs (an append only
    // the objects its index does not know unchanged, docs/warehouse.md).
    let sources = runlog::inputs::list(&paths)?;
    let memory = memory_for(spill_partitions, &sources);
    let write = WriteOptions {
        commit,
        memory,
        max_rejects: max_rejects.map(MaxRejects),
        gc,
    };
    let (opts, bar) = progress_options(&read, || sources.bytes());
    // The download bar is drawn above the reading bar while objects download.
    let multi = indicatif::MultiProgress::new();
    let bar = bar.map(|b| multi.add(b));
    let target = Target::Warehouse {
        at: &warehouse,
        write: &write,
    };
    let made = runlog::pipeline::run(
        &sources,
        &opts,
        target,
        download_progress(quiet, Some(&multi)),
    );
    drop(sources);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let written = match made? {
        Made::Appended(a) => {
            return report_append(&a, &warehouse, quiet, summary_json.as_deref());
        }
        made => made.into_written()?,
    };
    if !quiet {
        print_summary(&written.summary, &warehouse);
        if let Memory::Spilled(p) = memory {
            eprintln!("  spilled through {p} partition(s)");
        }
        if let Some(st) = &written.shard_status {
            eprint!("{}", st.render());
        }
    }
    if let Some(p) = summary_json {
        let text = serde_json::to_string_pretty(&written.summary)?;
        if p.as_os_str() == "-" {
            println!("{text}");
        } else {
            std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    Ok(())
}

/// The output of `ingest --append`: what was new, and the warehouse's accounting after it.
fn report_append(
    a: &runlog::append::Appended,
    warehouse: &Path,
    quiet: bool,
    summary_json: Option<&Path>,
) -> Result<()> {
    if !quiet {
        eprintln!(
            "appended: {} new files, {} new lines ({} grown, {} changed, {} unchanged and skipped)",
            a.new_files, a.new_lines, a.grown_files, a.changed_files, a.unchanged_files
        );
        if a.downloaded_files + a.listed_unchanged > 0 {
            eprintln!(
                "  downloaded {} object(s), {} bytes; {} object(s) unchanged by their \
                 listing, not downloaded",
                a.downloaded_files, a.downloaded_bytes, a.listed_unchanged
            );
        }
        match &a.manifest {
            Some(_) => {
                if let Some(why) = &a.full_rewrite {
                    eprintln!(
                        "  fell back to a full read: read every input again and rewrote every \
                         bucket: {why}"
                    );
                }
                eprintln!(
                    "  wrote {} bucket(s), {} bytes{}",
                    a.buckets_written,
                    a.bytes_written,
                    if a.replanned > 0 {
                        format!(
                            " (planned again {} time(s): other writers committed first)",
                            a.replanned
                        )
                    } else {
                        String::new()
                    }
                );
                if let Some(s) = &a.summary {
                    eprint!("the warehouse now: ");
                    print_summary(s, warehouse);
                }
            }
            None if a.round.is_some() => {}
            None => eprintln!("  nothing new: nothing written, nothing committed"),
        }
        if let Some(r) = &a.round {
            eprint!("{}", r.render());
        }
    }
    if let Some(p) = summary_json {
        let mut v = match &a.summary {
            Some(s) => serde_json::to_value(s)?,
            None => serde_json::json!({}),
        };
        if let Some(o) = v.as_object_mut() {
            o.insert("new_files".into(), a.new_files.into());
            o.insert("new_lines".into(), a.new_lines.into());
            o.insert("committed".into(), a.manifest.is_some().into());
            if let Some(why) = &a.full_rewrite {
                o.insert("fallback".into(), why.as_str().into());
            }
            o.insert("downloaded_files".into(), a.downloaded_files.into());
            o.insert("downloaded_bytes".into(), a.downloaded_bytes.into());
            if let Some(r) = &a.round {
                o.insert(
                    "shard_status".into(),
                    serde_json::json!({
                        "count": r.count, "ran": r.ran, "landed": r.landed,
                        "missing": r.missing(),
                    }),
                );
            }
        }
        let text = serde_json::to_string_pretty(&v)?;
        if p.as_os_str() == "-" {
            println!("{text}");
        } else {
            std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    Ok(())
}

fn print_summary(s: &runlog_core::Summary, warehouse: &Path) {
    let mut e = std::io::stderr();
    let _ = writeln!(
        e,
        "ingested {} file(s){} into {}",
        s.files,
        if s.skipped_json_files > 0 {
            format!(
                " ({} skipped by name, {} of them .json in no format read)",
                s.skipped_files, s.skipped_json_files
            )
        } else if s.skipped_files > 0 {
            format!(" ({} skipped by name)", s.skipped_files)
        } else {
            String::new()
        },
        warehouse.display()
    );
    let _ = writeln!(
        e,
        "  lines read {}  = kept {} + duplicates {} + rejects {}{}",
        s.lines_read,
        s.kept,
        s.duplicates,
        s.rejects,
        if s.adds_up { "" } else { "  (DOES NOT ADD UP)" }
    );
    let _ = writeln!(
        e,
        "  agents {}  intervals {}  blank lines {}",
        s.agents, s.intervals, s.blank_lines
    );
    let _ = writeln!(
        e,
        "  {:.2} s  {:.1} MB/s  ({} bytes)",
        s.seconds, s.mb_per_s, s.bytes
    );
    if s.rejects > 0 {
        let _ = writeln!(
            e,
            "  see the rejects: runlog query --warehouse {} \"SELECT * FROM rejects\"",
            warehouse.display()
        );
    }
}
