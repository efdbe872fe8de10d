//! The [`Client`] and its [`ClientBuilder`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{Credentials, env_var};
use crate::error::{Error, Result};
use crate::hook_state::HookState;
use crate::instance::{Instance, Kind};
use crate::limits::Limits;
use crate::management::RecentlyEnabled;
use crate::ratelimit::{ClientCaps, RateLimits};
use crate::raw;
use crate::retry::RetryPolicy;
use crate::tls;
use crate::token_budget::Pacer;

/// A client for one Cloudflare account's queues.
///
/// Cheap to clone: clones share the connection pool and the pacing by the
/// server's rate-limit headers (see [`RateLimits`]), so build one client
/// per credential and clone it. Get a [`Queue`](crate::Queue) handle with
/// [`Client::queue`].
///
/// ```no_run
/// # async fn demo() -> cf_queues::Result<()> {
/// use cf_queues::{Client, Message};
///
/// let client = Client::from_env()?; // CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID
/// let queue = client.queue("023e105f4ecef8ad9ca31a8372d0c353")?;
/// queue.push(Message::text("hello")).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    raw: raw::Client,
    account_id: String,
    limits: Limits,
    retry: RetryPolicy,
    deadline: Option<Duration>,
    caps: Option<ClientCaps>,
    pacer: Option<Arc<Pacer>>,
    max_response_bytes: Option<usize>,
    /// The queues this client enabled HTTP pull on lately, for the pulls
    /// that meet Cloudflare's propagation delay.
    recently_enabled: RecentlyEnabled,
    /// Its label in the metrics, held (and its number with it) while the
    /// client or a clone lives.
    _instance: Instance,
    /// The key of its token gauge, made once: recorded on every answer.
    #[cfg(feature = "metrics")]
    token_gauge: ::metrics::Key,
}

impl Client {
    /// Cloudflare's API root, used unless `CLOUDFLARE_BASE_URL` or
    /// [`ClientBuilder::base_url`] says otherwise.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.cloudflare.com/client/v4";

    /// A builder with Cloudflare's base URL and no credentials.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// A client configured from the environment; see [`ClientBuilder::from_env`].
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when a variable is missing or malformed; see
    /// [`ClientBuilder::build`].
    pub fn from_env() -> Result<Client> {
        ClientBuilder::from_env()?.build()
    }

    /// The account this client works on.
    pub fn account_id(&self) -> &str {
        &self.inner.account_id
    }

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        &self.inner.raw.baseurl
    }

    /// The limits checked before sending.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The retry policy of calls that do not override it.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.inner.retry
    }

    /// The overall deadline of each call that does not override it.
    pub fn deadline(&self) -> Option<Duration> {
        self.inner.deadline
    }

    pub(crate) fn max_response_bytes(&self) -> Option<usize> {
        self.inner.max_response_bytes
    }

    pub(crate) fn caps(&self) -> Option<&ClientCaps> {
        self.inner.caps.as_ref()
    }

    pub(crate) fn pacer(&self) -> Option<&Arc<Pacer>> {
        self.inner.pacer.as_ref()
    }

    /// The key of its token gauge (`cf_queues.client.token.remaining`,
    /// labelled with its instance).
    #[cfg(feature = "metrics")]
    pub(crate) fn token_gauge(&self) -> &::metrics::Key {
        &self.inner.token_gauge
    }

    pub(crate) fn recently_enabled(&self) -> &RecentlyEnabled {
        &self.inner.recently_enabled
    }

    /// The generated client, for calls the ergonomic layer does not cover.
    /// It authenticates like this client and never follows redirects, but
    /// does not retry, rate-limit or check limits: that is this layer's job.
    pub fn raw(&self) -> &raw::Client {
        &self.inner.raw
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url())
            .field("account_id", &self.inner.account_id)
            .finish_non_exhaustive()
    }
}

/// Configures a [`Client`].
///
/// ```
/// use std::time::Duration;
/// use cf_queues::Client;
///
/// let client = Client::builder()
///     .api_token("my-token")
///     .account_id("023e105f4ecef8ad9ca31a8372d0c353")
///     .timeout(Duration::from_secs(30))
///     .build()?;
/// # Ok::<(), cf_queues::Error>(())
/// ```
#[must_use]
pub struct ClientBuilder {
    base_url: String,
    account_id: Option<String>,
    credentials: Option<Result<Credentials>>,
    http: Option<reqwest::ClientBuilder>,
    timeout: Duration,
    connect_timeout: Duration,
    limits: Limits,
    max_response_bytes: Option<usize>,
    retry: RetryPolicy,
    deadline: Option<Duration>,
    rate_limits: RateLimits,
    instance: Option<String>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder::new()
    }
}

impl ClientBuilder {
    /// A builder with Cloudflare's base URL, 60 s per request and 5 s to connect.
    pub fn new() -> ClientBuilder {
        ClientBuilder {
            base_url: Client::DEFAULT_BASE_URL.to_owned(),
            account_id: None,
            credentials: None,
            http: None,
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            limits: Limits::default(),
            max_response_bytes: None,
            retry: RetryPolicy::default(),
            deadline: None,
            rate_limits: RateLimits::default(),
            instance: None,
        }
    }

    /// A builder filled from the environment:
    ///
    /// - `CLOUDFLARE_API_TOKEN`, or `CLOUDFLARE_API_KEY` with `CLOUDFLARE_EMAIL`;
    /// - `CLOUDFLARE_ACCOUNT_ID`;
    /// - `CLOUDFLARE_BASE_URL` (default [`Client::DEFAULT_BASE_URL`]).
    ///
    /// Variables that are not set can still be given to the builder; `build`
    /// says which are missing.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the credentials in the environment are
    /// incomplete (a key without an e-mail) or malformed.
    pub fn from_env() -> Result<ClientBuilder> {
        let mut builder = ClientBuilder::new();
        if let Some(credentials) = Credentials::from_env()? {
            builder = builder.credentials(credentials);
        }
        if let Some(account_id) = env_var("CLOUDFLARE_ACCOUNT_ID") {
            builder = builder.account_id(account_id);
        }
        if let Some(base_url) = env_var("CLOUDFLARE_BASE_URL") {
            builder = builder.base_url(base_url);
        }
        Ok(builder)
    }

    /// Authenticates with an API token (`Authorization: Bearer`).
    pub fn api_token(mut self, token: impl AsRef<str>) -> ClientBuilder {
        self.credentials = Some(Credentials::api_token(token));
        self
    }

    /// Authenticates with the legacy e-mail and global API key.
    pub fn global_api_key(mut self, email: impl AsRef<str>, key: impl AsRef<str>) -> ClientBuilder {
        self.credentials = Some(Credentials::global_api_key(email, key));
        self
    }

    /// Authenticates with prepared credentials.
    pub fn credentials(mut self, credentials: Credentials) -> ClientBuilder {
        self.credentials = Some(Ok(credentials));
        self
    }

    /// The account whose queues the client works on.
    pub fn account_id(mut self, account_id: impl Into<String>) -> ClientBuilder {
        self.account_id = Some(account_id.into());
        self
    }

    /// The API root, such as an emulator's URL. A trailing `/` is ignored.
    pub fn base_url(mut self, base_url: impl Into<String>) -> ClientBuilder {
        self.base_url = base_url.into();
        self
    }

    crate::__setters! {
        /// Sends requests through a `reqwest` client you configure (proxies,
        /// TLS roots, timeouts, user agent). Its own timeouts apply instead of
        /// [`timeout`](ClientBuilder::timeout) and
        /// [`connect_timeout`](ClientBuilder::connect_timeout).
        ///
        /// It takes a builder, not a built `reqwest::Client`, so that redirects
        /// can be turned off whatever it says: on a cross-origin redirect
        /// reqwest strips `Authorization`, but not `X-Auth-Email` and
        /// `X-Auth-Key`, and it re-sends POST bodies on 307 and 308. Cloudflare
        /// does not redirect these endpoints, so a redirect is reported as
        /// [`Error::Api`] with its `Location`, and credentials never leave the
        /// configured origin.
        ///
        /// ```
        /// use std::time::Duration;
        /// let client = cf_queues::Client::builder()
        ///     .api_token("my-token")
        ///     .account_id("023e105f4ecef8ad9ca31a8372d0c353")
        ///     .http_client(reqwest::Client::builder().pool_max_idle_per_host(4).timeout(Duration::from_secs(20)))
        ///     .build()?;
        /// # Ok::<(), cf_queues::Error>(())
        /// ```
        http_client(http: reqwest::ClientBuilder) => self.http = Some;

        /// When failed requests are retried (default: [`RetryPolicy::default`], 2
        /// retries; pushes only when they surely did not land).
        /// [`RetryPolicy::none`] turns retries off. One queue handle can
        /// override it with [`Queue::with_retry`](crate::Queue::with_retry).
        retry(retry: RetryPolicy) => self.retry;

        /// How long one call may take in all: the wait for the client's caps,
        /// the waits for the token's budget, every attempt and
        /// every retry wait (default: no limit beyond the
        /// per-attempt timeout). A retry wait that would end past it is not
        /// started, and the call returns its last real error; an attempt still
        /// running when it passes ends the call with [`Error::Timeout`]. One
        /// queue handle can override it with [`Queue::with_deadline`](crate::Queue::with_deadline).
        deadline(deadline: Duration) => self.deadline = Some;

        /// How calls are paced and limited (default [`RateLimits::default`]:
        /// paced by the server's `Ratelimit` headers, so that the client never
        /// triggers Cloudflare's five-minute block on its own, and none of
        /// the client's caps). [`RateLimits::none`] turns all of it off;
        /// [`RateLimits::cloudflare`] adds the documented limits on the
        /// client's side.
        rate_limits(limits: RateLimits) => self.rate_limits;

        /// How long one attempt may take, body included (default 60 s).
        timeout(timeout: Duration) => self.timeout;

        /// How long connecting may take (default 5 s).
        connect_timeout(timeout: Duration) => self.connect_timeout;

        /// The limits checked before sending (default: Cloudflare's documented ones).
        limits(limits: Limits) => self.limits;

        /// The largest response body accepted, for every call.
        ///
        /// By default each call derives its cap from its request: the largest
        /// answer the API can legally give to it (for a pull of 100 messages of
        /// 128 KB, every byte escaped as `\u0001`, about 77 MB), so a legal
        /// answer is never refused. A cap set here is a hard limit: a pull,
        /// preview or peek whose largest legal answer is over it is refused
        /// with [`Error::InvalidInput`] before anything is leased, and any other
        /// answer over it gives [`Error::ResponseTooLarge`].
        max_response_bytes(max: usize) => self.max_response_bytes = Some;
    }

    /// The client's label in its metrics (`cf_queues.instance`, under the
    /// `metrics` feature), which tells two clients of one process apart:
    /// 1 to 64 ASCII letters, digits, `.`, `_` or `-`, never a secret.
    /// Default: the smallest number no other living client of the process
    /// holds (`"1"`, `"2"`, …), given back when the client and its clones
    /// are dropped. See [the metrics](crate::metrics#telling-instances-apart).
    pub fn instance(mut self, name: impl Into<String>) -> ClientBuilder {
        self.instance = Some(name.into());
        self
    }

    /// Builds the client, checking the configuration.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the credentials or the account id are missing
    /// or malformed, the base URL is not an http(s) URL, an `https` URL has
    /// no TLS feature to serve it, no rustls provider is installed under
    /// `rustls-no-provider` (see the [TLS table](crate#tls)), or the HTTP
    /// client cannot be built; [`Error::InvalidInput`] for an account id that is
    /// not 1 to 32 letters and digits, or an [`instance`](ClientBuilder::instance)
    /// name that is not a short label.
    pub fn build(self) -> Result<Client> {
        let credentials = self.credentials.ok_or_else(|| {
            Error::Config(
                "no credentials: set CLOUDFLARE_API_TOKEN (or CLOUDFLARE_API_KEY and CLOUDFLARE_EMAIL), or call api_token()".into(),
            )
        })??;
        let account_id = self.account_id.ok_or_else(|| {
            Error::Config("no account id: set CLOUDFLARE_ACCOUNT_ID, or call account_id()".into())
        })?;
        self.limits.check_id("account_id", &account_id)?;
        let instance = Instance::new(Kind::Client, self.instance.as_deref())?;

        let base_url = self.base_url.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url)
            // The URL itself stays out of the message: it may carry userinfo.
            .map_err(|e| Error::Config(format!("invalid base URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
            return Err(Error::Config(format!(
                "invalid base URL: needs an http or https URL, not {:?}",
                parsed.scheme()
            )));
        }
        tls::check(parsed.scheme())?;

        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .timeout(self.timeout)
                .connect_timeout(self.connect_timeout)
                .user_agent(concat!("cf-queues/", env!("CARGO_PKG_VERSION"))),
        }
        // Credentials must never follow a redirect to another origin.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            inner: Arc::new(Inner {
                raw: raw::Client::new_with_client(&base_url, http, HookState::new(credentials)),
                account_id,
                limits: self.limits,
                retry: self.retry,
                deadline: self.deadline,
                caps: ClientCaps::new(self.rate_limits),
                pacer: self.rate_limits.paces().then(Arc::default),
                max_response_bytes: self.max_response_bytes,
                recently_enabled: RecentlyEnabled::default(),
                #[cfg(feature = "metrics")]
                token_gauge: crate::metrics::token_gauge(instance.label()),
                _instance: instance,
            }),
        })
    }
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("account_id", &self.account_id)
            .field(
                "credentials",
                &self
                    .credentials
                    .as_ref()
                    .map(|c| c.as_ref().map(|_| "<redacted>")),
            )
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("retry", &self.retry)
            .field("deadline", &self.deadline)
            .field("rate_limits", &self.rate_limits)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `build()` asks the TLS checks first: with no backend compiled in
    /// (`cargo xtask tls-choices`), an https base URL is a configuration error;
    /// with one, the same configuration builds.
    #[test]
    fn an_https_base_url_builds_only_with_a_tls_backend() {
        let built = Client::builder()
            .api_token("t")
            .account_id("a")
            .base_url("https://api.cloudflare.com/client/v4")
            .build();
        let no_provider = cfg!(all(
            feature = "rustls-no-provider",
            not(feature = "rustls"),
            not(feature = "native-tls")
        ));
        if no_provider {
            return; // the TLS module's own test owns the process's provider
        }
        if cfg!(any(feature = "rustls", feature = "native-tls")) {
            assert!(built.is_ok(), "{built:?}");
        } else {
            let Err(Error::Config(message)) = built else {
                panic!("expected Config, got {built:?}");
            };
            assert!(message.contains("needs a TLS feature"), "{message}");
        }
    }
}
