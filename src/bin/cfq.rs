//! `cfq`: the cf-queues command-line tool.
//!
//! ```text
//! cfq emulator [--listen ADDR] [--token TOKEN] [--strict --queue ID ...]
//!              [--max-retries N] [--dead-letter QUEUE=DLQ ...]
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;

use cf_queues::emulator::Emulator;

const USAGE: &str = "\
usage: cfq emulator [options]

Runs a local emulator of the Cloudflare Queues messages API until Ctrl-C or SIGTERM.

options:
  --listen ADDR          address to listen on (default 127.0.0.1:8787)
  --token TOKEN          API token to accept (default: a generated one, printed at start)
  --strict               only the queues named with --queue exist; others get 10104
  --queue ID             declare a queue (repeatable)
  --max-retries N        deliveries before a message is dropped or dead-lettered (default 3)
  --dead-letter Q=DLQ    move messages that exhaust their retries on Q to DLQ (repeatable)
  -h, --help             show this help";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("emulator") => match parse_emulator(&args[1..]) {
            Ok(Some(emulator)) => serve(emulator).await,
            Ok(None) => {
                println!("{USAGE}");
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("cfq: {message}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("cfq: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Parses the emulator's options; `Ok(None)` asks for help.
fn parse_emulator(args: &[String]) -> Result<Option<Emulator>, String> {
    let mut emulator = Emulator::new().listen(SocketAddr::from(([127, 0, 0, 1], 8787)));
    let mut strict = false;
    let mut queues = Vec::new();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let mut value = || rest.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--listen" => {
                let text = value()?;
                let address = text.parse::<SocketAddr>().map_err(|e| {
                    format!("--listen {text:?}: {e} (expected an address like 127.0.0.1:8787)")
                })?;
                emulator = emulator.listen(address);
            }
            "--token" => {
                let token = value()?;
                if token.trim().is_empty() || token.chars().any(char::is_control) {
                    return Err("--token needs a non-empty value without control characters".into());
                }
                emulator = emulator.token(token.clone());
            }
            "--strict" => strict = true,
            "--queue" => queues.push(value()?.clone()),
            "--max-retries" => {
                let text = value()?;
                let n = text
                    .parse::<u32>()
                    .map_err(|_| format!("--max-retries {text:?}: expected a whole number"))?;
                emulator = emulator.max_retries(n);
            }
            "--dead-letter" => {
                let text = value()?;
                let (queue, dlq) = text
                    .split_once('=')
                    .ok_or_else(|| format!("--dead-letter {text:?}: expected QUEUE=DLQ"))?;
                emulator = emulator.dead_letter_queue(queue, dlq);
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if strict {
        if queues.is_empty() {
            return Err("--strict needs at least one --queue".into());
        }
        emulator = emulator.strict_queues(queues);
    } else if !queues.is_empty() {
        return Err(
            "--queue only applies with --strict (queues are otherwise created on first use)".into(),
        );
    }
    Ok(Some(emulator))
}

async fn serve(emulator: Emulator) -> ExitCode {
    let handle = match emulator.start().await {
        Ok(handle) => handle,
        Err(e) => {
            eprintln!("cfq: cannot start the emulator: {e}");
            return ExitCode::FAILURE;
        }
    };
    let address = handle.local_addr();
    if !address.ip().is_loopback() {
        eprintln!(
            "cfq: warning: listening on {address}, which is reachable from other machines; \
             the emulator is for local development"
        );
    }
    println!("cf-queues emulator listening on {}", handle.base_url());
    println!("  export CLOUDFLARE_BASE_URL={}", handle.base_url());
    if let Some(token) = handle.token() {
        println!("  export CLOUDFLARE_API_TOKEN={token}");
    }
    println!(
        "  export CLOUDFLARE_ACCOUNT_ID={}",
        cf_queues::emulator::EMULATOR_ACCOUNT_ID
    );
    println!("press Ctrl-C to stop");

    shutdown_signal().await;
    println!("stopping");
    match handle.shutdown().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cfq: the emulator failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
