//! SIGINT, SIGTERM and SIGHUP for the commands that must stop in order:
//! `relay`, `push --file`, `replay`, `metrics --watch` and `emulator`. The
//! first signal asks the run to stop in order (after the batch in flight,
//! say); a second one stops it at once. SIGHUP is one of them because a
//! closing terminal sends it, and the npm launcher passes it on: by its
//! default it would end a relay with its acks unsent.
//!
//! Once watched, a signal no longer ends the process by itself, so only a
//! run that can act on it watches: every other command keeps the default.
//! Two signals within a tenth of a second count as one: the npm
//! launcher passes on a Ctrl-C the terminal also sent cfq.

use tokio::sync::watch;

/// Signals closer together than this count as one.
const SAME_SIGNAL: std::time::Duration = std::time::Duration::from_millis(100);

/// How many stop signals have arrived, and the name of the first.
#[derive(Debug, Clone)]
pub struct Interrupts {
    received: watch::Receiver<(u32, &'static str)>,
}

impl Interrupts {
    /// Starts watching for SIGINT, SIGTERM and SIGHUP (Ctrl-C elsewhere than Unix),
    /// in a task that lives as long as the runtime.
    ///
    /// # Errors
    ///
    /// A local failure when the signal handlers cannot be installed.
    pub fn watch() -> Result<Interrupts, crate::exit::Failure> {
        Interrupts::installed().map_err(|e| {
            crate::exit::Failure::local(format_args!(
                "cannot watch for SIGINT, SIGTERM and SIGHUP: {e}"
            ))
        })
    }

    fn installed() -> std::io::Result<Interrupts> {
        let (sender, received) = watch::channel((0, ""));
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut interrupt = signal(SignalKind::interrupt())?;
            let mut terminate = signal(SignalKind::terminate())?;
            let mut hangup = signal(SignalKind::hangup())?;
            tokio::spawn(async move {
                let mut last: Option<std::time::Instant> = None;
                loop {
                    let name = tokio::select! {
                        Some(()) = interrupt.recv() => "SIGINT",
                        Some(()) = terminate.recv() => "SIGTERM",
                        Some(()) = hangup.recv() => "SIGHUP",
                        else => return,
                    };
                    // A terminal's Ctrl-C reaches a launcher (`npx cfq`) and
                    // cfq alike, and the launcher passes it on: one signal
                    // arriving twice must not count as the second that
                    // stops at once.
                    if last.is_some_and(|at| at.elapsed() < SAME_SIGNAL) {
                        continue;
                    }
                    last = Some(std::time::Instant::now());
                    sender.send_modify(|(count, first)| {
                        if *count == 0 {
                            *first = name;
                        }
                        *count += 1;
                    });
                }
            });
        }
        #[cfg(not(unix))]
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                sender.send_modify(|(count, first)| {
                    if *count == 0 {
                        *first = "Ctrl-C";
                    }
                    *count += 1;
                });
            }
        });
        Ok(Interrupts { received })
    }

    /// Interrupts that come only when a test sends them through the
    /// sender it is given.
    #[cfg(test)]
    pub fn none() -> (Interrupts, watch::Sender<(u32, &'static str)>) {
        let (sender, received) = watch::channel((0, ""));
        (Interrupts { received }, sender)
    }

    /// How many signals have arrived so far.
    pub fn count(&self) -> u32 {
        self.received.borrow().0
    }

    /// The name of the first signal, once one arrived.
    pub fn first(&self) -> Option<&'static str> {
        let (count, name) = *self.received.borrow();
        (count > 0).then_some(name)
    }

    /// Waits until at least `count` signals have arrived; never returns
    /// when none can (the watching task is gone).
    pub async fn reached(&mut self, count: u32) {
        if self.received.wait_for(|(n, _)| *n >= count).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
