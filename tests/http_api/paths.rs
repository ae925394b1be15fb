//! Endpoint paths are normalised before matching (docs/reference/policy.md, "Endpoint
//! matching"): every spelling a backend serves as `/api/export` counts against the `export`
//! rule, through every route that takes a path; a path servers read two ways is refused; and
//! forward auth takes any method.

use crate::common::EXAMPLE_POLICY;
use crate::common::http::{call, post_json, structured};
use crate::support::check;
use axum::http::{Method, StatusCode};
use serde_json::json;

/// Spellings of `/api/export` that Go's net/http, werkzeug and nginx serve as it.
const SPELLINGS: [&str; 5] = [
    "/api/%65xport",
    "/api//export",
    "/api/./export",
    "/api/%2E/export",
    "//api/export",
];

#[tokio::test]
async fn every_spelling_of_a_path_counts_against_its_rule() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    for (i, endpoint) in SPELLINGS.into_iter().enumerate() {
        let reply = check(&app, json!({"user": "alice", "endpoint": endpoint})).await;
        assert_eq!(reply.status, StatusCode::OK, "{endpoint}: {}", reply.text());
        assert_eq!(structured(reply.header("ratelimit-policy")).name, "export");
        let body = reply.json();
        assert_eq!(body["policy"], "endpoint:/api/export/export", "{endpoint}");
        assert_eq!(body["remaining"], 4 - i, "{endpoint}");
    }
    // All five took the one counter of 5 a minute: the plain spelling is the sixth.
    let reply = check(&app, json!({"user": "alice", "endpoint": "/api/export"})).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.json()["violated"], json!(["export"]));
}

#[tokio::test]
async fn batch_and_forward_auth_normalise_alike() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    let requests: Vec<_> = SPELLINGS
        .iter()
        .map(|endpoint| json!({"user": "bob", "endpoint": endpoint}))
        .collect();
    let reply = post_json(
        &app.router,
        "/v1/check/batch",
        &json!({"requests": requests}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let results = reply.json()["results"].as_array().unwrap().clone();
    let remaining: Vec<_> = results.iter().map(|r| r["remaining"].clone()).collect();
    assert_eq!(remaining, [4, 3, 2, 1, 0]);
    assert!(
        results
            .iter()
            .all(|r| r["policy"] == "endpoint:/api/export/export")
    );

    for (i, uri) in SPELLINGS.into_iter().enumerate() {
        let uri = format!("https://shop.example{uri}?format=csv");
        let headers = [("x-original-uri", uri.as_str()), ("x-api-key", "carol")];
        let reply = call(&app.router, Method::GET, "/v1/auth", &headers, "").await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text());
        assert_eq!(structured(reply.header("ratelimit-policy")).name, "export");
        assert_eq!(reply.header("x-ratelimit-remaining"), (4 - i).to_string());
    }
}

/// A raw `é` or space sent in a JSON body is the percent-encoded path a proxy forwards for
/// it: both count against the rule written encoded, through `/v1/check` and forward auth.
#[tokio::test]
async fn a_raw_non_ascii_path_is_the_encoded_one_a_proxy_forwards() {
    let policy = r#"
default_tier: free
tiers: { free: { limits: [] } }
endpoints:
  - path: /caf%C3%A9/a%20b*
    limits: [ { name: menu, algorithm: fixed_window, requests: 3, window: 1m } ]
"#;
    let app = crate::common::http::app(policy);
    for (i, endpoint) in ["/café/a b/x", "/caf%c3%a9/a%20b/y"]
        .into_iter()
        .enumerate()
    {
        let reply = check(&app, json!({"user": "ines", "endpoint": endpoint})).await;
        assert_eq!(reply.status, StatusCode::OK, "{endpoint}: {}", reply.text());
        assert_eq!(reply.json()["remaining"], 2 - i, "{endpoint}");
    }
    let headers = [
        ("x-original-uri", "/caf%C3%A9/a%20b/z"),
        ("x-api-key", "ines"),
    ];
    let reply = call(&app.router, Method::GET, "/v1/auth", &headers, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.header("x-ratelimit-remaining"), "0");
}

/// WHATWG URL parsers (Deno, Bun, Workers, Node's `URL`) and IIS serve `/api\export` as
/// `/api/export`: a `\` counts as the `/` they read, on `/v1/check` and forward auth alike.
#[tokio::test]
async fn a_backslash_counts_as_the_slash_whatwg_parsers_read() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    let reply = check(&app, json!({"user": "frank", "endpoint": "/api\\export"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["policy"], "endpoint:/api/export/export");
    assert_eq!(reply.json()["remaining"], 4);
    let headers = [
        ("x-original-uri", "/api\\\\export?x=1"),
        ("x-api-key", "grace"),
    ];
    let reply = call(&app.router, Method::GET, "/v1/auth", &headers, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(structured(reply.header("ratelimit-policy")).name, "export");
    assert_eq!(reply.header("x-ratelimit-remaining"), "4");
    // Spelt `\` from its start, or after a host (which it ends, as in WHATWG URL parsers).
    for (endpoint, left) in [("\\api\\export", 3), ("http://h\\api\\export", 2)] {
        let reply = check(&app, json!({"user": "frank", "endpoint": endpoint})).await;
        assert_eq!(
            reply.json()["remaining"],
            left,
            "{endpoint}: {}",
            reply.text()
        );
    }
    // An encoded backslash is no separator anywhere: it stays in its segment.
    let reply = check(&app, json!({"user": "frank", "endpoint": "/api%5Cexport"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_ne!(reply.json()["policy"], "endpoint:/api/export/export");
}

/// What every route says of `/api//../export`, after naming where the path was.
const AMBIGUOUS: &str = "the path is ambiguous: its `..` segment takes it to \"/export\" where dot-segments are \
    removed (nginx, Go) but not where the path is routed as sent (Express); send the path \
    without `..`";

#[tokio::test]
async fn a_path_servers_read_two_ways_is_refused_and_counts_nothing() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    let ambiguous = "/api//../export";
    let reply = check(&app, json!({"user": "gina", "endpoint": ambiguous})).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        &format!("field `endpoint`: {AMBIGUOUS}"),
    );

    let requests = json!({"requests": [
        {"user": "gina", "endpoint": "/api/export"},
        {"user": "gina", "endpoint": "/api//%2e%2e/export?q=1"},
    ]});
    let reply = post_json(&app.router, "/v1/check/batch", &requests).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        &format!("field `requests[1].endpoint`: {AMBIGUOUS}"),
    );

    let uri = format!("https://shop.example{ambiguous}");
    let headers = [
        ("x-original-uri", uri.as_str()),
        ("x-api-key", "gina"),
        ("x-ratewarden-problem-header", "on"),
    ];
    let reply = call(&app.router, Method::GET, "/v1/auth", &headers, "").await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        &format!("the requested path: {AMBIGUOUS}"),
    );
    // nginx reads the problem from this header.
    assert!(
        reply
            .header("x-ratewarden-problem")
            .contains("the path is ambiguous")
    );

    let report = json!({"user": "gina", "endpoint": ambiguous, "status": 200});
    let reply = post_json(&app.router, "/v1/report", &report).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        &format!("field `endpoint`: {AMBIGUOUS}"),
    );

    // Nothing was counted: both readings still have their whole limit.
    for (endpoint, remaining) in [("/export", 19), ("/api/export", 4)] {
        let reply = check(&app, json!({"user": "gina", "endpoint": endpoint})).await;
        assert_eq!(reply.json()["remaining"], remaining, "{endpoint}");
    }
    // Every `..` is refused: a backend routing the raw path (Express's `/api/export/*`)
    // serves this one as an export, nginx and Go as a search.
    let reply = check(
        &app,
        json!({"user": "gina", "endpoint": "/api/export/../search"}),
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "field `endpoint`: the path is ambiguous: its `..` segment takes it to \"/api/search\" \
         where dot-segments are removed (nginx, Go) but not where the path is routed as sent \
         (Express); send the path without `..`",
    );
    // Go's path.Clean and Python serve a final `.` as the export, nginx as `/api/export/`.
    for spelling in ["/api/export/.", "/api/export/%2E?x", "/api/ex%70ort//."] {
        let reply = check(&app, json!({"user": "gina", "endpoint": spelling})).await;
        reply.assert_problem(
            StatusCode::BAD_REQUEST,
            "field `endpoint`: the path is ambiguous: its final `.` segment makes it \
             \"/api/export/\" (nginx, RFC 3986) and \"/api/export\" (Go's path.Clean, \
             Python's http.server); send the one you mean",
        );
    }
    let reply = check(&app, json!({"user": "gina", "endpoint": "/api/export"})).await;
    assert_eq!(reply.json()["remaining"], 3);
}

#[tokio::test]
async fn the_length_limit_is_on_the_path_as_sent() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    // 2049 bytes that normalise to `/api/export`.
    let long = format!("/api{}/export", "/.".repeat(1019));
    assert_eq!(long.len(), 2049);
    let reply = check(&app, json!({"user": "dave", "endpoint": long})).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "field `endpoint` must be 1 to 2048 bytes (it has 2049)",
    );
    let shorter = long.replacen("/.", "", 1);
    let reply = check(&app, json!({"user": "dave", "endpoint": shorter})).await;
    assert_eq!(reply.json()["policy"], "endpoint:/api/export/export");
}

/// An app that passes the request target as it came hands over the absolute form a client may
/// send (`GET http://h/api/export HTTP/1.1`, which backends route as `/api/export`): its scheme
/// and host go, as on forward auth and gRPC, on every route that takes a path.
#[tokio::test]
async fn an_absolute_uri_counts_as_its_path() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    let absolute = "http://shop.example:8080/api/export?format=csv";
    let reply = check(&app, json!({"user": "dave", "endpoint": absolute})).await;
    assert_eq!(reply.json()["policy"], "endpoint:/api/export/export");
    assert_eq!(reply.json()["remaining"], 4);
    let item = json!({"user": "dave", "endpoint": "HTTPS://h/api/export"});
    let reply = post_json(&app.router, "/v1/check/batch", &json!({"requests": [item]})).await;
    assert_eq!(
        reply.json()["results"][0]["remaining"],
        3,
        "{}",
        reply.text()
    );
    let reply = check(&app, json!({"user": "dave", "endpoint": "/api/export"})).await;
    assert_eq!(reply.json()["remaining"], 2);
    // Refused as the path alone is.
    let reply = check(
        &app,
        json!({"user": "dave", "endpoint": "http://h/api/x/../export"}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_report_counts_against_the_rule_its_spelling_normalises_to() {
    // The shipped policy with an `upstream` source of the export rule's own.
    let yaml = EXAMPLE_POLICY.replace(
        "  - path: /api/export\n",
        "  - path: /api/export\n    load: { source: upstream, upstream: { latency_target: 2s } }\n",
    );
    let app = crate::common::http::app(&yaml);
    for (endpoint, status) in [
        ("/api//export", 503),
        ("/api/%2e/export", 200),
        ("HTTPS://shop.example/api/export", 200),
    ] {
        let report =
            json!({"user": "erin", "endpoint": endpoint, "status": status, "latency_ms": 12});
        let reply = post_json(&app.router, "/v1/report", &report).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    }
    let mut outcomes = app.engine.upstream_outcomes().drain();
    let export = &app.engine.policy().endpoints[1];
    assert_eq!(export.pattern.display(), "/api/export");
    let own = outcomes.take_rule(1, &export.pattern);
    assert_eq!((own.reports, own.errors), (3, 1));
    assert_eq!(outcomes.global.reports, 0);
}

#[tokio::test]
async fn forward_auth_takes_any_method_and_other_routes_still_refuse_theirs() {
    let app = crate::common::http::app(EXAMPLE_POLICY);
    for method in ["PROPFIND", "TRACE", "MKCOL", "LOCK", "FOO"] {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let user = format!("frank-{method}");
        let headers = [
            ("x-original-uri", "/api/search"),
            ("x-api-key", user.as_str()),
        ];
        let reply = call(&app.router, method.clone(), "/v1/auth", &headers, "").await;
        assert_eq!(reply.status, StatusCode::OK, "{method}: {}", reply.text());
        assert_eq!(structured(reply.header("ratelimit-policy")).name, "search");
    }
    let reply = call(
        &app.router,
        Method::from_bytes(b"FOO").unwrap(),
        "/v1/auth",
        &[],
        "",
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "headers X-Original-URI and X-Forwarded-Uri are both missing: one must name the requested URI",
    );
    for (path, method) in [("/v1/check", "PROPFIND"), ("/v1/report", "FOO")] {
        let reply = call(
            &app.router,
            Method::from_bytes(method.as_bytes()).unwrap(),
            path,
            &[],
            "",
        )
        .await;
        reply.assert_problem(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} does not accept {method}"),
        );
    }
}
