//! The HTTP API of the real binary (`ratewarden serve` with the shipped policy on a free port),
//! over real TCP: decisions with their rate limit headers, batches, forward auth, reports,
//! readiness, metrics and the OpenAPI document, and the errors only a real connection can
//! produce (a broken chunked body).

mod common;

use common::daemon::{Daemon, header, send};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml");
const ADMIN_TOKEN: &str = "binary-test-token";

fn shipped() -> Daemon {
    Daemon::start(
        Path::new(SHIPPED),
        &[("RATEWARDEN_ADMIN_TOKEN", ADMIN_TOKEN)],
    )
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn number(headers: &[(String, String)], name: &str) -> u64 {
    let value = header(headers, name).unwrap_or_else(|| panic!("no {name} in {headers:?}"));
    value
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not an integer: {value:?}"))
}

/// `/api/export` is a fixed window of a minute: when the current window ends within a few
/// seconds, waits for the next one, so five requests and a sixth fall in one window.
fn fresh_export_window(daemon: &Daemon) {
    let (status, headers, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"window-probe","endpoint":"/api/export"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let reset = number(&headers, "x-ratelimit-reset");
    if reset <= 5 {
        std::thread::sleep(Duration::from_millis(reset * 1000 + 200));
    }
}

#[test]
fn check_allows_five_exports_a_minute_then_denies_with_rate_limit_headers() {
    let daemon = shipped();
    fresh_export_window(&daemon);
    let request = r#"{"user":"binary-export","endpoint":"/api/export"}"#;
    for n in 1..=5u64 {
        let (status, headers, body) = daemon.post_json("/v1/check", request);
        assert_eq!(status, 200, "request {n}: {body}");
        assert!(
            header(&headers, "content-type")
                .unwrap()
                .starts_with("application/json")
        );
        let decision = json(&body);
        assert_eq!(decision["allowed"], true);
        assert_eq!(decision["limit"], 5);
        assert_eq!(decision["remaining"], 5 - n);
        assert_eq!(decision["retry_after_ms"], 0);
        assert_eq!(decision["reason"], Value::Null);
        assert_eq!(decision["shadow"], false);
        assert_eq!(
            header(&headers, "ratelimit-policy"),
            Some(r#""export";q=5;w=60"#)
        );
        let reset = number(&headers, "x-ratelimit-reset");
        assert!((1..=60).contains(&reset), "reset {reset}");
        assert_eq!(
            header(&headers, "ratelimit"),
            Some(format!(r#""export";r={};t={reset}"#, 5 - n).as_str())
        );
        assert_eq!(number(&headers, "x-ratelimit-limit"), 5);
        assert_eq!(number(&headers, "x-ratelimit-remaining"), 5 - n);
        assert_eq!(header(&headers, "retry-after"), None);
    }

    let (status, headers, body) = daemon.post_json("/v1/check", request);
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/problem+json")
    );
    let denial = json(&body);
    assert_eq!(denial["allowed"], false);
    assert_eq!(denial["remaining"], 0);
    // A one-minute limit denies while the tier's hourly one has room: a burst.
    assert_eq!(denial["reason"], "burst");
    assert_eq!(denial["violated"], serde_json::json!(["export"]));
    assert_eq!(denial["violated-policies"], serde_json::json!(["export"]));
    assert_eq!(denial["status"], 429);
    assert!(
        denial["type"]
            .as_str()
            .unwrap()
            .ends_with("#quota-exceeded")
    );
    assert!(denial["title"].is_string() && denial["detail"].is_string());
    let retry_ms = denial["retry_after_ms"].as_u64().expect("a retry time");
    assert!(retry_ms > 0 && retry_ms <= 60_000, "{retry_ms}");
    let retry_after = number(&headers, "retry-after");
    assert_eq!(retry_after, retry_ms.div_ceil(1000));
    assert_eq!(
        header(&headers, "ratelimit-policy"),
        Some(r#""export";q=5;w=60"#)
    );
    assert!(
        header(&headers, "ratelimit").is_some_and(|v| v.starts_with(r#""export";r=0;t="#)),
        "{headers:?}"
    );
    assert_eq!(number(&headers, "x-ratelimit-remaining"), 0);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn batch_decides_in_order_each_as_if_alone() {
    let daemon = shipped();
    // /sms/send: 10 an hour, a sliding log (no window edge to race).
    let mut items = vec![r#"{"user":"binary-batch","endpoint":"/sms/send"}"#; 11];
    items.push(r#"{"user":"someone-else","endpoint":"/api/search","tier":"pro","cost":2}"#);
    let (status, headers, body) = daemon.post_json(
        "/v1/check/batch",
        &format!(r#"{{"requests":[{}]}}"#, items.join(",")),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        header(&headers, "content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let results = json(&body)["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), 12);
    for (i, result) in results[..10].iter().enumerate() {
        assert_eq!(result["allowed"], true, "item {i}: {result}");
        assert_eq!(result["remaining"], 9 - i as u64, "item {i}: {result}");
    }
    assert_eq!(results[10]["allowed"], false, "{}", results[10]);
    assert_eq!(results[10]["reason"], "quota", "{}", results[10]);
    assert_eq!(results[10]["violated"], serde_json::json!(["sms"]));
    assert_eq!(results[11]["allowed"], true, "{}", results[11]);

    // The batch consumed what it allowed: a single check after it is denied too.
    let (status, _, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"binary-batch","endpoint":"/sms/send"}"#,
    );
    assert_eq!(status, 429, "{body}");

    // One bad item fails the whole batch, named by its index.
    let (status, headers, body) = daemon.post_json(
        "/v1/check/batch",
        r#"{"requests":[{"user":"b","endpoint":"/x"},{"user":"b","endpoint":"/x","cost":0}]}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/problem+json")
    );
    let problem = json(&body);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("requests[1].cost"),
        "{body}"
    );
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// A batch may hold 1000 items whatever their size: its body cap is 4 MiB, not the 64 KiB of a
/// single check (the caps themselves: tests/http_api/batch.rs).
#[test]
fn a_batch_of_a_thousand_items_is_decided_even_with_every_field_at_its_longest() {
    let daemon = shipped();
    let item = |i: usize, user_bytes: usize, endpoint_bytes: usize| {
        let user = format!("{i:0>user_bytes$}");
        let endpoint = format!("/{:x>1$}", "", endpoint_bytes - 1);
        format!(r#"{{"user":"{user}","endpoint":"{endpoint}","ip":"203.0.113.7","tier":"pro"}}"#)
    };
    let batch = |items: Vec<String>| format!(r#"{{"requests":[{}]}}"#, items.join(","));

    let small = batch((0..1000).map(|i| item(i, 10, 11)).collect());
    assert!(small.len() > 64 * 1024, "{} bytes", small.len());
    let (status, _, body) = daemon.post_json("/v1/check/batch", &small);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["results"].as_array().map(Vec::len), Some(1000));

    let longest = batch((0..1000).map(|i| item(i, 512, 2048)).collect());
    let (status, _, body) = daemon.post_json("/v1/check/batch", &longest);
    assert_eq!(status, 200, "{} bytes: {body}", longest.len());
}

/// `GET /v1/auth` with the given extra header lines.
fn auth(daemon: &Daemon, headers: &str) -> (u16, Vec<(String, String)>, String) {
    let reply = send(
        daemon.addr,
        format!("GET /v1/auth HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\n{headers}\r\n")
            .as_bytes(),
    );
    let body = reply.text();
    (reply.status, reply.headers, body)
}

#[test]
fn forward_auth_reads_the_original_uri_and_the_api_key() {
    let daemon = shipped();
    let identity = "X-Api-Key: binary-auth\r\n";
    for n in 1..=10u64 {
        let (status, headers, body) = auth(
            &daemon,
            &format!("{identity}X-Original-URI: /sms/send?to=123\r\n"),
        );
        assert_eq!(status, 200, "request {n}: {body}");
        assert_eq!(body, "", "forward auth allows with an empty body");
        assert_eq!(
            header(&headers, "ratelimit-policy"),
            Some(r#""sms";q=10;w=3600"#)
        );
        assert_eq!(number(&headers, "x-ratelimit-limit"), 10);
        assert_eq!(number(&headers, "x-ratelimit-remaining"), 10 - n);
        assert!(header(&headers, "ratelimit").is_some());
        assert!(header(&headers, "x-ratelimit-reset").is_some());
    }
    let (status, headers, body) = auth(
        &daemon,
        &format!("{identity}X-Original-URI: https://example.com/sms/send#x\r\n"),
    );
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/problem+json")
    );
    assert!(number(&headers, "retry-after") >= 1);
    assert_eq!(number(&headers, "x-ratelimit-remaining"), 0);
    let problem = json(&body);
    assert_eq!(problem["status"], 429);
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("#quota-exceeded")
    );
    assert_eq!(problem["violated-policies"], serde_json::json!(["sms"]));

    // Another subject is not affected; X-Forwarded-Uri (Traefik, Caddy) works as well.
    let (status, headers, body) = auth(
        &daemon,
        "X-Api-Key: someone-else\r\nX-Forwarded-Uri: /api/search?q=rust\r\n",
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        header(&headers, "ratelimit-policy").is_some_and(|v| v.starts_with(r#""search";"#)),
        "{headers:?}"
    );

    // Without either URI header: a 400 that names both.
    let (status, headers, body) = auth(&daemon, identity);
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/problem+json")
    );
    let detail = json(&body)["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("X-Original-URI") && detail.contains("X-Forwarded-Uri"),
        "{detail}"
    );
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn report_is_accepted_and_operations_endpoints_answer() {
    let daemon = shipped();
    let (status, _, body) = daemon.post_json(
        "/v1/report",
        r#"{"user":"alice","endpoint":"/login","status":401,"ip":"203.0.113.7","latency_ms":12}"#,
    );
    assert_eq!(status, 202, "{body}");
    let (status, _, body) = daemon.post_json(
        "/v1/report",
        r#"{"user":"alice","endpoint":"/login","status":600}"#,
    );
    assert_eq!(status, 400, "{body}");

    let (status, _, body) = daemon.get_full("/readyz");
    assert_eq!(status, 200, "{body}");

    // A decision first, so the decision counter has a sample.
    let (status, _, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"metrics","endpoint":"/api/search"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (status, headers, metrics) = daemon.get_full("/metrics");
    assert_eq!(status, 200);
    assert!(
        header(&headers, "content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    assert!(
        metrics.contains("ratewarden_decisions_total{"),
        "no decisions counter in:\n{metrics}"
    );
    assert!(metrics.contains(r#"outcome="allowed""#), "{metrics}");

    let (status, headers, document) = daemon.get_full("/openapi.json");
    assert_eq!(status, 200);
    assert!(
        header(&headers, "content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let document = json(&document);
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));
    for path in ["/v1/check", "/v1/check/batch", "/v1/auth", "/v1/report"] {
        assert!(
            document["paths"].get(path).is_some(),
            "{path} is not in the OpenAPI document"
        );
    }
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn errors_name_the_problem_on_a_real_connection() {
    let daemon = shipped();
    let problem = |status: u16, headers: &[(String, String)], body: &str| -> String {
        assert_eq!(
            header(headers, "content-type"),
            Some("application/problem+json"),
            "{body}"
        );
        let problem = json(body);
        assert_eq!(problem["status"], status, "{body}");
        problem["detail"].as_str().unwrap().to_owned()
    };

    // A broken chunked body is a 400 that says so, not a 413 about the size.
    let reply = send(
        daemon.addr,
        b"POST /v1/check HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\
          Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}",
    );
    assert_eq!(reply.status, 400, "{}", reply.text());
    let detail = problem(400, &reply.headers, &reply.text());
    assert!(detail.contains("chunk"), "{detail}");

    // A chunked body over 64 KiB is a 413.
    let mut raw = b"POST /v1/check HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\
          Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    for _ in 0..70 {
        raw.extend_from_slice(b"400\r\n");
        raw.extend(std::iter::repeat_n(b' ', 0x400));
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let reply = send(daemon.addr, &raw);
    assert_eq!(reply.status, 413, "{}", reply.text());
    problem(413, &reply.headers, &reply.text());

    // An unknown field is named whole, dots included, with the item it is in.
    let (status, headers, body) =
        daemon.post_json("/v1/check", r#"{"user":"a","endpoint":"/x","co.st":2}"#);
    assert_eq!(status, 400, "{body}");
    let detail = problem(400, &headers, &body);
    assert!(detail.starts_with("unknown field `co.st`"), "{detail}");
    let (status, headers, body) = daemon.post_json(
        "/v1/check/batch",
        r#"{"requests":[{"user":"a","endpoint":"/x","a.b":1}]}"#,
    );
    assert_eq!(status, 400, "{body}");
    let detail = problem(400, &headers, &body);
    assert!(
        detail.starts_with("requests[0]: unknown field `a.b`"),
        "{detail}"
    );

    // A path that does not decode: axum's reason is kept as the detail.
    let (status, headers, body) = daemon.request(
        "GET",
        "/v1/admin/subjects/%FF",
        &[("Authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        "",
    );
    assert_eq!(status, 400, "{body}");
    let detail = problem(400, &headers, &body);
    assert!(detail.contains("UTF-8"), "{detail}");
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
