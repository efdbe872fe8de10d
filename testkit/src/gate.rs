//! A TCP gate in front of an emulator, for a network that fails and
//! comes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cf_queues::Queue;
use cf_queues_emulator::EmulatorHandle;

/// A TCP gate in front of an emulator: while shut, it accepts connections
/// and drops them at once, as a network failure would; while open, it
/// forwards them. Connections forwarded earlier stay up.
#[derive(Debug)]
pub struct Gate {
    /// The emulator's base URL with the gate's address in its place.
    pub base_url: String,
    open: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Gate {
    /// A gate in front of `emulator`, shut.
    pub async fn shut(emulator: &EmulatorHandle) -> Gate {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let address = listener.local_addr().expect("address");
        let target = emulator.local_addr();
        let base_url = emulator
            .base_url()
            .replace(&target.to_string(), &address.to_string());
        let open = Arc::new(AtomicBool::new(false));
        let is_open = Arc::clone(&open);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !is_open.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Gate {
            base_url,
            open,
            task,
        }
    }

    /// Lets the connections from now on through.
    pub fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    /// A queue through this gate, whose client makes one request per call.
    pub fn queue(&self, emulator: &EmulatorHandle, id: &str) -> Queue {
        let builder = emulator.client_builder().expect("builder");
        crate::clients::one_request_per_call(builder.base_url(&self.base_url), id)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}
