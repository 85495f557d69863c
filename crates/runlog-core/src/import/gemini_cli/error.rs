//! Gemini CLI error messages to the error taxonomy (IMPORTERS.md table E, SEMANTICS.md §4).
//!
//! Gemini CLI records a failed model call as an `error` message whose text is what it showed
//! the user (gemini-cli `parseAndFormatApiError`): `[API Error: <message>]`, or `[API Error:
//! <message> (Status: <RPC status>)]` when the error was a JSON string, followed for an HTTP
//! 429 by a hint ("Please wait and try again later…", "Possible quota limitations in
//! place…", "You have reached your daily … quota limit…"). A message may itself carry the
//! HTTP error (`got status: 503 Service Unavailable. {"error":{"code":503,…}}`). There is no
//! code field: the canonical code is read from the text (the RPC status and HTTP code where
//! it carries them, else its wording); `details.from_message` says so.

use super::super::status_error_code;
use serde_json::{json, Map, Value};

/// What an error text says: (canonical code if the text decides one, raw code, HTTP status).
pub fn classify_error(text: &str) -> (Option<&'static str>, String, Option<i64>) {
    let (rpc, json_code) = embedded_error(text);
    let low = text.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| low.contains(w));
    // The hints Gemini CLI appends to an HTTP 429 only.
    let hint_429 = has(&[
        "please wait and try again later. to increase your limits",
        "possible quota limitations in place",
        "quota limit. ",
    ]);
    let http = json_code
        .or_else(|| status_in_text(text))
        .or(hint_429.then_some(429));
    let raw = status_after(text)
        .or(rpc)
        .or_else(|| rpc_word(text))
        .unwrap_or_else(|| {
            if text.trim_start().starts_with("[API Error") {
                "api_error".to_string()
            } else {
                "error".to_string()
            }
        });
    let code = if has(&[
        "exhausted your daily quota",
        "quota exceeded for",
        "quota will reset",
        "reached your daily",
    ]) {
        Some("completion_billing_denied")
    } else if has(&["rate limit", "too many requests"])
        || raw == "RESOURCE_EXHAUSTED"
        || http == Some(429)
    {
        Some("completion_rate_limited")
    } else if has(&["no capacity", "overloaded", "high demand"]) || raw == "UNAVAILABLE" {
        Some("completion_unavailable")
    } else if raw == "UNAUTHENTICATED" || raw == "PERMISSION_DENIED" || has(&["api key not valid"])
    {
        Some("completion_unauthorized")
    } else if has(&["exceeds the maximum number of tokens", "input token count"]) {
        Some("completion_context_too_large")
    } else if raw == "DEADLINE_EXCEEDED" || has(&["timed out", "timeout"]) {
        Some("completion_timed_out")
    } else if raw == "INVALID_ARGUMENT" {
        Some("completion_rejected")
    } else {
        http.and_then(status_error_code)
    };
    (code, raw, http)
}

/// The canonical Error object of an `error` message's text (no retryable flag is recorded:
/// `false`).
pub fn error_value(text: &str) -> Value {
    let (code, raw, http) = classify_error(text);
    let mut details = Map::new();
    details.insert("raw_code".into(), Value::String(raw.clone()));
    if let Some(s) = http {
        details.insert("http_status".into(), Value::from(s));
    }
    details.insert("from_message".into(), Value::Bool(true));
    json!({
        "code": code.map(str::to_string).unwrap_or(raw),
        "message": text,
        "retryable": false,
        "details": Value::Object(details),
    })
}

/// The `status` and `code` of a JSON error object embedded in the text
/// (`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`).
fn embedded_error(text: &str) -> (Option<String>, Option<i64>) {
    let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) else {
        return (None, None);
    };
    if b <= a {
        return (None, None);
    }
    let Ok(v) = serde_json::from_str::<Value>(&text[a..=b]) else {
        return (None, None);
    };
    let e = v.get("error").unwrap_or(&v);
    let status = e.get("status").and_then(Value::as_str).map(str::to_string);
    let code = e.get("code").and_then(Value::as_i64);
    (status, code)
}

/// The RPC status of `(Status: <STATUS>)`.
fn status_after(text: &str) -> Option<String> {
    let at = text.find("(Status: ")? + "(Status: ".len();
    let rest = &text[at..];
    let end = rest.find(')')?;
    let s = rest[..end].trim();
    (!s.is_empty() && s.len() <= 64).then(|| s.to_string())
}

/// An HTTP status the text names: `status: 429`, `status 503`, or a leading `429 …`.
fn status_in_text(text: &str) -> Option<i64> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let Ok(n) = w.parse::<i64>() else { continue };
        if !(400..=599).contains(&n) || w.len() != 3 {
            continue;
        }
        let before = if i > 0 { words[i - 1] } else { "" };
        let leading = i == 0 || (i == 2 && words[0] == "API" && words[1] == "Error");
        if leading || before.eq_ignore_ascii_case("status") || before.eq_ignore_ascii_case("code") {
            return Some(n);
        }
    }
    None
}

/// A Google RPC status word in the text (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, …).
fn rpc_word(text: &str) -> Option<String> {
    const RPC: [&str; 6] = [
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "DEADLINE_EXCEEDED",
        "INVALID_ARGUMENT",
    ];
    RPC.iter()
        .find(|w| text.contains(*w))
        .map(|w| w.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_gemini_cli_shows_map_to_the_taxonomy() {
        let cases = [
            (
                "[API Error: You have exhausted your daily quota on this model.]",
                Some("completion_billing_denied"),
                "api_error",
                None,
            ),
            (
                "[API Error: Quota exceeded for model gemini-3-pro-preview. Your quota will reset after 3h49m.]",
                Some("completion_billing_denied"),
                "api_error",
                None,
            ),
            (
                r#"[API Error: got status: 429 Too Many Requests. {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]"#,
                Some("completion_rate_limited"),
                "RESOURCE_EXHAUSTED",
                Some(429),
            ),
            (
                "[API Error: Rate limit exceeded (Status: RESOURCE_EXHAUSTED)]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
                Some("completion_rate_limited"),
                "RESOURCE_EXHAUSTED",
                Some(429),
            ),
            (
                "[API Error: Quota exceeded]\nYou have reached your daily gemini-2.5-pro quota limit. You will be switched to the gemini-2.5-flash model for the rest of this session.",
                Some("completion_billing_denied"),
                "api_error",
                Some(429),
            ),
            (
                "[API Error: API key not valid. Please pass a valid API key. (Status: INVALID_ARGUMENT)]",
                Some("completion_unauthorized"),
                "INVALID_ARGUMENT",
                None,
            ),
            (
                "[API Error: 503 UNAVAILABLE: This model is currently experiencing high demand]",
                Some("completion_unavailable"),
                "UNAVAILABLE",
                Some(503),
            ),
            ("[API Error: No capacity]", Some("completion_unavailable"), "api_error", None),
            ("[API Error: fetch failed]", None, "api_error", None),
        ];
        for (text, code, raw, http) in cases {
            let (c, r, h) = classify_error(text);
            assert_eq!((c, r.as_str(), h), (code, raw, http), "{text}");
        }
        let v = error_value("[API Error: fetch failed]");
        assert_eq!(v["code"], "api_error");
        assert_eq!(v["details"]["raw_code"], "api_error");
    }
}
