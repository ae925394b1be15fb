//! The abuse model judges a subject against its own limits, through the real binary: a fast,
//! regular client walking many paths is normal at half an enterprise quota and flagged far
//! over a free one; a human-paced burst is not flagged under a short window; a subject
//! outside the model's training range is reported novel and not scaled by its score alone,
//! and the admin view's contributions add up to the score's logit.

mod common;

use common::daemon::Daemon;
use common::narrow_model::model_with_a_narrow_range;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOKEN: &str = "abuse-context-token";

fn shipped_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json")
}

/// The example policy with the model at `model`, a 250 ms interval, and the changes given.
fn policy(dir: &Path, model: &Path, changes: &[(&str, &str)]) -> PathBuf {
    let mut yaml = common::EXAMPLE_POLICY
        .replace(
            "model: models/abuse.json",
            &format!("model: {}", model.display()),
        )
        .replace("interval: 1s", "interval: 250ms");
    for (from, to) in changes {
        assert!(yaml.contains(from), "the example policy has {from:?}");
        yaml = yaml.replace(from, to);
    }
    let path = dir.join("policy.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn start(policy: &Path) -> Daemon {
    let mut daemon = Daemon::start(policy, &[("RATEWARDEN_ADMIN_TOKEN", TOKEN)]);
    daemon.wait_for("model loaded", Duration::from_secs(10));
    daemon
}

fn check(daemon: &Daemon, body: Value) -> Value {
    let (_, _, text) = daemon.post_json("/v1/check", &body.to_string());
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("a decision: {text}"))
}

fn report(daemon: &Daemon, user: &str, endpoint: &str, status: u16) {
    let body = json!({"user": user, "endpoint": endpoint, "status": status});
    let (code, _, text) = daemon.post_json("/v1/report", &body.to_string());
    assert_eq!(code, 202, "{text}");
}

/// `user`'s view once a whole control cycle has run after its last request, and scored it.
fn scored_view(daemon: &Daemon, user: &str) -> Value {
    daemon.await_a_whole_cycle();
    let started = Instant::now();
    loop {
        let v = daemon.subject_view(user, TOKEN);
        if !v["abuse_score"].is_null() || started.elapsed() > Duration::from_secs(5) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_fast_regular_many_path_client_is_normal_within_an_enterprise_quota_and_flagged_over_a_free_one()
 {
    let dir = tempfile::tempdir().unwrap();
    // An enterprise quota of 20 a second and room on unmatched paths for it: the client runs
    // at half of it. The run lasts 20 s, so the anomaly window is one minute: over the shipped
    // 30 minutes a 20-second flood asks little of the window's allowance (what it would ask if
    // it went on is what the window measures).
    let daemon = start(&policy(
        dir.path(),
        &shipped_model(),
        &[
            ("window: 30m", "window: 1m"),
            ("requests: 10000, window: 1h", "requests: 72000, window: 1h"),
            ("requests: 50, window: 1m", "requests: 6000, window: 1m"),
        ],
    ));
    // The same client, twice as fast, on free: far over its 100 an hour and 20 a minute.
    let started = Instant::now();
    let mut id = 40_000u32;
    let mut tick = 0u32;
    while started.elapsed() < Duration::from_secs(20) {
        tick += 1;
        id += 1;
        let endpoint = format!("/api/items/{id}");
        let clients: &[(&str, &str)] = if tick % 2 == 0 {
            &[("sync-enterprise", "enterprise"), ("sync-free", "free")]
        } else {
            &[("sync-free", "free")]
        };
        for (user, tier) in clients {
            let d = check(
                &daemon,
                json!({"user": user, "endpoint": endpoint, "tier": tier, "ip": "198.51.100.7"}),
            );
            if d["allowed"] == true {
                report(
                    &daemon,
                    user,
                    &endpoint,
                    if id % 67 == 0 { 404 } else { 200 },
                );
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let enterprise = scored_view(&daemon, "sync-enterprise");
    let free = scored_view(&daemon, "sync-free");
    eprintln!("enterprise: {enterprise}\nfree: {free}");
    assert_eq!(enterprise["flagged"], false, "{enterprise}");
    assert!(enterprise["abuse_score"].as_f64().unwrap() < 0.8);
    assert!(enterprise["features"]["limit_usage"].as_f64().unwrap() < 0.5);
    // Once flagged, its limits shrink: the denials the anomaly factor causes are not counted in
    // its features (a flag does not feed itself), so its score falls back while the hold keeps
    // the flag.
    assert_eq!(free["flagged"], true, "{free}");
    assert_eq!(free["scale"], 0.1, "{free}");
}

#[test]
fn a_human_paced_burst_of_twenty_requests_is_not_flagged_under_a_ten_second_window() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(&policy(
        dir.path(),
        &shipped_model(),
        &[
            ("window: 30m", "window: 10s"),
            ("min_requests: 20", "min_requests: 5"),
        ],
    ));
    // Page loads a third to a half second apart, each now and then followed by an API call.
    let pages = [
        "/",
        "/products/12",
        "/products/7",
        "/cart",
        "/account",
        "/products/3",
    ];
    for i in 0..20usize {
        let endpoint = if i % 4 == 3 {
            "/api/recommendations"
        } else {
            pages[i % pages.len()]
        };
        let d = check(&daemon, json!({"user": "reader", "endpoint": endpoint}));
        assert_eq!(d["allowed"], true, "within the free tier's limits: {d}");
        report(&daemon, "reader", endpoint, 200);
        std::thread::sleep(Duration::from_millis([330, 480, 350, 120][i % 4]));
    }
    std::thread::sleep(Duration::from_millis(600));
    let reader = scored_view(&daemon, "reader");
    eprintln!("reader: {reader}");
    assert_eq!(reader["flagged"], false, "{reader}");
    let weight = reader["explanation"]["evidence_weight"].as_f64().unwrap();
    assert!(weight < 0.5, "20 requests are weak evidence: {reader}");
}

#[test]
fn a_novel_subject_is_reported_and_not_scaled_by_its_score_alone() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start(&policy(
        dir.path(),
        &model_with_a_narrow_range(dir.path()),
        &[],
    ));
    // Every request from another address: far past the 0.2 the model saw.
    for i in 0..40u32 {
        let ip = format!("203.0.113.{}", i + 1);
        let d = check(
            &daemon,
            json!({"user": "roamer", "endpoint": "/api/orders", "tier": "enterprise", "ip": ip}),
        );
        assert_eq!(d["scale"], 1.0, "never scaled: {d}");
        report(&daemon, "roamer", "/api/orders", 200);
        std::thread::sleep(Duration::from_millis(30));
    }
    std::thread::sleep(Duration::from_millis(600));
    let roamer = scored_view(&daemon, "roamer");
    eprintln!("roamer: {roamer}");
    assert!(roamer["abuse_score"].as_f64().unwrap() >= 0.8, "{roamer}");
    assert_eq!(
        roamer["flagged"], false,
        "novel, and no denials agree: {roamer}"
    );
    let explanation = &roamer["explanation"];
    assert_eq!(explanation["novel"], true);
    let ips = explanation["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["feature"] == "ips_per_request")
        .unwrap();
    assert_eq!(ips["outside_training_range"], true, "{ips}");
    // base + Σ contributions is the score's logit, and the logit gives the score.
    let sum: f64 = explanation["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["contribution"].as_f64().unwrap())
        .sum::<f64>()
        + explanation["base"].as_f64().unwrap();
    let logit = explanation["logit"].as_f64().unwrap();
    assert!((sum - logit).abs() < 1e-9, "{sum} vs {logit}");
    let score = roamer["abuse_score"].as_f64().unwrap();
    assert!((1.0 / (1.0 + (-logit).exp()) - score).abs() < 1e-9);
    let d = check(
        &daemon,
        json!({"user": "roamer", "endpoint": "/api/orders", "tier": "enterprise"}),
    );
    assert_eq!(d["scale"], 1.0, "still not scaled: {d}");
    let (_, metrics) = daemon.get("/metrics");
    assert!(
        metrics.contains("ratewarden_novel_subjects 1"),
        "one novel subject"
    );
    assert!(metrics.contains("ratewarden_flagged_subjects 0"));
}
