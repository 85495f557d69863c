//! The mapping of one OTLP file's spans and log records onto canonical events
//! (docs/importers/otlp.md), emitted in time order once the whole file is read.
//!
//! An agent invocation (`invoke_agent`, OpenInference `AGENT`) is a turn; a root invocation
//! opens and closes its own owned interval (synthetic `inbox/receipt` at its start and
//! `agent/idle` at its end), a nested one is a subagent session. Inference spans are model
//! calls, tool spans tool calls; every other span, span event and log record is kept as
//! `otlp:<name>`.

mod attrs;
mod errors;
mod events;
mod haystack;
mod llama_index;
mod logfire;
mod text;
mod tree;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use serde_json::{json, Value};

use super::attributes::Attrs;
use super::{LogRecord, Span};
use crate::event::{Data, Event, Id, Kind, PayloadIndex};
use attrs::{agent_name, finish_reasons, log_record, op_of, span_record};
use errors::span_error;
use events::{agent_events, model_end, tool_events, LastCall, Opening};
use text::{ObjectText, Written};
use tree::{
    anchors, contexts, failed_attempt, inferred_call_ids, last_calls, roles, root_id, Anchor, Role,
    Tree,
};

/// What a span is, by the GenAI semantic conventions or OpenInference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Agent,
    Inference,
    Tool,
    Other,
}

/// Where a span's events go: the agent tree (root), the session and turn, as the ids its
/// events hold (shared: a span's events and its children's count references to one text).
#[derive(Debug, Clone)]
pub(super) struct Ctx {
    root: Id,
    session: Id,
    turn: Option<Id>,
    /// Nesting depth of the invocation (0 for a root invocation).
    depth: i64,
}

/// An event with its sort key: time, then opening events before others before closing ones
/// (outer invocations open first and close last), then the order made.
struct Pending {
    ts: i64,
    phase: u8,
    depth: i64,
    ev: Event,
}

pub(super) struct Out {
    pending: Vec<Pending>,
}

impl Out {
    /// An event whose data is written already (an object with members).
    fn push_text(&mut self, line: u64, ts: i64, phase: u8, ctx: &Ctx, kind: &str, w: Written) {
        let index = PayloadIndex::of_members(Kind::of(kind), &w.data, &w.members);
        self.pending_event(line, ts, phase, ctx, kind, w.data, index);
    }

    /// An event whose data is a JSON object with members (the synthetic events').
    fn push(&mut self, line: u64, ts: i64, phase: u8, ctx: &Ctx, kind: &str, data: Value) {
        debug_assert!(data.as_object().is_some_and(|m| !m.is_empty()));
        let text = crate::import::json_text(&data);
        let index = PayloadIndex::of(kind, &text);
        self.pending_event(line, ts, phase, ctx, kind, text.into(), index);
    }

    #[allow(clippy::too_many_arguments)]
    fn pending_event(
        &mut self,
        line: u64,
        ts: i64,
        phase: u8,
        ctx: &Ctx,
        kind: &str,
        data: Data,
        index: PayloadIndex,
    ) {
        let ev = Event {
            seq: 0,
            ts,
            root: ctx.root.clone(),
            session: ctx.session.clone(),
            turn: ctx.turn.clone(),
            kind: kind.into(),
            index,
            data,
            file: 0,
            line,
        };
        let depth = match phase {
            PHASE_CLOSE | PHASE_IDLE => -ctx.depth,
            _ => ctx.depth,
        };
        self.pending.push(Pending {
            ts,
            phase,
            depth,
            ev,
        });
    }
}

impl Ctx {
    /// The same tree and session, outside any turn (receipts, idles, session events).
    fn no_turn(&self) -> Ctx {
        Ctx {
            turn: None,
            ..self.clone()
        }
    }
}

pub(super) const PHASE_OPEN: u8 = 0;
pub(super) const PHASE_BODY: u8 = 1;
pub(super) const PHASE_CLOSE: u8 = 2;
pub(super) const PHASE_IDLE: u8 = 3;

/// The file's events, in time order, each agent's numbered from 0 (`seq` is the position in
/// its agent's log): an agent's numbers depend on its own spans only, so a receiver that
/// maps again only the agents a batch of spans touches numbers them as a file ingest does.
pub(super) fn emit(file_rel: &str, spans: Vec<Span>, logs: Vec<LogRecord>, out: &mut Vec<Event>) {
    let mut pending = pending_events(file_rel, &spans, &logs);
    // The spans and records are freed while their events are put in order.
    rayon::join(
        move || drop((spans, logs)),
        || {
            pending.par_sort_by(|a, b| {
                (a.ts, a.phase, a.depth, &*a.ev.root).cmp(&(b.ts, b.phase, b.depth, &*b.ev.root))
            })
        },
    );
    out.reserve(pending.len());
    let mut next: HashMap<Id, u64, foldhash::fast::RandomState> = HashMap::default();
    for p in pending {
        let mut ev = p.ev;
        let n = next.entry(ev.root.clone()).or_insert(0);
        ev.seq = *n;
        *n += 1;
        out.push(ev);
    }
}

/// The events of the file's spans and records, in span order then record order, with their
/// sort keys.
fn pending_events(file_rel: &str, spans: &[Span], logs: &[LogRecord]) -> Vec<Pending> {
    let mut ops: Vec<Op> = spans.par_iter().map(op_of).collect();
    let by_id: HashMap<(&str, &str), usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.trace.as_str(), s.id.as_str()), i))
        .collect();
    let agent_names = llama_index::workflow_agents(spans, &mut ops, &by_id);
    outer_layers(spans, &mut ops, &by_id);
    let anchors = anchors(spans, &ops, &by_id);
    let roles = roles(&ops, &anchors);
    let ctxs = contexts(&Tree {
        file_rel,
        spans,
        ops: &ops,
        roles: &roles,
        anchors: &anchors,
    });
    // Exceptions recorded as log records, by the span they name.
    let mut log_exceptions: HashMap<(&str, &str), Vec<&Attrs>> = HashMap::new();
    for r in logs {
        if r.attrs.contains_key("exception.type") || r.attrs.contains_key("exception.message") {
            log_exceptions
                .entry((r.trace.as_str(), r.span.as_str()))
                .or_default()
                .push(&r.attrs);
        }
    }
    let mut m = Mapper {
        spans,
        ops: &ops,
        roles: &roles,
        by_id: &by_id,
        anchors: &anchors,
        ctxs: &ctxs,
        last_calls: last_calls(spans, &ops, &anchors),
        call_ids: inferred_call_ids(spans, &ops, &anchors),
        agent_names,
        log_exceptions,
        o: Out {
            pending: Vec::new(),
        },
        roots: BTreeMap::new(),
        unfinished: BTreeMap::new(),
    };
    // Each span's events are made on their own (in parallel), then taken in span order.
    let made: Vec<(Vec<Pending>, SpanMarks)> = (0..spans.len())
        .into_par_iter()
        .map(|i| {
            // Room for an agent span's opening, turn and closing, and the span's events.
            let mut o = Out {
                pending: Vec::with_capacity(4 + spans[i].events.len()),
            };
            let marks = m.span(i, &mut o);
            (o.pending, marks)
        })
        .collect();
    let made_events: usize = made.iter().map(|(p, _)| p.len()).sum();
    m.o.pending.reserve(made_events + logs.len());
    for (pending, marks) in made {
        m.o.pending.extend(pending);
        if let Some((key, first)) = marks.unfinished {
            let e = m.unfinished.entry(key).or_insert(first);
            *e = (*e).min(first);
        }
        let (root, at, line) = marks.root;
        m.first_of_root(root, at, line);
    }
    for r in logs {
        let ctx = m.log_ctx(file_rel, r);
        m.first_of_root(&ctx.root, r.ts, r.line);
        let kind = format!("otlp:{}", r.name);
        m.o.push_text(r.line, r.ts, PHASE_BODY, &ctx, &kind, log_record(r));
    }
    m.unfinished();
    m.root_starts();
    m.o.pending
}

/// One model call traced at two layers (OpenLIT traces LangChain's `chat` and, inside it, the
/// OpenAI SDK's `chat` of the same request): an inference span with an inference span below
/// it, before any agent span, is the outer layer of the calls below, kept as a span of its
/// own (`otlp:<name>`); the innermost are the model calls.
fn outer_layers(spans: &[Span], ops: &mut [Op], by_id: &HashMap<(&str, &str), usize>) {
    let mut outer = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        if ops[i] != Op::Inference {
            continue;
        }
        let mut cur = s;
        // Bounded walk: a cycle of parent ids in bad input ends it.
        for _ in 0..1024 {
            if cur.parent.is_empty() {
                break;
            }
            match by_id.get(&(cur.trace.as_str(), cur.parent.as_str())) {
                Some(&p) if ops[p] == Op::Agent => break,
                Some(&p) => {
                    if ops[p] == Op::Inference {
                        outer.push(p);
                    }
                    cur = &spans[p];
                }
                None => break,
            }
        }
    }
    for p in outer {
        ops[p] = Op::Other;
    }
}

/// The file's spans with what was worked out about them, and the events made so far.
struct Mapper<'a> {
    spans: &'a [Span],
    ops: &'a [Op],
    roles: &'a [Role],
    by_id: &'a HashMap<(&'a str, &'a str), usize>,
    anchors: &'a [Anchor],
    ctxs: &'a [Ctx],
    /// Tool spans' call ids taken from the inference that asked for them.
    call_ids: HashMap<usize, String>,
    /// Each agent span's last inference span.
    last_calls: HashMap<usize, usize>,
    /// Agent names that spans other than the agent's own state (LlamaIndex's).
    agent_names: HashMap<usize, String>,
    log_exceptions: HashMap<(&'a str, &'a str), Vec<&'a Attrs>>,
    o: Out,
    /// Each tree's first time and line (its `session/start`).
    roots: BTreeMap<Id, (i64, u64)>,
    /// Invocations whose agent span is not in the file: (root, missing span id) to the
    /// first time and line of their calls.
    unfinished: BTreeMap<(Id, String), (i64, u64)>,
}

/// What a span's mapping leaves beside its events: the invocation it opens without its
/// agent span (root and missing span id, to its first time and line), and its tree's root
/// with its time and line.
struct SpanMarks<'a> {
    unfinished: Option<((Id, String), (i64, u64))>,
    root: (&'a Id, i64, u64),
}

impl<'m> Mapper<'m> {
    fn span(&self, i: usize, o: &mut Out) -> SpanMarks<'m> {
        let span = &self.spans[i];
        let ctx = &self.ctxs[i];
        let excs = self
            .log_exceptions
            .get(&(span.trace.as_str(), span.id.as_str()))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let last = match self.last_calls.get(&i) {
            Some(&j) => LastCall {
                finish: finish_reasons(&self.spans[j]).pop(),
                error: span_error(&self.spans[j], self.exceptions_of(j)),
            },
            None => LastCall::default(),
        };
        match self.ops[i] {
            Op::Agent => {
                let parent = match &self.anchors[i] {
                    Anchor::Agent(p, _) => Some(&self.ctxs[*p]),
                    _ => None,
                };
                let role = self.roles[i];
                let opening = match (role, parent) {
                    (Role::TurnOf, _) => Opening::Nothing,
                    (Role::Container, Some(p)) if p.session == ctx.session => Opening::Nothing,
                    (_, Some(p)) => {
                        let name = self.agent_names.get(&i).map(|n| Cow::Borrowed(n.as_str()));
                        Opening::Session(p, name.or_else(|| agent_name(span)))
                    }
                    (_, None) => Opening::Receipt,
                };
                if role == Role::Container {
                    let at = ts_or(span.start, span.end);
                    let kind = format!("otlp:{}", span.name);
                    o.push_text(span.line, at, PHASE_BODY, ctx, &kind, span_record(span));
                }
                agent_events(o, span, ctx, opening, role != Role::Container, &last, excs)
            }
            Op::Inference => model_end(o, span, ctx, excs),
            Op::Tool => tool_events(o, span, ctx, self.call_ids.get(&i)),
            Op::Other if failed_attempt(span, self.ops, self.by_id) => {
                model_end(o, span, ctx, excs)
            }
            Op::Other => {
                let kind = format!("otlp:{}", span.name);
                let at = ts_or(span.start, span.end);
                o.push_text(span.line, at, PHASE_BODY, ctx, &kind, span_record(span));
            }
        }
        for e in &span.events {
            let mut data = ObjectText::with_capacity(e.attrs.text().len() + 64);
            data.member_raw("attributes", e.attrs.text());
            data.member("span_id", &span.id);
            let kind = format!("otlp:{}", e.name);
            o.push_text(
                span.line,
                ts_or(e.ts, span.start),
                PHASE_BODY,
                ctx,
                &kind,
                data.finish(),
            );
        }
        if let Anchor::Agent(a, _) = self.anchors[i] {
            clamp_to(o, self.spans[a].end);
        }
        let at = ts_or(span.start, span.end);
        let unfinished = match &self.anchors[i] {
            Anchor::Missing(parent) if matches!(self.ops[i], Op::Inference | Op::Tool) => {
                Some(((ctx.root.clone(), parent.clone()), (at, span.line)))
            }
            _ => None,
        };
        SpanMarks {
            unfinished,
            root: (&ctx.root, at, span.line),
        }
    }

    /// The exception log records that name span `i`.
    fn exceptions_of(&self, i: usize) -> &[&Attrs] {
        let s = &self.spans[i];
        self.log_exceptions
            .get(&(s.trace.as_str(), s.id.as_str()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn first_of_root(&mut self, root: &Id, at: i64, line: u64) {
        match self.roots.get_mut(root) {
            Some(e) => *e = (*e).min((at, line)),
            None => {
                self.roots.insert(root.clone(), (at, line));
            }
        }
    }

    /// A log record's context: its span's, else its conversation's or trace's tree.
    fn log_ctx(&self, file_rel: &str, r: &LogRecord) -> Ctx {
        match self.by_id.get(&(r.trace.as_str(), r.span.as_str())) {
            Some(&i) => self.ctxs[i].clone(),
            None => {
                let root: Id = root_id(&r.attrs, &r.trace, file_rel).into();
                Ctx {
                    session: root.clone(),
                    root,
                    turn: None,
                    depth: 0,
                }
            }
        }
    }

    /// An invocation whose agent span is not in the file (it had not ended when the spans
    /// were exported): opened at its first call, never closed.
    fn unfinished(&mut self) {
        for ((root, turn), (at, line)) in std::mem::take(&mut self.unfinished) {
            let ctx = Ctx {
                root: root.clone(),
                session: root,
                turn: Some(turn.as_str().into()),
                depth: 0,
            };
            let receipt =
                json!({"message_id": turn, "kind": "prompt", "synthetic": true, "inferred": true});
            let start = json!({"span_id": turn, "synthetic": true, "inferred": true});
            self.o.push(
                line,
                at,
                PHASE_OPEN,
                &ctx.no_turn(),
                "inbox/receipt",
                receipt,
            );
            self.o.push(line, at, PHASE_OPEN, &ctx, "turn/start", start);
        }
    }

    /// Every tree starts with its root session.
    fn root_starts(&mut self) {
        for (root, (at, line)) in std::mem::take(&mut self.roots) {
            let ctx = Ctx {
                session: root.clone(),
                root,
                turn: None,
                depth: -1,
            };
            let data = json!({"parent": null, "synthetic": true});
            self.o
                .push(line, at, PHASE_OPEN, &ctx, "session/start", data);
        }
    }
}

/// A span's events no later than the end of the invocation it is in: a child's clock may
/// put its end a little after its parent's (OpenTelemetry JS takes each span's end from a
/// monotonic clock started with the span: the Vercel AI SDK's provider call ends 0.1 ms after
/// the `ai.generateText` span that awaited it), and a call after its turn ended would fall
/// outside the turn.
fn clamp_to(o: &mut Out, end: i64) {
    if end == 0 {
        return;
    }
    for p in &mut o.pending {
        if p.ts > end {
            p.ts = end;
            p.ev.ts = end;
        }
    }
}

pub(super) fn ts_or(ts: i64, fallback: i64) -> i64 {
    if ts != 0 {
        ts
    } else {
        fallback
    }
}
