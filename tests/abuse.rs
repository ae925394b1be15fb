//! End to end through the real binary's HTTP API with the shipped model: a credential
//! stuffer is flagged within two control intervals once it has `min_requests` requests in the
//! window, and its limits shrink (scale 0.1, reason `anomaly`); a fast regular poller and users
//! sharing one NAT address, sending at the same time, are never flagged. The flagged list
//! names the stuffer by its keyed hash, and `ratewarden subject-hash` with the daemon's secret
//! tells whose it is.

mod common;

use common::daemon::{Daemon, request};
use common::rng::Rng;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "abuse-test-token";
const INTERVAL_MS: u64 = 500;
/// The example policy's: the shipped model was trained on samples taken from the 20th request.
const MIN_REQUESTS: u64 = 20;

fn policy(dir: &std::path::Path) -> std::path::PathBuf {
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    let yaml = common::EXAMPLE_POLICY
        .replace(
            "model: models/abuse.json",
            &format!("model: {}", model.display()),
        )
        .replace("interval: 1s", &format!("interval: {INTERVAL_MS}ms"))
        .replace("min_requests: 20", &format!("min_requests: {MIN_REQUESTS}"));
    assert!(yaml.contains("interval: 500ms") && yaml.contains("min_requests: 20"));
    let path = dir.join("policy.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The daemon's address: requests from several threads at once.
#[derive(Clone, Copy)]
struct Client(SocketAddr);

impl Client {
    fn request(
        self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let reply = request(self.0, method, path, headers, body);
        (reply.status, reply.text())
    }

    fn post_json(self, path: &str, body: &str) -> (u16, String) {
        self.request("POST", path, &[("Content-Type", "application/json")], body)
    }
}

fn check(daemon: Client, body: Value) -> Value {
    let (_, text) = daemon.post_json("/v1/check", &body.to_string());
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("a decision: {text}"))
}

fn report(daemon: Client, user: &str, endpoint: &str, status: u16) {
    let body = json!({"user": user, "endpoint": endpoint, "status": status});
    let (code, text) = daemon.post_json("/v1/report", &body.to_string());
    assert_eq!(code, 202, "{text}");
}

fn standing(daemon: Client, user: &str) -> Value {
    let (code, text) = daemon.request(
        "GET",
        &format!("/v1/admin/subjects/{user}"),
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        "",
    );
    assert_eq!(code, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_credential_stuffer_is_flagged_and_shrunk_while_pollers_and_nat_users_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Daemon::start(&policy(dir.path()), &[("RATEWARDEN_ADMIN_TOKEN", TOKEN)]);
    daemon.wait_for("model loaded", Duration::from_secs(10));
    let process = daemon;
    let daemon = Client(process.addr);
    let stop = Arc::new(AtomicBool::new(false));
    let mut normal = Vec::new();

    // A fast regular poller (enterprise, one address, every 0.8 s, ±0.5 %).
    let poller = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let endpoint = "/api/jobs/7731/status";
                check(
                    daemon,
                    json!({"user": "poll-bot", "endpoint": endpoint,
                    "tier": "enterprise", "ip": "198.51.100.20"}),
                );
                report(daemon, "poll-bot", endpoint, 200);
                std::thread::sleep(Duration::from_millis(800));
            }
        })
    };
    normal.push("poll-bot".to_owned());
    // Five people behind one carrier NAT address, browsing as people do (the browsing of
    // `ratewarden simulate`, sped up): a few popular pages, often followed by an API call or
    // two a moment later, and think times that vary a lot from one page to the next.
    let mut nat = Vec::new();
    for person in 0..5u64 {
        let user = format!("nat-user-{person}");
        normal.push(user.clone());
        let stop = stop.clone();
        nat.push(std::thread::spawn(move || {
            let mut rng = Rng::new(person + 17);
            let pages = [
                "/",
                "/products/1",
                "/products/2",
                "/cart",
                "/api/search",
                "/account",
            ];
            while !stop.load(Ordering::Relaxed) {
                let page = rng.pick(&pages);
                let d = check(
                    daemon,
                    json!({"user": user, "endpoint": page, "ip": "203.0.113.99"}),
                );
                if d["allowed"] == true {
                    report(daemon, &user, page, 200);
                }
                for _ in 0..rng.below(3) {
                    std::thread::sleep(Duration::from_millis(rng.range(50, 400) as u64));
                    check(
                        daemon,
                        json!({"user": user, "endpoint": "/api/cart", "ip": "203.0.113.99"}),
                    );
                }
                // Heavy-tailed think times: mostly short, sometimes long.
                let think = [150, 300, 500, 800, 1500, 4000][rng.below(6)];
                std::thread::sleep(Duration::from_millis(think));
            }
        }));
    }

    // The stuffer: /login twice a second, each try from another address, 96 % 401.
    let flagged_after = Arc::new(Mutex::new(None));
    let started = Instant::now();
    let mut watcher = None;
    let mut shrunk = None;
    for attempt in 0..60u64 {
        let ip = format!(
            "10.{}.{}.{}",
            attempt % 200,
            (attempt * 7) % 250,
            attempt % 251 + 1
        );
        let d = check(
            daemon,
            json!({"user": "mallory", "endpoint": "/login", "ip": ip}),
        );
        if d["allowed"] == true {
            report(
                daemon,
                "mallory",
                "/login",
                if attempt % 25 == 7 { 200 } else { 401 },
            );
        }
        if attempt + 1 == MIN_REQUESTS {
            // From the 20th request on, a watcher asks every 25 ms, so the time to the flag is
            // measured to that, not to this loop's half-second pace.
            let enough = Instant::now();
            let flagged_after = flagged_after.clone();
            watcher = Some(std::thread::spawn(move || {
                while enough.elapsed() < Duration::from_secs(20) {
                    if standing(daemon, "mallory")["flagged"] == true {
                        *flagged_after.lock().unwrap() = Some(enough.elapsed());
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
            }));
        }
        if d["scale"].as_f64() == Some(0.1) && shrunk.is_none() {
            shrunk = Some(d.clone());
        }
        if d["reason"] == "anomaly" {
            shrunk = Some(d);
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // The others go on until each has been scored a few times.
    while started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    poller.join().unwrap();
    if let Some(watcher) = watcher {
        watcher.join().unwrap();
    }
    for t in nat {
        t.join().unwrap();
    }

    let flagged_after = flagged_after.lock().unwrap().expect("mallory was flagged");
    eprintln!(
        "flagged {flagged_after:?} after the {MIN_REQUESTS}th request; run {:?}",
        started.elapsed()
    );
    assert!(
        flagged_after <= Duration::from_millis(2 * INTERVAL_MS + 250),
        "flagged within two intervals (+ the admin call's own time): {flagged_after:?}"
    );
    let shrunk = shrunk.expect("mallory's limits shrank");
    assert_eq!(shrunk["scale"], 0.1, "{shrunk}");
    assert!(shrunk["abuse_score"].as_f64().unwrap() >= 0.8, "{shrunk}");

    for user in &normal {
        let view = standing(daemon, user);
        assert_eq!(view["flagged"], false, "{user}: {view}");
        let score = view["abuse_score"].as_f64();
        eprintln!("{user}: score {score:?}, features {}", view["features"]);
        assert!(
            score.is_some_and(|s| s < 0.8),
            "{user} was scored below the threshold: {view}"
        );
    }
    let (_, metrics) = process.get("/metrics");
    assert!(
        metrics.contains("ratewarden_model_info{kind=\"logistic\""),
        "model info"
    );
    assert!(
        metrics.contains("ratewarden_flagged_subjects 1"),
        "one flagged subject"
    );
    let (_, listed) = daemon.request(
        "GET",
        "/v1/admin/flagged",
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        "",
    );
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let hash = listed["subjects"][0]["subject"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(whose(&hash, &normal), "mallory", "{listed}");
}

/// The candidate `subject-hash` maps to `hash`, with the secret the test daemons run with.
fn whose(hash: &str, others: &[String]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratewarden"))
        .args(["subject-hash", "--hash-key", "daemon test secret"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let candidates = format!("{}\r\n\nmallory\n", others.join("\n"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(candidates.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), others.len() + 1, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with(hash))
        .unwrap_or_else(|| panic!("{hash} in {text}"));
    line.split_once('\t').unwrap().1.to_owned()
}
