//! Reading what the spans are made of: SQL over the warehouse tables (turns with their
//! events' times, interval and error; model calls from `model/end` events with their error
//! rows; tool calls with their first result's time; callbacks; run attempts; subagent
//! sessions), gathered per agent in root order. Under a time window only `turns` and `runs`
//! are windowed (by their start); what hangs below a kept turn is read whole
//! (`unfiltered.*`), so a turn's spans are complete.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::SessionContext;
use serde::Deserialize;

use super::columns::Columns;
use super::rows::{
    Agent, CallbackRow, ErrorRow, IntervalRow, ModelRow, RunRow, SessionRow, ToolRow, TurnRow,
};
use crate::error::Result;
use crate::query::run_sql;

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The tables are restricted to a window (`restrict_to_window` was applied).
    pub windowed: bool,
    /// Only this agent.
    pub root: Option<String>,
    /// Read message content too (turn ends' data, tool-call arguments).
    pub content: bool,
}

impl Scope {
    /// The whole table `t` (under a window, its unfiltered rows).
    fn whole(&self, t: &str) -> String {
        if self.windowed {
            format!("unfiltered.{t}")
        } else {
            t.to_string()
        }
    }

    /// `AND alias.root = '...'` when one agent is asked for.
    fn root_filter(&self, alias: &str) -> String {
        match &self.root {
            Some(r) => {
                let col = if alias.is_empty() {
                    "root".to_string()
                } else {
                    format!("{alias}.root")
                };
                format!(" AND {col} = '{}'", r.replace('\'', "''"))
            }
            None => String::new(),
        }
    }

    /// Fills `{ev}`, `{intervals}`, `{errors}`, `{tool_calls}`, `{callbacks}`, `{agents}`, and
    /// `{root:X}` (the root filter on alias X) in a query.
    fn sql(&self, template: &str) -> String {
        let mut s = template
            .replace("{ev}", &self.whole("events"))
            .replace("{intervals}", &self.whole("intervals"))
            .replace("{errors}", &self.whole("errors"))
            .replace("{tool_calls}", &self.whole("tool_calls"))
            .replace("{callbacks}", &self.whole("callbacks"))
            .replace("{agents}", &self.whole("agents"));
        while let Some(i) = s.find("{root:") {
            let j = s[i..].find('}').map_or(s.len(), |j| i + j);
            let alias = s[i + 6..j].to_string();
            s.replace_range(i..(j + 1).min(s.len()), &self.root_filter(&alias));
        }
        s
    }
}

/// A turn's last event matters only while it runs (no `turn/end`): only those are looked for.
const TURNS_SQL: &str = "WITH running AS (
    SELECT root, session, turn FROM turns WHERE end_seq IS NULL AND turn IS NOT NULL),
last AS (
    SELECT e.root, e.session, e.turn, max(e.ts) AS last_ts FROM {ev} e
    JOIN running r ON e.root = r.root AND e.session = r.session AND e.turn = r.turn
    GROUP BY e.root, e.session, e.turn)
SELECT t.root, t.session, t.turn, t.is_root, t.state, t.stop_reason, t.finish_class, t.cause,
       t.outcome, t.error_code, t.inferred, t.protocol_error, t.start_seq, t.end_seq,
       t.interval_open_seq, s.ts AS start_ts, e.ts AS end_ts, l.last_ts,
       i.status AS interval_status, i.finish_reason AS interval_finish_reason,
       i.finish_class AS interval_finish_class,
       er.code, er.message, er.retryable, er.http_status, er.details_reason,
       er.retryable_expected, er.retryable_mismatch, er.status_consistent, er.retried,
       er.recovered{end_data}
FROM turns t
LEFT JOIN {ev} s ON s.root = t.root AND s.seq = t.start_seq
LEFT JOIN {ev} e ON e.root = t.root AND e.seq = t.end_seq
LEFT JOIN last l ON l.root = t.root AND l.session = t.session AND l.turn = t.turn
LEFT JOIN {intervals} i ON i.root = t.root AND i.open_seq = t.interval_open_seq
LEFT JOIN {errors} er ON er.root = t.root AND er.seq = t.end_seq AND er.source = 'turn'
WHERE t.turn IS NOT NULL{root:t}";

const MODELS_SQL: &str = "SELECT e.root, e.session, e.turn, e.seq, e.ts, e.data,
       er.code, er.message, er.retryable, er.http_status, er.details_reason,
       er.retryable_expected, er.retryable_mismatch, er.status_consistent, er.retried,
       er.recovered, er.seq AS error_seq
FROM {ev} e
LEFT JOIN {errors} er ON er.root = e.root AND er.seq = e.seq AND er.source = 'model'
WHERE e.type = 'model/end'{root:e}";

const TOOLS_SQL: &str = "SELECT t.root, t.session, t.turn, t.call_id, t.seq, t.name, t.status,
       t.detail{arguments}, e.ts
FROM {tool_calls} t JOIN {ev} e ON e.root = t.root AND e.seq = t.seq
WHERE true{root:t}";

const RESULTS_SQL: &str = "SELECT root, seq, ts, data FROM {ev} WHERE type = 'tool/result'{root:}";

const CALLBACKS_SQL: &str = "SELECT c.root, c.session, c.turn, c.callback_id, c.kind, c.title,
       c.open_seq, c.close_seq, c.closed_by, o.ts AS open_ts, x.ts AS close_ts
FROM {callbacks} c
JOIN {ev} o ON o.root = c.root AND o.seq = c.open_seq
LEFT JOIN {ev} x ON x.root = c.root AND x.seq = c.close_seq
WHERE true{root:c}";

const RUNS_SQL: &str =
    "SELECT r.root, r.run_id, r.attempt, r.start_seq, r.settle_seq, r.settle, r.output_status,
       r.wait_for_kind, r.provisional_tail, r.error_code, s.ts AS start_ts,
       x.ts AS settle_ts, l.last_ts
FROM runs r
JOIN {ev} s ON s.root = r.root AND s.seq = r.start_seq
LEFT JOIN {ev} x ON x.root = r.root AND x.seq = r.settle_seq
LEFT JOIN {agents} l ON l.root = r.root
WHERE true{root:r}";

const SESSIONS_SQL: &str =
    "SELECT root, session, seq, data FROM {ev} WHERE type = 'session/start'{root:}";

/// Reads every agent's rows, in root order (each agent's rows sorted by seq).
pub async fn read_agents(ctx: &SessionContext, scope: &Scope) -> Result<BTreeMap<String, Agent>> {
    let mut agents = Agents::default();
    read_turns(ctx, scope, &mut agents).await?;
    read_models(ctx, scope, &mut agents).await?;
    read_tools(ctx, scope, &mut agents).await?;
    read_callbacks(ctx, scope, &mut agents).await?;
    read_runs(ctx, scope, &mut agents).await?;
    read_sessions(ctx, scope, &mut agents).await?;
    let mut agents = agents.0;
    for a in agents.values_mut() {
        a.turns.sort_by(|x, y| {
            (x.start_seq, &x.session, &x.turn).cmp(&(y.start_seq, &y.session, &y.turn))
        });
        a.models.sort_by_key(|m| m.seq);
        a.tools.sort_by_key(|t| t.seq);
        a.callbacks.sort_by_key(|c| c.open_seq);
        a.runs.sort_by_key(|r| r.start_seq);
    }
    // Agents with nothing to export (no turn, no run attempt) are left out.
    agents.retain(|_, a| !a.turns.is_empty() || !a.runs.is_empty());
    Ok(agents)
}

/// The agents read so far, by root.
#[derive(Default)]
struct Agents(BTreeMap<String, Agent>);

impl Agents {
    /// The agent of `root`, made when first named.
    fn get(&mut self, root: &str) -> &mut Agent {
        self.0.entry(root.to_string()).or_insert_with(|| Agent {
            root: root.to_string(),
            ..Default::default()
        })
    }
}

/// Runs `sql` and hands each batch's columns to `each`.
async fn each_batch(
    ctx: &SessionContext,
    sql: &str,
    mut each: impl FnMut(&Columns) -> Result<()>,
) -> Result<()> {
    let (_, batches) = run_sql(ctx, sql).await?;
    for b in &batches {
        each(&Columns::of(b)?)?;
    }
    Ok(())
}

/// The error columns of a row (the `errors` row joined in), `None` when no row joined:
/// `present` is a column that is never NULL in a joined row.
fn error_row(c: &Columns, i: usize, present: Option<bool>) -> Result<Option<ErrorRow>> {
    if present != Some(true) {
        return Ok(None);
    }
    Ok(Some(ErrorRow {
        code: c.text("code")?.owned(i),
        message: c.text("message")?.owned(i),
        retryable: c.bool("retryable")?.get(i),
        http_status: c.int("http_status")?.get(i),
        details_reason: c.text("details_reason")?.owned(i),
        retryable_expected: c.bool("retryable_expected")?.get(i),
        retryable_mismatch: c.bool("retryable_mismatch")?.get(i),
        status_consistent: c.bool("status_consistent")?.get(i),
        retried: c.bool("retried")?.get(i),
        recovered: c.bool("recovered")?.get(i),
    }))
}

async fn read_turns(ctx: &SessionContext, scope: &Scope, agents: &mut Agents) -> Result<()> {
    let end_data = if scope.content {
        ", e.data AS end_data"
    } else {
        ""
    };
    let sql = scope.sql(&TURNS_SQL.replace("{end_data}", end_data));
    each_batch(ctx, &sql, |c| {
        let (root, session, turn) = (c.text("root")?, c.text("session")?, c.text("turn")?);
        let (start_seq, end_seq) = (c.int("start_seq")?, c.int("end_seq")?);
        let (start_ts, end_ts, last_ts) = (c.int("start_ts")?, c.int("end_ts")?, c.int("last_ts")?);
        let open_seq = c.int("interval_open_seq")?;
        let (ist, ifr, ifc) = (
            c.text("interval_status")?,
            c.text("interval_finish_reason")?,
            c.text("interval_finish_class")?,
        );
        let retryable = c.bool("retryable")?;
        let message = c.text("message")?;
        let end_data = if scope.content {
            Some(c.text("end_data")?)
        } else {
            None
        };
        for i in 0..c.len() {
            let (Some(r), Some(start)) = (root.get(i), start_ts.get(i)) else {
                continue;
            };
            let interval = match (open_seq.get(i), ist.get(i)) {
                (Some(o), Some(_)) => Some(IntervalRow {
                    open_seq: o,
                    status: ist.owned(i),
                    finish_reason: ifr.owned(i),
                    finish_class: ifc.owned(i),
                }),
                _ => None,
            };
            // An errors row has a message or a retryable flag; a turn with none has neither.
            let joined = Some(message.get(i).is_some() || retryable.get(i).is_some());
            let row = TurnRow {
                session: session.or_empty(i),
                turn: turn.or_empty(i),
                is_root: c.bool("is_root")?.get(i).unwrap_or(false),
                state: c.text("state")?.owned(i),
                stop_reason: c.text("stop_reason")?.owned(i),
                finish_class: c.text("finish_class")?.owned(i),
                cause: c.text("cause")?.owned(i),
                outcome: c.text("outcome")?.owned(i),
                error_code: c.text("error_code")?.owned(i),
                inferred: c.bool("inferred")?.get(i).unwrap_or(false),
                protocol_error: c.int("protocol_error")?.get(i),
                start_seq: start_seq.get(i).unwrap_or(0),
                end_seq: end_seq.get(i),
                start_ts: start,
                end_ts: end_ts.get(i),
                last_ts: last_ts.get(i).unwrap_or(start),
                interval,
                error: error_row(c, i, joined)?,
                end_data: end_data.as_ref().and_then(|d| d.owned(i)),
            };
            agents.get(r).turns.push(row);
        }
        Ok(())
    })
    .await
}

async fn read_models(ctx: &SessionContext, scope: &Scope, agents: &mut Agents) -> Result<()> {
    each_batch(ctx, &scope.sql(MODELS_SQL), |c| {
        let (root, session, turn) = (c.text("root")?, c.text("session")?, c.text("turn")?);
        let (seq, ts, data, eseq) = (
            c.int("seq")?,
            c.int("ts")?,
            c.text("data")?,
            c.int("error_seq")?,
        );
        for i in 0..c.len() {
            let (Some(r), Some(seq), Some(ts)) = (root.get(i), seq.get(i), ts.get(i)) else {
                continue;
            };
            let row = ModelRow {
                session: session.or_empty(i),
                turn: turn.or_empty(i),
                seq,
                ts,
                data: data.or_empty(i),
                error: error_row(c, i, Some(eseq.get(i).is_some()))?,
            };
            agents.get(r).models.push(row);
        }
        Ok(())
    })
    .await
}

/// The `call_id` of a `tool/result`'s data (the rest is skipped).
#[derive(Deserialize)]
struct ResultData {
    call_id: Option<String>,
}

async fn read_tools(ctx: &SessionContext, scope: &Scope, agents: &mut Agents) -> Result<()> {
    // The first result of each (root, call_id), by seq.
    let mut results: HashMap<(String, String), (i64, i64)> = HashMap::new();
    each_batch(ctx, &scope.sql(RESULTS_SQL), |c| {
        let (root, seq, ts, data) = (
            c.text("root")?,
            c.int("seq")?,
            c.int("ts")?,
            c.text("data")?,
        );
        for i in 0..c.len() {
            let (Some(r), Some(seq), Some(ts), Some(d)) =
                (root.get(i), seq.get(i), ts.get(i), data.get(i))
            else {
                continue;
            };
            let Ok(ResultData { call_id: Some(id) }) = serde_json::from_str::<ResultData>(d) else {
                continue;
            };
            let e = results.entry((r.to_string(), id)).or_insert((seq, ts));
            if seq < e.0 {
                *e = (seq, ts);
            }
        }
        Ok(())
    })
    .await?;
    let arguments = if scope.content { ", t.arguments" } else { "" };
    let sql = scope.sql(&TOOLS_SQL.replace("{arguments}", arguments));
    each_batch(ctx, &sql, |c| {
        let (root, call_id, seq, ts) = (
            c.text("root")?,
            c.text("call_id")?,
            c.int("seq")?,
            c.int("ts")?,
        );
        let args = if scope.content {
            Some(c.text("arguments")?)
        } else {
            None
        };
        for i in 0..c.len() {
            let (Some(r), Some(seq), Some(ts)) = (root.get(i), seq.get(i), ts.get(i)) else {
                continue;
            };
            let call_id = call_id.or_empty(i);
            let result_ts = results
                .get(&(r.to_string(), call_id.clone()))
                .filter(|(rseq, _)| *rseq > seq)
                .map(|&(_, t)| t);
            let row = ToolRow {
                session: c.text("session")?.or_empty(i),
                turn: c.text("turn")?.or_empty(i),
                call_id,
                seq,
                ts,
                name: c.text("name")?.or_empty(i),
                status: c.text("status")?.owned(i),
                detail: c.text("detail")?.owned(i),
                arguments: args.as_ref().and_then(|a| a.owned(i)),
                result_ts,
            };
            agents.get(r).tools.push(row);
        }
        Ok(())
    })
    .await
}

async fn read_callbacks(ctx: &SessionContext, scope: &Scope, agents: &mut Agents) -> Result<()> {
    each_batch(ctx, &scope.sql(CALLBACKS_SQL), |c| {
        let root = c.text("root")?;
        let (open_seq, open_ts) = (c.int("open_seq")?, c.int("open_ts")?);
        for i in 0..c.len() {
            let (Some(r), Some(open_seq), Some(open_ts)) =
                (root.get(i), open_seq.get(i), open_ts.get(i))
            else {
                continue;
            };
            let row = CallbackRow {
                session: c.text("session")?.or_empty(i),
                turn: c.text("turn")?.owned(i),
                callback_id: c.text("callback_id")?.or_empty(i),
                kind: c.text("kind")?.owned(i),
                title: c.text("title")?.owned(i),
                open_seq,
                close_seq: c.int("close_seq")?.get(i),
                closed_by: c.text("closed_by")?.owned(i),
                open_ts,
                close_ts: c.int("close_ts")?.get(i),
            };
            agents.get(r).callbacks.push(row);
        }
        Ok(())
    })
    .await
}

async fn read_runs(ctx: &SessionContext, scope: &Scope, agents: &mut Agents) -> Result<()> {
    each_batch(ctx, &scope.sql(RUNS_SQL), |c| {
        let root = c.text("root")?;
        let (start_seq, start_ts) = (c.int("start_seq")?, c.int("start_ts")?);
        for i in 0..c.len() {
            let (Some(r), Some(start_seq), Some(start_ts)) =
                (root.get(i), start_seq.get(i), start_ts.get(i))
            else {
                continue;
            };
            let row = RunRow {
                run_id: c.text("run_id")?.or_empty(i),
                attempt: c.int("attempt")?.get(i),
                start_seq,
                settle_seq: c.int("settle_seq")?.get(i),
                settle: c.text("settle")?.owned(i),
                output_status: c.text("output_status")?.owned(i),
                wait_for_kind: c.text("wait_for_kind")?.owned(i),
                provisional_tail: c.bool("provisional_tail")?.get(i),
                error_code: c.text("error_code")?.owned(i),
                start_ts,
                settle_ts: c.int("settle_ts")?.get(i),
                last_ts: c.int("last_ts")?.get(i).unwrap_or(start_ts),
            };
            agents.get(r).runs.push(row);
        }
        Ok(())
    })
    .await
}

/// The fields of a `session/start`'s data the spans use.
#[derive(Deserialize)]
struct SessionData {
    name: Option<serde_json::Value>,
    model: Option<serde_json::Value>,
    parent: Option<serde_json::Value>,
    parent_turn: Option<serde_json::Value>,
}

fn as_text(v: Option<serde_json::Value>) -> Option<String> {
    match v {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

async fn read_sessions(ctx: &SessionContext, scope: &Scope, agents: &mut Agents) -> Result<()> {
    // The first session/start of each session counts.
    let mut first: HashMap<(String, String), (i64, SessionRow)> = HashMap::new();
    each_batch(ctx, &scope.sql(SESSIONS_SQL), |c| {
        let (root, session, seq, data) = (
            c.text("root")?,
            c.text("session")?,
            c.int("seq")?,
            c.text("data")?,
        );
        for i in 0..c.len() {
            let (Some(r), Some(s), Some(seq)) = (root.get(i), session.get(i), seq.get(i)) else {
                continue;
            };
            let Ok(d) = serde_json::from_str::<SessionData>(data.get(i).unwrap_or("{}")) else {
                continue;
            };
            let row = SessionRow {
                name: as_text(d.name),
                model: as_text(d.model),
                parent: as_text(d.parent),
                parent_turn: as_text(d.parent_turn),
            };
            let key = (r.to_string(), s.to_string());
            match first.get(&key) {
                Some((old, _)) if *old <= seq => {}
                _ => {
                    first.insert(key, (seq, row));
                }
            }
        }
        Ok(())
    })
    .await?;
    for ((root, session), (_, row)) in first {
        agents.get(&root).sessions.insert(session, row);
    }
    Ok(())
}
