//! The `runlog` command line: a thin layer over the library that parses arguments,
//! shows progress, prints results and maps errors to exit codes (0 ok, 1 failure, 2 usage).
//! Each command lives in `cli/<command>.rs`; this file only starts the process and prints
//! a failure as one line.

use std::io::Write;
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    cli::memory::small_pages();
    cli::memory::keep_freed_memory();
    let cli = <cli::Cli as clap::Parser>::parse();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let mut msg = format!("runlog: {e}");
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg.push_str(": ");
                    msg.push_str(&c);
                }
            }
            // One line, whatever the error's text holds (DataFusion's may span several).
            let msg = msg
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let _ = writeln!(std::io::stderr(), "{msg}");
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(c.downcast_ref::<runlog::error::Error>(),
                Some(runlog::error::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
