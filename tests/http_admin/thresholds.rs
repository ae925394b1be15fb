//! `GET` and `PUT /v1/admin/thresholds`: reading, changing any subset, refusing values out of
//! range without changing anything, and the next decision following an override.

use crate::harness::{DEFAULT_THRESHOLDS, TOKEN, admin, bearer, check, harness, send};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

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
        Some(r#"{"load_low": 0.2, "load_high": 0.95, "load_high_factor": 0.01, "load_low_factor": 10}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    expected["load_low"] = json!(0.2);
    expected["load_high"] = json!(0.95);
    expected["load_high_factor"] = json!(0.01);
    expected["load_low_factor"] = json!(10.0);
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

    // A negative zero is zero.
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_threshold": -0.0, "load_factor_override": -0.0}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert!(
        reply.text.contains(r#""anomaly_threshold":0.0"#),
        "{}",
        reply.text
    );
    assert!(
        reply.text.contains(r#""load_factor_override":0.0"#),
        "{}",
        reply.text
    );
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
            r#"{"load_low_factor": 0}"#,
            "field `load_low_factor` must be greater than 0 and at most 10 (it is 0)",
        ),
        (
            r#"{"load_low_factor": 10.5}"#,
            "field `load_low_factor` must be greater than 0 and at most 10 (it is 10.5)",
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
            "field `anomaly_threshold`: invalid type: null, expected a number",
        ),
        (
            r#"{"load_high": "0.9"}"#,
            "field `load_high`: invalid type: string \"0.9\", expected a number",
        ),
        (
            r#"{"anomaly_shadow": 1}"#,
            "field `anomaly_shadow`: invalid type: integer `1`, expected a boolean",
        ),
        (
            r#"[]"#,
            "invalid request: invalid type: sequence, expected a JSON object",
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
async fn a_load_denial_names_the_denying_limit_with_its_own_reduced_value() {
    let h = harness(Some(TOKEN));
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.1}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    // hourly 100 → 10, burst 20 → 2; a cost of 2 leaves hourly 8 and burst 0.
    let d = crate::harness::check_with(
        &h.app,
        json!({"user": "carol", "endpoint": "/anywhere", "cost": 2}),
    )
    .await;
    assert_eq!(d["allowed"], json!(true));
    // A cost of 9 is over both; hourly is named first, burst heads the decision (0 left).
    let body = json!({"user": "carol", "endpoint": "/anywhere", "cost": 9}).to_string();
    let reply = send(&h.app, Method::POST, "/v1/check", None, Some(&body)).await;
    assert_eq!(
        reply.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        reply.text
    );
    assert_eq!(reply.json["reason"], "load");
    assert_eq!(reply.json["violated-policies"], json!(["hourly", "burst"]));
    assert_eq!(
        reply.detail(),
        "limit \"hourly\" is reduced to 10 per 3600 s while the service is under load"
    );
}

#[tokio::test]
async fn a_threshold_changed_live_applies_to_every_subjects_next_decision() {
    use ratewarden::engine::SubjectStanding;
    let h = harness(Some(TOKEN));
    // Two subjects scored by the last cycle below the file's threshold (0.8), no flag held.
    for (user, score) in [("mallory", 0.6), ("nina", 0.55)] {
        h.engine.scale_factors().set_standing(
            h.engine.hasher().user(user),
            SubjectStanding {
                abuse_score: score,
                held_until: 0,
                novel: false,
            },
        );
    }
    let scale_of = |d: &Value| d["scale"].as_f64().unwrap();
    for user in ["mallory", "nina"] {
        let d = check(&h.app, user, "/anywhere").await;
        assert_eq!(scale_of(&d), 1.0, "{user}: {d}");
    }
    // Lowered: both are judged against their latest score at once, no control cycle needed.
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_threshold": 0.5}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    for user in ["mallory", "nina"] {
        let d = check(&h.app, user, "/anywhere").await;
        assert_eq!(scale_of(&d), 0.1, "{user}: {d}");
        assert_eq!(d["limit"], json!(2), "{user}: burst 20 scaled by 0.1");
    }
    // Between the two scores: only the higher one stays flagged.
    admin(
        &h.app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_threshold": 0.58}"#),
    )
    .await;
    // (mallory's shrunk bucket of 2 is used up: the answer is a 429 that still shows the scale)
    let body = json!({"user": "mallory", "endpoint": "/anywhere"}).to_string();
    let reply = send(&h.app, Method::POST, "/v1/check", None, Some(&body)).await;
    assert_eq!(reply.json["reason"], "anomaly", "{}", reply.text);
    assert_eq!(scale_of(&reply.json), 0.1);
    assert_eq!(scale_of(&check(&h.app, "nina", "/anywhere").await), 1.0);
}

#[tokio::test]
async fn a_load_factor_set_on_the_wrong_side_of_1_is_taken_with_a_warning() {
    let log = crate::common::logs::Captured::default();
    let _guard = log.start_at(tracing::Level::WARN);
    let h = harness(Some(TOKEN));
    let put = |body: &'static str| admin(&h.app, Method::PUT, "/v1/admin/thresholds", Some(body));
    let reply = put(r#"{"load_high_factor": 1.5, "load_low_factor": 0.5}"#).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json["load_high_factor"], 1.5);
    // Only the fields a request sets are warned about: the next one leaves both as they are.
    let reply = put(r#"{"anomaly_threshold": 0.9}"#).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let warnings: Vec<String> = log
        .lines()
        .into_iter()
        .map(|l| l.trim().to_owned())
        .collect();
    assert_eq!(
        warnings,
        [
            "WARN ratewarden::http::admin::thresholds: admin thresholds: load_high_factor is 1.5, above 1: limits grow under high load",
            "WARN ratewarden::http::admin::thresholds: admin thresholds: load_low_factor is 0.5, below 1: limits shrink on an idle machine",
        ]
    );
}
