//! The dashboards and alert rules of `dashboards/` against real parts: `promtool` checks and
//! unit-tests the rules; a real Prometheus (Debian's package) scrapes the real daemon on a real
//! redis-server every second under generated traffic; then every panel query of both
//! dashboards, variables substituted as Grafana would, must return data, every metric a panel
//! reads must be in /metrics, and alert rules must fire. The run's data is drawn into
//! `dashboards/preview-*.png` (docs/guides/monitoring.md shows them).

mod common;
#[path = "dashboards/files.rs"]
mod files;
#[path = "dashboards/panels.rs"]
mod panels;
#[path = "dashboards/preview.rs"]
mod preview;
#[path = "dashboards/traffic.rs"]
mod traffic;

use common::daemon::Daemon;
use common::prometheus::{Prometheus, Series};
use common::redis::RedisServer;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Alerts that the run must fire in the copy of the rules with every `for` at 0.
const FIRED_BY_THE_RUN: [&str; 6] = [
    "RatewardenStoreErrors",
    // The Redis stopped mid-run fails the fleet control loop's calls too.
    "RatewardenControlStoreErrors",
    "RatewardenLoadFactorHeldLow",
    // The search rule's Prometheus is not there.
    "RatewardenLoadQueryFailing",
    "RatewardenReloadFailed",
    // The run leaves the refused file on disk.
    "RatewardenPolicyFileRefused",
];

pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs_f64()
}

/// The shipped policy on a real Redis, without the abuse model (not in this build yet).
fn policy(dir: &Path, redis: &RedisServer) -> PathBuf {
    let model = repo("models/abuse.json");
    let yaml: Vec<String> = common::EXAMPLE_POLICY
        .lines()
        .map(|line| line.replace("url: memory://", &format!("url: \"{}\"", redis.url())))
        // The shipped 20 ms: one slow call on this busy machine (Prometheus, Redis and the
        // traffic share 2 cores) would be answered by the local fallback and split the counts.
        .map(|line| line.replace("timeout: 20ms", "timeout: 1s"))
        // Rules with load sources of their own, so the Load sources row has data: export
        // follows the reports of the steady stream; search queries a Prometheus that is not
        // there (its errors fire RatewardenLoadQueryFailing).
        .map(|line| match line.as_str() {
            "  - path: /api/export" => format!(
                "{line}\n    load: {{ source: upstream, upstream: {{ latency_target: 100ms, min_reports: 2 }} }}"
            ),
            "  - path: /api/search" => format!(
                "{line}\n    load: {{ source: prometheus, prometheus: {{ url: \"http://127.0.0.1:{}\", query: up, keep_last: 2 }} }}",
                common::redis::free_port()
            ),
            _ => line,
        })
        .map(|line| {
            line.replace(
                "model: models/abuse.json",
                &format!("model: {}", model.display()),
            )
        })
        .collect();
    let path = dir.join("ratewarden.yaml");
    std::fs::write(&path, yaml.join("\n")).expect("the policy is writable");
    path
}

/// dashboards/prometheus.yml with the daemon as target, 1 s intervals, and the rules twice:
/// alerts.yml as it is, and a copy with every `for` at 0 (group `ratewarden-immediate`).
fn prometheus_config(dir: &Path, target: &str) -> PathBuf {
    let example = std::fs::read_to_string(repo("dashboards/prometheus.yml"))
        .expect("prometheus.yml is readable");
    let mut config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&example).expect("prometheus.yml is YAML");
    config["global"]["scrape_interval"] = "1s".into();
    config["global"]["evaluation_interval"] = "1s".into();
    config["scrape_configs"][0]["static_configs"][0]["targets"] = vec![target.to_owned()].into();

    let rules_text =
        std::fs::read_to_string(repo("dashboards/alerts.yml")).expect("alerts.yml is readable");
    let mut immediate: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&rules_text).expect("alerts.yml is YAML");
    let group = &mut immediate["groups"][0];
    group["name"] = "ratewarden-immediate".into();
    if let Some(rules) = group["rules"].as_sequence_mut() {
        for rule in rules {
            rule["for"] = "0s".into();
        }
    }
    let immediate_path = dir.join("alerts-immediate.yml");
    std::fs::write(
        &immediate_path,
        serde_yaml_ng::to_string(&immediate).expect("serialises"),
    )
    .expect("writable");
    config["rule_files"] = vec![
        repo("dashboards/alerts.yml").display().to_string(),
        immediate_path.display().to_string(),
    ]
    .into();
    let path = dir.join("prometheus.yml");
    std::fs::write(
        &path,
        serde_yaml_ng::to_string(&config).expect("serialises"),
    )
    .expect("writable");
    path
}

/// Names of the samples in a /metrics text.
fn exported_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect()
}

/// Whether any sample is a finite number other than 0.
fn has_data(result: &[Series]) -> bool {
    result
        .iter()
        .any(|s| s.samples.iter().any(|(_, v)| v.is_finite() && *v != 0.0))
}

/// Polls `/api/v1/rules` until `done` holds for the states of the alerting rules (group, name,
/// state), at most `within`; returns the last states.
fn rule_states(
    prometheus: &Prometheus,
    within: Duration,
    done: impl Fn(&BTreeSet<(String, String, String)>) -> bool,
) -> BTreeSet<(String, String, String)> {
    let deadline = Instant::now() + within;
    loop {
        let data = prometheus.api("/api/v1/rules", &[("type", "alert")]);
        let states: BTreeSet<(String, String, String)> = data["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| {
                let group = g["name"].as_str().unwrap_or("").to_owned();
                g["rules"].as_array().into_iter().flatten().map(move |r| {
                    (
                        group.clone(),
                        r["name"].as_str().unwrap_or("").to_owned(),
                        r["state"].as_str().unwrap_or("").to_owned(),
                    )
                })
            })
            .collect();
        if done(&states) || Instant::now() > deadline {
            return states;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn every_panel_query_has_data_and_alerts_fire_on_a_real_prometheus() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut redis = RedisServer::start();
    let policy = policy(dir.path(), &redis);
    let daemon = Daemon::start(&policy, &[("RATEWARDEN_ADMIN_TOKEN", traffic::ADMIN_TOKEN)]);
    let addr = daemon.addr;
    for user in ["user-3", "user-9", "user-15"] {
        let path = format!("/v1/admin/subjects/{user}/tier");
        let (status, body) = traffic::admin(addr, "PUT", &path, r#"{"tier": "pro"}"#);
        assert_eq!(status, 200, "{body}");
    }

    let prometheus = Prometheus::start(&prometheus_config(dir.path(), &addr.to_string()));
    let deadline = Instant::now() + Duration::from_secs(15);
    while !has_data(&prometheus.query("up{job=\"ratewarden\"}", now())) {
        assert!(
            Instant::now() < deadline,
            "prometheus never scraped the daemon: {}",
            prometheus.targets()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The run: a steady stream, and one event after another on top of it.
    let start = now();
    let mut events: Vec<(f64, &'static str)> = Vec::new();
    let steady = traffic::Steady::start(addr);
    // A credential stuffer from the start: flagged after its 20th request (10 s), then denied
    // with reason `anomaly`.
    let abuser = traffic::Stuffer::start(addr);
    let pause = |seconds: f64| std::thread::sleep(Duration::from_secs_f64(seconds));
    pause(2.0);
    events.push((now() - start, "bursts"));
    traffic::burst(addr);
    traffic::quota(addr);
    traffic::shadow(addr);
    pause(2.0);
    events.push((now() - start, "reload"));
    traffic::reload_ok(addr);
    pause(2.0);
    events.push((now() - start, "Redis down"));
    redis.kill();
    pause(3.0);
    events.push((now() - start, "Redis up"));
    redis.restart();
    pause(3.0);
    events.push((now() - start, "bad reload"));
    traffic::failed_reload(addr, &policy);
    pause(2.0);
    events.push((now() - start, "abuser flagged"));
    abuser.wait_flagged_and_shrunk();
    events.push((now() - start, "load 0.5"));
    traffic::pin_load(addr);
    pause(7.0);
    let statuses = steady.stop();
    // Two more scrapes and rule evaluations after the last request.
    pause(2.5);
    let end = now();
    let range = format!("{:.0}s", end - start);
    let server_errors = statuses.iter().filter(|s| **s >= 500).count();
    assert_eq!(server_errors, 0, "5xx answers in the steady stream");
    assert!(statuses.len() > 200, "only {} requests", statuses.len());

    let (status, metrics) = daemon.get("/metrics");
    assert_eq!(status, 200);
    let exported = exported_names(&metrics);

    let mut failures: Vec<String> = Vec::new();
    let mut with_data = 0;
    for query in panels::DASHBOARDS.iter().flat_map(|s| panels::queries(s)) {
        let expr = query.substituted(&range);
        let result = if query.instant {
            prometheus.query(&expr, end)
        } else {
            prometheus.query_range(&expr, start, end, 1.0)
        };
        if has_data(&result) {
            with_data += 1;
        } else {
            failures.push(format!(
                "{}: no data ({} series, all empty, 0 or NaN): {expr}",
                query.id(),
                result.len()
            ));
        }
        for name in panels::metric_names(&query.expr) {
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(&name);
            if !exported.contains(&name) && !exported.contains(base) {
                failures.push(format!("{}: {name} is not in /metrics", query.id()));
            }
        }
    }
    let rules_text = std::fs::read_to_string(repo("dashboards/alerts.yml")).unwrap();
    for name in panels::metric_names(&rules_text) {
        if !exported.contains(&name) {
            failures.push(format!("alerts.yml: {name} is not in /metrics"));
        }
    }

    // The template variables list the rules and tiers of the run.
    for stem in panels::DASHBOARDS {
        let dashboard = panels::load(stem);
        for variable in dashboard["templating"]["list"].as_array().unwrap() {
            let query = variable["definition"].as_str().unwrap_or("");
            let (selector, label) =
                panels::label_values(query).unwrap_or_else(|| panic!("{stem}: {query}"));
            let data = prometheus.api(
                &format!("/api/v1/label/{label}/values"),
                &[
                    ("match[]", &panels::substitute(&selector, &range)),
                    ("start", &format!("{start:.3}")),
                    ("end", &format!("{end:.3}")),
                ],
            );
            let values: BTreeSet<&str> = data
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let expected: &[&str] = match label.as_str() {
                "rule" => &["search", "export", "burst", "hourly", "login", "endpoint"],
                _ => &["free", "pro", "enterprise"],
            };
            for value in expected {
                if !values.contains(value) {
                    failures.push(format!("{stem}: ${label} lacks {value}: {values:?}"));
                }
            }
        }
    }

    // Alerts: the reload failure fires from alerts.yml as it is; with every `for` at 0 the
    // run fires exactly the store, load factor, load query, reload and refused-file alerts.
    let expected_immediate: BTreeSet<String> =
        FIRED_BY_THE_RUN.iter().map(|s| s.to_string()).collect();
    let firing_in = |states: &BTreeSet<(String, String, String)>, group: &str| {
        states
            .iter()
            .filter(|(g, _, state)| g == group && state == "firing")
            .map(|(_, name, _)| name.clone())
            .collect::<BTreeSet<String>>()
    };
    let states = rule_states(&prometheus, Duration::from_secs(10), |states| {
        firing_in(states, "ratewarden-immediate") == expected_immediate
            && firing_in(states, "ratewarden").contains("RatewardenReloadFailed")
    });
    let immediate = firing_in(&states, "ratewarden-immediate");
    if immediate != expected_immediate {
        failures.push(format!(
            "with `for` at 0, firing {immediate:?}, expected {expected_immediate:?}"
        ));
    }
    let alerts = prometheus.api("/api/v1/alerts", &[]);
    let reload_alert =
        alerts["alerts"].as_array().into_iter().flatten().find(|a| {
            a["labels"]["alertname"] == "RatewardenReloadFailed" && a["state"] == "firing"
        });
    match reload_alert {
        Some(alert) => {
            assert_eq!(alert["labels"]["kind"], "policy", "{alert}");
            assert_eq!(alert["labels"]["instance"], addr.to_string(), "{alert}");
            let summary = alert["annotations"]["summary"].as_str().unwrap_or("");
            assert_eq!(
                summary,
                format!("ratewarden {addr}: a policy reload failed"),
                "{alert}"
            );
        }
        None => failures.push(format!(
            "RatewardenReloadFailed is not firing in /api/v1/alerts: {alerts}"
        )),
    }

    // The previews, from this run's data.
    let drawing = Instant::now();
    let run = preview::Run {
        prometheus: &prometheus,
        start,
        end,
        events: &events,
    };
    preview::draw(
        &run,
        "overview",
        &[
            "Decisions: allowed / denied",
            "Rejections by reason",
            "Decision latency by API",
            "Store errors by action",
            "Load factor and CPU",
            "Config and model reloads",
        ],
        (2, 3),
        &repo("dashboards/preview-overview.png"),
    );
    preview::draw(
        &run,
        "abuse",
        &[
            "Flagged subjects over time",
            "Abuse score distribution",
            "Anomaly rejections by rule",
            "Shadow-mode would-be rejections per rule",
            "Shadow would-be rejections, share of all decisions",
            "Top rules by rejection ratio",
        ],
        (2, 3),
        &repo("dashboards/preview-abuse.png"),
    );

    eprintln!(
        "dashboards: {with_data} panel queries with data over {range}; {} requests in the \
         steady stream; previews drawn in {:.1} s",
        statuses.len(),
        drawing.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
