//! The integration tests of the `runlog` crate, in one binary (each test binary links
//! DataFusion again: one link instead of one per file). The core's own tests (decoders,
//! reducer, oracle) are in `crates/runlog-core/tests/it`.
//!
//! The binary runs its tests through `libtest-mimic` (`harness = false`), so that every
//! golden case under `tests/cases/` is a test of its own, named `golden::<case>`: run one
//! with `cargo test --all-features --test it -- golden::<case>` (add `--exact` to match the
//! name whole). Every other test is a plain function named in its module's `trials!` list
//! and runs as `<module>::<function>`, as it would under libtest; `--exact`, `--ignored`,
//! `--nocapture` and `--test-threads` work as with libtest. A `#[test]` attribute would not
//! run here: the test `harness::no_test_attributes` fails if one appears.

use std::path::Path;

use libtest_mimic::{Arguments, Failed, Trial};

/// Defines a module's `trials()`: each function listed as the test `<module>::<function>`
/// (attributes such as `#[cfg(...)]` before a name apply to it); the names after
/// `; ignored:` run only with `--ignored`.
macro_rules! trials {
    ($($(#[$m:meta])* $f:ident),* $(,)? $(; ignored: $($i:ident),* $(,)?)?) => {
        /// This module's tests.
        // One push per test, so that a `#[cfg(...)]` can leave one out.
        #[allow(clippy::vec_init_then_push)]
        pub(crate) fn trials() -> Vec<libtest_mimic::Trial> {
            #[allow(unused_mut)]
            let mut v = Vec::new();
            $($(#[$m])* v.push($crate::trial(module_path!(), stringify!($f), $f));)*
            $($(v.push($crate::trial(module_path!(), stringify!($i), $i).with_ignored_flag(true));)*)?
            v
        }
    };
}

mod append;
mod ballista;
mod baseline;
mod cli;
mod collect;
mod commit;
mod damaged;
mod export;
mod golden;
mod html;
mod layers;
mod opencode_db;
mod queries;
mod reliability;
#[cfg(feature = "s3")]
mod s3;
mod shards;
mod timeline;

/// The test `<module>::<name>` (the module path without this crate's name), running `f`;
/// a panic fails it.
fn trial(module: &str, name: &str, f: fn()) -> Trial {
    let module = module.split_once("::").map_or(module, |(_, m)| m);
    Trial::test(format!("{module}::{name}"), move || {
        f();
        Ok(())
    })
}

/// Fails if a file of this binary has a `#[test]` or `#[tokio::test]` attribute: such a
/// function is not compiled in a `harness = false` binary, so it would never run.
fn no_test_attributes() -> Result<(), Failed> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("#[test]") || line.starts_with("#[tokio::test") {
                found.push(format!("{}:{}", path.display(), n + 1));
            }
        }
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "test attributes that never run (list the function in its module's `trials!`):\n{}",
            found.join("\n")
        )
        .into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let mut tests = vec![Trial::test(
        "harness::no_test_attributes",
        no_test_attributes,
    )];
    tests.extend(golden::cases());
    tests.extend(append::trials());
    #[cfg(feature = "ballista")]
    tests.extend(ballista::trials());
    tests.extend(baseline::trials());
    tests.extend(cli::trials());
    tests.extend(collect::trials());
    tests.extend(commit::trials());
    tests.extend(damaged::trials());
    tests.extend(export::trials());
    tests.extend(html::trials());
    tests.extend(layers::trials());
    tests.extend(opencode_db::trials());
    tests.extend(queries::trials());
    tests.extend(reliability::trials());
    #[cfg(feature = "s3")]
    tests.extend(s3::trials());
    tests.extend(shards::trials());
    tests.extend(timeline::trials());
    libtest_mimic::run(&args, tests).exit();
}
