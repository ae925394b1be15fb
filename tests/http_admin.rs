//! The admin API through the router: enabling and authentication, live thresholds, the subject
//! view, stored tiers and reload. An engine on the embedded store with a manual clock.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use ratewarden::clock::ManualClock;
use ratewarden::engine::{Engine, SubjectHasher};
use ratewarden::http::{AppState, router};
use ratewarden::metrics::Metrics;
use ratewarden::policy::Policy;
use ratewarden::reload::Reloader;
use ratewarden::store::{Backend, MemoryStore};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tower::ServiceExt;

const TOKEN: &str = "s3cret-admin-token";
/// 2023-11-14T22:13:20Z, a whole hour, so windows start together.
const START: u64 = 1_700_000_000_000_000;

/// free: hourly 100 (sliding log), burst 20 (token bucket); pro: hourly 1000; the default
/// endpoint's limit is large so that the tier's limits head the decisions.
const POLICY: &str = r#"
default_tier: free
tiers:
  free:
    limits:
      - { name: hourly, algorithm: sliding_log, requests: 100, window: 1h }
      - { name: burst, algorithm: token_bucket, requests: 20, window: 1m, burst: 20 }
  pro:
    limits:
      - { name: hourly, algorithm: fixed_window, requests: 1000, window: 1h }
endpoints:
  - path: /api/search
    limits: [ { name: search, algorithm: gcra, requests: 10, window: 1m, burst: 5 } ]
  - path: /login
    key: ip
    limits: [ { name: login, algorithm: fixed_window, requests: 20, window: 5m } ]
default_endpoint:
  limits: [ { name: endpoint, algorithm: sliding_window, requests: 5000, window: 1m } ]
"#;

const DEFAULT_THRESHOLDS: &str = r#"{"anomaly_threshold": 0.8, "anomaly_factor": 0.1,
    "anomaly_shadow": false, "load_high": 0.8, "load_low": 0.3, "load_high_factor": 0.5,
    "load_low_factor": 1.5, "load_factor_override": null}"#;

struct Harness {
    app: Router,
    engine: Arc<Engine>,
    _clock: ManualClock,
}

fn engine(yaml: &str) -> (Arc<Engine>, ManualClock) {
    let policy = Policy::from_yaml(yaml, Path::new(".")).expect("test policy is valid");
    let clock = ManualClock::starting_at(START);
    let store = MemoryStore::new(Arc::new(clock.clone()), 1_000_000);
    let engine = Engine::new(
        policy,
        Backend::Memory(store),
        SubjectHasher::from_secret("admin test secret"),
    );
    (Arc::new(engine), clock)
}

fn app(engine: &Arc<Engine>, token: Option<&str>, reloader: Option<Reloader>) -> Router {
    router(AppState {
        engine: engine.clone(),
        metrics: Arc::new(Metrics::new()),
        admin_token: token.map(Into::into),
        reloader,
    })
}

fn harness(token: Option<&str>) -> Harness {
    let (engine, clock) = engine(POLICY);
    Harness {
        app: app(&engine, token, None),
        engine,
        _clock: clock,
    }
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    text: String,
    json: Value,
}

impl Reply {
    fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    fn detail(&self) -> &str {
        self.json["detail"].as_str().unwrap_or("(no detail)")
    }

    /// A problem+json answer with this status and detail.
    #[track_caller]
    fn assert_problem(&self, status: StatusCode, detail: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.content_type(), "application/problem+json");
        assert_eq!(self.json["status"], status.as_u16());
        assert_eq!(self.detail(), detail);
    }
}

async fn send(
    app: &Router,
    method: Method,
    uri: &str,
    auth: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(auth) = auth {
        request = request.header(header::AUTHORIZATION, auth);
    }
    let body = match body {
        Some(text) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Body::from(text.to_owned())
        }
        None => Body::empty(),
    };
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .expect("the router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).expect("UTF-8 body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    Reply {
        status,
        headers,
        text,
        json,
    }
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

async fn admin(app: &Router, method: Method, uri: &str, body: Option<&str>) -> Reply {
    send(app, method, uri, Some(&bearer()), body).await
}

/// `POST /v1/check` for `user` on `endpoint`; the decision JSON.
async fn check(app: &Router, user: &str, endpoint: &str) -> Value {
    check_with(app, json!({"user": user, "endpoint": endpoint})).await
}

async fn check_with(app: &Router, body: Value) -> Value {
    let reply = send(
        app,
        Method::POST,
        "/v1/check",
        None,
        Some(&body.to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.json
}

/// Every admin route with a body it accepts.
const ROUTES: [(&str, &str, Option<&str>); 5] = [
    ("GET", "/v1/admin/thresholds", None),
    ("PUT", "/v1/admin/thresholds", Some("{}")),
    ("GET", "/v1/admin/subjects/alice", None),
    (
        "PUT",
        "/v1/admin/subjects/alice/tier",
        Some(r#"{"tier": "pro"}"#),
    ),
    ("POST", "/v1/admin/reload", None),
];

fn method(name: &str) -> Method {
    name.parse().unwrap()
}

#[tokio::test]
async fn disabled_admin_api_is_404_on_every_route_whatever_the_token() {
    let h = harness(None);
    for (m, uri, body) in ROUTES {
        for auth in [None, Some(bearer())] {
            let reply = send(&h.app, method(m), uri, auth.as_deref(), body).await;
            reply.assert_problem(
                StatusCode::NOT_FOUND,
                "the admin API is disabled: set RATEWARDEN_ADMIN_TOKEN",
            );
        }
    }
    // Nothing was changed by the refused PUT.
    assert_eq!(h.engine.stored_tier("alice").await, None);
}

#[tokio::test]
async fn missing_or_wrong_token_is_401_with_a_bearer_challenge() {
    let h = harness(Some(TOKEN));
    for (m, uri, body) in ROUTES {
        let reply = send(&h.app, method(m), uri, None, body).await;
        reply.assert_problem(
            StatusCode::UNAUTHORIZED,
            "missing Authorization header: the admin API needs `Authorization: Bearer <token>`",
        );
        assert_eq!(reply.headers[header::WWW_AUTHENTICATE], "Bearer");

        let wrong = [
            "Bearer wrong",
            "Bearer s3cret-admin-toke",
            "Bearer s3cret-admin-token2",
            "Bearer S3CRET-ADMIN-TOKEN",
        ];
        for auth in wrong {
            let reply = send(&h.app, method(m), uri, Some(auth), body).await;
            reply.assert_problem(StatusCode::UNAUTHORIZED, "wrong admin token");
            assert_eq!(
                reply.headers[header::WWW_AUTHENTICATE],
                "Bearer error=\"invalid_token\""
            );
        }
        for auth in [TOKEN, "Basic czNjcmV0", "Bearer ", "Bearer"] {
            let reply = send(&h.app, method(m), uri, Some(auth), body).await;
            reply.assert_problem(
                StatusCode::UNAUTHORIZED,
                "the Authorization header must be `Bearer <token>`",
            );
            assert!(
                reply.headers[header::WWW_AUTHENTICATE]
                    .to_str()
                    .unwrap()
                    .starts_with("Bearer")
            );
        }
    }
    assert_eq!(h.engine.stored_tier("alice").await, None);

    // The scheme is case-insensitive (RFC 9110).
    let reply = send(
        &h.app,
        Method::GET,
        "/v1/admin/thresholds",
        Some(&format!("bearer {TOKEN}")),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
}

#[tokio::test]
async fn thresholds_read_and_change_any_subset() {
    let h = harness(Some(TOKEN));
    let defaults: Value = serde_json::from_str(DEFAULT_THRESHOLDS).unwrap();
    let reply = admin(&h.app, Method::GET, "/v1/admin/thresholds", None).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.json, defaults);

    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_threshold": 0.9, "anomaly_shadow": true, "load_factor_override": 2}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let mut expected = defaults.clone();
    expected["anomaly_threshold"] = json!(0.9);
    expected["anomaly_shadow"] = json!(true);
    expected["load_factor_override"] = json!(2.0);
    assert_eq!(reply.json, expected);
    assert_eq!(
        admin(&h.app, Method::GET, "/v1/admin/thresholds", None)
            .await
            .json,
        expected
    );
    assert_eq!(h.engine.scale_factors().load_factor(), 2.0);

    // An empty patch and an absent override change nothing.
    let reply = admin(&h.app, Method::PUT, "/v1/admin/thresholds", Some("{}")).await;
    assert_eq!(reply.json, expected);
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_low": 0.2, "load_high": 0.95, "load_high_factor": 10, "load_low_factor": 0.01}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    expected["load_low"] = json!(0.2);
    expected["load_high"] = json!(0.95);
    expected["load_high_factor"] = json!(10.0);
    expected["load_low_factor"] = json!(0.01);
    assert_eq!(reply.json, expected);

    // Range edges are accepted: 0 and 1 for the unit values, 0 and 10 for the override.
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_threshold": 1, "anomaly_factor": 0, "load_factor_override": 0}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 10}"#),
    )
    .await;
    assert_eq!(reply.json["load_factor_override"], json!(10.0));

    // `null` releases the override.
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": null}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json["load_factor_override"], Value::Null);
    assert_eq!(h.engine.scale_factors().load_factor(), 1.0);
}

#[tokio::test]
async fn invalid_thresholds_are_400_naming_the_field_and_change_nothing() {
    let h = harness(Some(TOKEN));
    let before = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.7}"#),
    )
    .await
    .json;
    let cases: &[(&str, &str)] = &[
        (
            r#"{"anomaly_threshold": 1.5}"#,
            "field `anomaly_threshold` must be between 0 and 1 (it is 1.5)",
        ),
        (
            r#"{"anomaly_threshold": -0.1}"#,
            "field `anomaly_threshold` must be between 0 and 1 (it is -0.1)",
        ),
        (
            r#"{"anomaly_factor": 2}"#,
            "field `anomaly_factor` must be between 0 and 1 (it is 2)",
        ),
        (
            r#"{"load_high": 1.01}"#,
            "field `load_high` must be between 0 and 1 (it is 1.01)",
        ),
        (
            r#"{"load_low": -1}"#,
            "field `load_low` must be between 0 and 1 (it is -1)",
        ),
        (
            r#"{"load_low": 0.8}"#,
            "field `load_low` must be below `load_high` (0.8 is not below 0.8)",
        ),
        (
            r#"{"load_low": 0.9, "load_high": 0.5}"#,
            "field `load_low` must be below `load_high` (0.9 is not below 0.5)",
        ),
        (
            r#"{"load_high": 0.2}"#,
            "field `load_high` must be above `load_low` (0.2 is not above 0.3)",
        ),
        (
            r#"{"load_high_factor": 0}"#,
            "field `load_high_factor` must be greater than 0 and at most 10 (it is 0)",
        ),
        (
            r#"{"load_high_factor": 10.5}"#,
            "field `load_high_factor` must be greater than 0 and at most 10 (it is 10.5)",
        ),
        (
            r#"{"load_low_factor": -2}"#,
            "field `load_low_factor` must be greater than 0 and at most 10 (it is -2)",
        ),
        (
            r#"{"load_factor_override": 11}"#,
            "field `load_factor_override` must be null or between 0 and 10 (it is 11)",
        ),
        (
            r#"{"load_factor_override": -0.5}"#,
            "field `load_factor_override` must be null or between 0 and 10 (it is -0.5)",
        ),
        // A valid field next to an invalid one is not applied either.
        (
            r#"{"anomaly_shadow": true, "anomaly_factor": 1.2}"#,
            "field `anomaly_factor` must be between 0 and 1 (it is 1.2)",
        ),
        (
            r#"{"anomaly_threshold": null}"#,
            "field `anomaly_threshold`: invalid type: null, expected f64",
        ),
        (
            r#"{"load_high": "0.9"}"#,
            "field `load_high`: invalid type: string \"0.9\", expected f64",
        ),
        (
            r#"{"anomaly_shadow": 1}"#,
            "field `anomaly_shadow`: invalid type: integer `1`, expected a boolean",
        ),
        (
            r#"[]"#,
            "invalid request: invalid type: sequence, expected struct ThresholdsPatch",
        ),
    ];
    for (body, detail) in cases {
        let reply = admin(&h.app, Method::PUT, "/v1/admin/thresholds", Some(body)).await;
        reply.assert_problem(StatusCode::BAD_REQUEST, detail);
        let now = admin(&h.app, Method::GET, "/v1/admin/thresholds", None)
            .await
            .json;
        assert_eq!(now, before, "after {body}");
    }

    // An unknown field is named (a typo must not silently change nothing).
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_treshold": 0.5}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(
        reply
            .detail()
            .starts_with("unknown field `anomaly_treshold`, expected one of"),
        "{}",
        reply.detail()
    );
    // Not JSON: 415 and 400, never a 5xx.
    let reply = send(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(&bearer()),
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "Content-Type must be application/json (the header is missing)",
    );
    let reply = admin(&h.app, Method::PUT, "/v1/admin/thresholds", Some("{")).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        admin(&h.app, Method::GET, "/v1/admin/thresholds", None)
            .await
            .json,
        before
    );
}

#[tokio::test]
async fn load_factor_override_applies_to_the_next_decision() {
    let h = harness(Some(TOKEN));
    // The burst bucket (20) has the least remaining.
    let d = check(&h.app, "alice", "/anywhere").await;
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(20), &json!(19)));
    assert_eq!(d["load_factor"], json!(1.0));

    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.5}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let d = check(&h.app, "alice", "/anywhere").await;
    assert_eq!(d["policy"], "tier:free/burst");
    assert_eq!(
        (&d["limit"], &d["remaining"]),
        (&json!(10), &json!(8)),
        "the bucket halved: 10 of which 2 are used"
    );
    assert_eq!((&d["load_factor"], &d["scale"]), (&json!(0.5), &json!(0.5)));

    admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": null}"#),
    )
    .await;
    let d = check(&h.app, "alice", "/anywhere").await;
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(20), &json!(17)));
    assert_eq!(d["load_factor"], json!(1.0));
}

#[tokio::test]
async fn subject_view_shows_base_effective_and_exact_usage_without_the_raw_id() {
    let h = harness(Some(TOKEN));
    let user = "user-alice-42";
    for _ in 0..3 {
        check(&h.app, user, "/somewhere").await;
    }
    check(&h.app, "someone-else", "/somewhere").await;

    let expected = json!({
        "subject": h.engine.hasher().user(user).to_string(),
        "tier": "free",
        "tier_source": "default",
        "endpoint_rule": "default",
        "abuse_score": null,
        "flagged": false,
        "load_factor": 1.0,
        "scale": 1.0,
        "features": {},
        "limits": [
            {"scope": "tier", "name": "hourly", "algorithm": "sliding_log", "base": 100,
             "effective": 100, "used": 3, "remaining": 97, "window_ms": 3_600_000,
             "key": "user", "shadow": false},
            {"scope": "tier", "name": "burst", "algorithm": "token_bucket", "base": 20,
             "effective": 20, "used": 3, "remaining": 17, "window_ms": 60_000,
             "key": "user", "shadow": false},
            {"scope": "endpoint", "name": "endpoint", "algorithm": "sliding_window",
             "base": 5000, "effective": 5000, "used": 3, "remaining": 4997,
             "window_ms": 60_000, "key": "user", "shadow": false},
        ],
    });
    let uri = format!("/v1/admin/subjects/{user}");
    let reply = admin(&h.app, Method::GET, &uri, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json, expected);
    assert_eq!(reply.json["subject"].as_str().unwrap().len(), 32);
    assert!(!reply.text.contains("alice"), "{}", reply.text);

    // The view consumes nothing: the same again, and the next check sees 3 used, not 5.
    assert_eq!(admin(&h.app, Method::GET, &uri, None).await.json, expected);
    let d = check(&h.app, user, "/somewhere").await;
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(20), &json!(16)));

    // A subject never seen: nothing used.
    let reply = admin(&h.app, Method::GET, "/v1/admin/subjects/nobody", None).await;
    let limits = reply.json["limits"].as_array().unwrap();
    assert!(
        limits
            .iter()
            .all(|l| l["used"] == 0 && l["remaining"] == l["base"])
    );
}

#[tokio::test]
async fn subject_view_of_an_endpoint_and_under_scaling() {
    let h = harness(Some(TOKEN));
    for _ in 0..2 {
        check(&h.app, "bob", "/api/search").await;
    }
    let uri = "/v1/admin/subjects/bob?endpoint=/api/search";
    let reply = admin(&h.app, Method::GET, uri, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json["endpoint_rule"], "/api/search");
    let usage = |reply: &Reply| -> Vec<(String, Value, Value, Value, Value)> {
        reply.json["limits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    format!(
                        "{}:{}",
                        l["scope"].as_str().unwrap(),
                        l["name"].as_str().unwrap()
                    ),
                    l["base"].clone(),
                    l["effective"].clone(),
                    l["used"].clone(),
                    l["remaining"].clone(),
                )
            })
            .collect()
    };
    let row = |name: &str, base: u64, effective: u64, used: u64, remaining: u64| {
        (
            name.to_owned(),
            json!(base),
            json!(effective),
            json!(used),
            json!(remaining),
        )
    };
    assert_eq!(
        usage(&reply),
        [
            row("tier:hourly", 100, 100, 2, 98),
            row("tier:burst", 20, 20, 2, 18),
            row("endpoint:search", 5, 5, 2, 3),
        ]
    );
    assert_eq!(reply.json["limits"][2]["algorithm"], "gcra");
    assert_eq!(reply.json["limits"][2]["window_ms"], 60_000);

    // Halved: effective capacities follow, usage stays what was counted.
    admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.5}"#),
    )
    .await;
    let reply = admin(&h.app, Method::GET, uri, None).await;
    assert_eq!(
        (&reply.json["load_factor"], &reply.json["scale"]),
        (&json!(0.5), &json!(0.5))
    );
    let rows = usage(&reply);
    assert_eq!(rows[0], row("tier:hourly", 100, 50, 2, 48));
    assert_eq!(rows[1], row("tier:burst", 20, 10, 2, 8));
    assert_eq!(
        (&rows[2].1, &rows[2].2, &rows[2].3),
        (&json!(5), &json!(2), &json!(2))
    );

    // Scaled below the usage: nothing remains, and `used` still shows the 2 counted.
    admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.01}"#),
    )
    .await;
    let rows = usage(&admin(&h.app, Method::GET, uri, None).await);
    assert_eq!(rows[0], row("tier:hourly", 100, 1, 2, 0));
    assert_eq!(rows[1], row("tier:burst", 20, 0, 2, 0));
    assert_eq!(rows[2], row("endpoint:search", 5, 0, 2, 0));
}

#[tokio::test]
async fn subject_view_of_an_ip_keyed_rule_shows_usage_only_for_a_given_ip() {
    let h = harness(Some(TOKEN));
    let ip = "203.0.113.7";
    check_with(
        &h.app,
        json!({"user": "carol", "endpoint": "/login", "ip": ip}),
    )
    .await;

    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/carol?endpoint=/login",
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json["endpoint_rule"], "/login");
    let login = &reply.json["limits"][2];
    assert_eq!(
        login,
        &json!({"scope": "endpoint", "name": "login", "algorithm": "fixed_window", "base": 20,
                "effective": 20, "used": null, "remaining": null, "window_ms": 300_000,
                "key": "ip", "shadow": false})
    );
    // The tier's limits count per user and show the usage.
    assert_eq!(reply.json["limits"][0]["used"], 1);

    let uri = format!("/v1/admin/subjects/carol?endpoint=/login&ip={ip}");
    let reply = admin(&h.app, Method::GET, &uri, None).await;
    let login = &reply.json["limits"][2];
    assert_eq!(
        (&login["used"], &login["remaining"]),
        (&json!(1), &json!(19))
    );
    assert!(
        !reply.text.contains(ip) && !reply.text.contains("carol"),
        "{}",
        reply.text
    );

    // Another address has used nothing of the rule.
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/carol?endpoint=/login&ip=2001:db8::1",
        None,
    )
    .await;
    assert_eq!(reply.json["limits"][2]["used"], 0);
}

#[tokio::test]
async fn subject_view_rejects_a_bad_query() {
    let h = harness(Some(TOKEN));
    let reply = admin(&h.app, Method::GET, "/v1/admin/subjects/dave?ip=nope", None).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "query parameter `ip` is not an IP address: \"nope\"",
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/dave?endpoint=",
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "query parameter `endpoint` must be 1 to 2048 bytes (it has 0)",
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/dave?endpiont=/x",
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.content_type(), "application/problem+json");
    assert!(
        reply.detail().contains("unknown field `endpiont`"),
        "{}",
        reply.detail()
    );
    let long = "u".repeat(513);
    let reply = admin(
        &h.app,
        Method::GET,
        &format!("/v1/admin/subjects/{long}"),
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "the user in the path must be 1 to 512 bytes (it has 513)",
    );
}

#[tokio::test]
async fn stored_tier_is_set_used_and_removed() {
    let h = harness(Some(TOKEN));
    let user = "erin@example.com";
    let subject = h.engine.hasher().user(user).to_string();
    let uri = "/v1/admin/subjects/erin@example.com/tier";
    let reply = admin(&h.app, Method::PUT, uri, Some(r#"{"tier": "pro"}"#)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json, json!({"subject": subject, "tier": "pro"}));
    assert!(!reply.text.contains("erin"));

    // A check without a tier uses it; one naming a tier still gets that tier.
    let d = check(&h.app, user, "/anywhere").await;
    assert_eq!(d["policy"], "tier:pro/hourly");
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(1000), &json!(999)));
    let d = check_with(
        &h.app,
        json!({"user": user, "endpoint": "/anywhere", "tier": "free"}),
    )
    .await;
    assert_eq!(d["policy"], "tier:free/burst");
    let view = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/erin@example.com",
        None,
    )
    .await;
    assert_eq!(
        (&view.json["tier"], &view.json["tier_source"]),
        (&json!("pro"), &json!("stored"))
    );

    // Unknown tier, missing field, unknown field: 400, nothing stored.
    let reply = admin(&h.app, Method::PUT, uri, Some(r#"{"tier": "gold"}"#)).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "field `tier`: unknown tier \"gold\"",
    );
    let reply = admin(&h.app, Method::PUT, uri, Some("{}")).await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "field `tier` is required (a tier name, or null to remove the stored tier)",
    );
    let reply = admin(
        &h.app,
        Method::PUT,
        uri,
        Some(r#"{"tier": "free", "tierr": 1}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(
        reply.detail().starts_with("unknown field `tierr`"),
        "{}",
        reply.detail()
    );
    assert_eq!(h.engine.stored_tier(user).await.as_deref(), Some("pro"));

    // null removes it: the default tier again.
    let reply = admin(&h.app, Method::PUT, uri, Some(r#"{"tier": null}"#)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json, json!({"subject": subject, "tier": null}));
    let d = check(&h.app, user, "/anywhere").await;
    assert_eq!(d["policy"], "tier:free/burst");
    let view = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/erin@example.com",
        None,
    )
    .await;
    assert_eq!(
        (&view.json["tier"], &view.json["tier_source"]),
        (&json!("free"), &json!("default"))
    );
}

#[tokio::test]
async fn reload_swaps_a_valid_policy_and_refuses_a_broken_one_keeping_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, POLICY).unwrap();
    let (engine, _clock) = engine(POLICY);
    let app = app(
        &engine,
        Some(TOKEN),
        Some(Reloader::new(path.clone(), engine.clone())),
    );

    // A live override is reset by the reload (the file is the source of truth).
    admin(
        &app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.5, "anomaly_factor": 0.3}"#),
    )
    .await;
    std::fs::write(&path, POLICY.replace("burst: 20", "burst: 30")).unwrap();
    let reply = admin(&app, Method::POST, "/v1/admin/reload", None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json, json!({"reloaded": true}));
    let thresholds = admin(&app, Method::GET, "/v1/admin/thresholds", None).await;
    assert_eq!(
        thresholds.json,
        serde_json::from_str::<Value>(DEFAULT_THRESHOLDS).unwrap()
    );
    let d = check(&app, "frank", "/anywhere").await;
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(30), &json!(29)));

    // Two mistakes: both are listed, and the policy of burst 30 stays.
    let broken = POLICY
        .replace("requests: 100,", "requests: 0,")
        .replace("algorithm: gcra", "algorithm: leaky_bucket");
    let expected_errors = Policy::from_yaml(&broken, dir.path()).unwrap_err().lines();
    assert_eq!(expected_errors.len(), 2, "{expected_errors:?}");
    std::fs::write(&path, &broken).unwrap();
    admin(
        &app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 1}"#),
    )
    .await;
    let reply = admin(&app, Method::POST, "/v1/admin/reload", None).await;
    reply.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        &format!(
            "policy {} refused (2 errors); the policy in force stays",
            path.display()
        ),
    );
    assert_eq!(reply.json["errors"], json!(expected_errors));
    let d = check(&app, "frank", "/anywhere").await;
    assert_eq!((&d["limit"], &d["remaining"]), (&json!(30), &json!(28)));
    // A refused reload leaves the live thresholds too.
    let thresholds = admin(&app, Method::GET, "/v1/admin/thresholds", None).await;
    assert_eq!(thresholds.json["load_factor_override"], json!(1.0));

    // A file that cannot be read is one error.
    std::fs::remove_file(&path).unwrap();
    let reply = admin(&app, Method::POST, "/v1/admin/reload", None).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reply.json["errors"].as_array().unwrap().len(), 1);
    assert!(
        reply.json["errors"][0]
            .as_str()
            .unwrap()
            .starts_with("cannot read")
    );
}

#[tokio::test]
async fn reload_without_a_policy_file_is_404() {
    let h = harness(Some(TOKEN));
    let reply = admin(&h.app, Method::POST, "/v1/admin/reload", None).await;
    reply.assert_problem(
        StatusCode::NOT_FOUND,
        "no policy file to reload (the daemon was not started from one)",
    );
}

#[tokio::test]
async fn openapi_describes_the_admin_routes_behind_a_bearer_token() {
    let h = harness(None);
    let reply = send(&h.app, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let doc = reply.json;
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"],
        json!({"type": "http", "scheme": "bearer"})
    );
    for (path, method) in [
        ("/v1/admin/thresholds", "get"),
        ("/v1/admin/thresholds", "put"),
        ("/v1/admin/subjects/{user}", "get"),
        ("/v1/admin/subjects/{user}/tier", "put"),
        ("/v1/admin/reload", "post"),
    ] {
        let op = &doc["paths"][path][method];
        assert_eq!(op["tags"], json!(["admin"]), "{method} {path}");
        assert_eq!(op["security"], json!([{"bearer": []}]), "{method} {path}");
    }
}
