//! Checking the credentials of a request.

use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};

use super::error_answer::ErrorAnswer;
use cf_queues::codes;

/// The credentials the emulator accepts.
#[derive(Clone)]
pub(crate) struct AcceptedAuth {
    pub token: Option<String>,
    pub global_key: Option<(String, String)>,
}

/// Checks the credentials of a request, with the answers Cloudflare's v4
/// API gives (there is no official table; these come from public reports):
///
/// - no credentials: 400 with 9106 "Missing X-Auth-Key, X-Auth-Email or
///   Authorization headers" (for example cloudflare/cloudflare-python#2678);
/// - a malformed header: 400 with 6003 "Invalid request headers" and the
///   header's code under `error_chain`, 6111 for `Authorization`
///   (jeessy2/ddns-go#916), 6103 for `X-Auth-Key` and 6102 for
///   `X-Auth-Email` (rmbolger/Posh-ACME#126);
/// - well-formed credentials that are not the accepted ones: 403 with 10000
///   "Authentication error". Public reports show 403/10000 for a token
///   without the permission a call needs; for an unknown token the status is
///   an assumption (see "Assumptions" in the module docs).
pub(super) fn authenticate(
    accepted: Option<&AcceptedAuth>,
    headers: &HeaderMap,
) -> Result<(), ErrorAnswer> {
    let Some(accepted) = accepted else {
        return Ok(());
    };
    let header = |name: &str| headers.get(name).map(|v| v.to_str().map(str::trim));
    let granted = if let Some(authorization) = header(AUTHORIZATION.as_str()) {
        let token = authorization
            .ok()
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty() && !token.contains(char::is_whitespace));
        let Some(token) = token else {
            return Err(malformed(
                codes::INVALID_AUTH_FORMAT,
                "Invalid format for Authorization header",
            ));
        };
        accepted
            .token
            .as_deref()
            .is_some_and(|expected| constant_time_eq(token, expected))
    } else {
        let email = header("x-auth-email");
        let key = header("x-auth-key");
        let (Some(email), Some(key)) = (email, key) else {
            return Err(ErrorAnswer::bad_request(
                codes::MISSING_AUTH_HEADERS,
                "Missing X-Auth-Key, X-Auth-Email or Authorization headers",
            ));
        };
        let Some(email) = email.ok().filter(|e| e.contains('@')) else {
            return Err(malformed(
                codes::INVALID_AUTH_EMAIL_FORMAT,
                "Invalid format for X-Auth-Email header",
            ));
        };
        let Some(key) = key.ok().filter(|k| !k.is_empty()) else {
            return Err(malformed(
                codes::INVALID_AUTH_KEY_FORMAT,
                "Invalid format for X-Auth-Key header",
            ));
        };
        matches!(&accepted.global_key, Some((e, k)) if constant_time_eq(email, e) & constant_time_eq(key, k))
    };
    if granted {
        Ok(())
    } else {
        Err(ErrorAnswer::new(
            StatusCode::FORBIDDEN,
            codes::AUTHENTICATION_ERROR,
            "Authentication error",
        ))
    }
}

/// The credential a request presents, in parts for the rate limiter's
/// key: `["token", token]` or `[email, key]` (an e-mail holds an `@`, so
/// the two forms never meet). `None` without credentials.
pub(super) fn presented(headers: &HeaderMap) -> Option<[&[u8]; 2]> {
    let header = |name: &str| headers.get(name).map(|v| v.as_bytes().trim_ascii());
    if let Some(authorization) = header(AUTHORIZATION.as_str()) {
        return Some([b"token", authorization]);
    }
    Some([header("x-auth-email")?, header("x-auth-key")?])
}

fn malformed(code: u32, message: &'static str) -> ErrorAnswer {
    ErrorAnswer::bad_request(codes::INVALID_REQUEST_HEADERS, "Invalid request headers")
        .caused_by(code, message)
}

/// Compares secrets without an early exit, so timing does not reveal how much matched.
fn constant_time_eq(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, byte) in b.iter().enumerate() {
        diff |= byte ^ a.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_and_code(result: Result<(), ErrorAnswer>) -> Option<(u16, u32, Vec<u32>)> {
        match result {
            Ok(()) => None,
            Err(ErrorAnswer::Api {
                status,
                code,
                chain,
                ..
            }) => Some((status.as_u16(), code, chain.iter().map(|c| c.0).collect())),
            Err(ErrorAnswer::Injected(_) | ErrorAnswer::RateLimited(_)) => Some((0, 0, Vec::new())),
        }
    }

    #[test]
    fn answers_follow_cloudflare() {
        let accepted = AcceptedAuth {
            token: Some("tok".into()),
            global_key: Some(("me@example.com".into(), "key".into())),
        };
        let check = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, value.parse().expect("header value"));
            }
            status_and_code(authenticate(Some(&accepted), &headers))
        };
        assert_eq!(check(&[("authorization", "Bearer tok")]), None);
        assert_eq!(check(&[("authorization", "bearer  tok ")]), None);
        assert_eq!(
            check(&[("x-auth-email", "me@example.com"), ("x-auth-key", "key")]),
            None
        );
        assert_eq!(check(&[]), Some((400, 9106, vec![])));
        assert_eq!(check(&[("x-auth-key", "key")]), Some((400, 9106, vec![])));
        for bad in ["tok", "Basic tok", "Bearer", "Bearer ", "Bearer a b", ""] {
            assert_eq!(
                check(&[("authorization", bad)]),
                Some((400, 6003, vec![6111])),
                "{bad:?}"
            );
        }
        assert_eq!(
            check(&[("x-auth-email", "me@example.com"), ("x-auth-key", "")]),
            Some((400, 6003, vec![6103]))
        );
        assert_eq!(
            check(&[("x-auth-email", "nobody"), ("x-auth-key", "key")]),
            Some((400, 6003, vec![6102]))
        );
        assert_eq!(
            check(&[("authorization", "Bearer wrong")]),
            Some((403, 10000, vec![]))
        );
        assert_eq!(
            check(&[("x-auth-email", "me@example.com"), ("x-auth-key", "wrong")]),
            Some((403, 10000, vec![]))
        );
        assert_eq!(status_and_code(authenticate(None, &HeaderMap::new())), None);
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq("secret", "secret"));
        assert!(!constant_time_eq("secret", "secreT"));
        assert!(!constant_time_eq("secret", "secret2"));
        assert!(!constant_time_eq("", "secret"));
        assert!(!constant_time_eq("secret\0", "secret"));
    }
}
