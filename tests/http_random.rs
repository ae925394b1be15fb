//! Randomized robustness of the real binary's HTTP API: thousands of malformed or random
//! requests over raw TCP (random bodies, broken and hostile JSON, wrong types, unknown fields,
//! random headers with non-UTF-8 and long values, random methods and paths, wrong
//! Content-Types, Content-Lengths shorter than the body, chunked bodies, bodies just over
//! 64 KiB). Nothing may answer 5xx; every 4xx our code produces is RFC 9457 problem+json whose
//! `status` is the HTTP status; the process survives and still decides.
//!
//! The generator is a seeded xorshift: the seed is printed, and `RATEWARDEN_FUZZ_SEED=<seed>`
//! replays a run (`RATEWARDEN_FUZZ_REQUESTS=<n>` changes its length).
//!
//! Protocol-level rejections by hyper (a malformed request line or header, an invalid
//! Content-Length or Transfer-Encoding) happen before the request reaches axum: hyper answers a
//! bare `400 Bad Request` (or 414/431) with no Content-Type and an empty body, then closes the
//! connection. Those are not problem+json and cannot be from our middleware, which never sees
//! the request; they are counted (as "4xx bare (hyper)") and accepted, but only for requests
//! that really are malformed HTTP. A bare 4xx to a well-formed request fails the test, and so
//! does a closed connection without any response to a well-formed request.
//!
//! This file runs the fuzzer and checks the daemon afterwards; `tests/http_random/` holds the
//! generator, the request kinds and their parts, the wire format, sending and judging.

#[path = "http_random/bodies.rs"]
mod bodies;
mod common;
#[path = "http_random/generate.rs"]
mod generate;
#[path = "http_random/json.rs"]
mod json;
#[path = "http_random/judge.rs"]
mod judge;
#[path = "http_random/parts.rs"]
mod parts;
#[path = "http_random/request.rs"]
mod request;
#[path = "http_random/rng.rs"]
mod rng;
#[path = "http_random/send.rs"]
mod send;

use common::daemon::{Connection, Daemon};
use generate::generate;
use judge::judge;
use rng::Rng;
use send::{Outcome, send};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml");
const ADMIN_TOKEN: &str = "fuzz-admin-token";
const MAX_BODY: usize = 64 * 1024;
/// A batch's cap: a batch body between the two caps must not be refused for its size.
const MAX_BATCH_BODY: usize = 4 * 1024 * 1024;

/// The start and end of `bytes`, escaped.
fn printable(bytes: &[u8], max: usize) -> String {
    if bytes.len() <= max {
        return bytes.escape_ascii().to_string();
    }
    format!(
        "{} ... ({} bytes) ... {}",
        bytes[..max * 2 / 3].escape_ascii(),
        bytes.len(),
        bytes[bytes.len() - max / 3..].escape_ascii()
    )
}

struct Stats {
    sent: usize,
    outcomes: BTreeMap<String, usize>,
    by_kind: BTreeMap<(&'static str, String), usize>,
    /// Problem details (their first 70 characters), printed with `RATEWARDEN_FUZZ_DETAILS=1`.
    details: BTreeMap<String, usize>,
    failures: Vec<String>,
}

fn fuzz(addr: SocketAddr, seed: u64, count: usize) -> Stats {
    let mut rng = Rng::new(seed);
    let mut stats = Stats {
        sent: 0,
        outcomes: BTreeMap::new(),
        by_kind: BTreeMap::new(),
        details: BTreeMap::new(),
        failures: Vec::new(),
    };
    let mut kept: Option<Connection> = None;
    for i in 0..count {
        let request = generate(&mut rng);
        let (raw, own_connection, half_close) = if request.kind == "garbage" {
            // Random bytes then end of file: hyper rejects them or sees an incomplete head.
            (request.body.clone(), true, true)
        } else {
            let (raw, own) = request.encode();
            (raw, own || !request.wellformed, false)
        };
        let head = request.method.eq_ignore_ascii_case(b"HEAD") && request.kind != "garbage";
        stats.sent += 1;
        let label = match send(addr, &mut kept, &raw, head, own_connection, half_close) {
            Ok(Outcome::Reply(reply)) => match judge(&request, head, &reply) {
                Ok(note) if reply.status >= 400 && !head && note.is_empty() => {
                    let problem: Value = serde_json::from_slice(&reply.body).unwrap_or_default();
                    let detail: String = problem["detail"]
                        .as_str()
                        .unwrap_or("")
                        .chars()
                        .take(70)
                        .collect();
                    *stats
                        .details
                        .entry(format!("{} {detail}", reply.status))
                        .or_default() += 1;
                    format!("{}{note}", reply.status)
                }
                Ok(note) => format!("{}{note}", reply.status),
                Err(problem) => {
                    stats.failures.push(format!(
                        "request #{i} ({}, {:?}): {problem}\n  sent: {}\n  got: {} {:?} {}",
                        request.kind,
                        request.length,
                        printable(&raw, 600),
                        reply.status,
                        reply.headers,
                        printable(&reply.body, 600)
                    ));
                    format!("{} (failed)", reply.status)
                }
            },
            Ok(Outcome::Closed) | Ok(Outcome::Reset) if !request.wellformed => {
                "closed (malformed request)".to_owned()
            }
            Ok(Outcome::Closed) => {
                stats.failures.push(format!(
                    "request #{i} ({}): closed without a response\n  sent: {}",
                    request.kind,
                    printable(&raw, 600)
                ));
                "closed (failed)".to_owned()
            }
            Ok(Outcome::Reset) => {
                // A reset after a request whose framing left bytes unread is the server
                // closing (hyper does not linger); anything else is a failure.
                if own_connection {
                    "reset (bytes left unread)".to_owned()
                } else {
                    stats.failures.push(format!(
                        "request #{i} ({}): connection reset\n  sent: {}",
                        request.kind,
                        printable(&raw, 600)
                    ));
                    "reset (failed)".to_owned()
                }
            }
            Err(e) => {
                stats.failures.push(format!(
                    "request #{i} ({}): {e}\n  sent: {}",
                    request.kind,
                    printable(&raw, 600)
                ));
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    break; // the daemon is gone: the checks below say so
                }
                format!("error {:?}", e.kind())
            }
        };
        *stats
            .by_kind
            .entry((request.kind, label.clone()))
            .or_default() += 1;
        *stats.outcomes.entry(label).or_default() += 1;
    }
    stats
}

fn seed_and_count() -> (u64, usize) {
    let seed = std::env::var("RATEWARDEN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let count = std::env::var("RATEWARDEN_FUZZ_REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    (seed, count)
}

/// Runs the fuzzer against a started daemon, then checks that it still serves.
fn run(name: &str, mut daemon: Daemon, seed: u64, count: usize) {
    println!("{name}: seed {seed} (replay with RATEWARDEN_FUZZ_SEED={seed}), {count} requests");
    let started = Instant::now();
    let stats = fuzz(daemon.addr, seed, count);
    let elapsed = started.elapsed();
    println!(
        "{name}: {} requests in {:.2} s; outcomes:",
        stats.sent,
        elapsed.as_secs_f64()
    );
    for (label, n) in &stats.outcomes {
        println!("  {label:<32} {n}");
    }
    if std::env::var_os("RATEWARDEN_FUZZ_DETAILS").is_some() {
        println!("{name}: problem details:");
        for (detail, n) in &stats.details {
            println!("  {n:>6} {detail}");
        }
    }
    println!("{name}: by kind of request:");
    for ((kind, label), n) in &stats.by_kind {
        println!("  {kind:<9} {label:<32} {n}");
    }

    let panics: Vec<&String> = daemon
        .drain_log()
        .iter()
        .filter(|l| l.contains("panicked"))
        .collect();
    assert!(
        panics.is_empty(),
        "{name} (seed {seed}): panics: {panics:#?}"
    );
    assert!(
        daemon.is_running(),
        "{name} (seed {seed}): the daemon exited; log:\n{}",
        daemon.seen.join("\n")
    );
    let (status, body) = daemon.get("/healthz");
    assert_eq!(status, 200, "{name} (seed {seed}): /healthz: {body}");
    // The fuzzer may have changed the live thresholds: put the file's values back (a no-op
    // 404 while the admin API is not there).
    daemon.request(
        "POST",
        "/v1/admin/reload",
        &[("Authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        "",
    );
    let (status, _, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"after-the-fuzz","endpoint":"/api/search"}"#,
    );
    assert_eq!(status, 200, "{name} (seed {seed}): a valid check: {body}");
    assert!(
        stats.failures.is_empty(),
        "{name} (seed {seed}): {} of {} requests failed; the first ones:\n{}",
        stats.failures.len(),
        stats.sent,
        stats.failures[..stats.failures.len().min(failures_shown())].join("\n")
    );
    assert!(
        elapsed < Duration::from_secs(45),
        "{name}: too slow: {elapsed:?}"
    );
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn thousands_of_random_requests_never_get_a_5xx_or_a_non_problem_4xx() {
    let (seed, count) = seed_and_count();
    let daemon = Daemon::start(
        Path::new(SHIPPED),
        &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    run("shipped policy", daemon, seed, count);
}

/// The same against a policy that trusts `X-Forwarded-For` and `X-Tier`, so forward auth
/// parses them.
#[test]
fn random_requests_with_trusted_forwarding_headers() {
    let (seed, count) = seed_and_count();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let shipped = std::fs::read_to_string(SHIPPED).unwrap();
    let trusting = shipped
        .replace("trust_forwarded: false", "trust_forwarded: true")
        .replace("trust_tier_header: false", "trust_tier_header: true");
    assert_ne!(trusting, shipped);
    std::fs::write(&policy, trusting).unwrap();
    let daemon = Daemon::start(&policy, &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)]);
    run("trusting policy", daemon, seed, (count / 4).max(500));
}

/// How many failures to print (`RATEWARDEN_FUZZ_SHOW`, default 8).
fn failures_shown() -> usize {
    std::env::var("RATEWARDEN_FUZZ_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}
