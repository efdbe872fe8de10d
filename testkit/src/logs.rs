//! Reading back what is logged and traced.

use std::sync::{Arc, Mutex};

/// A log sink a test can read back.
#[derive(Clone, Debug, Default)]
pub struct SharedLog(Arc<Mutex<Vec<u8>>>);

impl SharedLog {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned()
    }
}

impl std::io::Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SharedLog {
    type Writer = SharedLog;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Makes a subscriber set with `tracing::subscriber::set_default` see every
/// callsite. Tests on other threads may have been registering the crate's
/// callsites as the subscriber was set, and tracing can cache the interest
/// they computed without it (a race of thread-local subscribers), which
/// drops spans at random. Call it once the subscriber is set, just before
/// the code under test starts.
pub fn refresh_tracing_interest() {
    tracing::callsite::rebuild_interest_cache();
}

/// Captures this thread's INFO events and closed spans, with their fields,
/// until the guard is dropped. Tests on a current-thread runtime see every
/// task's spans this way.
pub fn capture_spans() -> (SharedLog, tracing::subscriber::DefaultGuard) {
    let log = SharedLog::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(log.clone())
        .with_ansi(false)
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}
