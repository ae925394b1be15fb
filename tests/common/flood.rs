//! A flood of distinct made-up subjects through `/v1/check/batch`: a client on a 2-core machine
//! cannot send a million single requests a minute next to the daemon, so they go in batches of
//! [`BATCH`] subjects, over [`CLIENTS`] connections at once.

use super::daemon::{Connection, Reply};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

pub const BATCH: u64 = 1_000;
pub const CLIENTS: usize = 4;

/// One batch request: users `{prefix}-{i:07}` for the `index`-th run of [`BATCH`] numbers.
pub fn batch_request(prefix: &str, index: u64) -> Vec<u8> {
    let items: Vec<String> = (index * BATCH..(index + 1) * BATCH)
        .map(|i| format!(r#"{{"user":"{prefix}-{i:07}","endpoint":"/x"}}"#))
        .collect();
    batch_of(&items)
}

/// `POST /v1/check/batch` of these check requests (JSON objects), as bytes on the wire.
pub fn batch_of(items: &[String]) -> Vec<u8> {
    let body = format!(r#"{{"requests":[{}]}}"#, items.join(","));
    format!(
        "POST /v1/check/batch HTTP/1.1\r\nHost: ratewarden\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends `subjects` distinct subjects named `{prefix}-...`, one request each; every reply is
/// asserted to be a 200 and handed to `on_reply` (from several threads at once).
pub fn send(addr: SocketAddr, prefix: &str, subjects: u64, on_reply: impl Fn(Reply) + Sync) {
    let next = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..CLIENTS {
            scope.spawn(|| {
                let mut connection = Connection::open(addr).expect("connects");
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= subjects / BATCH {
                        break;
                    }
                    let reply = connection
                        .exchange(&batch_request(prefix, index), false)
                        .expect("a batch is answered");
                    assert_eq!(reply.status, 200, "{}", reply.text());
                    on_reply(reply);
                }
            });
        }
    });
}
