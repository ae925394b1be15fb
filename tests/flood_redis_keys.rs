//! A key cardinality flood against a real Redis: 50,000 distinct users (and as many IPs) through
//! the real binary, then every key in Redis, the control loop's included (`<prefix>:{control}:*`),
//! carries a TTL, and the control loop keeps a few keys whatever the number of subjects.

mod common;

use common::daemon::{Connection, Daemon};
use common::redis::RedisServer;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SUBJECTS: u64 = 50_000;
const BATCH: u64 = 1_000;

/// The policy, with the shipped model: the control loop shares activity only when a model
/// reads it.
fn policy(url: &str) -> String {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/models/abuse.json");
    format!(
        "store: {{ url: \"{url}\", on_error: deny, timeout: 1s, key_prefix: flood }}
default_tier: t
tiers:
  t:
    limits:
      - {{ name: hourly, algorithm: sliding_log, requests: 100, window: 1h }}
      - {{ name: burst, algorithm: token_bucket, requests: 20, window: 1m, burst: 20 }}
endpoints:
  - path: /login
    key: ip
    limits: [ {{ name: login, algorithm: sliding_window, requests: 20, window: 5m }} ]
default_endpoint:
  limits: [ {{ name: endpoint, algorithm: gcra, requests: 50, window: 1m }} ]
adaptive:
  interval: 1s
  anomaly: {{ model: \"{model}\" }}
"
    )
}

fn batch_request(index: u64) -> Vec<u8> {
    let items: Vec<String> = (index * BATCH..(index + 1) * BATCH)
        .map(|i| {
            let endpoint = if i % 2 == 0 { "/login" } else { "/api/x" };
            format!(
                r#"{{"user":"u{i}","endpoint":"{endpoint}","ip":"10.{}.{}.{}"}}"#,
                i >> 16,
                (i >> 8) & 255,
                i & 255
            )
        })
        .collect();
    common::flood::batch_of(&items)
}

/// `PTTL` of every key, through one redis-cli reading the commands from stdin.
fn pttls(redis: &RedisServer, keys: &[String]) -> Vec<i64> {
    let mut cli = Command::new("redis-cli")
        .args(["-p", &redis.port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli runs");
    let mut stdin = cli.stdin.take().unwrap();
    let commands: String = keys.iter().map(|k| format!("PTTL \"{k}\"\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(commands.as_bytes()));
    let out = cli.wait_with_output().expect("redis-cli ends");
    writer.join().unwrap().expect("commands written");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.trim()
                .parse()
                .unwrap_or_else(|_| panic!("PTTL said {l:?}"))
        })
        .collect()
}

#[test]
fn every_key_of_a_cardinality_flood_has_a_ttl_control_keys_included() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, policy(&redis.url())).unwrap();
    let daemon = Daemon::start(&path, &[]);

    let started = Instant::now();
    let mut connection = Connection::open(daemon.addr).expect("connects");
    for index in 0..SUBJECTS / BATCH {
        let reply = connection
            .exchange(&batch_request(index), false)
            .expect("answered");
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(
            !reply.text().contains(r#""degraded":true"#),
            "Redis kept up"
        );
    }
    println!("{SUBJECTS} subjects in {:.1?}", started.elapsed());

    // Two control cycles after the flood: the activity of every subject is flushed and the
    // leader has published its standings.
    std::thread::sleep(Duration::from_secs(3));
    let keys = redis.keys();
    let ttls = pttls(&redis, &keys);
    assert_eq!(ttls.len(), keys.len());
    let without: Vec<_> = keys
        .iter()
        .zip(&ttls)
        // -1: no TTL. (-2: the key expired between the scan and PTTL, which is fine.)
        .filter(|(_, ttl)| **ttl == -1)
        .map(|(k, ttl)| format!("{k} (PTTL {ttl})"))
        .collect();
    let control = keys
        .iter()
        .filter(|k| k.starts_with("flood:{control}:"))
        .count();
    let activity = keys
        .iter()
        .filter(|k| k.starts_with("flood:{control}:activity:"))
        .count();
    println!(
        "{} keys: {control} control ({activity} activity lists), {} limit keys; {} without TTL",
        keys.len(),
        keys.len() - control,
        without.len()
    );
    assert!(
        without.is_empty(),
        "keys without a TTL: {:?}",
        &without[..without.len().min(20)]
    );
    // The lease, the standings and one list per window bucket the flood touched: no key per
    // subject.
    assert!(activity >= 1, "the daemon flushed its activity");
    assert!(control <= 2 + 3, "{control} control keys");
    // One sliding log (and its total), one bucket and one endpoint key per user, a login key
    // per IP of the /login half.
    assert!(keys.len() as u64 >= SUBJECTS * 3, "{} keys", keys.len());
    assert!(keys.iter().all(|k| k.starts_with("flood:")));
}
