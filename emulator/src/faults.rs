//! Fault injection: make the next requests fail or stall, to test clients.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::Operation;

/// A failure the emulator serves instead of the real answer.
///
/// ```
/// use std::time::Duration;
/// use cf_queues_emulator::{Fault, Operation};
///
/// // The next two pushes get a Cloudflare-shaped 500.
/// let fault = Fault::status(500).cloudflare_error(15000, "UnknownInternalError").times(2).only(Operation::Push);
/// // The next request gets an HTML 502 page after a 10 s stall.
/// let page = Fault::status(502).html("<html>Bad gateway</html>").stall(Duration::from_secs(10));
/// // The next pull is rate limited.
/// let limited = Fault::status(429).cloudflare_error(10250, "QueueOverloaded").retry_after(Duration::from_secs(2));
/// # let _ = (fault, page, limited);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Fault {
    pub(crate) status: Option<u16>,
    pub(crate) body: FaultBody,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) stall: Option<Duration>,
    pub(crate) operation: Option<Operation>,
    pub(crate) times: usize,
}

/// What a faulty response carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FaultBody {
    Envelope {
        code: u32,
        message: String,
    },
    Raw {
        content_type: &'static str,
        body: String,
    },
}

impl Fault {
    /// Answer with `status` and a Cloudflare failure envelope (code 15000 unless changed).
    pub fn status(status: u16) -> Fault {
        Fault {
            status: Some(status),
            body: FaultBody::Envelope {
                code: cf_queues::codes::UNKNOWN_INTERNAL_ERROR,
                message: "UnknownInternalError".into(),
            },
            retry_after: None,
            stall: None,
            operation: None,
            times: 1,
        }
    }

    /// Hold the request for `delay`, then answer normally (or with the fault's status, if set).
    pub fn stall_only(delay: Duration) -> Fault {
        Fault {
            status: None,
            ..Fault::status(500).stall(delay)
        }
    }

    /// The Cloudflare error code and message of the envelope.
    pub fn cloudflare_error(mut self, code: u32, message: impl Into<String>) -> Fault {
        self.body = FaultBody::Envelope {
            code,
            message: message.into(),
        };
        self
    }

    /// An HTML body instead of an envelope, as a proxy would send.
    pub fn html(mut self, page: impl Into<String>) -> Fault {
        self.body = FaultBody::Raw {
            content_type: "text/html",
            body: page.into(),
        };
        self
    }

    /// Any body, sent as `application/json` whether it is JSON or not (empty, truncated).
    pub fn raw_body(mut self, body: impl Into<String>) -> Fault {
        self.body = FaultBody::Raw {
            content_type: "application/json",
            body: body.into(),
        };
        self
    }

    cf_queues::__setters! {
        /// Adds a `Retry-After` header (whole seconds, rounded up).
        retry_after(after: Duration) => self.retry_after = Some;

        /// Holds the request for `delay` before answering.
        stall(delay: Duration) => self.stall = Some;

        /// Applies to this many requests (default 1).
        times(times: usize) => self.times;

        /// Applies only to requests of one operation.
        only(operation: Operation) => self.operation = Some;
    }
}

/// The pending faults, shared by the server and the handle.
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {
    pending: Arc<Mutex<VecDeque<Fault>>>,
}

impl Faults {
    pub(crate) fn push(&self, fault: Fault) {
        if fault.times > 0 {
            self.lock().push_back(fault);
        }
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    /// Takes one use of the first pending fault that applies to `operation`.
    pub(crate) fn take(&self, operation: Operation) -> Option<Fault> {
        let mut pending = self.lock();
        let index = pending
            .iter()
            .position(|f| f.operation.is_none_or(|op| op == operation))?;
        let fault = pending.get_mut(index)?;
        fault.times -= 1;
        let taken = fault.clone();
        if fault.times == 0 {
            pending.remove(index);
        }
        Some(taken)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Fault>> {
        // A panic elsewhere cannot leave the queue half-updated: keep serving.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
