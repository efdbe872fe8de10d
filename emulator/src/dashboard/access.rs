//! Who may see the dashboard: the rules every page and every call of the
//! page's script pass, in this order.
//!
//! 1. **The `Host` header** names this server by an IP address or
//!    `localhost`, on any port (a port forward, `ssh -L 9000:…`, shows
//!    the browser's port, not the emulator's). A page reached through a DNS
//!    name that resolves to the emulator (DNS rebinding: a site the
//!    developer visits turns its own name to 127.0.0.1) carries that name,
//!    and is refused.
//! 2. **Same origin only**: a request a browser marks as coming from
//!    another site (`Sec-Fetch-Site: cross-site` or `same-site`), or whose
//!    `Origin` is not this server's, is refused: no other page can read or
//!    drive the dashboard.
//! 3. **The session cookie**: the link the emulator prints carries a random
//!    secret of its own (never the API token), exchanged at the first visit
//!    for an `HttpOnly`, `SameSite=Strict` cookie holding a session id,
//!    named for this emulator (`cfq_dashboard_` and a random name drawn at
//!    its start: browsers share cookies across the ports of a host, and two
//!    emulators' dashboards would log each other out) and sent only to the
//!    dashboard's paths (`/_dashboard`), not to every local server; a
//!    request without a live session is refused. Every change (a form
//!    posted) also carries the session's own form token, which a page of
//!    another site cannot read. Under
//!    [`Emulator::without_auth`](crate::Emulator::without_auth), which
//!    accepts every API request, the page needs no secret either; the first
//!    two rules still hold.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use axum::http::HeaderMap;
use axum::http::header::{COOKIE, HOST, ORIGIN};

use crate::random::random_hex;

/// The start of the session cookie's name; each emulator adds its own.
pub(crate) const COOKIE_PREFIX: &str = "cfq_dashboard_";

/// Sessions kept: a browser or two per developer; the oldest goes first.
const MAX_SESSIONS: usize = 64;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    ForeignHost,
    CrossSite,
    NoSession,
}

impl Denied {
    pub(crate) fn explain(self) -> &'static str {
        match self {
            Denied::ForeignHost => {
                "This server answers only to an IP address or localhost: open the link the emulator printed."
            }
            Denied::CrossSite => "Refused: the request came from another site.",
            Denied::NoSession => {
                "Open the dashboard's link as the emulator printed it (cfq emulator, or EmulatorHandle::dashboard_url): it logs this browser in."
            }
        }
    }
}

/// The dashboard's secret and live sessions.
#[derive(Debug)]
pub(crate) struct Access {
    /// `None` under `without_auth`: no secret needed.
    secret: Option<String>,
    /// Live sessions: (session id, its form token).
    sessions: Mutex<VecDeque<(String, String)>>,
    /// The form token under `without_auth`, where there is no session.
    open_token: String,
    /// This emulator's session cookie's name.
    cookie_name: String,
}

impl Access {
    pub(crate) fn new(open: bool) -> Access {
        let own: String = random_hex().chars().take(12).collect();
        Access {
            secret: (!open).then(random_hex),
            sessions: Mutex::new(VecDeque::new()),
            open_token: random_hex(),
            cookie_name: format!("{COOKIE_PREFIX}{own}"),
        }
    }

    /// The `Set-Cookie` value of a new session.
    pub(crate) fn session_cookie(&self, session: &str) -> String {
        format!(
            "{}={session}; Path=/_dashboard; HttpOnly; SameSite=Strict",
            self.cookie_name
        )
    }

    /// The path (and query) of the link that logs a browser in.
    pub(crate) fn login_path(&self) -> String {
        match &self.secret {
            Some(secret) => format!("/_dashboard/login?key={secret}"),
            None => "/_dashboard/".to_owned(),
        }
    }

    /// Rules 1 and 2: the request names this server and comes from its own pages.
    pub(crate) fn check_origin(&self, headers: &HeaderMap) -> Result<(), Denied> {
        let host = headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or(Denied::ForeignHost)?;
        if !self.is_own_host(host) {
            return Err(Denied::ForeignHost);
        }
        let site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none");
        if site == "cross-site" || site == "same-site" {
            return Err(Denied::CrossSite);
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let own = format!("http://{host}");
            if origin.as_bytes() != own.as_bytes() {
                return Err(Denied::CrossSite);
            }
        }
        Ok(())
    }

    /// Rule 3: the request carries a live session (or none is needed).
    pub(crate) fn check_session(&self, headers: &HeaderMap) -> Result<(), Denied> {
        if self.secret.is_none() {
            return Ok(());
        }
        self.form_token(headers)
            .map(|_| ())
            .ok_or(Denied::NoSession)
    }

    /// The form token of the request's session (or the open one under
    /// `without_auth`); `None` without a live session.
    pub(crate) fn form_token(&self, headers: &HeaderMap) -> Option<String> {
        if self.secret.is_none() {
            return Some(self.open_token.clone());
        }
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        cookies(headers)
            .filter(|(name, _)| *name == self.cookie_name)
            .find_map(|(_, value)| sessions.iter().find(|(s, _)| same(s, value)))
            .map(|(_, token)| token.clone())
    }

    /// Whether a posted form carries the request's session's form token.
    pub(crate) fn check_form(&self, headers: &HeaderMap, given: &str) -> Result<(), Denied> {
        match self.form_token(headers) {
            Some(token) if same(&token, given) => Ok(()),
            Some(_) => Err(Denied::CrossSite),
            None => Err(Denied::NoSession),
        }
    }

    /// Exchanges the link's secret for a new session id; `None` for a
    /// wrong secret (or when none is needed).
    pub(crate) fn login(&self, key: &str) -> Option<String> {
        let secret = self.secret.as_deref()?;
        if !same(secret, key) {
            return None;
        }
        let session = random_hex();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.len() == MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back((session.clone(), random_hex()));
        Some(session)
    }

    /// `name` or `name:port`, any port, `name` an IP address or `localhost`.
    fn is_own_host(&self, host: &str) -> bool {
        let name = match host.rsplit_once(':') {
            // `[::1]:8787`, `127.0.0.1:8787`, `localhost:8787`.
            Some((name, port)) if !name.ends_with(':') && port.parse::<u16>().is_ok() => name,
            _ => host,
        };
        let name = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok()
    }
}

/// The `name=value` pairs of the request's cookies.
fn cookies(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
}

/// Compares two secrets in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().expect("a header value"));
        }
        headers
    }

    #[test]
    fn only_an_ip_or_localhost_on_any_port_is_this_server() {
        let access = Access::new(false);
        for host in [
            "127.0.0.1:8787",
            "localhost:8787",
            "[::1]:8787",
            "10.0.0.2:8787",
            // A port forward's port, and a forward to port 80.
            "localhost:9000",
            "127.0.0.1:80",
            "127.0.0.1",
            "localhost",
            "[::1]",
        ] {
            assert_eq!(
                access.check_origin(&headers(&[("host", host)])),
                Ok(()),
                "{host}"
            );
        }
        for host in [
            "evil.example:8787",
            "evil.example",
            "localhost.evil:8787",
            "127.0.0.1.nip.io:8787",
            "127.0.0.1:notaport",
        ] {
            assert_eq!(
                access.check_origin(&headers(&[("host", host)])),
                Err(Denied::ForeignHost),
                "{host}"
            );
        }
        assert_eq!(
            access.check_origin(&HeaderMap::new()),
            Err(Denied::ForeignHost)
        );
    }

    #[test]
    fn another_site_is_refused() {
        let access = Access::new(false);
        let host = ("host", "127.0.0.1:8787");
        assert_eq!(
            access.check_origin(&headers(&[host, ("sec-fetch-site", "cross-site")])),
            Err(Denied::CrossSite)
        );
        assert_eq!(
            access.check_origin(&headers(&[host, ("origin", "http://evil.example")])),
            Err(Denied::CrossSite)
        );
        assert_eq!(
            access.check_origin(&headers(&[
                host,
                ("origin", "http://127.0.0.1:8787"),
                ("sec-fetch-site", "same-origin")
            ])),
            Ok(())
        );
    }

    #[test]
    fn the_link_gives_a_session_and_nothing_else_does() {
        let access = Access::new(false);
        let secret = access
            .login_path()
            .rsplit_once('=')
            .map(|(_, s)| s.to_owned())
            .expect("a secret");
        assert_eq!(access.login("wrong"), None);
        assert_eq!(
            access.check_session(&HeaderMap::new()),
            Err(Denied::NoSession)
        );
        let session = access.login(&secret).expect("a session");
        assert_ne!(session, secret, "the cookie is not the link's secret");
        let cookie = format!("other=1; {}={session}", access.cookie_name);
        assert_eq!(
            access.check_session(&headers(&[("cookie", &cookie)])),
            Ok(())
        );
        let forged = format!("{}={secret}", access.cookie_name);
        assert_eq!(
            access.check_session(&headers(&[("cookie", &forged)])),
            Err(Denied::NoSession)
        );
        // A form must carry the session's own token.
        let logged_in = headers(&[("cookie", &cookie)]);
        let token = access.form_token(&logged_in).expect("a form token");
        assert_ne!(token, session);
        assert_eq!(access.check_form(&logged_in, &token), Ok(()));
        assert_eq!(
            access.check_form(&logged_in, "guess"),
            Err(Denied::CrossSite)
        );
        assert_eq!(
            access.check_form(&HeaderMap::new(), &token),
            Err(Denied::NoSession)
        );
    }

    #[test]
    fn without_auth_no_session_is_needed() {
        let access = Access::new(true);
        assert_eq!(access.login_path(), "/_dashboard/");
        assert_eq!(access.check_session(&HeaderMap::new()), Ok(()));
        assert_eq!(access.login("anything"), None);
    }
}
