//! A small HTTP/1.1 server, a thread per connection: exporters keep their connection open
//! and wait for each answer (which waits for a commit), so every connection needs its own
//! reader whatever the others do. (A pool that serves a fixed number of keep-alive
//! connections at a time would leave the other exporters unanswered until one
//! disconnects.) It reads a request's line and headers, gives the body (by
//! `Content-Length`, or chunked) to the handler, writes the handler's answer with its
//! length, and goes on with the next request of the connection.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A request's line and headers; its body is read from [`Request::body`].
pub struct Request<'a> {
    pub method: String,
    pub path: String,
    headers: Vec<(String, String)>,
    body: Box<dyn Read + 'a>,
    /// `Content-Length`, when given.
    pub length: Option<u64>,
}

impl Request<'_> {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body.
    pub fn body(&mut self) -> &mut dyn Read {
        &mut self.body
    }
}

/// An answer.
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Adds `WWW-Authenticate: Bearer` (a 401).
    pub bearer: bool,
}

/// Idle time between checks of the stop flag.
const TICK: Duration = Duration::from_millis(200);
/// The longest wait for a request's next bytes once it has begun.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest request line and headers.
const MAX_HEAD: usize = 64 << 10;

/// Accepts connections on `listener` until `stop`, each served on its own thread by
/// `handle`.
pub fn serve<H>(listener: TcpListener, stop: Arc<AtomicBool>, handle: H) -> io::Result<()>
where
    H: Fn(&mut Request) -> Response + Send + Sync + Clone + 'static,
{
    listener.set_nonblocking(true)?;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let (stop, handle) = (stop.clone(), handle.clone());
                std::thread::spawn(move || {
                    let _ = connection(stream, &stop, &handle);
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(TICK / 10),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A connection reset before it was accepted, or too many open files: go on.
            Err(_) => std::thread::sleep(TICK),
        }
    }
    Ok(())
}

/// The address a listener is bound to.
pub fn bound(listener: &TcpListener) -> Option<SocketAddr> {
    listener.local_addr().ok()
}

/// Serves one connection until the client closes it, asks to, or the server stops.
fn connection<H>(stream: TcpStream, stop: &AtomicBool, handle: &H) -> io::Result<()>
where
    H: Fn(&mut Request) -> Response,
{
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let Some(head) = read_head(&mut reader, stop)? else {
            return Ok(());
        };
        reader.get_ref().set_read_timeout(Some(BODY_TIMEOUT))?;
        let Some((method, path, version, headers)) = parse_head(&head) else {
            let r = Response {
                status: 400,
                content_type: "text/plain",
                body: b"malformed HTTP request".to_vec(),
                bearer: false,
            };
            return write_response(&mut writer, &r, true);
        };
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_ascii_lowercase())
        };
        let chunked = find("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        let length = find("content-length").and_then(|v| v.parse::<u64>().ok());
        let close = match find("connection") {
            Some(v) if v.contains("close") => true,
            Some(v) if v.contains("keep-alive") => false,
            _ => version == "HTTP/1.0",
        };
        if find("expect").is_some_and(|v| v == "100-continue") {
            writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        let (response, drained) = {
            let body: Box<dyn Read + '_> = if chunked {
                Box::new(Chunked::new(&mut reader))
            } else {
                Box::new((&mut reader).take(length.unwrap_or(0)))
            };
            let mut req = Request {
                method,
                path,
                headers,
                body,
                length: if chunked { None } else { length },
            };
            let response = handle(&mut req);
            // What the handler left of the body is read and dropped (up to a limit), so
            // that the next request starts where it should; else the connection closes.
            let drained = io::copy(
                &mut (&mut req.body).take(MAX_HEAD as u64 * 16),
                &mut io::sink(),
            )
            .is_ok()
                && matches!(req.body.read(&mut [0u8; 1]), Ok(0));
            (response, drained)
        };
        let close = close || !drained || stop.load(Ordering::SeqCst);
        write_response(&mut writer, &response, close)?;
        if close {
            return Ok(());
        }
    }
}

/// The request line and headers, up to the blank line (`None`: the connection closed, or
/// the server stops, before a request began).
fn read_head(reader: &mut BufReader<TcpStream>, stop: &AtomicBool) -> io::Result<Option<Vec<u8>>> {
    reader.get_ref().set_read_timeout(Some(TICK))?;
    let mut head = Vec::new();
    loop {
        match reader.read_until(b'\n', &mut head) {
            Ok(0) => return Ok(None),
            Ok(_) => {
                if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
                    return Ok(Some(head));
                }
                // Blank lines before a request line are allowed and skipped.
                if head == b"\r\n" || head == b"\n" {
                    head.clear();
                }
                if head.len() > MAX_HEAD {
                    return Err(io::Error::other("request head too large"));
                }
                // Once a request began, its head may take longer than a tick.
                reader.get_ref().set_read_timeout(Some(BODY_TIMEOUT))?;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if head.is_empty() && stop.load(Ordering::SeqCst) {
                    return Ok(None);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

type Head = (String, String, String, Vec<(String, String)>);

fn parse_head(head: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let mut first = lines.next()?.split_whitespace();
    let (method, path, version) = (first.next()?, first.next()?, first.next()?);
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut headers = Vec::new();
    for l in lines.filter(|l| !l.is_empty()) {
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    Some((method.into(), path.into(), version.into(), headers))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

fn write_response(w: &mut TcpStream, r: &Response, close: bool) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    if r.bearer {
        out.push_str("WWW-Authenticate: Bearer\r\n");
    }
    if r.status == 503 {
        out.push_str("Retry-After: 1\r\n");
    }
    out.push_str(if close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&r.body);
    w.write_all(&bytes)?;
    w.flush()
}

/// A chunked body (`Transfer-Encoding: chunked`): the chunks' data, then the trailers
/// are skipped.
struct Chunked<'a, R: BufRead> {
    inner: &'a mut R,
    /// Bytes left in the current chunk; `None` before a size line; done after the last.
    left: Option<u64>,
    done: bool,
}

impl<'a, R: BufRead> Chunked<'a, R> {
    fn new(inner: &'a mut R) -> Self {
        Chunked {
            inner,
            left: None,
            done: false,
        }
    }

    fn line(&mut self) -> io::Result<String> {
        let mut l = Vec::new();
        (&mut *self.inner).take(4096).read_until(b'\n', &mut l)?;
        if !l.ends_with(b"\n") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad chunk framing",
            ));
        }
        Ok(String::from_utf8_lossy(&l).trim().to_string())
    }
}

impl<R: BufRead> Read for Chunked<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            match self.left {
                None => {
                    let size = self.line()?;
                    let hex = size.split(';').next().unwrap_or("").trim();
                    let n = u64::from_str_radix(hex, 16).map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidData, "bad chunk size")
                    })?;
                    if n == 0 {
                        // Trailers, up to the blank line.
                        while !self.line()?.is_empty() {}
                        self.done = true;
                        return Ok(0);
                    }
                    self.left = Some(n);
                }
                Some(0) => {
                    self.line()?; // the CRLF after a chunk's data
                    self.left = None;
                }
                Some(n) => {
                    let want = buf.len().min(n as usize);
                    let got = self.inner.read(&mut buf[..want])?;
                    if got == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    self.left = Some(n - got as u64);
                    return Ok(got);
                }
            }
        }
    }
}
