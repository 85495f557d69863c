//! Posting batches of spans to an OTLP/HTTP endpoint (`URL/v1/traces`): protobuf or JSON
//! bodies, retried on 429, 502, 503 and 504 and on connection errors with exponential
//! backoff (honouring `Retry-After` in seconds), and a refusal reported with its status and
//! the body the server answered. Plain HTTP only: runlog carries no TLS stack of its own,
//! so a remote backend is reached through a local collector or proxy.

use std::time::Duration;

use super::ExportError;

/// How batches are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// `application/x-protobuf`.
    #[default]
    Protobuf,
    /// `application/json` (OTLP/JSON).
    Json,
}

/// The attempts one batch gets before its export fails.
const ATTEMPTS: u32 = 8;
/// The first backoff; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How much of a refusing server's body an error quotes.
const BODY_QUOTED: usize = 500;

/// A client posting to one endpoint's `/v1/traces`.
pub struct Poster {
    agent: ureq::Agent,
    url: String,
    protocol: Protocol,
    /// Retries done so far, over all batches.
    pub retries: u64,
}

/// The traces URL of an endpoint: `URL/v1/traces`, unless it already ends so.
pub fn traces_url(endpoint: &str) -> Result<String, ExportError> {
    let e = endpoint.trim_end_matches('/');
    if e.starts_with("https://") {
        return Err(ExportError::Endpoint(format!(
            "{endpoint}: https is not built into runlog export; post to a local OpenTelemetry \
             Collector (http://127.0.0.1:4318) that forwards over TLS"
        )));
    }
    if !e.starts_with("http://") {
        return Err(ExportError::Endpoint(format!(
            "{endpoint}: give an http:// URL (the OTLP/HTTP receiver, e.g. http://127.0.0.1:4318)"
        )));
    }
    Ok(if e.ends_with("/v1/traces") {
        e.to_string()
    } else {
        format!("{e}/v1/traces")
    })
}

impl Poster {
    /// A client for `endpoint` (see [`traces_url`]).
    pub fn new(endpoint: &str, protocol: Protocol) -> Result<Poster, ExportError> {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build();
        Ok(Poster {
            agent: ureq::Agent::new_with_config(config),
            url: traces_url(endpoint)?,
            protocol,
            retries: 0,
        })
    }

    /// The protocol bodies are encoded with.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Posts one encoded batch, retrying what may pass later.
    pub fn post(&mut self, body: &[u8]) -> Result<(), ExportError> {
        let content_type = match self.protocol {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        };
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let last = attempt == ATTEMPTS;
            let wait = match self
                .agent
                .post(&self.url)
                .header("Content-Type", content_type)
                .send(body)
            {
                Ok(mut resp) => {
                    let status = resp.status().as_u16();
                    if (200..300).contains(&status) {
                        return Ok(());
                    }
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let text = resp.body_mut().read_to_string().unwrap_or_default();
                    if !matches!(status, 429 | 502 | 503 | 504) || last {
                        return Err(ExportError::Refused {
                            url: self.url.clone(),
                            status,
                            body: text.chars().take(BODY_QUOTED).collect(),
                        });
                    }
                    retry_after.unwrap_or(backoff).min(MAX_BACKOFF)
                }
                Err(e) => {
                    if last {
                        return Err(ExportError::Transport {
                            url: self.url.clone(),
                            message: e.to_string(),
                        });
                    }
                    backoff
                }
            };
            self.retries += 1;
            std::thread::sleep(wait);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        Err(ExportError::Transport {
            url: self.url.clone(),
            message: "no attempt was made".to_string(),
        })
    }
}
