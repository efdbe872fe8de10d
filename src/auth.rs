//! Credentials, and the headers they become on every request.

use std::fmt;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use crate::error::{Error, Result};

const X_AUTH_EMAIL: HeaderName = HeaderName::from_static("x-auth-email");
const X_AUTH_KEY: HeaderName = HeaderName::from_static("x-auth-key");

/// How the client authenticates: an API token, or the legacy e-mail and global API key.
///
/// The header values are marked sensitive, and neither `Debug` nor any error
/// shows them.
///
/// ```
/// use cf_queues::Credentials;
/// let token = Credentials::api_token("my-secret-token")?;
/// assert!(!format!("{token:?}").contains("my-secret-token"));
/// # Ok::<(), cf_queues::Error>(())
/// ```
#[derive(Clone)]
pub struct Credentials {
    scheme: Scheme,
    headers: Vec<(HeaderName, HeaderValue)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    ApiToken,
    GlobalApiKey,
}

impl Credentials {
    /// An API token, sent as `Authorization: Bearer <token>` (the preferred scheme).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the token is empty or holds characters an
    /// HTTP header cannot carry; the error never shows the token.
    pub fn api_token(token: impl AsRef<str>) -> Result<Credentials> {
        let token = token.as_ref().trim();
        let value = secret_header("api token", &format!("Bearer {token}"), token.is_empty())?;
        Ok(Credentials {
            scheme: Scheme::ApiToken,
            headers: vec![(AUTHORIZATION, value)],
        })
    }

    /// The legacy global API key, sent as `X-Auth-Email` and `X-Auth-Key`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when either is empty or holds characters an HTTP
    /// header cannot carry; the error never shows them.
    pub fn global_api_key(email: impl AsRef<str>, key: impl AsRef<str>) -> Result<Credentials> {
        let (email, key) = (email.as_ref().trim(), key.as_ref().trim());
        let email = secret_header("email", email, email.is_empty())?;
        let key = secret_header("api key", key, key.is_empty())?;
        Ok(Credentials {
            scheme: Scheme::GlobalApiKey,
            headers: vec![(X_AUTH_EMAIL, email), (X_AUTH_KEY, key)],
        })
    }

    /// Reads `CLOUDFLARE_API_TOKEN`, or else `CLOUDFLARE_API_KEY` with `CLOUDFLARE_EMAIL`.
    ///
    /// Returns `Ok(None)` when none of them is set.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when only one of the key and the e-mail is set, or
    /// a value cannot be sent in a header.
    pub fn from_env() -> Result<Option<Credentials>> {
        if let Some(token) = env_var("CLOUDFLARE_API_TOKEN") {
            return Credentials::api_token(token).map(Some);
        }
        match (env_var("CLOUDFLARE_API_KEY"), env_var("CLOUDFLARE_EMAIL")) {
            (Some(key), Some(email)) => Credentials::global_api_key(email, key).map(Some),
            (Some(_), None) => Err(Error::Config(
                "CLOUDFLARE_API_KEY is set but CLOUDFLARE_EMAIL is not: set both, or CLOUDFLARE_API_TOKEN".into(),
            )),
            (None, Some(_)) => Err(Error::Config(
                "CLOUDFLARE_EMAIL is set but CLOUDFLARE_API_KEY is not: set both, or CLOUDFLARE_API_TOKEN".into(),
            )),
            (None, None) => Ok(None),
        }
    }

    /// Sets these credentials' headers (marked sensitive) on a request the
    /// crate does not make itself: a route of the emulator's own, say
    /// (`cfq events emit`). Send it only to the origin the credentials are
    /// for.
    pub fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::new();
        self.apply(&mut headers);
        request.headers(headers)
    }

    /// Sets this client's authentication headers on a request.
    pub(crate) fn apply(&self, headers: &mut HeaderMap) {
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.scheme {
            Scheme::ApiToken => "ApiToken",
            Scheme::GlobalApiKey => "GlobalApiKey",
        };
        write!(f, "Credentials::{name}(<redacted>)")
    }
}

/// A non-empty environment variable.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn secret_header(what: &str, value: &str, empty: bool) -> Result<HeaderValue> {
    if empty {
        return Err(Error::Config(format!("the {what} is empty")));
    }
    // The error names the field only: the value is a secret.
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        Error::Config(format!(
            "the {what} contains characters not allowed in an HTTP header"
        ))
    })?;
    header.set_sensitive(true);
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_out_of_debug_and_errors() {
        let c =
            Credentials::global_api_key("me@example.com", "sekrit-key").map_err(|e| e.to_string());
        let text = format!("{c:?}");
        assert!(
            !text.contains("sekrit") && !text.contains("me@example.com"),
            "{text}"
        );
        let bad = Credentials::api_token("sekrit\nvalue")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            bad.contains("api token") && !bad.contains("sekrit"),
            "{bad}"
        );
        assert!(Credentials::api_token("  ").is_err());
    }
}
