//! The invocation tree of a file's spans: the agent invocation each span belongs to, the
//! role of each agent span (root, subagent session, turn), the session and turn its events
//! go to, and the links between inference and tool spans.

use std::collections::HashMap;

use super::attrs::{keys, output_tool_calls, str_attr, tool_name};
use super::{Ctx, Op};
use crate::event::Id;
use crate::import::otlp::attributes::Attrs;
use crate::import::otlp::Span;

/// The invocation a span belongs to.
#[derive(Debug, Clone)]
pub(super) enum Anchor {
    /// The nearest agent span above it, and whether a tool span lies between (an agent run
    /// by a tool of another is a subagent; one directly inside another is one of its turns).
    Agent(usize, bool),
    /// No agent above it, and its chain ends at a top-level span.
    None,
    /// No agent above it in the file, and its chain ends at a parent that is not in the file.
    Missing(String),
}

/// For each span, the nearest agent span strictly above it.
pub(super) fn anchors(
    spans: &[Span],
    ops: &[Op],
    by_id: &HashMap<(&str, &str), usize>,
) -> Vec<Anchor> {
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
pub(super) fn root_id(attrs: &Attrs, trace: &str, file_rel: &str) -> String {
    match str_attr(attrs, keys::CONVERSATION) {
        Some(c) => c.into_owned(),
        None if !trace.is_empty() => trace.to_string(),
        None => file_rel.to_string(),
    }
}

/// What an agent span is to the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
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

pub(super) fn roles(ops: &[Op], anchors: &[Anchor]) -> Vec<Role> {
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
pub(super) struct Tree<'a> {
    pub(super) file_rel: &'a str,
    pub(super) spans: &'a [Span],
    pub(super) ops: &'a [Op],
    pub(super) roles: &'a [Role],
    pub(super) anchors: &'a [Anchor],
}

/// Each span's context; agent spans are resolved outermost first.
pub(super) fn contexts(tree: &Tree) -> Vec<Ctx> {
    let mut ctxs: Vec<Option<Ctx>> = vec![None; tree.spans.len()];
    (0..tree.spans.len())
        .map(|i| resolve(tree, i, &mut ctxs, 256))
        .collect()
}

pub(super) fn resolve(tree: &Tree, i: usize, ctxs: &mut Vec<Option<Ctx>>, budget: u32) -> Ctx {
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
    let own_turn = || Some(Id::from(s.id.as_str()));
    let c = match (roles[i], parent) {
        (Role::Root | Role::Container | Role::Subagent | Role::TurnOf, None) => {
            let root: Id = root_id(&s.attrs, &s.trace, file_rel).into();
            Ctx {
                session: root.clone(),
                root,
                turn: if roles[i] == Role::Container {
                    None
                } else {
                    own_turn()
                },
                depth: 0,
            }
        }
        (Role::Container, Some(p)) if parent_role == Role::Container && !via_tool => p,
        (Role::TurnOf, Some(p)) => Ctx {
            turn: own_turn(),
            depth: p.depth + 1,
            ..p
        },
        (Role::Root | Role::Container | Role::Subagent, Some(p)) => {
            let own = str_attr(&s.attrs, keys::CONVERSATION)
                .filter(|c| **c != *p.session && **c != *p.root);
            Ctx {
                root: p.root,
                session: Id::from(own.as_deref().unwrap_or(&s.id)),
                turn: if roles[i] == Role::Container {
                    None
                } else {
                    own_turn()
                },
                depth: p.depth + 1,
            }
        }
        (Role::None, Some(p)) => p,
        (Role::None, None) => {
            let root: Id = root_id(&s.attrs, &s.trace, file_rel).into();
            let turn = match &anchors[i] {
                Anchor::Missing(parent) if matches!(ops[i], Op::Inference | Op::Tool) => {
                    Some(Id::from(parent.as_str()))
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
pub(super) fn failed_attempt(
    span: &Span,
    ops: &[Op],
    by_id: &HashMap<(&str, &str), usize>,
) -> bool {
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
pub(super) fn inferred_call_ids(
    spans: &[Span],
    ops: &[Op],
    anchors: &[Anchor],
) -> HashMap<usize, String> {
    let mut by_agent: HashMap<usize, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        let Anchor::Agent(a, _) = anchors[i] else {
            continue;
        };
        match ops[i] {
            Op::Inference => by_agent.entry(a).or_default().0.push(i),
            Op::Tool if str_attr(&s.attrs, keys::CALL_ID).is_none() => {
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
                .or_insert_with(|| output_tool_calls(&spans[j]));
            let name = tool_name(&spans[t]);
            if let Some(k) = pending.iter().position(|(n, _)| *n == name) {
                ids.insert(t, pending.remove(k).1);
            }
        }
    }
    ids
}

/// Each agent's last inference: the inference span of that invocation that ended last.
pub(super) fn last_calls(spans: &[Span], ops: &[Op], anchors: &[Anchor]) -> HashMap<usize, usize> {
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
