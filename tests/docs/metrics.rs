//! Metric names both ways: every `ratewarden_...` name the documents mention is served by
//! `/metrics` of real daemons after a little traffic, and every family served is in the HTTP API
//! reference.

use crate::common::daemon::{Daemon, header};
use crate::repo::{documents, root};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry;
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const ADMIN_TOKEN: &str = "docs test token";

/// Every `ratewarden_...` name the documents mention, with where it is first mentioned.
fn documented_metrics() -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc.path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("ratewarden_") {
                let previous = line[..at].chars().next_back();
                let tail = &line[at + "ratewarden_".len()..];
                let len = tail
                    .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(tail.len());
                let name = format!("ratewarden_{}", &tail[..len]);
                let part_of_a_word = previous
                    .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
                if len > 0 && !name.ends_with('_') && !part_of_a_word {
                    names.entry(name).or_insert_with(|| doc.at(n + 1));
                }
            }
        }
    }
    names
}

/// Metric names in a `/metrics` text: sample names, and every family with, for histograms,
/// its `_bucket`, `_sum` and `_count` series. Families go to `families` too.
fn served_names(text: &str, names: &mut BTreeSet<String>, families: &mut BTreeSet<String>) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            families.insert(name.to_owned());
            names.insert(name.to_owned());
            if kind == "histogram" {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let name = line.split(['{', ' ']).next().unwrap_or("");
            names.insert(name.to_owned());
        }
    }
}

/// The gRPC address from the daemon's "listening" log line.
fn grpc_addr(daemon: &mut Daemon) -> std::net::SocketAddr {
    let line = daemon.wait_for("ratewarden listening", Duration::from_secs(20));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("grpc="))
        .expect("the listening line names the gRPC address")
        .parse()
        .expect("a socket address")
}

fn post(daemon: &Daemon, path: &str, body: &str) -> u16 {
    daemon.post_json(path, body).0
}

/// Two real daemons with some traffic each, so that every metric has a series: the shipped
/// policy (checks, a burst denial, a batch, forward auth, a report, a stored tier and the tier
/// lookups it starts, an unmatched gRPC descriptor) and a tiny embedded store that fills up
/// (store errors). Returns every name served, and the families.
fn served_metrics() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut shipped = Daemon::start(
        &root().join("ratewarden.yaml"),
        &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    let grpc = grpc_addr(&mut shipped);
    // `/api/search` is a GCRA limit with a burst of 5 under the hourly tier limit: the sixth
    // quick request is denied with reason `burst`, the ones before it come near the limit.
    let statuses: Vec<u16> = (0..6)
        .map(|_| {
            post(
                &shipped,
                "/v1/check",
                r#"{"user":"docs-a","endpoint":"/api/search"}"#,
            )
        })
        .collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429]);
    assert_eq!(
        post(
            &shipped,
            "/v1/check/batch",
            r#"{"requests":[{"user":"docs-b","endpoint":"/x"}]}"#
        ),
        200
    );
    let (status, _, body) = shipped.request(
        "GET",
        "/v1/auth",
        &[("X-Original-URI", "/api/export"), ("X-Api-Key", "docs-c")],
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        post(
            &shipped,
            "/v1/report",
            r#"{"user":"docs-a","endpoint":"/login","status":401}"#
        ),
        202
    );
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let (status, _, body) = shipped.request(
        "PUT",
        "/v1/admin/subjects/docs-d/tier",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        r#"{"tier":"pro"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        post(
            &shipped,
            "/v1/check",
            r#"{"user":"docs-e","endpoint":"/x"}"#
        ),
        200
    );
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut client = RateLimitServiceClient::connect(format!("http://{grpc}"))
            .await
            .expect("the gRPC server accepts connections");
        let descriptor = RateLimitDescriptor {
            entries: vec![Entry {
                key: "path".to_owned(),
                value: "/x".to_owned(),
            }],
            ..Default::default()
        };
        client
            .should_rate_limit(RateLimitRequest {
                domain: "docs".to_owned(),
                descriptors: vec![descriptor],
                hits_addend: 0,
            })
            .await
            .expect("a descriptor without a subject passes");
    });

    // 256 shards of one key each: a batch of 1000 new users overflows some of them. First a
    // stored tier that a reload then removes (decisions under a tier the policy lost).
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.yaml");
    let tier = |name: &str| {
        format!(
            "  {name}:\n    limits: [ {{ name: hourly, algorithm: fixed_window, requests: 10, window: 1h }} ]\n"
        )
    };
    let policy =
        |tiers: &str| format!("store: {{ max_keys: 1 }}\ndefault_tier: free\ntiers:\n{tiers}");
    std::fs::write(&tiny, policy(&(tier("free") + &tier("pro")))).unwrap();
    let full = Daemon::start(&tiny, &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)]);
    let admin = |method: &str, path: &str, body: &str| {
        let (status, _, text) = full.request(
            method,
            path,
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            body,
        );
        assert_eq!(status, 200, "{method} {path}: {text}");
    };
    admin("PUT", "/v1/admin/subjects/docs-t/tier", r#"{"tier":"pro"}"#);
    std::fs::write(&tiny, policy(&tier("free"))).unwrap();
    admin("POST", "/v1/admin/reload", "");
    assert_eq!(
        post(&full, "/v1/check", r#"{"user":"docs-t","endpoint":"/x"}"#),
        200
    );
    let items: Vec<String> = (0..1000)
        .map(|i| format!(r#"{{"user":"docs-{i}","endpoint":"/x"}}"#))
        .collect();
    full.post_json(
        "/v1/check/batch",
        &format!(r#"{{"requests":[{}]}}"#, items.join(",")),
    );

    let (mut names, mut families) = (BTreeSet::new(), BTreeSet::new());
    for daemon in [&shipped, &full] {
        let (status, headers, text) = daemon.get_full("/metrics");
        assert_eq!(status, 200);
        assert!(header(&headers, "content-type").is_some_and(|c| c.starts_with("text/plain")));
        served_names(&text, &mut names, &mut families);
    }
    (names, families)
}

#[test]
fn metric_names_in_the_docs_are_served_and_every_metric_is_documented() {
    let documented = documented_metrics();
    let (served, families) = served_metrics();
    let unknown: Vec<String> = documented
        .iter()
        .filter(|(name, _)| !served.contains(*name))
        .map(|(name, at)| format!("{at}: {name}"))
        .collect();
    assert!(
        unknown.is_empty(),
        "the docs name metrics that /metrics does not serve:\n{}\nserved: {served:?}",
        unknown.join("\n")
    );
    let reference = std::fs::read_to_string(root().join("docs/reference/http-api.md")).unwrap();
    let undocumented: Vec<&String> = families
        .iter()
        .filter(|f| !reference.contains(&format!("`{f}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "docs/reference/http-api.md does not list {undocumented:?}"
    );
    assert!(
        documented.len() >= 17,
        "only {} metric names found",
        documented.len()
    );
}
