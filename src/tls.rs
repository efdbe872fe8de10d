//! What the TLS features cannot say for themselves: checks run before
//! reqwest builds its client. The choice and which backend wins are
//! documented once, at the crate root's "TLS" section.

use crate::error::{Error, Result};

/// Whether any TLS backend is compiled in.
const ANY_BACKEND: bool = cfg!(any(
    feature = "rustls",
    feature = "rustls-no-provider",
    feature = "native-tls"
));

/// Checks, before reqwest builds its client, what reqwest would otherwise
/// fail on late or panic on.
///
/// # Errors
///
/// [`Error::Config`] for an `https` base URL without a TLS feature (reqwest
/// would fail each request), and under `rustls-no-provider` alone when no
/// rustls `CryptoProvider` is installed (reqwest would panic).
pub(crate) fn check(scheme: &str) -> Result<()> {
    if scheme == "https" && !ANY_BACKEND {
        return Err(Error::Config(
            "an https base URL needs a TLS feature of cf-queues: rustls (the default), rustls-no-provider or native-tls".into(),
        ));
    }
    check_provider()
}

#[cfg(all(
    feature = "rustls-no-provider",
    not(feature = "rustls"),
    not(feature = "native-tls")
))]
fn check_provider() -> Result<()> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        return Err(Error::Config(
            "feature rustls-no-provider: no rustls CryptoProvider is installed; install one before build(), such as rustls::crypto::ring::default_provider().install_default()".into(),
        ));
    }
    Ok(())
}

#[cfg(not(all(
    feature = "rustls-no-provider",
    not(feature = "rustls"),
    not(feature = "native-tls")
)))]
#[expect(
    clippy::unnecessary_wraps,
    reason = "the same signature as under rustls-no-provider"
)]
fn check_provider() -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_needs_no_backend() {
        if cfg!(all(
            feature = "rustls-no-provider",
            not(feature = "rustls"),
            not(feature = "native-tls")
        )) {
            return; // the provider test below owns the process's provider
        }
        assert!(check("http").is_ok());
    }

    /// Run by `cargo xtask tls-choices` with no TLS feature, and with every feature
    /// by the README's test command.
    #[test]
    fn https_is_refused_only_without_a_backend() {
        let outcome = check("https");
        if ANY_BACKEND {
            return;
        }
        let Err(Error::Config(message)) = outcome else {
            panic!("expected Config, got {outcome:?}");
        };
        assert!(message.contains("needs a TLS feature"), "{message}");
    }

    /// Run by `cargo xtask tls-choices` under `rustls-no-provider` alone: refused
    /// until a provider is installed (reqwest would have panicked instead),
    /// for http too, since reqwest sets TLS up for every client.
    #[cfg(all(
        feature = "rustls-no-provider",
        not(feature = "rustls"),
        not(feature = "native-tls")
    ))]
    #[test]
    fn rustls_without_a_provider_is_refused_until_one_is_installed() {
        let Err(Error::Config(message)) = check("https") else {
            panic!("expected Config before a provider is installed");
        };
        assert!(message.contains("no rustls CryptoProvider"), "{message}");
        assert!(matches!(check("http"), Err(Error::Config(_))));
        let _ = rustls::crypto::ring::default_provider().install_default();
        assert!(check("https").is_ok());
        assert!(check("http").is_ok());
    }
}
