//! What the generated client carries for its hooks ([`HookState`]), in a
//! file of its own that imports nothing of the generated code: `build.rs`
//! makes the generated client name `crate::hook_state::HookState`, and the
//! hooks themselves (`hooks.rs`) name the generated client, so the two
//! would import each other through one file.

use std::fmt;
use std::sync::Arc;

use crate::auth::Credentials;

/// What the generated client ([`raw::Client`](crate::raw::Client)) needs from cf-queues on
/// every request: the credentials.
///
/// It has no public constructor: a raw client comes from
/// [`Client::raw`](crate::Client::raw), whose HTTP client never follows
/// redirects. A raw client built around any other `reqwest::Client` could
/// follow one and hand the credentials (the global API key's
/// `X-Auth-Email`/`X-Auth-Key`, which reqwest does not strip) to another
/// origin. The raw client does not retry: retries, deadlines and rate
/// limits belong to [`Queue`](crate::Queue)'s call path.
#[derive(Clone)]
pub struct HookState {
    credentials: Arc<Credentials>,
}

impl HookState {
    /// Hooks that authenticate with `credentials`.
    pub(crate) fn new(credentials: Credentials) -> HookState {
        HookState {
            credentials: Arc::new(credentials),
        }
    }
}

impl fmt::Debug for HookState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookState")
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl HookState {
    /// The credentials the `pre` hook puts on every request.
    pub(crate) fn credentials(&self) -> &Credentials {
        &self.credentials
    }
}
