//! Forward auth through real proxies: nginx (`auth_request`) and Caddy (`forward_auth`), each
//! started here on a free loopback port with the configuration the repository ships in
//! `examples/` (`examples/nginx/ratewarden.conf`, `examples/caddy/Caddyfile`, read at test time,
//! so the examples cannot rot), in front of a small upstream, with the real `ratewarden` binary
//! deciding. Five exports pass to the upstream with the rate limit headers on the client's
//! response, the sixth is ratewarden's 429 (its problem+json body, `Retry-After`, `RateLimit*`
//! and `X-RateLimit-*`), and another key still passes; the client's own URI, tier and user
//! headers change nothing; a store failing under `on_error: deny` and a key too long to decide
//! reach the client as ratewarden's 503 and 400, not the proxy's own error page.

mod common;

#[path = "proxies/harness.rs"]
mod harness;

use common::daemon::{Daemon, Reply, header};
use common::http::structured;
use harness::{Proxy, Upstream, caddy, free_port, nginx};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml");

/// `/api/export` is a fixed window of an epoch-aligned minute: when it ends within a few
/// seconds, waits for the next one, so the burst falls in one window.
fn fresh_export_window(daemon: &Daemon) {
    let (status, headers, body) = daemon.post_json(
        "/v1/check",
        r#"{"user":"window-probe","endpoint":"/api/export"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let reset: u64 = header(&headers, "x-ratelimit-reset")
        .and_then(|v| v.parse().ok())
        .expect("x-ratelimit-reset");
    if reset <= 5 {
        std::thread::sleep(Duration::from_millis(reset * 1000 + 200));
    }
}

/// Five exports pass through `proxy` to the upstream, the sixth is ratewarden's 429 with its
/// headers, and another key passes.
fn five_then_429(proxy: &Proxy, daemon: &Daemon, upstream: &Upstream) {
    fresh_export_window(daemon);
    for n in 1..=5u64 {
        let reply = proxy.get("/api/export", "k");
        assert_eq!(reply.status, 200, "request {n}: {reply:?} {}", reply.text());
        assert_eq!(reply.text(), "upstream /api/export", "request {n}");
        // The client sees its quota on an allowed response too.
        let policy = reply.header("ratelimit-policy");
        assert_eq!(
            policy,
            Some("\"export\";q=5;w=60"),
            "request {n}: {reply:?}"
        );
        let state = structured(reply.header("ratelimit").expect("RateLimit"));
        assert_eq!(state.params[0], ("r".to_owned(), 5 - n as i64), "{reply:?}");
        assert_eq!(reply.header("x-ratelimit-limit"), Some("5"), "{reply:?}");
        let remaining = (5 - n).to_string();
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some(remaining.as_str())
        );
        assert!(reply.header("x-ratelimit-reset").is_some(), "{reply:?}");
    }
    assert_eq!(upstream.hits(), 5);

    let denied = proxy.get("/api/export", "k");
    assert_eq!(denied.status, 429, "{denied:?}\n{}", proxy.log_text());
    let retry: u64 = denied
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {denied:?}"))
        .parse()
        .expect("Retry-After is whole seconds");
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    let policy = structured(denied.header("ratelimit-policy").expect("RateLimit-Policy"));
    assert_eq!(policy.name, "export");
    assert_eq!(
        policy.params,
        [("q".to_owned(), 5), ("w".to_owned(), 60)],
        "{denied:?}"
    );
    let state = structured(denied.header("ratelimit").expect("RateLimit"));
    assert_eq!(state.name, "export");
    assert_eq!(state.params[0], ("r".to_owned(), 0), "{denied:?}");
    assert_eq!(state.params[1].0, "t");
    assert!((1..=60).contains(&state.params[1].1), "{denied:?}");
    assert_eq!(denied.header("x-ratelimit-limit"), Some("5"), "{denied:?}");
    assert_eq!(
        denied.header("x-ratelimit-remaining"),
        Some("0"),
        "{denied:?}"
    );
    let reset = state.params[1].1.to_string();
    assert_eq!(denied.header("x-ratelimit-reset"), Some(reset.as_str()));
    assert_eq!(denied.header("x-ratewarden-problem"), None, "{denied:?}");
    let problem = problem_body(&denied);
    assert_eq!(
        problem,
        json!({
            "type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
            "title": "Quota exceeded",
            "status": 429,
            "detail": format!("limit \"export\" allows 5 per 60 s; retry in {retry} s"),
            "violated-policies": ["export"],
        })
    );
    assert_eq!(upstream.hits(), 5, "a denial reached the upstream");

    let other = proxy.get("/api/export", "another-key");
    assert_eq!(other.status, 200, "{other:?}");
    assert_eq!(other.text(), "upstream /api/export");
    assert_eq!(upstream.hits(), 6);

    spoofed_headers_change_nothing(proxy, upstream);
}

/// The client's own copies of the headers the proxy speaks for: a URI header naming another
/// path does not pick another endpoint rule, and `X-User-Id` without a key does not spend
/// another subject's quota (the subject is then the client's address).
fn spoofed_headers_change_nothing(proxy: &Proxy, upstream: &Upstream) {
    let spoofed = proxy.get_with(
        "/api/export",
        &[
            ("X-Api-Key", "k"),
            ("X-Original-URI", "/elsewhere"),
            ("X-Forwarded-Uri", "/elsewhere"),
        ],
    );
    assert_eq!(spoofed.status, 429, "{spoofed:?}");
    assert_eq!(
        spoofed.header("ratelimit-policy"),
        Some("\"export\";q=5;w=60")
    );
    let keyless = proxy.get_with("/api/export", &[("X-User-Id", "k")]);
    assert_eq!(keyless.status, 200, "{keyless:?}");
    assert_eq!(upstream.hits(), 7);
}

/// A request allowed while the store fails under `on_error: allow` carries no rate limit
/// headers, to the upstream or to the client: not empty ones, not a proxy's placeholders, and
/// (where the proxy copies ratewarden's to the upstream, `forged`) not the client's own.
fn allowed_without_state_has_no_headers(proxy: &Proxy, upstream: &Upstream, forged: bool) {
    let mut headers = vec![("X-Api-Key", "k")];
    if forged {
        headers.push(("RateLimit-Policy", "\"forged\";q=1000"));
    }
    let reply = proxy.get_with("/api/export", &headers);
    assert_eq!(reply.status, 200, "{reply:?} {}", proxy.log_text());
    assert_eq!(reply.text(), "upstream /api/export");
    for name in [
        "ratelimit",
        "ratelimit-policy",
        "x-ratelimit-limit",
        "x-ratelimit-reset",
    ] {
        assert_eq!(reply.header(name), None, "{reply:?}");
    }
    let head = upstream.last_head().to_ascii_lowercase();
    assert!(!head.contains("ratelimit"), "{head}");
}

#[test]
fn nginx_and_caddy_snippets_add_no_rate_limit_headers_ratewarden_did_not_send() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_store_down(dir.path(), "allow");
    let upstream = Upstream::start();
    let proxy = nginx(dir.path(), daemon.addr, upstream.addr);
    allowed_without_state_has_no_headers(&proxy, &upstream, false);
    drop(proxy);
    let proxy = caddy(dir.path(), daemon.addr, upstream.addr);
    allowed_without_state_has_no_headers(&proxy, &upstream, true);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

/// A request ratewarden cannot decide (a key over 512 bytes or sent twice, a path servers read
/// two ways, however long) reaches the client as its 400 problem, and one with too many header
/// fields as its 431, not as the proxy's own error page, and without empty rate limit headers.
fn undecidable_is_400(proxy: &Proxy, upstream: &Upstream) {
    // Under `/api/export/` to a backend routing the raw path, a search to nginx and Go.
    let reply = proxy.get("/api/export/../search", "k");
    let problem = refused_before_upstream(proxy, upstream, &reply, 400);
    assert_eq!(
        problem["detail"],
        "the requested path: the path is ambiguous: its `..` segment takes it to \"/api/search\" \
         where dot-segments are removed (nginx, Go) but not where the path is routed as sent \
         (Express); send the path without `..`"
    );
    // An export to Caddy's file_server and Python's http.server, `/api/export/` to nginx.
    let reply = proxy.get("/api/export/%2e", "k");
    let problem = refused_before_upstream(proxy, upstream, &reply, 400);
    assert_eq!(
        problem["detail"],
        "the requested path: the path is ambiguous: its final `.` segment makes it \
         \"/api/export/\" (nginx, RFC 3986) and \"/api/export\" (Go's path.Clean, Python's \
         http.server); send the one you mean"
    );
    let key = "k".repeat(513);
    let reply = proxy.get("/api/export", &key);
    assert_eq!(
        refused_before_upstream(proxy, upstream, &reply, 400),
        json!({
            "type": "about:blank",
            "title": "Bad Request",
            "status": 400,
            "detail": "the subject is over 512 bytes",
        })
    );
    // A backend may read the other copy of a key sent twice.
    let reply = proxy.get_with(
        "/api/export",
        &[("X-Api-Key", "made-up"), ("X-Api-Key", "k")],
    );
    let problem = refused_before_upstream(proxy, upstream, &reply, 400);
    assert_eq!(
        problem["detail"],
        "header X-Api-Key is sent more than once: send one"
    );
    // A long path quoted twice in the problem still fits the headers nginx reads (its copy of
    // the detail is cut; Caddy passes the body whole).
    let long = format!("/{}/b/..%2Fc", "a".repeat(1900));
    let reply = proxy.get(&long, "k");
    let problem = refused_before_upstream(proxy, upstream, &reply, 400);
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with("the requested path: the path is ambiguous"),
        "{detail}"
    );
    // Over 100 header fields: ratewarden's 431, not the proxy's 500.
    let many: Vec<(String, &str)> = (0..110).map(|i| (format!("X-Filler-{i}"), "v")).collect();
    let mut headers: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    headers.push(("X-Api-Key", "k"));
    let reply = proxy.get_with("/api/export", &headers);
    assert_eq!(reply.status, 431, "{reply:?}\n{}", proxy.log_text());
    assert_eq!(upstream.hits(), 0, "a refused request reached the upstream");
}

/// The problem body of a reply that ratewarden refused with `status`: it never reached the
/// upstream, and carries no (empty) rate limit headers, there being no limit state to describe.
fn refused_before_upstream(
    proxy: &Proxy,
    upstream: &Upstream,
    reply: &Reply,
    status: u16,
) -> Value {
    assert_eq!(
        reply.status,
        status,
        "{reply:?} {}\n{}",
        reply.text(),
        proxy.log_text()
    );
    for name in ["ratelimit", "ratelimit-policy", "x-ratelimit-limit"] {
        assert_eq!(reply.header(name), None, "{reply:?}");
    }
    assert_eq!(upstream.hits(), 0, "a refused request reached the upstream");
    problem_body(reply)
}

/// The body of a problem reply, checked to be `application/problem+json`.
fn problem_body(reply: &Reply) -> Value {
    assert_eq!(
        reply.header("content-type"),
        Some("application/problem+json"),
        "{reply:?}"
    );
    serde_json::from_str(&reply.text())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {reply:?} {}", reply.text()))
}

/// A daemon on a Redis port nothing listens on, deciding per `on_error` (`deny`: every
/// decision is 503; `allow`: 200 with no rate limit headers).
fn daemon_with_store_down(dir: &Path, on_error: &str) -> Daemon {
    let policy = dir.join(format!("store-down-{on_error}.yaml"));
    let yaml = format!(
        "store: {{ url: \"redis://127.0.0.1:{}/0\", on_error: {on_error}, timeout: 50ms }}\n\
         default_tier: free\n\
         tiers: {{ free: {{ limits: [ {{ name: hourly, algorithm: sliding_window, requests: 100, window: 1h }} ] }} }}\n",
        free_port()
    );
    std::fs::write(&policy, yaml).unwrap();
    Daemon::start(&policy, &[])
}

/// A store failing under `on_error: deny` reaches the client as ratewarden's 503 problem.
fn store_down_is_503(proxy: &Proxy, upstream: &Upstream) {
    let reply = proxy.get("/api/export", "k");
    assert_eq!(
        refused_before_upstream(proxy, upstream, &reply, 503),
        json!({
            "type": "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
            "title": "Temporary reduced capacity",
            "status": 503,
            "detail": "the rate limit store is unavailable and store.on_error denies",
            "violated-policies": [],
        })
    );
}

#[test]
fn nginx_auth_request_snippet_turns_a_store_failure_and_a_bad_key_into_503_and_400() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_store_down(dir.path(), "deny");
    let upstream = Upstream::start();
    let proxy = nginx(dir.path(), daemon.addr, upstream.addr);
    store_down_is_503(&proxy, &upstream);
    undecidable_is_400(&proxy, &upstream);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn caddy_forward_auth_snippet_passes_a_store_failure_and_a_bad_key_as_503_and_400() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_store_down(dir.path(), "deny");
    let upstream = Upstream::start();
    let proxy = caddy(dir.path(), daemon.addr, upstream.addr);
    store_down_is_503(&proxy, &upstream);
    undecidable_is_400(&proxy, &upstream);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn nginx_auth_request_snippet_passes_five_exports_then_429_with_headers() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(Path::new(SHIPPED), &[]);
    let upstream = Upstream::start();
    let proxy = nginx(dir.path(), daemon.addr, upstream.addr);
    five_then_429(&proxy, &daemon, &upstream);
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}

#[test]
fn caddy_forward_auth_snippet_passes_five_exports_then_429_with_headers() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(Path::new(SHIPPED), &[]);
    let upstream = Upstream::start();
    let proxy = caddy(dir.path(), daemon.addr, upstream.addr);
    five_then_429(&proxy, &daemon, &upstream);
    // copy_headers put the allowed request's rate limit headers on the request upstream.
    let head = upstream.last_head().to_ascii_lowercase();
    assert!(
        head.contains("ratelimit-policy: \"export\";q=5;w=60\r\n")
            && head.contains("x-ratelimit-limit: 5\r\n"),
        "{head}"
    );
    drop(proxy);
    assert!(daemon.stop(Duration::from_secs(10)).success());
}
