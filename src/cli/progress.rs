//! Progress bars on a terminal: reading logs (bytes of the inputs) and downloading store
//! objects (bytes and objects), none when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::Arc;

use runlog_core::ingest::IngestOptions;

use super::args::ReadArgs;

/// The read options, with a progress bar over `total` bytes on a terminal.
pub(super) fn progress_options(
    read: &ReadArgs,
    total: impl FnOnce() -> u64,
) -> (IngestOptions, Option<indicatif::ProgressBar>) {
    let mut opts = IngestOptions {
        max_line_bytes: read.max_line_bytes,
        format: read.input_format,
        ..Default::default()
    };
    if !std::io::stderr().is_terminal() {
        return (opts, None);
    }
    let bar = indicatif::ProgressBar::new(total());
    bar.set_style(bar_style(
        "{spinner} reading [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ));
    let b = bar.clone();
    opts.progress = Some(Arc::new(move |n| b.inc(n)));
    (opts, Some(bar))
}

/// The style of the CLI's progress bars, from an indicatif template.
pub(super) fn bar_style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// A progress bar for downloads of store objects on a terminal (none when stderr is not
/// one, or with `quiet`): bytes received of the listed sizes, objects done of all. Drawn
/// in `multi` when given (beside the reading bar), else alone; it shows only while objects
/// download, and goes when they are done.
pub(super) fn download_progress(
    quiet: bool,
    multi: Option<&indicatif::MultiProgress>,
) -> Option<runlog::inputs::DownloadProgress> {
    use runlog::inputs::DownloadEvent;
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    #[derive(Default)]
    struct State {
        bar: Option<indicatif::ProgressBar>,
        done: u64,
        objects: u64,
    }
    let multi = multi.cloned();
    let state = std::sync::Mutex::new(State::default());
    Some(Arc::new(move |e| {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        match e {
            DownloadEvent::Started { objects, bytes } => {
                st.objects += objects;
                match &st.bar {
                    Some(b) => b.inc_length(bytes),
                    None => {
                        let b = indicatif::ProgressBar::new(bytes);
                        b.set_style(bar_style(
                            "{spinner} downloading [{bar:30}] {bytes}/{total_bytes} {msg} \
                             {bytes_per_sec} eta {eta}",
                        ));
                        st.bar = Some(match &multi {
                            Some(m) => m.insert(0, b),
                            None => b,
                        });
                    }
                }
            }
            DownloadEvent::Bytes(n) => {
                if let Some(b) = &st.bar {
                    b.inc(n);
                }
            }
            DownloadEvent::Object => st.done += 1,
            DownloadEvent::Finished => {
                if let Some(b) = st.bar.take() {
                    b.finish_and_clear();
                }
                *st = State::default();
                return;
            }
        }
        if let Some(b) = &st.bar {
            b.set_message(format!("{}/{} objects", st.done, st.objects));
        }
    }))
}
