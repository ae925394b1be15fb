//! Accepting connections when `accept` fails: a pause before the next try, and a warning a
//! minute instead of one per try.
//!
//! `accept` fails when the process is out of file descriptors (`EMFILE`), and keeps failing at
//! once for as long as it is: a loop that retries without pausing spins a core (which the
//! `cpu` load source then reads as host load, shrinking every limit), and one that logs each
//! failure writes thousands of lines a minute. tonic's own accept loop does the first, so the
//! gRPC server is handed this one's connections.

use futures_util::Stream;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// How long to wait after a failed accept before the next.
const BACKOFF: Duration = Duration::from_millis(100);

/// At most one warning of failed accepts in this long.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// A listener whose accepts wait out failures.
pub struct Acceptor {
    listener: TcpListener,
    /// What is served, for the warning: "HTTP", "gRPC".
    what: &'static str,
    /// Failures since the last warning, and when that was.
    failed: u64,
    warned_at: Option<Instant>,
}

impl Acceptor {
    pub fn new(listener: TcpListener, what: &'static str) -> Self {
        Acceptor {
            listener,
            what,
            failed: 0,
            warned_at: None,
        }
    }

    /// The next connection (with `TCP_NODELAY`: decisions are small and answered at once),
    /// after as many failed tries as it takes.
    pub async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok((stream, remote)) => {
                    let _ = stream.set_nodelay(true);
                    return (stream, remote);
                }
                Err(error) => {
                    self.note_failure(&error, Instant::now());
                    tokio::time::sleep(BACKOFF).await;
                }
            }
        }
    }

    /// The connections as a stream, as tonic's server takes them.
    pub fn into_stream(self) -> impl Stream<Item = io::Result<TcpStream>> + Send + 'static {
        futures_util::stream::unfold(self, |mut acceptor| async move {
            let (stream, _) = acceptor.accept().await;
            Some((Ok(stream), acceptor))
        })
    }

    /// Counts a failure, and warns of it unless a warning went out within [`WARN_EVERY`];
    /// true when it warned.
    fn note_failure(&mut self, error: &io::Error, now: Instant) -> bool {
        self.failed += 1;
        if self
            .warned_at
            .is_some_and(|at| now.duration_since(at) < WARN_EVERY)
        {
            return false;
        }
        tracing::warn!(
            %error,
            failed = self.failed,
            "cannot accept {} connections (retrying every {BACKOFF:?}; warned at most once a \
             minute, `failed` counts the failures since the last warning)",
            self.what
        );
        self.failed = 0;
        self.warned_at = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn failures_are_warned_of_once_a_minute() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut acceptor = Acceptor::new(listener, "HTTP");
        let error = io::Error::from_raw_os_error(24);
        let start = Instant::now();
        assert!(acceptor.note_failure(&error, start));
        for tenth in 1..600 {
            let now = start + BACKOFF * tenth;
            assert!(
                !acceptor.note_failure(&error, now),
                "warned again at {tenth}"
            );
        }
        assert_eq!(acceptor.failed, 599);
        assert!(acceptor.note_failure(&error, start + WARN_EVERY));
        assert_eq!(acceptor.failed, 0);
    }
}
