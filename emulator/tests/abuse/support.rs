//! What the abuse tests share: HTTP/1.1 by hand on a TCP stream, for the
//! clients no HTTP library would be (slow, half-sent, pipelined).

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads one answer with a `Content-Length`, keeping what follows it.
pub async fn read_response(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
) -> std::io::Result<(u16, Vec<u8>)> {
    let broken = |what: &str| std::io::Error::other(what.to_owned());
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(broken("closed before an answer"));
        }
        pending.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&pending[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| broken("no status"))?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| broken("no content-length"))?;
    while pending.len() < head_end + length {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(broken("closed inside an answer"));
        }
        pending.extend_from_slice(&buf[..n]);
    }
    let body = pending[head_end..head_end + length].to_vec();
    pending.drain(..head_end + length);
    Ok((status, body))
}

/// The head of a POST to `path` under `/client/v4`, with this
/// `authorization` (none when `None`) and body length.
pub fn post_head(path: &str, auth: Option<&str>, length: usize) -> String {
    let auth = auth.map_or(String::new(), |a| format!("authorization: {a}\r\n"));
    format!(
        "POST /client/v4{path} HTTP/1.1\r\nhost: emulator\r\n{auth}\
         content-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    )
}
