//! The service the relay POSTs to: its URL and headers, checked once at
//! start, and the HTTP client of its own that sends each request.
//!
//! Its own client, never the API's: no Cloudflare credential can ride
//! along. No redirect is followed (a 3xx is an answer like any other), and
//! the answer's body is read up to [`MAX_ANSWER_BYTES`], for the failure
//! line only.

use std::error::Error as _;
use std::time::{Duration, SystemTime};

use hmac::{Hmac, Mac as _};
use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use sha2::Sha256;

use super::answer::{Answer, of_status};
use super::batch::MAX_BATCH_ANSWER_BYTES;
use super::request::{Request, is_token};
use crate::args::RelayArgs;
use crate::exit::Failure;

/// The most of an answer's body read: enough for an error message, never
/// a memory cost, whatever the service sends.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024;

/// The longest a connection may take to open: a service that does not
/// accept within it is down, and the POST's own timeout may be longer.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Headers `--header` may not set: the relay's own (`Cfq-*`), and those
/// HTTP sets for the request itself.
const REFUSED_NAMES: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// The header of `--sign-secret-env`'s signature.
pub const SIGNATURE: &str = "cfq-signature";

pub struct Endpoint {
    http: reqwest::Client,
    url: Url,
    /// `--health-url`, for `--wait-for-target`.
    health: Option<Url>,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// `--sign-secret-env`'s secret. No `Debug` on this type: it never shows.
    sign_secret: Option<Vec<u8>>,
}

/// What one POST came to.
#[derive(Debug)]
pub struct Posted {
    pub answer: Answer,
    /// For the failure line: `HTTP 503: <the answer's start>`, or what
    /// kept the request from an answer. Not escaped yet.
    pub detail: String,
    /// The answer's body, up to the cap (4 KiB, or 64 KiB for a batch).
    pub body: Vec<u8>,
    /// Why the body did not come whole: longer than the cap, or cut short.
    /// A batch's answer is then unreadable (its retry list may be lost).
    pub unread: Option<String>,
}

impl Endpoint {
    /// The endpoint of `--to` with the headers of `--header` and
    /// `--header-env`; a usage failure naming what is wrong.
    pub fn new(args: &RelayArgs) -> Result<Endpoint, Failure> {
        let url = checked_url(&args.to, "--to")?;
        let secrets = cloudflare_secrets();
        let mut headers = Vec::new();
        for given in &args.headers {
            let (name, value) = split_header(given, "--header", "Name: value")?;
            headers.push(checked_header(name, value, &secrets)?);
        }
        for given in &args.header_envs {
            let (name, var) = split_header(given, "--header-env", "Name: VAR")?;
            let value = secret_from(var, &format!("--header-env {name}"))?;
            headers.push(checked_header(name, &value, &secrets)?);
        }
        let sign_secret = match &args.sign_secret_env {
            None => None,
            Some(var) => Some(secret_from(var, "--sign-secret-env")?.into_bytes()),
        };
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(args.timeout)
            .connect_timeout(args.timeout.min(MAX_CONNECT_TIMEOUT))
            .user_agent(concat!("cfq-relay/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Failure::local(format_args!("cannot make an HTTP client: {e}")))?;
        let health = args
            .health_url
            .as_deref()
            .map(|given| checked_url(given, "--health-url"))
            .transpose()?;
        Ok(Endpoint {
            http,
            url,
            health,
            headers,
            sign_secret,
        })
    }

    /// The URL as printed: scheme, host, port and path, never a query.
    pub fn shown(&self) -> String {
        let mut shown = self.url.clone();
        shown.set_query(None);
        shown.set_fragment(None);
        shown.to_string()
    }

    /// Whether the service answers: a 2xx to a GET of `--health-url`, or,
    /// without one, any answer to a GET of `--to` but 502, 503 and 504 (a
    /// POST route answering 405 is up). No `--header` goes with it: the
    /// health URL may be another origin.
    pub async fn answers(&self) -> bool {
        let url = self.health.as_ref().unwrap_or(&self.url);
        match self.http.get(url.clone()).send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                match self.health {
                    Some(_) => (200..300).contains(&status),
                    None => !matches!(status, 502..=504),
                }
            }
            Err(_) => false,
        }
    }

    /// POSTs `request` and reads what its answer means.
    ///
    /// # Cancellation
    ///
    /// Dropping it drops the request: the service may have received it.
    pub async fn post(&self, request: Request) -> Posted {
        let mut builder = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, request.content_type);
        if let Some(secret) = &self.sign_secret {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            builder = builder.header(SIGNATURE, signature(secret, now, &request.body));
        }
        let cap = if request.batch {
            MAX_BATCH_ANSWER_BYTES
        } else {
            MAX_ANSWER_BYTES
        };
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        let mut response = match builder.body(request.body).send().await {
            Ok(response) => response,
            Err(error) => {
                return Posted {
                    answer: Answer::Busy { retry_after: None },
                    detail: unreachable(&error),
                    body: Vec::new(),
                    unread: None,
                };
            }
        };
        let status = response.status().as_u16();
        let mut answer = of_status(status, cf_queues::retry::retry_after(response.headers()));
        let mut body = Vec::new();
        let mut unread = None;
        let mut stalled = false;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() + chunk.len() > cap => {
                    let room = cap - body.len();
                    body.extend_from_slice(&chunk[..room]);
                    unread = Some(format!("the answer is longer than {} KiB", cap / 1024));
                    break;
                }
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(error) => {
                    stalled = error.is_timeout();
                    unread = Some(format!("the answer's body was {}", cut_short(&error)));
                    break;
                }
            }
        }
        // One message's answer is its status, whatever its body does. A
        // batch's 2xx is read for its retry list: a body that stalls past
        // --timeout is a service too busy to answer (held, no attempt
        // used); one cut short is unreadable (every message retried).
        if request.batch && stalled && answer == Answer::Delivered {
            answer = Answer::Busy { retry_after: None };
        }
        let text = String::from_utf8_lossy(&body);
        let text = text.trim();
        let mut detail = if text.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {text}")
        };
        if stalled {
            detail.push_str(", then no whole body within --timeout");
        }
        Posted {
            answer,
            detail,
            body,
            unread,
        }
    }
}

/// `Cfq-Signature`'s value: `t=<Unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>." followed by the body, keyed with the secret>` (Stripe's scheme:
/// the time is signed with the body, so a replay can be refused by age).
pub fn signature(secret: &[u8], unix_seconds: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(unix_seconds.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={unix_seconds},v1={hex}")
}

/// A secret from the environment variable `var`, for `flag`: never a
/// Cloudflare variable, never empty.
fn secret_from(var: &str, flag: &str) -> Result<String, Failure> {
    if var.to_ascii_uppercase().starts_with("CLOUDFLARE_") {
        return Err(Failure::usage(format_args!(
            "{flag}: {var} is a Cloudflare variable; the relay never sends Cloudflare \
             credentials to the service"
        )));
    }
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Failure::usage(format_args!(
                "{flag}: the environment variable {var} is not set, or empty"
            ))
        })
}

/// What kept a request from an answer, its causes included, without the
/// URL (whose query may hold a secret).
fn unreachable(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "no answer within --timeout"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "the request failed"
    };
    with_causes(kind, error)
}

/// How an answer's body stopped short, its causes included.
fn cut_short(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "not whole within --timeout"
    } else {
        "cut short"
    };
    with_causes(kind, error)
}

/// `kind`, then each cause of `error` (never the error's own text, which
/// names the URL).
fn with_causes(kind: &str, error: &reqwest::Error) -> String {
    let mut detail = kind.to_owned();
    let mut source = error.source();
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    detail
}

fn checked_url(given: &str, flag: &str) -> Result<Url, Failure> {
    let url = Url::parse(given)
        .map_err(|e| Failure::usage(format_args!("{flag} {given}: not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Failure::usage(format_args!(
            "{flag}: the relay speaks http or https, not {}",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Failure::usage(format_args!(
            "{flag}: a user or password in the URL would be on the command line; pass it in a \
             header from the environment instead"
        ))
        .with_hint("--header-env 'Authorization: SERVICE_AUTHORIZATION'"));
    }
    Ok(url)
}

fn split_header<'a>(given: &'a str, flag: &str, form: &str) -> Result<(&'a str, &'a str), Failure> {
    given
        .split_once(':')
        .map(|(name, value)| (name.trim(), value.trim()))
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
        .ok_or_else(|| Failure::usage(format_args!("{flag} {given:?}: expected '{form}'")))
}

fn checked_header(
    name: &str,
    value: &str,
    secrets: &[String],
) -> Result<(HeaderName, HeaderValue), Failure> {
    let lower = name.to_ascii_lowercase();
    if !is_token(name) {
        return Err(Failure::usage(format_args!(
            "header {name:?}: not a header name"
        )));
    }
    if lower.starts_with("cfq-") || REFUSED_NAMES.contains(&lower.as_str()) {
        return Err(Failure::usage(format_args!(
            "header {name}: set by the relay itself, not by --header"
        )));
    }
    if secrets.iter().any(|secret| value.contains(secret.as_str())) {
        return Err(Failure::usage(format_args!(
            "header {name}: its value holds a Cloudflare credential; the relay never sends \
             those to the service"
        )));
    }
    let name = HeaderName::from_bytes(lower.as_bytes())
        .map_err(|_| Failure::usage(format_args!("header {name:?}: not a header name")))?;
    let value = HeaderValue::from_str(value).map_err(|_| {
        Failure::usage(format_args!(
            "header {name}: its value is not visible ASCII text"
        ))
    })?;
    Ok((name, value))
}

/// The Cloudflare credentials of the environment, which no header may
/// carry (short values are no credential and would refuse too much).
fn cloudflare_secrets() -> Vec<String> {
    ["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_API_KEY"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .filter(|value| value.len() >= 8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<impl Sized, Failure>) -> String {
        match result {
            Ok(_) => "ok".to_owned(),
            Err(failure) => failure.message,
        }
    }

    #[test]
    fn urls() {
        assert_eq!(
            message(checked_url("http://127.0.0.1:8080/in", "--to")),
            "ok"
        );
        assert_eq!(
            message(checked_url("ftp://host/x", "--to")),
            "--to: the relay speaks http or https, not ftp"
        );
        assert!(message(checked_url("https://u:p@host/", "--to")).contains("user or password"));
        assert!(
            message(checked_url("nothing", "--health-url"))
                .starts_with("--health-url nothing: not a URL")
        );
    }

    #[test]
    fn headers_the_relay_refuses() {
        let secrets = ["a-cloudflare-token".to_owned()];
        assert_eq!(message(checked_header("X-Key", "v", &secrets)), "ok");
        for name in [
            "Cfq-Attempts",
            "cfq-anything",
            "Host",
            "Content-Type",
            "content-length",
        ] {
            assert_eq!(
                message(checked_header(name, "v", &secrets)),
                format!("header {name}: set by the relay itself, not by --header")
            );
        }
        assert!(
            message(checked_header(
                "Authorization",
                "Bearer a-cloudflare-token",
                &secrets
            ))
            .contains("holds a Cloudflare credential")
        );
        assert!(message(checked_header("Bad Name", "v", &secrets)).contains("not a header name"));
        assert!(message(checked_header("X", "a\u{7}b", &secrets)).contains("not visible ASCII"));
        assert_eq!(
            message(split_header("NoColon", "--header", "Name: value")),
            r#"--header "NoColon": expected 'Name: value'"#
        );
        assert_eq!(
            split_header(" A : b c ", "--header", "").ok(),
            Some(("A", "b c"))
        );
    }
}
