//! Checking the credentials of a request.

use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};

use super::failure::Failure;

/// The credentials the emulator accepts.
#[derive(Clone)]
pub(crate) struct AcceptedAuth {
    pub token: Option<String>,
    pub global_key: Option<(String, String)>,
}

pub(super) fn authenticate(
    accepted: Option<&AcceptedAuth>,
    headers: &HeaderMap,
) -> Result<(), Failure> {
    let Some(accepted) = accepted else {
        return Ok(());
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let granted = if let Some(authorization) = header(AUTHORIZATION.as_str()) {
        let token = authorization
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        matches!((token, &accepted.token), (Some(given), Some(expected)) if constant_time_eq(given, expected))
    } else if let (Some(email), Some(key)) = (header("x-auth-email"), header("x-auth-key")) {
        matches!(&accepted.global_key, Some((e, k)) if constant_time_eq(email, e) & constant_time_eq(key, k))
    } else {
        return Err(Failure::new(
            StatusCode::UNAUTHORIZED,
            10000,
            "Authentication error",
        ));
    };
    if granted {
        Ok(())
    } else {
        Err(Failure::new(
            StatusCode::FORBIDDEN,
            10000,
            "Authentication error",
        ))
    }
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

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq("secret", "secret"));
        assert!(!constant_time_eq("secret", "secreT"));
        assert!(!constant_time_eq("secret", "secret2"));
        assert!(!constant_time_eq("", "secret"));
        assert!(!constant_time_eq("secret\0", "secret"));
    }
}
