//! The layering rule both crates state in their `lib.rs`: modules are declared in the
//! order data flows, and a module's code names (`crate::<module>`) only modules declared
//! before it. Checked on the sources, so an import that runs back up a layer fails here
//! with its file and line. Unit tests (`#[cfg(test)]` modules, `tests.rs` files) may use
//! any module to build their input.

use std::path::{Path, PathBuf};

/// The modules `lib.rs` declares (`mod x;` / `pub mod x;`), in its order.
fn declared(lib: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(lib).expect("lib.rs");
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.to_string())
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text` that are not unit tests: an inline `#[cfg(test)] mod … {` and what
/// follows it is left out (such modules close their files).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(at) = lines.windows(2).position(|w| {
        w[0].trim() == "#[cfg(test)]"
            && w[1].trim_start().starts_with("mod ")
            && w[1].ends_with('{')
    }) {
        lines.truncate(at);
    }
    lines.into_iter().enumerate().map(|(n, l)| (n + 1, l))
}

/// Every `crate::<module>` in code (not in comments) that names a module declared after
/// the one the file belongs to.
fn upward_imports(src: &Path) -> Vec<String> {
    let order = declared(&src.join("lib.rs"));
    let rank = |m: &str| order.iter().position(|o| o == m);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let top = rel
            .components()
            .next()
            .expect("component")
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs");
        let Some(own) = rank(top) else { continue };
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("source file");
        for (n, line) in code_lines(&text) {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let named: String = code[at + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if rank(&named).is_some_and(|r| r > own) {
                    found.push(format!(
                        "{}:{n}: {top} names {named}: {}",
                        file.display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    found
}

fn check(src: &Path) {
    let found = upward_imports(src);
    assert!(
        found.is_empty(),
        "imports that run up a layer (declare modules in lib.rs in the order data flows):\n{}",
        found.join("\n")
    );
}

/// The root crate's stages import only those declared before them.
fn root_crate_layers_hold() {
    check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

/// The core's stages import only those declared before them.
fn core_crate_layers_hold() {
    check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/runlog-core/src"));
}

trials! { root_crate_layers_hold, core_crate_layers_hold }
