//! The mapping of one OTLP file's spans and log records onto canonical events
//! (docs/importers/otlp.md), emitted in time order once the whole file is read.
//!
//! An agent invocation (`invoke_agent`, OpenInference `AGENT`) is a turn; a root invocation
//! opens and closes its own owned interval (synthetic `inbox/receipt` at its start and
//! `agent/idle` at its end), a nested one is a subagent session. Inference spans are model
//! calls, tool spans tool calls; every other span, span event and log record is kept as
//! `otlp:<name>`.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use super::{LogRecord, Span};
use crate::event::Event;
use crate::import::{event, flag, status_error_code};

/// What a span is, by the GenAI semantic conventions or OpenInference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Agent,
    Inference,
    Tool,
    Other,
}

fn str_attr<'a>(attrs: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| attrs.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

fn int_attr(attrs: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| match attrs.get(*k)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

fn op_of(span: &Span) -> Op {
    let op = str_attr(&span.attrs, &["gen_ai.operation.name"]);
    let oi = str_attr(&span.attrs, &["openinference.span.kind"]);
    match (op, oi) {
        (Some("invoke_agent"), _) | (_, Some("AGENT")) => Op::Agent,
        (Some("chat" | "text_completion" | "generate_content"), _) | (_, Some("LLM")) => {
            Op::Inference
        }
        (Some("execute_tool"), _) | (_, Some("TOOL")) => Op::Tool,
        (Some(_), _) | (_, Some(_)) => Op::Other,
        (None, None) => {
            let first = span.name.split(' ').next().unwrap_or("");
            match first {
                "invoke_agent" => Op::Agent,
                "chat" | "text_completion" | "generate_content" => Op::Inference,
                "execute_tool" => Op::Tool,
                _ => Op::Other,
            }
        }
    }
}

/// Where a span's events go: the agent tree (root), the session and turn.
#[derive(Debug, Clone)]
struct Ctx {
    root: String,
    session: String,
    turn: Option<String>,
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

struct Out {
    pending: Vec<Pending>,
}

impl Out {
    fn push(&mut self, line: u64, ts: i64, phase: u8, ctx: &Ctx, kind: &str, data: Value) {
        let mut ev = event(
            0,
            ts,
            &ctx.root,
            &ctx.session,
            ctx.turn.as_deref(),
            kind,
            data,
        );
        ev.line = line;
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

const PHASE_OPEN: u8 = 0;
const PHASE_BODY: u8 = 1;
const PHASE_CLOSE: u8 = 2;
const PHASE_IDLE: u8 = 3;

/// The file's events, in time order, numbered from 0.
pub(super) fn emit(file_rel: &str, spans: Vec<Span>, logs: Vec<LogRecord>, out: &mut Vec<Event>) {
    let ops: Vec<Op> = spans.iter().map(op_of).collect();
    let by_id: HashMap<(&str, &str), usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.trace.as_str(), s.id.as_str()), i))
        .collect();
    let anchors = anchors(&spans, &ops, &by_id);
    let roles = roles(&ops, &anchors);
    let ctxs = contexts(&Tree {
        file_rel,
        spans: &spans,
        ops: &ops,
        roles: &roles,
        anchors: &anchors,
    });
    // Exceptions recorded as log records, by the span they name.
    let mut log_exceptions: HashMap<(&str, &str), Vec<&Map<String, Value>>> = HashMap::new();
    for r in &logs {
        if r.attrs.contains_key("exception.type") || r.attrs.contains_key("exception.message") {
            log_exceptions
                .entry((r.trace.as_str(), r.span.as_str()))
                .or_default()
                .push(&r.attrs);
        }
    }
    let mut m = Mapper {
        spans: &spans,
        ops: &ops,
        roles: &roles,
        by_id: &by_id,
        anchors: &anchors,
        ctxs: &ctxs,
        last_calls: last_calls(&spans, &ops, &anchors),
        call_ids: inferred_call_ids(&spans, &ops, &anchors),
        log_exceptions,
        o: Out {
            pending: Vec::new(),
        },
        roots: BTreeMap::new(),
        unfinished: BTreeMap::new(),
    };
    for i in 0..spans.len() {
        m.span(i);
    }
    for r in &logs {
        let ctx = m.log_ctx(file_rel, r);
        m.first_of_root(&ctx.root, r.ts, r.line);
        let kind = format!("otlp:{}", r.name);
        m.o.push(r.line, r.ts, PHASE_BODY, &ctx, &kind, log_record(r));
    }
    m.unfinished();
    m.root_starts();
    let mut pending = m.o.pending;
    pending.sort_by(|a, b| {
        (a.ts, a.phase, a.depth, &*a.ev.root).cmp(&(b.ts, b.phase, b.depth, &*b.ev.root))
    });
    out.reserve(pending.len());
    for (seq, p) in pending.into_iter().enumerate() {
        let mut ev = p.ev;
        ev.seq = seq as u64;
        out.push(ev);
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
    log_exceptions: HashMap<(&'a str, &'a str), Vec<&'a Map<String, Value>>>,
    o: Out,
    /// Each tree's first time and line (its `session/start`).
    roots: BTreeMap<String, (i64, u64)>,
    /// Invocations whose agent span is not in the file: (root, missing span id) to the
    /// first time and line of their calls.
    unfinished: BTreeMap<(String, String), (i64, u64)>,
}

impl Mapper<'_> {
    fn span(&mut self, i: usize) {
        let span = &self.spans[i];
        let ctx = &self.ctxs[i];
        let excs = self
            .log_exceptions
            .get(&(span.trace.as_str(), span.id.as_str()))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let last = match self.last_calls.get(&i) {
            Some(&j) => LastCall {
                finish: finish_reasons(&self.spans[j].attrs).pop(),
                error: span_error(&self.spans[j], self.exceptions_of(j)),
            },
            None => LastCall::default(),
        };
        let o = &mut self.o;
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
                    (_, Some(p)) => Opening::Session(p),
                    (_, None) => Opening::Receipt,
                };
                if role == Role::Container {
                    let at = ts_or(span.start, span.end);
                    let kind = format!("otlp:{}", span.name);
                    o.push(span.line, at, PHASE_BODY, ctx, &kind, span_record(span));
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
                o.push(span.line, at, PHASE_BODY, ctx, &kind, span_record(span));
            }
        }
        for e in &span.events {
            let data = json!({"span_id": span.id, "attributes": e.attrs});
            let kind = format!("otlp:{}", e.name);
            o.push(
                span.line,
                ts_or(e.ts, span.start),
                PHASE_BODY,
                ctx,
                &kind,
                data,
            );
        }
        let at = ts_or(span.start, span.end);
        if let Anchor::Missing(parent) = &self.anchors[i] {
            if matches!(self.ops[i], Op::Inference | Op::Tool) {
                let e = self
                    .unfinished
                    .entry((ctx.root.clone(), parent.clone()))
                    .or_insert((at, span.line));
                *e = (*e).min((at, span.line));
            }
        }
        self.first_of_root(&ctx.root, at, span.line);
    }

    /// The exception log records that name span `i`.
    fn exceptions_of(&self, i: usize) -> &[&Map<String, Value>] {
        let s = &self.spans[i];
        self.log_exceptions
            .get(&(s.trace.as_str(), s.id.as_str()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn first_of_root(&mut self, root: &str, at: i64, line: u64) {
        match self.roots.get_mut(root) {
            Some(e) => *e = (*e).min((at, line)),
            None => {
                self.roots.insert(root.to_string(), (at, line));
            }
        }
    }

    /// A log record's context: its span's, else its conversation's or trace's tree.
    fn log_ctx(&self, file_rel: &str, r: &LogRecord) -> Ctx {
        match self.by_id.get(&(r.trace.as_str(), r.span.as_str())) {
            Some(&i) => self.ctxs[i].clone(),
            None => {
                let root = root_id(&r.attrs, &r.trace, file_rel);
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
                turn: Some(turn.clone()),
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

fn ts_or(ts: i64, fallback: i64) -> i64 {
    if ts != 0 {
        ts
    } else {
        fallback
    }
}

/// The invocation a span belongs to.
#[derive(Debug, Clone)]
enum Anchor {
    /// The nearest agent span above it, and whether a tool span lies between (an agent run
    /// by a tool of another is a subagent; one directly inside another is one of its turns).
    Agent(usize, bool),
    /// No agent above it, and its chain ends at a top-level span.
    None,
    /// No agent above it in the file, and its chain ends at a parent that is not in the file.
    Missing(String),
}

/// For each span, the nearest agent span strictly above it.
fn anchors(spans: &[Span], ops: &[Op], by_id: &HashMap<(&str, &str), usize>) -> Vec<Anchor> {
    spans
        .iter()
        .map(|s| {
            let mut cur = s;
            let mut via_tool = false;
            // Bounded walk: a cycle of parent ids in bad input ends it.
            for _ in 0..1024 {
                if cur.parent.is_empty() {
                    return Anchor::None;
                }
                match by_id.get(&(cur.trace.as_str(), cur.parent.as_str())) {
                    None => return Anchor::Missing(cur.parent.clone()),
                    Some(&p) if ops[p] == Op::Agent => return Anchor::Agent(p, via_tool),
                    Some(&p) => {
                        via_tool |= ops[p] == Op::Tool;
                        cur = &spans[p];
                    }
                }
            }
            Anchor::None
        })
        .collect()
}

/// The tree (root) of a span that no agent span contains: its conversation, else its trace.
fn root_id(attrs: &Map<String, Value>, trace: &str, file_rel: &str) -> String {
    match str_attr(attrs, &["gen_ai.conversation.id", "session.id"]) {
        Some(c) => c.to_string(),
        None if !trace.is_empty() => trace.to_string(),
        None => file_rel.to_string(),
    }
}

/// What an agent span is to the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Not an agent span.
    None,
    /// A root invocation: one turn in its own interval.
    Root,
    /// An invocation run by a tool of another (or otherwise nested with calls of both):
    /// one turn of a subagent session.
    Subagent,
    /// An agent span directly inside a container: one turn of the container's session.
    TurnOf,
    /// An agent span whose only work is agent spans directly inside it (OpenInference's
    /// `Agent workflow`): no turn of its own, its agents' turns are in its session.
    Container,
}

fn roles(ops: &[Op], anchors: &[Anchor]) -> Vec<Role> {
    let n = ops.len();
    let mut direct_agents = vec![false; n];
    let mut own_work = vec![false; n];
    for i in 0..n {
        if let Anchor::Agent(a, via_tool) = anchors[i] {
            match ops[i] {
                Op::Agent if !via_tool => direct_agents[a] = true,
                Op::Inference | Op::Tool => own_work[a] = true,
                _ => {}
            }
        }
    }
    let container = |a: usize| direct_agents[a] && !own_work[a];
    (0..n)
        .map(|i| match (ops[i], &anchors[i]) {
            (Op::Agent, _) if container(i) => Role::Container,
            (Op::Agent, Anchor::Agent(a, false)) if container(*a) => Role::TurnOf,
            (Op::Agent, Anchor::Agent(..)) => Role::Subagent,
            (Op::Agent, _) => Role::Root,
            _ => Role::None,
        })
        .collect()
}

/// What the contexts are worked out from.
struct Tree<'a> {
    file_rel: &'a str,
    spans: &'a [Span],
    ops: &'a [Op],
    roles: &'a [Role],
    anchors: &'a [Anchor],
}

/// Each span's context; agent spans are resolved outermost first.
fn contexts(tree: &Tree) -> Vec<Ctx> {
    let mut ctxs: Vec<Option<Ctx>> = vec![None; tree.spans.len()];
    (0..tree.spans.len())
        .map(|i| resolve(tree, i, &mut ctxs, 256))
        .collect()
}

fn resolve(tree: &Tree, i: usize, ctxs: &mut Vec<Option<Ctx>>, budget: u32) -> Ctx {
    let Tree {
        file_rel,
        spans,
        ops,
        roles,
        anchors,
    } = *tree;
    if let Some(c) = &ctxs[i] {
        return c.clone();
    }
    let s = &spans[i];
    let (parent, parent_role) = match &anchors[i] {
        Anchor::Agent(p, _) if budget > 0 => (Some(resolve(tree, *p, ctxs, budget - 1)), roles[*p]),
        _ => (None, Role::None),
    };
    let via_tool = matches!(anchors[i], Anchor::Agent(_, true));
    let own_turn = Some(s.id.clone());
    let c = match (roles[i], parent) {
        (Role::Root | Role::Container | Role::Subagent | Role::TurnOf, None) => {
            let root = root_id(&s.attrs, &s.trace, file_rel);
            Ctx {
                session: root.clone(),
                root,
                turn: if roles[i] == Role::Container {
                    None
                } else {
                    own_turn
                },
                depth: 0,
            }
        }
        (Role::Container, Some(p)) if parent_role == Role::Container && !via_tool => p,
        (Role::TurnOf, Some(p)) => Ctx {
            turn: own_turn,
            depth: p.depth + 1,
            ..p
        },
        (Role::Root | Role::Container | Role::Subagent, Some(p)) => {
            let own = str_attr(&s.attrs, &["gen_ai.conversation.id", "session.id"])
                .filter(|c| *c != p.session && *c != p.root);
            Ctx {
                root: p.root,
                session: own.unwrap_or(&s.id).to_string(),
                turn: if roles[i] == Role::Container {
                    None
                } else {
                    own_turn
                },
                depth: p.depth + 1,
            }
        }
        (Role::None, Some(p)) => p,
        (Role::None, None) => {
            let root = root_id(&s.attrs, &s.trace, file_rel);
            let turn = match &anchors[i] {
                Anchor::Missing(parent) if matches!(ops[i], Op::Inference | Op::Tool) => {
                    Some(parent.clone())
                }
                _ => None,
            };
            Ctx {
                session: root.clone(),
                root,
                turn,
                depth: 0,
            }
        }
    };
    ctxs[i] = Some(c.clone());
    c
}

/// A span that is one failed attempt of an inference (a span with a model but no operation
/// of its own, inside an inference span, that failed): Pydantic AI's `model request
/// attempt`.
fn failed_attempt(span: &Span, ops: &[Op], by_id: &HashMap<(&str, &str), usize>) -> bool {
    span.status == 2
        && span.attrs.contains_key("gen_ai.request.model")
        && by_id
            .get(&(span.trace.as_str(), span.parent.as_str()))
            .is_some_and(|&p| ops[p] == Op::Inference)
}

/// Each agent's last inference (by end time) finish reason.
/// The call ids of tool spans that record none (OpenInference's `TOOL` spans of the OpenAI
/// Agents SDK): the ids of the calls of the same tool that the invocation's latest inference
/// before the tool started asked for (`llm.output_messages.<i>.message.tool_calls.<j>.tool_call.id`
/// with its `.function.name`), taken in order.
fn inferred_call_ids(spans: &[Span], ops: &[Op], anchors: &[Anchor]) -> HashMap<usize, String> {
    let mut by_agent: HashMap<usize, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        let Anchor::Agent(a, _) = anchors[i] else {
            continue;
        };
        match ops[i] {
            Op::Inference => by_agent.entry(a).or_default().0.push(i),
            Op::Tool if str_attr(&s.attrs, CALL_ID_KEYS).is_none() => {
                by_agent.entry(a).or_default().1.push(i)
            }
            _ => {}
        }
    }
    let mut ids = HashMap::new();
    for (_, (mut calls, mut tools)) in by_agent {
        calls.sort_by_key(|&j| spans[j].end);
        tools.sort_by_key(|&t| spans[t].start);
        let mut asked: HashMap<usize, Vec<(String, String)>> = HashMap::new();
        for t in tools {
            let Some(&j) = calls
                .iter()
                .rev()
                .find(|&&j| spans[j].end <= spans[t].start)
            else {
                continue;
            };
            let pending = asked
                .entry(j)
                .or_insert_with(|| output_tool_calls(&spans[j].attrs));
            let name = tool_name(&spans[t]);
            if let Some(k) = pending.iter().position(|(n, _)| n == name) {
                ids.insert(t, pending.remove(k).1);
            }
        }
    }
    ids
}

/// The tool calls an OpenInference LLM span's output asks for: (name, id), in order.
fn output_tool_calls(attrs: &Map<String, Value>) -> Vec<(String, String)> {
    let mut calls: Vec<((u64, u64), String, String)> = Vec::new();
    for (k, v) in attrs {
        let Some(rest) = k.strip_prefix("llm.output_messages.") else {
            continue;
        };
        let Some(prefix) = rest.strip_suffix(".tool_call.id") else {
            continue;
        };
        let mut parts = prefix.split('.');
        let msg = parts.next().and_then(|p| p.parse().ok());
        let call = parts.nth(2).and_then(|p| p.parse().ok());
        let name_key = format!("llm.output_messages.{prefix}.tool_call.function.name");
        if let (Some(m), Some(c), Some(id), Some(name)) = (
            msg,
            call,
            v.as_str(),
            attrs.get(&name_key).and_then(Value::as_str),
        ) {
            calls.push(((m, c), name.to_string(), id.to_string()));
        }
    }
    calls.sort();
    calls.into_iter().map(|(_, n, id)| (n, id)).collect()
}

const CALL_ID_KEYS: &[&str] = &["gen_ai.tool.call.id", "tool_call.id"];

fn tool_name(span: &Span) -> &str {
    str_attr(&span.attrs, &["gen_ai.tool.name", "tool.name"])
        .or_else(|| span.name.strip_prefix("execute_tool "))
        .unwrap_or(&span.name)
}

/// Each agent's last inference: the inference span of that invocation that ended last.
fn last_calls(spans: &[Span], ops: &[Op], anchors: &[Anchor]) -> HashMap<usize, usize> {
    let mut last: HashMap<usize, usize> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        if ops[i] != Op::Inference {
            continue;
        }
        if let Anchor::Agent(a, _) = anchors[i] {
            let e = last.entry(a).or_insert(i);
            if s.end >= spans[*e].end {
                *e = i;
            }
        }
    }
    last
}

/// `gen_ai.response.finish_reasons` (an array, or one string), else the older
/// `gen_ai.response.finish_reason`.
fn finish_reasons(attrs: &Map<String, Value>) -> Vec<String> {
    for k in [
        "gen_ai.response.finish_reasons",
        "gen_ai.response.finish_reason",
        "llm.finish_reason",
    ] {
        match attrs.get(k) {
            Some(Value::Array(a)) => {
                return a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            }
            Some(Value::String(s)) if !s.is_empty() => {
                // Some SDKs record the array as its JSON text.
                if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(s) {
                    return a
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                }
                return vec![s.clone()];
            }
            _ => {}
        }
    }
    // OpenInference records none: the response object its LLM span keeps as output (the
    // Responses API's: `incomplete_details.reason`, else `status`; Chat Completions':
    // each choice's `finish_reason`).
    let Some(Value::String(text)) = attrs.get("output.value") else {
        return Vec::new();
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    match o.get("object").and_then(Value::as_str) {
        Some("response") => o
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .or_else(|| o.get("status"))
            .and_then(Value::as_str)
            .map(|r| vec![r.to_string()])
            .unwrap_or_default(),
        Some("chat.completion") => o
            .get("choices")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c.get("finish_reason").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// How an agent span opens (and closes) what it is in.
enum Opening<'a> {
    /// A root invocation: a synthetic receipt at its start, a synthetic idle at its end.
    Receipt,
    /// A subagent session of the given context: `session/start` and `session/end`.
    Session(&'a Ctx),
    /// A turn of a container's session: nothing beyond the turn.
    Nothing,
}

/// The events of an agent span: its opening, its turn (`turn/start`, `turn/end`; none for a
/// container) and its closing.
fn agent_events(
    o: &mut Out,
    span: &Span,
    ctx: &Ctx,
    opening: Opening,
    turn: bool,
    last: &LastCall,
    excs: &[&Map<String, Value>],
) {
    let start = ts_or(span.start, span.end);
    let line = span.line;
    match opening {
        Opening::Receipt => {
            let receipt = json!({"message_id": span.id, "kind": "prompt", "synthetic": true});
            o.push(
                line,
                start,
                PHASE_OPEN,
                &ctx.no_turn(),
                "inbox/receipt",
                receipt,
            );
        }
        Opening::Session(p) => {
            let name = str_attr(
                &span.attrs,
                &["gen_ai.agent.name", "agent_name", "agent.name"],
            );
            let data = json!({"parent": p.session, "parent_turn": p.turn, "name": name});
            o.push(
                line,
                start,
                PHASE_OPEN,
                &ctx.no_turn(),
                "session/start",
                data,
            );
        }
        Opening::Nothing => {}
    }
    if turn {
        o.push(
            line,
            start,
            PHASE_OPEN,
            ctx,
            "turn/start",
            span_record(span),
        );
    }
    if span.end == 0 {
        return;
    }
    let error = span_error(span, excs);
    if turn {
        let data = turn_end(span, error.clone(), last);
        o.push(line, span.end, PHASE_CLOSE, ctx, "turn/end", data);
    }
    match opening {
        Opening::Receipt => {
            let idle = json!({"synthetic": true});
            o.push(
                line,
                span.end,
                PHASE_IDLE,
                &ctx.no_turn(),
                "agent/idle",
                idle,
            );
        }
        Opening::Session(_) => {
            let status = if error.is_some() { "failed" } else { "closed" };
            let end = json!({"status": status, "synthetic": true});
            o.push(
                line,
                span.end,
                PHASE_CLOSE,
                &ctx.no_turn(),
                "session/end",
                end,
            );
        }
        Opening::Nothing => {}
    }
}

/// How an invocation's last inference ended.
#[derive(Debug, Default)]
struct LastCall {
    finish: Option<String>,
    error: Option<Value>,
}

/// `turn/end` of an agent span: failed when the span failed, or (inferred) when its last
/// inference failed; else by that inference's finish reason.
fn turn_end(span: &Span, error: Option<Value>, last: &LastCall) -> Value {
    let mut reason = Map::new();
    let inferred = error.is_none() && last.error.is_some();
    let error = error.or_else(|| last.error.clone());
    let kind = match (&error, last.finish.as_deref()) {
        (Some(_), _) => "error",
        (None, Some("length" | "max_tokens" | "MAX_TOKENS" | "max_output_tokens")) => "max_tokens",
        (None, Some("content_filter" | "refusal" | "SAFETY")) => "refusal",
        (None, _) => "completed",
    };
    reason.insert("kind".into(), kind.into());
    if let Some(f) = &last.finish {
        reason.insert("cause".into(), f.clone().into());
    }
    if let Some(e) = error {
        reason.insert("error".into(), e);
    }
    let mut data = Map::new();
    data.insert("reason".into(), Value::Object(reason));
    match span
        .attrs
        .get("final_result")
        .or_else(|| span.attrs.get("output.value"))
    {
        Some(Value::String(t)) => {
            data.insert("text".into(), t.clone().into());
        }
        Some(v) => {
            data.insert("output".into(), v.clone());
        }
        None => {}
    }
    data.insert("span_id".into(), span.id.clone().into());
    if inferred {
        data.insert("inferred".into(), true.into());
    }
    Value::Object(data)
}

fn model_end(o: &mut Out, span: &Span, ctx: &Ctx, excs: &[&Map<String, Value>]) {
    let a = &span.attrs;
    let mut data = Map::new();
    let reasons = finish_reasons(a);
    if let Some(f) = reasons.last() {
        data.insert("finish_reason".into(), f.clone().into());
    }
    if reasons.len() > 1 {
        data.insert("finish_reasons".into(), json!(reasons));
    }
    if let Some(u) = usage(a) {
        data.insert("usage".into(), u);
    }
    if let Some(e) = span_error(span, excs) {
        data.insert("error".into(), e);
    }
    if span.start != 0 && span.end >= span.start {
        data.insert(
            "duration_ms".into(),
            json!((span.end - span.start) as f64 / 1000.0),
        );
    }
    if let Some(m) = str_attr(
        a,
        &[
            "gen_ai.response.model",
            "gen_ai.request.model",
            "llm.model_name",
        ],
    ) {
        data.insert("model".into(), m.into());
    }
    if let Some(p) = str_attr(
        a,
        &[
            "gen_ai.provider.name",
            "gen_ai.system",
            "llm.provider",
            "llm.system",
        ],
    ) {
        data.insert("provider".into(), p.into());
    }
    data.insert("span_id".into(), span.id.clone().into());
    data.insert("name".into(), span.name.clone().into());
    data.insert("attributes".into(), Value::Object(a.clone()));
    o.push(
        span.line,
        ts_or(span.end, span.start),
        PHASE_BODY,
        ctx,
        "model/end",
        Value::Object(data),
    );
}

/// Canonical Usage from the current and earlier spellings of the GenAI conventions and
/// OpenInference's. Input tokens include cached ones (the conventions say so).
fn usage(a: &Map<String, Value>) -> Option<Value> {
    let input = int_attr(
        a,
        &[
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
        ],
    );
    let output = int_attr(
        a,
        &[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ],
    );
    if input.is_none() && output.is_none() {
        return None;
    }
    let cap = |n: Option<u64>| n.unwrap_or(0).min(1 << 53);
    let (input, output) = (cap(input), cap(output));
    let cached = cap(int_attr(
        a,
        &[
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_read_input_tokens",
            "gen_ai.usage.cached_tokens",
            "gen_ai.usage.details.cache_read_tokens",
            "llm.token_count.prompt_details.cache_read",
        ],
    ));
    let cache_write = cap(int_attr(
        a,
        &[
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.cache_creation_input_tokens",
            "gen_ai.usage.details.cache_write_tokens",
            "llm.token_count.prompt_details.cache_write",
        ],
    ));
    let reasoning = cap(int_attr(
        a,
        &[
            "gen_ai.usage.reasoning.output_tokens",
            "gen_ai.usage.reasoning_tokens",
            "gen_ai.usage.details.reasoning_tokens",
            "llm.token_count.completion_details.reasoning",
        ],
    ));
    Some(json!({
        "input_tokens": input,
        "output_tokens": output,
        "total_tokens": input + output,
        "cached_input_tokens": cached,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": reasoning,
    }))
}

fn tool_events(o: &mut Out, span: &Span, ctx: &Ctx, inferred_id: Option<&String>) {
    let a = &span.attrs;
    let call_id = str_attr(a, CALL_ID_KEYS)
        .or(inferred_id.map(String::as_str))
        .unwrap_or(&span.id);
    let name = tool_name(span);
    let arguments = match a
        .get("gen_ai.tool.call.arguments")
        .or_else(|| a.get("tool.parameters"))
        .or_else(|| a.get("input.value"))
    {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let mut call = json!({
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "span_id": span.id,
        "attributes": a,
    });
    if inferred_id.is_some() {
        flag(&mut call, "call_id_inferred");
    }
    o.push(
        span.line,
        ts_or(span.start, span.end),
        PHASE_BODY,
        ctx,
        "tool/call",
        call,
    );
    if span.end == 0 {
        return;
    }
    let mut result = Map::new();
    result.insert("call_id".into(), call_id.into());
    let failed = span.status == 2 || a.contains_key("error.type");
    result.insert("status".into(), if failed { "error" } else { "ok" }.into());
    if failed {
        // The error's message (its exception's, else the status message), else its type.
        let detail = span_error(span, &[])
            .and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_string))
            .filter(|m| !m.is_empty());
        if let Some(d) = detail {
            result.insert("detail".into(), d.into());
        }
    }
    if let Some(r) = a
        .get("gen_ai.tool.call.result")
        .or_else(|| a.get("output.value"))
    {
        result.insert("result".into(), r.clone());
    }
    o.push(
        span.line,
        span.end,
        PHASE_BODY,
        ctx,
        "tool/result",
        Value::Object(result),
    );
}

/// The canonical Error of a failed span (status ERROR, `error.type`, an `exception` event or
/// exception log record), `None` when it did not fail.
fn span_error(span: &Span, log_excs: &[&Map<String, Value>]) -> Option<Value> {
    let exc = span
        .events
        .iter()
        .rev()
        .find(|e| e.name == "exception")
        .map(|e| &e.attrs)
        .or_else(|| log_excs.last().copied());
    let error_type = str_attr(&span.attrs, &["error.type"])
        .map(str::to_string)
        .or_else(|| int_attr(&span.attrs, &["error.type"]).map(|n| n.to_string()));
    if span.status != 2 && error_type.is_none() && exc.is_none() {
        return None;
    }
    let exc_type = exc.and_then(|e| str_attr(e, &["exception.type"]));
    let exc_message = exc.and_then(|e| str_attr(e, &["exception.message"]));
    let raw = error_type.clone().or_else(|| exc_type.map(str::to_string));
    let message = exc_message
        .map(str::to_string)
        .or_else(|| (!span.status_message.is_empty()).then(|| span.status_message.clone()))
        .or_else(|| raw.clone())
        .unwrap_or_default();
    let http = int_attr(
        &span.attrs,
        &["http.response.status_code", "http.status_code"],
    )
    .and_then(|n| i64::try_from(n).ok())
    .or_else(|| raw.as_deref().and_then(http_status_of))
    .or_else(|| status_in_text(&message))
    .or_else(|| status_in_text(&span.status_message));
    let code = raw
        .as_deref()
        .and_then(provider_code)
        .or_else(|| http.and_then(status_error_code))
        .map(str::to_string)
        .or_else(|| raw.clone());
    let mut details = Map::new();
    if let Some(r) = &raw {
        details.insert("raw_code".into(), r.clone().into());
    }
    if let Some(h) = http {
        details.insert("http_status".into(), h.into());
    }
    Some(json!({
        "code": code,
        "message": message,
        "retryable": false,
        "details": if details.is_empty() { Value::Null } else { Value::Object(details) },
    }))
}

/// A raw value that is an HTTP status itself (`"429"`).
fn http_status_of(raw: &str) -> Option<i64> {
    let n: i64 = raw.trim().parse().ok()?;
    (100..=599).contains(&n).then_some(n)
}

/// The HTTP status an error message states the way the SDKs write it: `status_code: 429`
/// (Pydantic AI's `ModelHTTPError`), `Error code: 429` (the OpenAI and Anthropic SDKs).
fn status_in_text(text: &str) -> Option<i64> {
    for marker in ["status_code: ", "Error code: ", "status code "] {
        if let Some(at) = text.find(marker) {
            let digits: String = text[at + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if digits.len() == 3 {
                return http_status_of(&digits);
            }
        }
    }
    None
}

/// A provider's error code or an SDK's exception class (its last dotted segment) to the
/// canonical code: the codes of IMPORTERS.md table E for Anthropic and OpenAI, and the
/// exception classes their Python SDKs raise for the same statuses.
fn provider_code(raw: &str) -> Option<&'static str> {
    let last = raw.rsplit('.').next().unwrap_or(raw);
    Some(match last {
        "authentication_error"
        | "permission_error"
        | "invalid_api_key"
        | "AuthenticationError"
        | "PermissionDeniedError" => "completion_unauthorized",
        "rate_limit_error" | "rate_limit_exceeded" | "RateLimitError" | "ModelRateLimitError" => {
            "completion_rate_limited"
        }
        "api_error" | "overloaded_error" | "server_error" | "InternalServerError" => {
            "completion_unavailable"
        }
        "timeout" | "APITimeoutError" => "completion_timed_out",
        "APIConnectionError" => "completion_failed",
        "context_length_exceeded" => "completion_context_too_large",
        "insufficient_quota" => "completion_billing_denied",
        "invalid_request_error"
        | "invalid_prompt"
        | "BadRequestError"
        | "NotFoundError"
        | "UnprocessableEntityError" => "completion_rejected",
        _ => return None,
    })
}

/// The whole span, for an `otlp:<name>` event.
fn span_record(span: &Span) -> Value {
    let mut m = Map::new();
    m.insert("trace_id".into(), span.trace.clone().into());
    m.insert("span_id".into(), span.id.clone().into());
    if !span.parent.is_empty() {
        m.insert("parent_span_id".into(), span.parent.clone().into());
    }
    m.insert("name".into(), span.name.clone().into());
    m.insert("kind".into(), span.kind.into());
    m.insert("start_us".into(), span.start.into());
    m.insert("end_us".into(), span.end.into());
    if span.status != 0 || !span.status_message.is_empty() {
        m.insert(
            "status".into(),
            json!({"code": span.status, "message": span.status_message}),
        );
    }
    m.insert("attributes".into(), Value::Object(span.attrs.clone()));
    if !span.links.is_empty() {
        m.insert("links".into(), Value::Array(span.links.clone()));
    }
    m.insert("scope".into(), (*span.scope).clone());
    m.insert("resource".into(), Value::Object((*span.resource).clone()));
    if span.start == 0 {
        m.insert("ts_synthetic".into(), true.into());
    }
    Value::Object(m)
}

fn log_record(r: &LogRecord) -> Value {
    let mut m = Map::new();
    if !r.trace.is_empty() {
        m.insert("trace_id".into(), r.trace.clone().into());
    }
    if !r.span.is_empty() {
        m.insert("span_id".into(), r.span.clone().into());
    }
    m.insert("severity_number".into(), r.severity_number.into());
    if !r.severity_text.is_empty() {
        m.insert("severity_text".into(), r.severity_text.clone().into());
    }
    m.insert("body".into(), r.body.clone());
    m.insert("attributes".into(), Value::Object(r.attrs.clone()));
    m.insert("scope".into(), (*r.scope).clone());
    m.insert("resource".into(), Value::Object((*r.resource).clone()));
    if r.ts == 0 {
        m.insert("ts_synthetic".into(), true.into());
    }
    Value::Object(m)
}
