//! Timeline pages: one agent's whole life drawn on a `seq` axis (`runlog replay --html`),
//! and the drill-down folder of `runlog report --html-dir` that links the report to the
//! pages of its notable agents.
//!
//! A page draws the rows the tables hold, nothing of its own: [`build`] replays the agent
//! once through the core's [`Reducer`] (the reducer batch ingest runs) and keeps its
//! [`Derived`] rows — turns, intervals, errors, tool calls, callbacks, run attempts — plus
//! what no table has a row for (model calls and their tokens, the voices' events, the spawn
//! links of subagent sessions) read from the same events, and the state record of each
//! element's turn as of its cursor. [`svg`] lays the model out and renders the page;
//! [`drill`] picks the notable agents of a report and writes their pages.
//!
//! The axis is `seq`, not `ts`: `seq` is the order the reducer applied the events in, so
//! an element drawn left of another happened before it, and events with one timestamp (or
//! clocks that step back) still stand apart. Times are shown on the axis and in details.

pub mod drill;
pub mod svg;

use std::collections::HashMap;

use serde_json::Value;

use runlog_core::event::payload::{keys, Raw};
use runlog_core::event::{Event, Kind, Voice};
use runlog_core::reduce::{Derived, Reducer};

pub use drill::{notable_agents, page_file_name, write_html_dir, DrillOptions, Notable};
pub use svg::{render_page, PageOptions};

/// A `model/end` event: a model call, with its tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCall {
    pub seq: i64,
    pub ts: i64,
    pub session: String,
    pub turn: Option<String>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The call recorded an error (it has a row in `errors` at the same seq).
    pub error: bool,
}

/// One event of a voice the page draws apart: assistant text, reasoning, progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VoiceEvent {
    pub seq: i64,
    /// Index into [`Timeline::sessions`].
    pub session: usize,
    pub voice: DrawnVoice,
}

/// The voices drawn, each on its own row of a session's lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DrawnVoice {
    Assistant,
    Reasoning,
    Progress,
}

impl DrawnVoice {
    pub const ALL: [DrawnVoice; 3] = [
        DrawnVoice::Assistant,
        DrawnVoice::Reasoning,
        DrawnVoice::Progress,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DrawnVoice::Assistant => "assistant",
            DrawnVoice::Reasoning => "reasoning",
            DrawnVoice::Progress => "progress",
        }
    }

    fn of(v: Voice) -> Option<DrawnVoice> {
        match v {
            Voice::Assistant => Some(DrawnVoice::Assistant),
            Voice::Reasoning => Some(DrawnVoice::Reasoning),
            Voice::Progress => Some(DrawnVoice::Progress),
            _ => None,
        }
    }
}

/// A session of the agent: one lane of the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    /// The session that spawned it (`session/start`'s `parent`), if recorded.
    pub parent: Option<String>,
    /// The parent's turn that spawned it (`parent_turn`).
    pub parent_turn: Option<String>,
    /// The seq of its `session/start`, if any.
    pub start_seq: Option<i64>,
    /// Nesting depth under the root session (0 for the root and for sessions whose parent
    /// is not in the log).
    pub depth: usize,
}

/// One agent, ready to draw.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub root: String,
    /// The agent's rows of every table, as ingest derives them.
    pub derived: Derived,
    pub events: usize,
    pub first_seq: i64,
    pub last_seq: i64,
    pub first_ts: i64,
    pub last_ts: i64,
    /// Lanes in drawing order: the root session, then each subagent session right after
    /// the lane of the session that spawned it (under the spawning turn's order).
    pub sessions: Vec<Session>,
    pub model_calls: Vec<ModelCall>,
    pub voices: Vec<VoiceEvent>,
    /// (seq, ts) of every event, in seq order: the time of any cursor.
    pub times: Vec<(i64, i64)>,
    /// The state record of the event's turn as of its cursor, at every event that anchors
    /// an element of a turn (model and tool calls, callbacks, errors).
    pub states: HashMap<i64, Value>,
    /// Each turn's state record as of the last event, one per row of `derived.turns`.
    pub final_states: Vec<Value>,
}

impl Timeline {
    /// The time of the event at `seq` (or of the last event before it).
    pub fn ts_at(&self, seq: i64) -> Option<i64> {
        match self.times.binary_search_by_key(&seq, |&(s, _)| s) {
            Ok(i) => Some(self.times[i].1),
            Err(0) => None,
            Err(i) => Some(self.times[i - 1].1),
        }
    }

    /// The lane index of a session id.
    pub fn lane_of(&self, session: &str) -> Option<usize> {
        self.sessions.iter().position(|s| s.id == session)
    }
}

/// Strings in state records longer than this are cut (with the full length said): a page
/// shows where the text is, the tables and `runlog replay` have all of it.
const MAX_STATE_TEXT: usize = 240;

fn shorten(v: &mut Value) {
    match v {
        Value::String(s) if s.chars().count() > MAX_STATE_TEXT => {
            let n = s.chars().count();
            let cut: String = s.chars().take(MAX_STATE_TEXT).collect();
            *s = format!("{cut}… ({n} chars)");
        }
        Value::Array(a) => a.iter_mut().for_each(shorten),
        Value::Object(o) => o.values_mut().for_each(shorten),
        _ => {}
    }
}

/// Replays one agent's events (in `seq` order) into what its page draws.
pub fn build(root: &str, events: &[Event]) -> Timeline {
    let mut r = Reducer::new(root, true);
    let mut states = HashMap::new();
    let mut model_calls = Vec::new();
    let mut voices_raw: Vec<(i64, String, DrawnVoice)> = Vec::new();
    let mut times = Vec::with_capacity(events.len());
    let mut starts: Vec<(String, Option<String>, Option<String>, i64)> = Vec::new();
    let mut seen_sessions: Vec<String> = Vec::new();
    let mut applied = 0usize;
    for ev in events {
        let Some(a) = r.apply(ev) else { continue };
        applied += 1;
        let seq = ev.seq as i64;
        times.push((seq, ev.ts));
        if !seen_sessions.iter().any(|s| s == ev.session.as_str()) {
            seen_sessions.push(ev.session.to_string());
        }
        let kind = ev.index.kind(&ev.kind);
        if let Some(v) = DrawnVoice::of(Voice::of_kind(kind, &ev.kind)) {
            voices_raw.push((seq, ev.session.to_string(), v));
        }
        // Only at the events that anchor an element of a turn (a model call, a tool call,
        // a callback, an error): a long agent's other events would hold many records
        // nothing shows.
        if let (
            Kind::ModelEnd | Kind::ToolCall | Kind::CallbackOpen | Kind::TurnEnd | Kind::RunFailed,
            Some(t),
        ) = (kind, a.turn)
        {
            let mut rec = r.state_record(t, Some(ev.seq));
            shorten(&mut rec);
            states.insert(seq, rec);
        }
        match kind {
            Kind::ModelEnd => {
                let [_, error, input, output] = ev.index.members(&ev.data, keys::MODEL_END);
                model_calls.push(ModelCall {
                    seq,
                    ts: ev.ts,
                    session: ev.session.to_string(),
                    turn: ev.turn.as_deref().map(str::to_string),
                    input_tokens: input.and_then(Raw::as_i64).unwrap_or(0),
                    output_tokens: output.and_then(Raw::as_i64).unwrap_or(0),
                    error: error.is_some_and(Raw::is_object),
                });
            }
            Kind::SessionStart => {
                let [parent, parent_turn] = ev.index.members(&ev.data, keys::SESSION_START);
                starts.push((
                    ev.session.to_string(),
                    parent.and_then(Raw::string),
                    parent_turn.and_then(Raw::string),
                    seq,
                ));
            }
            _ => {}
        }
    }
    // Every turn's state record as of the last event, in the order of the turns' rows.
    let final_states = r
        .turn_ids()
        .map(|t| {
            let mut rec = r.state_record(t, None);
            shorten(&mut rec);
            rec
        })
        .collect();
    let derived = r.finish();
    let sessions = order_sessions(root, &seen_sessions, &starts, &derived);
    let voices = voices_raw
        .into_iter()
        .filter_map(|(seq, s, voice)| {
            let session = sessions.iter().position(|x| x.id == s)?;
            Some(VoiceEvent {
                seq,
                session,
                voice,
            })
        })
        .collect();
    let (first, last) = (times.first().copied(), times.last().copied());
    Timeline {
        root: root.to_string(),
        derived,
        events: applied,
        first_seq: first.map_or(0, |t| t.0),
        last_seq: last.map_or(0, |t| t.0),
        first_ts: first.map_or(0, |t| t.1),
        last_ts: last.map_or(0, |t| t.1),
        sessions,
        model_calls,
        voices,
        times,
        states,
        final_states,
    }
}

/// Lanes in drawing order: the root session first, each session's children right after it
/// (children of a turn in the order of that turn's start, then children with no recorded
/// turn), then sessions whose parent the log never names, in order of appearance.
fn order_sessions(
    root: &str,
    seen: &[String],
    starts: &[(String, Option<String>, Option<String>, i64)],
    derived: &Derived,
) -> Vec<Session> {
    // The first session/start of a session decides its parent.
    let mut info: HashMap<&str, (Option<&str>, Option<&str>, i64)> = HashMap::new();
    for (s, p, pt, seq) in starts {
        info.entry(s.as_str())
            .or_insert((p.as_deref(), pt.as_deref(), *seq));
    }
    let known: std::collections::HashSet<&str> = seen.iter().map(String::as_str).collect();
    let parent_of = |s: &str| -> Option<&str> {
        info.get(s)
            .and_then(|i| i.0)
            .filter(|p| *p != s && known.contains(p))
    };
    // Where a child goes under its parent: the start seq of its spawning turn.
    let turn_start = |session: &str, turn: &str| -> i64 {
        derived
            .turns
            .iter()
            .find(|t| t.session.as_str() == session && t.turn.as_str() == turn)
            .map_or(i64::MAX, |t| t.start_seq)
    };
    let appearance = |s: &str| seen.iter().position(|x| x == s).unwrap_or(usize::MAX);
    let mut out: Vec<Session> = Vec::with_capacity(seen.len());
    let mut placed: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut tops: Vec<&str> = seen
        .iter()
        .map(String::as_str)
        .filter(|s| *s == root || parent_of(s).is_none())
        .collect();
    tops.sort_by_key(|s| (*s != root, appearance(s)));
    if !tops.contains(&root) && known.contains(root) {
        tops.insert(0, root);
    }
    // Depth-first, with an explicit stack (a spawn chain can be long; cycles are cut by
    // `placed`).
    let mut stack: Vec<(&str, usize)> = tops.iter().rev().map(|s| (*s, 0)).collect();
    while let Some((s, depth)) = stack.pop() {
        if !placed.insert(s.to_string()) {
            continue;
        }
        let i = info.get(s);
        out.push(Session {
            id: s.to_string(),
            parent: i.and_then(|i| i.0).map(str::to_string),
            parent_turn: i.and_then(|i| i.1).map(str::to_string),
            start_seq: i.map(|i| i.2),
            depth,
        });
        let mut children: Vec<&str> = seen
            .iter()
            .map(String::as_str)
            .filter(|c| parent_of(c) == Some(s) && !placed.contains(*c))
            .collect();
        children.sort_by_key(|c| {
            let pt = info.get(c).and_then(|i| i.1);
            (
                pt.map_or(i64::MAX, |t| turn_start(s, t)),
                info.get(c).map_or(i64::MAX, |i| i.2),
                appearance(c),
            )
        });
        for c in children.into_iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    // Sessions left over (a parent cycle): appended at depth 0.
    for s in seen {
        if placed.insert(s.clone()) {
            let i = info.get(s.as_str());
            out.push(Session {
                id: s.clone(),
                parent: i.and_then(|i| i.0).map(str::to_string),
                parent_turn: i.and_then(|i| i.1).map(str::to_string),
                start_seq: i.map(|i| i.2),
                depth: 0,
            });
        }
    }
    out
}
