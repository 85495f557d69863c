"""What a framework script asked its agents for, written beside its spans as the
`.expected.json` that `crates/runlog-core/tests/it/otlp_producers.rs` checks runlog's tables
against: the turns, model calls, errors and tool calls, in the order the script ran them."""

expected = {"turns": [], "model_calls": [], "errors": [], "tool_calls": []}


def expect_turn(name, state, finish, calls, tokens_in, tokens_out, session="root"):
    expected["turns"].append({
        "agent": name, "session": session, "state": state, "finish_reason": finish,
        "model_calls": calls, "input_tokens": tokens_in, "output_tokens": tokens_out,
    })


def expect_error(name, source, code, status, retried, recovered):
    expected["errors"].append({
        "agent": name, "source": source, "code": code, "http_status": status,
        "retried": retried, "recovered": recovered,
    })


def expect_tool(name, call_id, status):
    expected["tool_calls"].append({"name": name, "call_id": call_id, "status": status})
