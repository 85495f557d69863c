//! One agent's rows as spans: which trace each turn belongs to (a root-session turn opens a
//! trace; a subagent turn sits under the turn that spawned its session, as
//! `session/start.parent_turn` says, else opens a trace of its own), each span's parent, and
//! the times: a turn from its first event to its `turn/end` (a turn still running ends at
//! its last event, or its children's), a model call from `duration_ms` before its
//! `model/end` (else from the turn's previous model call or tool result), a tool call from
//! `tool/call` to its first result, a callback until it closed, a run attempt until it
//! settled.

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::Span;

use super::ids::{span_id, trace_id, SpanKind};
use super::rows::{Agent, CallbackRow, ModelRow, RunRow, ToolRow, TurnRow};
use super::spans::{self, ModelData, Place};

/// How many of each span an agent gave, and what had no place.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub traces: u64,
    pub turns: u64,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub callbacks: u64,
    pub runs: u64,
    /// Model calls, tool calls and callbacks whose turn was not exported (outside the
    /// window, or with no turn).
    pub orphans: u64,
}

impl Counts {
    /// Adds `o` to these counts.
    pub fn add(&mut self, o: &Counts) {
        self.traces += o.traces;
        self.turns += o.turns;
        self.model_calls += o.model_calls;
        self.tool_calls += o.tool_calls;
        self.callbacks += o.callbacks;
        self.runs += o.runs;
        self.orphans += o.orphans;
    }

    /// Every span.
    pub fn spans(&self) -> u64 {
        self.turns + self.model_calls + self.tool_calls + self.callbacks + self.runs
    }
}

/// Each turn's parent turn (the turn that spawned its session), without cycles.
fn parents(a: &Agent, index: &HashMap<(&str, &str), usize>) -> Vec<Option<usize>> {
    let mut parent: Vec<Option<usize>> = a
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if t.session == a.root {
                return None;
            }
            let s = a.sessions.get(&t.session)?;
            let p = *index.get(&(s.parent.as_deref()?, s.parent_turn.as_deref()?))?;
            (p != i).then_some(p)
        })
        .collect();
    // A chain longer than the turns is a cycle: cut it where it is found.
    for i in 0..parent.len() {
        let (mut at, mut steps) = (i, 0);
        while let Some(p) = parent[at] {
            steps += 1;
            if steps > parent.len() {
                parent[at] = None;
                break;
            }
            at = p;
        }
    }
    parent
}

/// The top turn of each turn's chain, and its depth.
fn tops(parent: &[Option<usize>]) -> Vec<(usize, usize)> {
    (0..parent.len())
        .map(|i| {
            let (mut at, mut depth) = (i, 0);
            while let Some(p) = parent[at] {
                at = p;
                depth += 1;
            }
            (at, depth)
        })
        .collect()
}

/// The rows under each turn (by turn index), the run attempts outside any turn, and the
/// rows whose turn is not exported.
struct Children<'a> {
    models: Vec<Vec<&'a ModelRow>>,
    tools: Vec<Vec<&'a ToolRow>>,
    callbacks: Vec<Vec<&'a CallbackRow>>,
    runs: Vec<Vec<&'a RunRow>>,
    lone_runs: Vec<&'a RunRow>,
    orphans: u64,
}

fn children<'a>(a: &'a Agent, index: &HashMap<(&str, &str), usize>) -> Children<'a> {
    let n = a.turns.len();
    let mut k = Children {
        models: vec![Vec::new(); n],
        tools: vec![Vec::new(); n],
        callbacks: vec![Vec::new(); n],
        runs: vec![Vec::new(); n],
        lone_runs: Vec::new(),
        orphans: 0,
    };
    let turn_of = |s: &str, t: &str| index.get(&(s, t)).copied();
    for m in &a.models {
        match turn_of(&m.session, &m.turn) {
            Some(i) => k.models[i].push(m),
            None => k.orphans += 1,
        }
    }
    for t in &a.tools {
        match turn_of(&t.session, &t.turn) {
            Some(i) => k.tools[i].push(t),
            None => k.orphans += 1,
        }
    }
    for c in &a.callbacks {
        match c.turn.as_deref().and_then(|t| turn_of(&c.session, t)) {
            Some(i) => k.callbacks[i].push(c),
            None => k.orphans += 1,
        }
    }
    for r in &a.runs {
        match run_turn(a, r.start_seq) {
            Some(i) => k.runs[i].push(r),
            None => k.lone_runs.push(r),
        }
    }
    k
}

/// Each turn's end: its `turn/end`; for a turn still running, the latest of its last event
/// and its children's ends (deepest turns first, so a subagent's end counts).
fn turn_ends(
    a: &Agent,
    k: &Children,
    parent: &[Option<usize>],
    tops: &[(usize, usize)],
) -> Vec<i64> {
    let mut end: Vec<i64> = a
        .turns
        .iter()
        .map(|t| t.end_ts.unwrap_or(t.last_ts.max(t.start_ts)))
        .collect();
    let mut by_depth: Vec<usize> = (0..a.turns.len()).collect();
    by_depth.sort_by_key(|&i| std::cmp::Reverse(tops[i].1));
    for &i in &by_depth {
        if a.turns[i].end_ts.is_none() {
            let kids = k.tools[i]
                .iter()
                .filter_map(|t| t.result_ts)
                .chain(k.callbacks[i].iter().filter_map(|c| c.close_ts))
                .chain(k.runs[i].iter().filter_map(|r| r.settle_ts))
                .max();
            if let Some(x) = kids {
                end[i] = end[i].max(x);
            }
        }
        if let Some(p) = parent[i] {
            if a.turns[p].end_ts.is_none() {
                end[p] = end[p].max(end[i]);
            }
        }
    }
    end
}

/// Where a model call starts: `duration_ms` before its end, else at the turn's previous
/// model call or tool result (`prev`, the results before it), never before the turn.
fn model_start(t: &TurnRow, m: &ModelRow, d: &ModelData, tools: &[&ToolRow], prev: i64) -> i64 {
    let start = match d.duration_us() {
        Some(us) => m.ts.saturating_sub(us).max(t.start_ts),
        None => tools
            .iter()
            .filter_map(|x| x.result_ts)
            .filter(|&r| r <= m.ts)
            .fold(prev, i64::max),
    };
    start.min(m.ts)
}

/// Every span of one agent, appended to `out` turn by turn (each turn's span, then its
/// model calls, tool calls, callbacks and run attempts), then the run attempts outside any
/// turn, each a trace of its own.
pub fn agent_spans(a: &Agent, content: bool, out: &mut Vec<Span>) -> Counts {
    let root = a.root.as_str();
    let index: HashMap<(&str, &str), usize> = a
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.session.as_str(), t.turn.as_str()), i))
        .collect();
    let parent = parents(a, &index);
    let tops = tops(&parent);
    let k = children(a, &index);
    let end = turn_ends(a, &k, &parent, &tops);
    let mut counts = Counts {
        orphans: k.orphans,
        ..Default::default()
    };
    for (i, t) in a.turns.iter().enumerate() {
        let top = &a.turns[tops[i].0];
        let trace = trace_id(SpanKind::Turn, root, &top.session, top.start_seq);
        let tid = span_id(SpanKind::Turn, root, &t.session, t.start_seq);
        let place = Place {
            trace,
            id: tid,
            parent: parent[i].map(|p| {
                let pt = &a.turns[p];
                span_id(SpanKind::Turn, root, &pt.session, pt.start_seq)
            }),
            start_us: t.start_ts,
            end_us: end[i],
            open: t.end_seq.is_none(),
        };
        out.push(spans::turn_span(root, t, agent_name(a, t), &place, content));
        counts.traces += u64::from(parent[i].is_none());
        counts.turns += 1;
        let session_model = session_model(a, t);
        let child = |kind, session: &str, seq, start_us, end_us, open| Place {
            trace,
            id: span_id(kind, root, session, seq),
            parent: Some(tid),
            start_us,
            end_us,
            open,
        };
        let mut prev = t.start_ts;
        for m in &k.models[i] {
            let d = ModelData::parse(&m.data);
            let start = model_start(t, m, &d, &k.tools[i], prev);
            let place = child(SpanKind::Model, &m.session, m.seq, start, m.ts, false);
            out.push(spans::model_span(root, m, &d, session_model, &place));
            counts.model_calls += 1;
            prev = prev.max(m.ts);
        }
        for x in &k.tools[i] {
            let (e, open) = x.result_ts.map_or((end[i].max(x.ts), true), |r| (r, false));
            let place = child(SpanKind::Tool, &x.session, x.seq, x.ts, e, open);
            out.push(spans::tool_span(root, x, &place, content));
            counts.tool_calls += 1;
        }
        for c in &k.callbacks[i] {
            let (e, open) = c
                .close_ts
                .map_or((end[i].max(c.open_ts), true), |x| (x, false));
            let place = child(
                SpanKind::Callback,
                &c.session,
                c.open_seq,
                c.open_ts,
                e,
                open,
            );
            out.push(spans::callback_span(root, c, &place));
            counts.callbacks += 1;
        }
        for r in &k.runs[i] {
            let (e, open) = run_end(r);
            let place = child(SpanKind::Run, root, r.start_seq, r.start_ts, e, open);
            out.push(spans::run_span(root, r, &place));
            counts.runs += 1;
        }
    }
    for r in &k.lone_runs {
        let (e, open) = run_end(r);
        let place = Place {
            trace: trace_id(SpanKind::Run, root, root, r.start_seq),
            id: span_id(SpanKind::Run, root, root, r.start_seq),
            parent: None,
            start_us: r.start_ts,
            end_us: e,
            open,
        };
        out.push(spans::run_span(root, r, &place));
        counts.runs += 1;
        counts.traces += 1;
    }
    counts
}

/// Where a run attempt ends: at its settling event, else (unsettled) at the agent's last.
fn run_end(r: &RunRow) -> (i64, bool) {
    match r.settle_ts {
        Some(s) => (s, false),
        None => (r.last_ts.max(r.start_ts), true),
    }
}

/// The root-session turn a run attempt started in (its `run.started` between the turn's
/// start and end), if any.
fn run_turn(a: &Agent, seq: i64) -> Option<usize> {
    a.turns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.session == a.root && t.start_seq <= seq)
        .filter(|(_, t)| t.end_seq.is_none_or(|e| seq <= e))
        .map(|(i, _)| i)
        .next_back()
}

/// The agent's name for a turn: its session's `session/start.name`, else the root
/// session's.
fn agent_name<'a>(a: &'a Agent, t: &TurnRow) -> Option<&'a str> {
    a.sessions
        .get(&t.session)
        .and_then(|s| s.name.as_deref())
        .or_else(|| a.sessions.get(&a.root).and_then(|s| s.name.as_deref()))
}

/// The model a turn's session was started with (`session/start.model`), else the root's.
fn session_model<'a>(a: &'a Agent, t: &TurnRow) -> Option<&'a str> {
    a.sessions
        .get(&t.session)
        .and_then(|s| s.model.as_deref())
        .or_else(|| a.sessions.get(&a.root).and_then(|s| s.model.as_deref()))
}
