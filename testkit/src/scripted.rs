//! One scripted TCP server, for the answers the emulator never gives (a
//! message without a lease id, an ack applied and answered with a 500, an
//! `x-should-retry` header) and for answers lost on the way (a connection
//! hung up or stalled after the request was read).
//!
//! It runs two ways. [`scripted`] answers every request by a script, from
//! the operation and the JSON body, on the test's runtime: loopback I/O on
//! that runtime, like the emulator, so paused time moves only when every
//! task waits on a timer. [`Scripted::steps`] plays one [`Step`] per
//! connection, in order, on a thread of its own: what it does to a
//! connection does not depend on the test's runtime being polled. Either
//! way it records every request.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::retry::RetryPolicy;
use cf_queues::{Client, Queue};
use serde_json::Value;

use crate::clients::{builder_for, one_request_per_call, quick, without_timers};

/// What a script answers: a status, extra headers and a JSON body, from
/// the operation (the path's last segment: `"pull"`, `"ack"`, ...) and the
/// request's JSON body (`null` when it has none or it does not parse).
pub type Script = Box<dyn FnMut(&str, &Value) -> Answer + Send>;

/// One scripted answer: a status, extra headers (a `Retry-After`, say)
/// and a JSON body.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// Headers besides `content-type: application/json`.
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body.
    pub body: Value,
}

impl Answer {
    /// This status and body, no extra header.
    pub fn new(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// The same answer with one more header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Answer {
        self.headers.push((name, value.into()));
        self
    }
}

/// What the server does with the one request of a connection.
#[derive(Debug)]
pub enum Step {
    /// Answer with this status and JSON body, then close.
    Respond(u16, Value),
    /// Answer with this status, these extra headers and JSON body, then close.
    RespondWith(u16, Vec<(&'static str, String)>, Value),
    /// Close without answering: the answer is lost after the request was sent.
    HangUp,
    /// Hold the connection this long without answering, then close.
    Stall(Duration),
}

/// One request the server read.
#[derive(Clone, Debug)]
pub struct Request {
    /// `"POST"`, `"GET"`, ...
    pub method: String,
    /// The path with its query.
    pub target: String,
    /// The path's last segment: `"pull"`, `"ack"`, ...
    pub operation: String,
    /// The JSON body, `null` when there is none or it does not parse.
    pub body: Value,
}

impl Request {
    fn new(method: &str, target: &str, body: &[u8]) -> Request {
        let path = target.split('?').next().unwrap_or_default();
        Request {
            method: method.to_owned(),
            target: target.to_owned(),
            operation: path.rsplit('/').next().unwrap_or_default().to_owned(),
            body: serde_json::from_slice(body).unwrap_or_default(),
        }
    }
}

/// A scripted server; see the [module](self). It stops when dropped (the
/// thread of [`Scripted::steps`] ends with its steps).
#[derive(Debug)]
pub struct Scripted {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// A server on the test's runtime that answers every request as `script`
/// says.
pub async fn scripted(
    mut script: impl FnMut(&str, &Value) -> (u16, Value) + Send + 'static,
) -> Scripted {
    scripted_answers(move |operation, body| {
        let (status, body) = script(operation, body);
        Answer::new(status, body)
    })
    .await
}

/// A server on the test's runtime that answers every request with the
/// [`Answer`] `script` gives, headers included.
pub async fn scripted_answers(
    script: impl FnMut(&str, &Value) -> Answer + Send + 'static,
) -> Scripted {
    use axum::extract::State;
    use axum::http::{Method, StatusCode, Uri, header};
    use axum::response::IntoResponse as _;

    type Shared = (Arc<Mutex<Script>>, Arc<Mutex<Vec<Request>>>);
    async fn answer(
        State((script, requests)): State<Shared>,
        method: Method,
        uri: Uri,
        body: axum::body::Bytes,
    ) -> axum::response::Response {
        let target = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
        let request = Request::new(method.as_str(), target, &body);
        let answer = (script.lock().expect("not poisoned"))(&request.operation, &request.body);
        requests.lock().expect("not poisoned").push(request);
        let mut response = (
            StatusCode::from_u16(answer.status).expect("a status"),
            [(header::CONTENT_TYPE, "application/json")],
            answer.body.to_string(),
        )
            .into_response();
        for (name, value) in answer.headers {
            response.headers_mut().append(
                name,
                header::HeaderValue::from_str(&value).expect("a header value"),
            );
        }
        response
    }

    let requests = Arc::default();
    let script: Script = Box::new(script);
    let router = axum::Router::new()
        .fallback(answer)
        .with_state((Arc::new(Mutex::new(script)), Arc::clone(&requests)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base_url = format!("http://{}", listener.local_addr().expect("address"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Scripted {
        base_url,
        requests,
        connections: Arc::default(),
        task: Some(task),
    }
}

impl Scripted {
    /// A server that plays one step per connection, in order, on a thread
    /// of its own, and then stops listening.
    pub fn steps(steps: Vec<Step>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("address"));
        Scripted::play(base_url, move || Some(listener), steps)
    }

    /// Like [`Scripted::steps`], but nothing listens on `port` until
    /// `after` has passed: a connection refused before that.
    pub fn steps_on_port_after(port: u16, after: Duration, steps: Vec<Step>) -> Scripted {
        let base_url = format!("http://127.0.0.1:{port}");
        let bind = move || {
            std::thread::sleep(after);
            TcpListener::bind(("127.0.0.1", port)).ok()
        };
        Scripted::play(base_url, bind, steps)
    }

    fn play(
        base_url: String,
        bind: impl FnOnce() -> Option<TcpListener> + Send + 'static,
        steps: Vec<Step>,
    ) -> Scripted {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (seen, accepted) = (Arc::clone(&requests), Arc::clone(&connections));
        std::thread::spawn(move || {
            let Some(listener) = bind() else { return };
            for step in steps {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                accepted.fetch_add(1, Ordering::SeqCst);
                if let Some(request) = read_request(&mut stream) {
                    seen.lock().expect("not poisoned").push(request);
                }
                match step {
                    Step::Respond(status, body) => respond(&mut stream, status, &[], &body),
                    Step::RespondWith(status, headers, body) => {
                        respond(&mut stream, status, &headers, &body);
                    }
                    Step::HangUp => {}
                    // Held on a thread of its own, so that the next
                    // connection is served meanwhile.
                    Step::Stall(hold) => {
                        std::thread::spawn(move || {
                            std::thread::sleep(hold);
                            drop(stream);
                        });
                    }
                }
            }
        });
        Scripted {
            base_url,
            requests,
            connections,
            task: None,
        }
    }

    /// Every request read so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("not poisoned").clone()
    }

    /// The bodies of the requests of one operation, in order.
    pub fn bodies(&self, operation: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|request| request.operation == operation)
            .map(|request| request.body)
            .collect()
    }

    /// Each request's method and target, in order:
    /// `"POST /accounts/.../queues"`.
    pub fn lines(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .map(|request| format!("{} {}", request.method, request.target))
            .collect()
    }

    /// How many connections [`Scripted::steps`] accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// A queue on this server whose client makes one request per call.
    pub fn queue(&self) -> Queue {
        one_request_per_call(builder_for(&self.base_url), "scripted")
    }

    /// A queue on this server whose client retries by `retry`.
    pub fn queue_retrying(&self, retry: RetryPolicy) -> Queue {
        without_timers(builder_for(&self.base_url))
            .retry(retry)
            .build()
            .expect("client")
            .queue("scripted")
            .expect("queue id")
    }

    /// A queue on this server whose client retries as by default (with
    /// quick backoff), for what happens only on a retry.
    pub fn queue_with_retries(&self) -> Queue {
        self.queue_retrying(
            RetryPolicy::default().backoff(Duration::from_millis(10), Duration::from_millis(500)),
        )
    }

    /// A client on this server with [`quick`] retries and an attempt
    /// timeout of 1 s, for answers that never come.
    pub fn client(&self) -> Client {
        builder_for(&self.base_url)
            .retry(quick())
            .timeout(Duration::from_secs(1))
            .build()
            .expect("valid test configuration")
    }
}

/// Reads one request: the head, then `content-length` bytes of body.
/// `None` when the connection ends before a whole head.
fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buf[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).into_owned();
        let length = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().unwrap_or(0))
            })
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            let mut first = head.lines().next().unwrap_or_default().split(' ');
            let (method, target) = (first.next()?, first.next()?);
            return Some(Request::new(
                method,
                target,
                &data[end + 4..end + 4 + length],
            ));
        }
    }
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &Value) {
    let reason = axum::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Scripted");
    let body = body.to_string();
    let mut response = format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n");
    for (name, value) in headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    let _ = stream.write_all(response.as_bytes());
}
