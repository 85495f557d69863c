//! The files around one file of OpenCode's session storage (`storage/session/<project>/<id>.json`,
//! `storage/message/<session>/<id>.json`, `storage/part/<message>/<id>.json`).
//!
//! One storage file does not tell everything its events need: a part names its message but
//! not the user message (the turn) that message answers, nor when it was written; an
//! assistant message does not say whether its session is a subagent's, nor its final text.
//! The importer reads one file at a time, so this module finds and reads those neighbours
//! (by path, next to the file read) and decodes the time OpenCode writes into its ids.
//! Nothing here is required: a file read without its neighbours (named alone, or fetched
//! from elsewhere) is still mapped, with less.
//!
//! The same neighbours come from memory when the documents were read together: the rows of
//! an OpenCode database (releases from 1.2.0), or storage documents one a line of a stream
//! ([`Rows`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The largest neighbour file read (parts holding big tool outputs are skipped).
const MAX_NEIGHBOUR_BYTES: u64 = 4 << 20;

/// A document as a neighbour: read from its file, or borrowed from memory.
pub type Doc<'a> = Cow<'a, Map<String, Value>>;

/// Where a document's neighbours are found.
pub enum Store<'r> {
    /// The storage folder a file lies in, when its path has the storage layout.
    Files { root: PathBuf },
    /// Documents read together, in memory.
    Rows(&'r Rows),
}

impl Store<'_> {
    /// The storage folder of `file` when the file lies in `<root>/<folder>/<dir>/<id>.json`.
    pub fn of(file: &str, folder: &str) -> Option<Store<'static>> {
        let dir = Path::new(file).parent()?;
        let kind = dir.parent()?;
        if kind.file_name()? != folder {
            return None;
        }
        let root = kind.parent()?.to_path_buf();
        Some(Store::Files { root })
    }

    /// A message of a session (`message/<session>/<message>.json`).
    pub fn message(&self, session: &str, message: &str) -> Option<Doc<'_>> {
        match self {
            Store::Files { root } => {
                let path = root
                    .join("message")
                    .join(safe(session)?)
                    .join(format!("{}.json", safe(message)?));
                read_object(&path).map(Cow::Owned)
            }
            Store::Rows(rows) => rows
                .messages
                .get(message)
                .filter(|m| m.get("sessionID").and_then(Value::as_str) == Some(session))
                .map(Cow::Borrowed),
        }
    }

    /// A session's own document (`session/<any project>/<session>.json`).
    pub fn session(&self, session: &str) -> Option<Doc<'_>> {
        let root = match self {
            Store::Files { root } => root,
            Store::Rows(rows) => return rows.sessions.get(session).map(Cow::Borrowed),
        };
        let name = format!("{}.json", safe(session)?);
        let projects = std::fs::read_dir(root.join("session")).ok()?;
        projects
            .flatten()
            .map(|p| p.path().join(&name))
            .find(|p| p.is_file())
            .and_then(|p| read_object(&p))
            .map(Cow::Owned)
    }

    /// A session's messages made before `message`, newest first (ids sort by the time they
    /// were made); `None` for one that cannot be read.
    pub fn earlier_messages<'s>(
        &'s self,
        session: &str,
        message: &str,
    ) -> Box<dyn Iterator<Item = Option<Doc<'s>>> + 's> {
        match self {
            Store::Files { root } => {
                let paths = earlier_files(root, session, message);
                Box::new(paths.into_iter().map(|p| read_object(&p).map(Cow::Owned)))
            }
            Store::Rows(rows) => {
                let ids = rows.by_session.get(session).map_or(&[][..], Vec::as_slice);
                let before = ids.partition_point(|id| id.as_str() < message);
                let docs = ids[..before].iter().rev();
                Box::new(docs.map(|id| rows.messages.get(id).map(Cow::Borrowed)))
            }
        }
    }

    /// A message's parts (`part/<message>/*.json`), in the order of their ids (from memory:
    /// its `text` and `step-finish` parts, what they are read for).
    pub fn parts(&self, message: &str) -> Vec<Doc<'_>> {
        let root = match self {
            Store::Files { root } => root,
            Store::Rows(rows) => {
                let parts = rows.parts.get(message).map_or(&[][..], Vec::as_slice);
                return parts.iter().map(|(_, p)| Cow::Borrowed(p)).collect();
            }
        };
        let Some(m) = safe(message) else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(root.join("part").join(m)) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        paths
            .iter()
            .filter_map(|p| read_object(p))
            .map(Cow::Owned)
            .collect()
    }
}

/// The files of a session's messages made before `message`, newest first.
fn earlier_files(root: &Path, session: &str, message: &str) -> Vec<PathBuf> {
    let (Some(s), Some(m)) = (safe(session), safe(message)) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root.join("message").join(s)) else {
        return Vec::new();
    };
    let this = format!("{m}.json");
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| *n < *this.as_str()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths.reverse();
    paths
}

/// A part document and its id.
type Part = (String, Map<String, Value>);

/// Storage documents read together (the rows of an OpenCode database, the documents of one
/// stream), indexed as the storage folder's paths index its files.
#[derive(Debug, Default)]
pub struct Rows {
    sessions: HashMap<String, Map<String, Value>>,
    messages: HashMap<String, Map<String, Value>>,
    /// Each session's message ids, sorted.
    by_session: HashMap<String, Vec<String>>,
    /// Each message's `text` and `step-finish` parts by id, sorted (their `type`, `text`,
    /// `synthetic` and `reason`).
    parts: HashMap<String, Vec<Part>>,
}

impl Rows {
    /// The index of `docs`, each told by [`super::opencode_storage::doc_kind`]; of two
    /// documents with one id the first is kept.
    pub fn index<'d>(docs: impl IntoIterator<Item = &'d Map<String, Value>>) -> Rows {
        use super::opencode_storage::{doc_kind, Doc as Kind};
        let mut rows = Rows::default();
        let s = |d: &'d Map<String, Value>, k: &str| {
            d.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        for d in docs {
            let id = s(d, "id");
            match doc_kind(d) {
                Some(Kind::Session) => {
                    rows.sessions.entry(id).or_insert_with(|| d.clone());
                }
                Some(Kind::Message) if !rows.messages.contains_key(&id) => {
                    rows.by_session
                        .entry(s(d, "sessionID"))
                        .or_default()
                        .push(id.clone());
                    rows.messages.insert(id, d.clone());
                }
                // Only what a neighbour part is read for (a message's last text and last
                // step's reason): tool outputs are not held twice.
                Some(Kind::Part) if matches!(s(d, "type").as_str(), "text" | "step-finish") => {
                    let slim = ["id", "type", "text", "synthetic", "reason"]
                        .iter()
                        .filter_map(|k| Some((k.to_string(), d.get(*k)?.clone())))
                        .collect();
                    let parts = rows.parts.entry(s(d, "messageID")).or_default();
                    parts.push((id, slim));
                }
                _ => {}
            }
        }
        rows.by_session.values_mut().for_each(|ids| ids.sort());
        for parts in rows.parts.values_mut() {
            // Stable: of two parts with one id the first stays.
            parts.sort_by(|a, b| a.0.cmp(&b.0));
            parts.dedup_by(|b, a| a.0 == b.0);
        }
        rows
    }

    /// The session at the top of `session`'s parents (`parentID`) among these documents.
    pub fn top(&self, session: &str) -> String {
        let mut at = session;
        // Bounded: a cycle of parents ends somewhere.
        for _ in 0..64 {
            let parent = self
                .sessions
                .get(at)
                .and_then(|s| s.get("parentID"))
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty());
            match parent {
                Some(p) => at = p,
                None => break,
            }
        }
        at.to_string()
    }
}

/// An id as a path component: OpenCode's ids are `[A-Za-z0-9_-]`; anything else is not
/// looked up.
fn safe(id: &str) -> Option<&str> {
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    ok.then_some(id)
}

fn read_object(path: &Path) -> Option<Map<String, Value>> {
    if std::fs::metadata(path).ok()?.len() > MAX_NEIGHBOUR_BYTES {
        return None;
    }
    match serde_json::from_slice(&std::fs::read(path).ok()?).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The millisecond an ascending OpenCode id (`msg_…`, `prt_…`) was made, given a time near
/// it. The id's first 12 hex digits are the low 48 bits of `ms × 0x1000 + counter`
/// (OpenCode's `Identifier.ascending`): the millisecond modulo 2^36 (about 795 days), placed
/// nearest `near_ms`.
pub fn id_millis(id: &str, near_ms: i64) -> Option<i64> {
    let hex = id.split_once('_')?.1.get(..12)?;
    let v = u64::from_str_radix(hex, 16).ok()?;
    // i128: `near_ms` comes from the file and may be any i64.
    let (low, near) = (i128::from(v >> 12), i128::from(near_ms));
    let period = 1i128 << 36;
    let base = near - near.rem_euclid(period) + low;
    let best = [base - period, base, base + period]
        .into_iter()
        .min_by_key(|c| (c - near).abs())?;
    i64::try_from(best).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_gives_the_millisecond_it_was_made() {
        // A real user message of 2026-03-05: id made 13 ms before its `time.created`.
        let ms = id_millis("msg_cbbd98650001z0awFImeNERFe5", 1_772_678_121_053);
        assert_eq!(ms, Some(1_772_678_121_040));
        assert_eq!(id_millis("prt_zz", 1), None);
        assert!(id_millis("prt_ffffffffffff", i64::MAX).is_none_or(|ms| ms > 0));
        assert!(id_millis("prt_000000000000", i64::MIN).is_some());
        assert_eq!(id_millis("nounderscore", 1), None);
    }

    #[test]
    fn only_plain_ids_are_looked_up() {
        assert_eq!(
            safe("ses_3442679b5ffe5Ah2xbk3JHlP6j"),
            Some("ses_3442679b5ffe5Ah2xbk3JHlP6j")
        );
        assert_eq!(safe("../etc"), None);
        assert_eq!(safe(""), None);
        assert!(Store::of("x/storage/part/msg_1/prt_1.json", "part").is_some());
        assert!(Store::of("x/storage/message/ses_1/msg_1.json", "part").is_none());
    }
}
