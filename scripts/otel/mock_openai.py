"""A scripted OpenAI-compatible Chat Completions server on loopback, for frameworks whose
model client cannot be given an in-process transport.

Each agent has a script: a list of steps, each a chat completion (`text(...)`, `call(...)`)
or an HTTP error status (int), answered in order to the requests whose system prompt (or
first message) contains the script's key. Streaming requests get the completion as the API
streams it (the usage last, when `stream_options.include_usage` asks for it).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

scripts = {}
_counter = {"n": 0}
_lock = threading.Lock()


def completion(message, finish, tokens_in, tokens_out, model="gpt-4o-mini-2024-07-18"):
    with _lock:
        _counter["n"] += 1
        n = _counter["n"]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1796500000 + n,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
    }


def text(t, tokens_in, tokens_out, finish="stop"):
    return completion({"role": "assistant", "content": t}, finish, tokens_in, tokens_out)


def call(name, args, call_id, tokens_in, tokens_out):
    tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    return completion(message, "tool_calls", tokens_in, tokens_out)


def chunks(step, usage):
    """A chat completion as the API streams it: the message, then its finish reason, then
    (when asked for) the usage."""
    base = {k: step[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = step["choices"][0]
    delta = {"role": "assistant", "content": choice["message"]["content"]}
    if "tool_calls" in choice["message"]:
        delta["tool_calls"] = [{"index": 0} | c for c in choice["message"]["tool_calls"]]
    yield base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    if usage:
        yield base | {"choices": [], "usage": step["usage"]}


def _content(message):
    c = message.get("content") or ""
    if isinstance(c, list):
        c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c


def next_step(body):
    messages = body.get("messages", [])
    first = _content(messages[0]) if messages else ""
    with _lock:
        for key, steps in scripts.items():
            if key in first:
                return steps.pop(0)
    raise KeyError(f"no script for {first[:80]!r}")


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        step = next_step(body)
        if isinstance(step, int):
            error = {"error": {"message": f"provider error {step}", "type": "error", "code": None}}
            return self._send(step, "application/json", json.dumps(error), {"retry-after": "0"})
        if body.get("stream"):
            usage = (body.get("stream_options") or {}).get("include_usage", False)
            sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks(step, usage))
            return self._send(200, "text/event-stream", sse + "data: [DONE]\n\n")
        self._send(200, "application/json", json.dumps(step))

    def _send(self, status, content_type, text, headers=None):
        data = text.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def serve():
    """Starts the server on a free loopback port; returns its base URL (`…/v1`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/v1"
