//! The security workflow: the flagged list, clearing a flag, allowlisting for a stated time,
//! each action's `audit` log line, and the subject view's scoring progress and flag times.

use super::harness::{START, TOKEN, admin, check, harness};
use crate::common::logs::Captured;
use axum::http::{Method, StatusCode};
use ratewarden::engine::SubjectStanding;
use serde_json::{Value, json};

/// 2023-11-14T22:13:20Z plus `s` seconds, as the API writes times.
fn at(s: u64) -> String {
    let t = chrono::DateTime::from_timestamp_micros((START + s * 1_000_000) as i64).unwrap();
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn scale(decision: &Value) -> f64 {
    decision["scale"].as_f64().unwrap()
}

#[tokio::test]
async fn flagged_subjects_are_listed_cleared_and_allowlisted_with_an_audit_line_each() {
    let log = Captured::default();
    let _guard = log.start();
    let h = harness(Some(TOKEN));
    let scale_factors = h.engine.scale_factors();
    let hash = |user: &str| h.engine.hasher().user(user);
    // Flagged 60 s ago with a 5-minute hold; a third subject scored below the threshold.
    for (user, score) in [("mallory", 0.95), ("nina", 0.9), ("oscar", 0.3)] {
        let held_until = if score >= 0.8 { START + 240_000_000 } else { 0 };
        let standing = SubjectStanding {
            abuse_score: score,
            held_until,
            novel: false,
        };
        scale_factors.set_standing(hash(user), standing);
    }
    let starts = [
        (hash("mallory"), START - 60_000_000),
        (hash("nina"), START - 60_000_000),
    ];
    scale_factors
        .exemptions()
        .publish_flag_starts(starts.into_iter().collect());

    let list = admin(&h.app, Method::GET, "/v1/admin/flagged", None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text);
    let entry = |user: &str| {
        json!({"subject": hash(user).to_string(), "abuse_score": if user == "mallory" { 0.95 } else { 0.9 },
               "since": "2023-11-14T22:12:20.000Z", "hold_until": at(240), "requests": 0,
               "top_features": []})
    };
    assert_eq!(
        list.json,
        json!({"threshold": 0.8, "model_version": null, "subjects": [entry("mallory"), entry("nina")]})
    );

    // Clearing: mallory's limits are whole again at once, and it leaves the list.
    assert_eq!(scale(&check(&h.app, "mallory", "/x").await), 0.1);
    let cleared = admin(
        &h.app,
        Method::DELETE,
        "/v1/admin/subjects/mallory/flag",
        None,
    )
    .await;
    assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.text);
    assert_eq!(
        cleared.json,
        json!({"subject": hash("mallory").to_string(), "cleared": true})
    );
    assert_eq!(scale(&check(&h.app, "mallory", "/x").await), 1.0);
    let again = admin(
        &h.app,
        Method::DELETE,
        "/v1/admin/subjects/oscar/flag",
        None,
    )
    .await;
    assert_eq!(again.json["cleared"], false, "oscar was not flagged");

    // Allowlisting nina by the hash the list shows, for an hour.
    let uri = format!("/v1/admin/subjects/{}/allowlist?hashed=true", hash("nina"));
    let listed = admin(&h.app, Method::PUT, &uri, Some(r#"{"ttl_seconds": 3600}"#)).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(
        listed.json,
        json!({"subject": hash("nina").to_string(), "until": at(3600)})
    );
    assert_eq!(scale(&check(&h.app, "nina", "/x").await), 1.0);
    let list = admin(&h.app, Method::GET, "/v1/admin/flagged", None).await;
    assert_eq!(list.json["subjects"], json!([]));
    let view = admin(&h.app, Method::GET, "/v1/admin/subjects/nina", None).await;
    assert_eq!(view.json["allowlisted_until"], at(3600), "{}", view.text);
    assert_eq!(view.json["flagged"], false);

    // Its end restores the flag the control loop still holds.
    let removed = admin(
        &h.app,
        Method::DELETE,
        "/v1/admin/subjects/nina/allowlist",
        None,
    )
    .await;
    assert_eq!(
        removed.json,
        json!({"subject": hash("nina").to_string(), "until": null, "removed": true})
    );
    assert_eq!(scale(&check(&h.app, "nina", "/x").await), 0.1);

    let audit: Vec<String> = log
        .lines()
        .into_iter()
        .filter(|l| l.contains(" audit: "))
        .collect();
    let expected = [
        format!(
            "INFO audit: admin cleared the flag of subject {} action=\"clear_flag\" subject={} was_flagged=true abuse_score=0.95",
            hash("mallory"),
            hash("mallory")
        ),
        format!(
            "INFO audit: admin cleared the flag of subject {} (it was not flagged) action=\"clear_flag\" subject={} was_flagged=false abuse_score=0.3",
            hash("oscar"),
            hash("oscar")
        ),
        format!(
            "INFO audit: admin allowlisted subject {} for 3600 s action=\"allowlist\" subject={} ttl_s=3600",
            hash("nina"),
            hash("nina")
        ),
        format!(
            "INFO audit: admin removed subject {} from the allowlist action=\"remove_from_allowlist\" subject={} was_allowlisted=true",
            hash("nina"),
            hash("nina")
        ),
    ];
    let audit: Vec<&str> = audit.iter().map(|l| l.trim()).collect();
    assert_eq!(audit, expected, "{:#?}", log.lines());
}

#[tokio::test]
async fn allowlisting_needs_a_ttl_in_range_and_a_hash_must_be_32_hex_digits() {
    let h = harness(Some(TOKEN));
    let uri = "/v1/admin/subjects/alice/allowlist";
    for (body, detail) in [
        (
            "{}",
            "field `ttl_seconds` is required: how long the subject is allowlisted",
        ),
        (
            r#"{"ttl_seconds": 0}"#,
            "field `ttl_seconds` must be 1 to 2592000 (30 days), not 0",
        ),
        (
            r#"{"ttl_seconds": 2592001}"#,
            "field `ttl_seconds` must be 1 to 2592000 (30 days), not 2592001",
        ),
        (
            r#"{"ttl_seconds": -1}"#,
            "field `ttl_seconds` must be 1 to 2592000 (30 days), not -1",
        ),
        (
            r#"{"ttl_seconds": 1.5}"#,
            "field `ttl_seconds` must be a whole number of seconds, 1 to 2592000 (30 days), not 1.5",
        ),
        (
            r#"{"ttl_seconds": 99999999999999999999}"#,
            "field `ttl_seconds` must be 1 to 2592000 (30 days), not 1e+20",
        ),
    ] {
        let reply = admin(&h.app, Method::PUT, uri, Some(body)).await;
        reply.assert_problem(StatusCode::BAD_REQUEST, detail);
    }
    let reply = admin(
        &h.app,
        Method::DELETE,
        "/v1/admin/subjects/xyz/flag?hashed=true",
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "with hashed=true the path must be a subject hash of 32 hex digits, not \"xyz\"",
    );
}

#[tokio::test]
async fn the_subject_view_shows_scoring_progress_threshold_and_flag_times() {
    let h = harness(Some(TOKEN));
    let view = admin(&h.app, Method::GET, "/v1/admin/subjects/zoe", None).await;
    assert_eq!(view.status, StatusCode::OK, "{}", view.text);
    assert_eq!(
        view.json["scoring"],
        json!({"requests": 0, "min_requests": 20, "progress": "0 of 20 requests"})
    );
    assert_eq!(view.json["threshold"], 0.8);
    for absent in [
        "flag_start",
        "hold_until",
        "allowlisted_until",
        "model_version",
    ] {
        assert_eq!(view.json[absent], Value::Null, "{absent}: {}", view.text);
    }
    let zoe = h.engine.hasher().user("zoe");
    h.engine.scale_factors().set_standing(
        zoe,
        SubjectStanding {
            abuse_score: 0.85,
            held_until: START + 300_000_000,
            novel: false,
        },
    );
    let starts = [(zoe, START)].into_iter().collect();
    h.engine
        .scale_factors()
        .exemptions()
        .publish_flag_starts(starts);
    let view = admin(&h.app, Method::GET, "/v1/admin/subjects/zoe", None).await;
    assert_eq!(view.json["flagged"], true);
    assert_eq!(view.json["flag_start"], at(0));
    assert_eq!(view.json["hold_until"], at(300));
}
