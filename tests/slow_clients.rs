//! Slow and oversized clients against the real binary: slowloris connections (a header byte
//! every two seconds, or nothing at all) are closed by the header read timeout, 1 MiB headers
//! are refused by the head size cap, and meanwhile a normal client keeps getting answers fast.

mod common;

use common::daemon::{Daemon, Reply, send};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// src/daemon/http_server.rs: HEADER_READ_TIMEOUT.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
const TRICKLING: usize = 300;
const SILENT: usize = 100;
/// The slowest answer the normal client may get while the attack runs (docs/testing.md states it).
const NORMAL_BOUND: Duration = Duration::from_secs(1);

const POLICY: &str = "\
default_tier: t
tiers:
  t:
    limits:
      - { name: hourly, algorithm: fixed_window, requests: 1000000, window: 1h }
";

struct Slow {
    stream: TcpStream,
    opened: Instant,
    closed: Option<Duration>,
    answered: bool,
}

impl Slow {
    fn open(addr: SocketAddr, first: &[u8]) -> Slow {
        let mut stream = TcpStream::connect(addr).expect("connects");
        stream.write_all(first).expect("writes");
        stream.set_nonblocking(true).unwrap();
        Slow {
            stream,
            opened: Instant::now(),
            closed: None,
            answered: false,
        }
    }

    /// Notes when the server closed the connection.
    fn poll(&mut self) {
        if self.closed.is_some() {
            return;
        }
        let mut buffer = [0u8; 1024];
        match self.stream.read(&mut buffer) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Ok(n) if n > 0 => self.answered = true,
            Ok(_) | Err(_) => self.closed = Some(self.opened.elapsed()),
        }
    }
}

/// A 1 MiB header: returns what came back (a status) or the transport error.
fn huge_header(addr: SocketAddr) -> Result<u16, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut request = b"GET /healthz HTTP/1.1\r\nHost: ratewarden\r\nX-Huge: ".to_vec();
    request.extend(std::iter::repeat_n(b'a', 1 << 20));
    request.extend(b"\r\n\r\n");
    // The server stops reading at the cap: the rest of the write may fail, which is the point.
    let _ = stream.write_all(&request);
    let mut reply = Vec::new();
    match stream.read_to_end(&mut reply) {
        Ok(_) | Err(_) if reply.starts_with(b"HTTP/1.1 ") => {
            let status = String::from_utf8_lossy(&reply[9..12]).into_owned();
            status.parse().map_err(|_| format!("status {status:?}"))
        }
        Ok(_) => Err("closed without an answer".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn slowloris_and_huge_headers_are_cut_off_while_a_normal_client_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let daemon = Daemon::start(&policy, &[]);
    let addr = daemon.addr;
    let attack_over = AtomicBool::new(false);

    let (latencies, huge) = std::thread::scope(|scope| {
        // The normal client: one check every 20 ms on a new connection, timed.
        let normal = scope.spawn(|| {
            let mut latencies = Vec::new();
            while !attack_over.load(Ordering::Relaxed) {
                let started = Instant::now();
                let reply: Reply = send(
                    addr,
                    b"POST /v1/check HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 33\r\n\r\n{\"user\":\"normal\",\"endpoint\":\"/x\"}",
                );
                latencies.push(started.elapsed());
                assert_eq!(reply.status, 200, "{}", reply.text());
                std::thread::sleep(Duration::from_millis(20));
            }
            latencies
        });
        // Huge headers, four clients at once, three times each.
        let huge: Vec<_> = (0..4)
            .map(|_| scope.spawn(move || (0..3).map(|_| huge_header(addr)).collect::<Vec<_>>()))
            .collect();

        // Slowloris: trickling connections and silent ones.
        let mut slow: Vec<Slow> = (0..TRICKLING)
            .map(|_| {
                Slow::open(
                    addr,
                    b"GET /healthz HTTP/1.1\r\nHost: ratewarden\r\nX-Slow: ",
                )
            })
            .chain((0..SILENT).map(|_| Slow::open(addr, b"")))
            .collect();
        let deadline = Instant::now() + HEADER_READ_TIMEOUT + Duration::from_secs(10);
        let mut next_byte = Instant::now() + Duration::from_secs(2);
        while slow.iter().any(|s| s.closed.is_none()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            let trickle = Instant::now() >= next_byte;
            if trickle {
                next_byte += Duration::from_secs(2);
            }
            for (i, connection) in slow.iter_mut().enumerate() {
                connection.poll();
                if trickle && i < TRICKLING && connection.closed.is_none() {
                    let _ = connection.stream.write(b"a");
                }
            }
        }
        attack_over.store(true, Ordering::Relaxed);
        let closed: Vec<Duration> = slow.iter().filter_map(|s| s.closed).collect();
        assert_eq!(
            closed.len(),
            TRICKLING + SILENT,
            "connections still open {:?} after they opened",
            deadline.elapsed() + HEADER_READ_TIMEOUT + Duration::from_secs(10)
        );
        assert!(
            slow.iter().all(|s| !s.answered),
            "a slow client got an answer"
        );
        let first = closed.iter().min().unwrap();
        let last = closed.iter().max().unwrap();
        println!(
            "{} slow connections closed {first:.1?} to {last:.1?} after they opened",
            closed.len()
        );
        // The timeout closed them, not something sooner.
        assert!(*first >= HEADER_READ_TIMEOUT - Duration::from_millis(500));
        assert!(*last <= HEADER_READ_TIMEOUT + Duration::from_secs(5));

        let huge: Vec<_> = huge
            .into_iter()
            .flat_map(|h| h.join().expect("huge header client"))
            .collect();
        (normal.join().expect("normal client"), huge)
    });

    println!("huge headers: {huge:?}");
    // 431, or the connection reset while the rest of the megabyte was still unread.
    for status in huge.iter().flatten() {
        assert_eq!(*status, 431);
    }
    assert!(huge.contains(&Ok(431)), "{huge:?}");
    let slowest = latencies.iter().max().unwrap();
    println!(
        "normal client: {} checks while the attack ran, slowest {slowest:.1?}",
        latencies.len()
    );
    assert!(latencies.len() > 100);
    assert!(*slowest < NORMAL_BOUND, "slowest check took {slowest:?}");
    assert_eq!(daemon.get("/healthz").0, 200);
}
