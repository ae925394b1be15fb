//! Decisions per second on a real Redis, next to `redis-benchmark` running EVALSHA of the same
//! script against the same server in the same run (the physical limit here).
//!
//! `cargo bench --bench redis_throughput` starts its own redis-server on a free port (or uses
//! `RATEWARDEN_BENCH_REDIS=redis://...`). README, "Redis", quotes the figures.

use ratewarden::engine::{CheckRequest, Engine, SubjectHasher};
use ratewarden::policy::Policy;
use ratewarden::store::RedisStore;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const POLICY: &str = "
default_tier: t
tiers:
  t:
    limits:
      - { name: l, algorithm: gcra, requests: 1000000000, window: 1s }
";
const TASKS: usize = 64;
const BATCH: usize = 32;
const RUN: Duration = Duration::from_secs(5);
const SCRIPT: &str = include_str!("../src/store/redis/limits.lua");

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> (Option<Server>, u16) {
    if let Ok(url) = std::env::var("RATEWARDEN_BENCH_REDIS") {
        let port = url
            .rsplit(':')
            .next()
            .and_then(|p| p.split('/').next()?.parse().ok())
            .unwrap_or(6379);
        return (None, port);
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server");
    for _ in 0..100 {
        if cli(port, &["PING"]).trim() == "PONG" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (Some(Server(child)), port)
}

fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// redis-benchmark's requests per second for EVALSHA of one one-limit request.
fn redis_benchmark(port: u16, sha: &str, pipeline: usize) -> f64 {
    let requests = if pipeline > 1 { "400000" } else { "100000" };
    let out = Command::new("redis-benchmark")
        .args([
            "-p",
            &port.to_string(),
            "-c",
            &TASKS.to_string(),
            "-n",
            requests,
            "-r",
            "100000",
        ])
        .args([
            "-P",
            &pipeline.to_string(),
            "-q",
            "EVALSHA",
            sha,
            "1",
            "rw:{__rand_int__}:t:t:l",
        ])
        .args([
            "apply",
            "0",
            "1",
            "5",
            "1000000",
            "1000000000",
            "1000000000",
            "1",
            "1",
            "-1",
            "-1",
            "-1",
            "-1",
        ])
        .output()
        .expect("redis-benchmark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // "EVALSHA ...: 51234.56 requests per second, p50=..." (the last \r-separated report).
    text.rsplit('\r')
        .find_map(|part| {
            let (_, rest) = part.split_once(": ")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("cannot read redis-benchmark's output: {text}"))
}

async fn ours(engine: Arc<Engine<RedisStore>>, batch: usize) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (engine, done) = (engine.clone(), done.clone());
            tokio::spawn(async move {
                let mut i = 0u64;
                while started.elapsed() < RUN {
                    let users: Vec<String> = (0..batch)
                        .map(|b| format!("u{}", (t as u64 * 7919 + i + b as u64) % 100_000))
                        .collect();
                    i += batch as u64;
                    if batch == 1 {
                        let d = engine
                            .check(&CheckRequest::new(&users[0], "/x"))
                            .await
                            .expect("decidable");
                        assert!(!d.degraded, "the store failed during the benchmark");
                    } else {
                        let requests: Vec<_> =
                            users.iter().map(|u| CheckRequest::new(u, "/x")).collect();
                        let ds = engine.check_batch(&requests).await.expect("decidable");
                        assert!(
                            ds.iter().all(|d| !d.degraded),
                            "the store failed during the benchmark"
                        );
                    }
                    done.fetch_add(batch as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // cargo test --benches: nothing to list or test here
    }
    let (_server, port) = start_server();
    let sha = cli(port, &["SCRIPT", "LOAD", SCRIPT]).trim().to_owned();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let engine = runtime.block_on(async {
        let store = RedisStore::connect(
            &format!("redis://127.0.0.1:{port}/0"),
            "rw",
            Duration::from_secs(2),
        )
        .expect("store");
        let policy = Policy::from_yaml(POLICY, Path::new(".")).expect("policy");
        Arc::new(Engine::new(
            policy,
            store,
            SubjectHasher::from_secret("bench"),
        ))
    });
    let unpipelined = redis_benchmark(port, &sha, 1);
    let single = runtime.block_on(ours(engine.clone(), 1));
    let pipelined = redis_benchmark(port, &sha, BATCH);
    let batched = runtime.block_on(ours(engine, BATCH));
    println!("redis-benchmark EVALSHA, {TASKS} clients, unpipelined: {unpipelined:>10.0} /s");
    println!(
        "ratewarden single decisions, {TASKS} tasks:         {single:>10.0} /s  ({:.2} of unpipelined)",
        single / unpipelined
    );
    println!("redis-benchmark EVALSHA, {TASKS} clients, -P {BATCH}:    {pipelined:>10.0} /s");
    println!(
        "ratewarden batches of {BATCH}, {TASKS} tasks:           {batched:>10.0} /s  ({:.2} of pipelined)",
        batched / pipelined
    );
}
