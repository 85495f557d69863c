//! The canonical Error of a failed span: its status, `error.type`, exception events and
//! records (or the `error` attribute Logfire writes instead), the HTTP status and provider
//! codes they state.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::attrs::{int_attr, str_attr};
use crate::import::otlp::attributes::Attrs;
use crate::import::otlp::Span;
use crate::import::status_error_code;

/// The canonical Error of a failed span (status ERROR, `error.type`, an `exception` event or
/// exception log record), `None` when it did not fail.
pub(super) fn span_error(span: &Span, log_excs: &[&Attrs]) -> Option<Value> {
    let exc = span
        .events
        .iter()
        .rev()
        .find(|e| e.name == "exception")
        .map(|e| &e.attrs)
        .or_else(|| log_excs.last().copied());
    let error_type = str_attr(&span.attrs, &["error.type"])
        .map(Cow::into_owned)
        .or_else(|| int_attr(&span.attrs, &["error.type"]).map(|n| n.to_string()));
    if span.status != 2 && error_type.is_none() && exc.is_none() {
        return None;
    }
    let exc_type = exc.and_then(|e| str_attr(e, &["exception.type"]));
    let exc_message = exc.and_then(|e| str_attr(e, &["exception.message"]));
    let raw = error_type.clone().or_else(|| exc_type.map(Cow::into_owned));
    let message = exc_message
        .map(Cow::into_owned)
        .or_else(|| (!span.status_message.is_empty()).then(|| span.status_message.clone()))
        .or_else(|| super::logfire::error_text(span))
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
pub(super) fn http_status_of(raw: &str) -> Option<i64> {
    let n: i64 = raw.trim().parse().ok()?;
    (100..=599).contains(&n).then_some(n)
}

/// The HTTP status an error message states the way the SDKs write it: `status_code: 429`
/// (Pydantic AI's `ModelHTTPError`), `Error code: 429` (the OpenAI and Anthropic SDKs), or
/// first, before a Google status name (`429 RESOURCE_EXHAUSTED. …`, the google-genai SDK's
/// `APIError`).
pub(super) fn status_in_text(text: &str) -> Option<i64> {
    if let Some((code, rest)) = text.split_at_checked(3) {
        let google_status = rest.strip_prefix(' ').is_some_and(|r| {
            r.split(['.', ' ']).next().is_some_and(|w| {
                w.len() > 2 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
        });
        if google_status {
            if let Some(n) = http_status_of(code).filter(|n| *n >= 400) {
                return Some(n);
            }
        }
    }
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
/// canonical code: the codes of IMPORTERS.md table E for Anthropic and OpenAI, the exception
/// classes their Python SDKs raise for the same statuses, Google's status names (as Vertex
/// AI and the Gemini API write them) and Strands' `ModelThrottledException` and
/// `ContextWindowOverflowException`.
pub(super) fn provider_code(raw: &str) -> Option<&'static str> {
    // Semantic Kernel writes the exception's class as Python prints it: `<class 'a.B'>`.
    let raw = raw
        .strip_prefix("<class '")
        .and_then(|r| r.strip_suffix("'>"))
        .unwrap_or(raw);
    let last = raw.rsplit('.').next().unwrap_or(raw);
    Some(match last {
        "authentication_error"
        | "permission_error"
        | "invalid_api_key"
        | "AuthenticationError"
        | "PermissionDeniedError"
        | "UNAUTHENTICATED"
        | "PERMISSION_DENIED" => "completion_unauthorized",
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "RateLimitError"
        | "ModelRateLimitError"
        | "ModelThrottledException"
        | "RESOURCE_EXHAUSTED" => "completion_rate_limited",
        "api_error"
        | "overloaded_error"
        | "server_error"
        | "InternalServerError"
        | "UNAVAILABLE" => "completion_unavailable",
        "timeout" | "APITimeoutError" | "DEADLINE_EXCEEDED" => "completion_timed_out",
        "APIConnectionError" => "completion_failed",
        "context_length_exceeded" | "ContextWindowOverflowException" => {
            "completion_context_too_large"
        }
        "insufficient_quota" => "completion_billing_denied",
        "invalid_request_error"
        | "invalid_prompt"
        | "BadRequestError"
        | "NotFoundError"
        | "UnprocessableEntityError"
        | "INVALID_ARGUMENT" => "completion_rejected",
        _ => return None,
    })
}
