//! `POST /v1/admin/reload`: a valid file replaces the policy and resets the thresholds; a
//! broken one is refused with every error and changes nothing.

use crate::harness::{DEFAULT_THRESHOLDS, POLICY, TOKEN, admin, app, check, engine, harness};
use axum::http::{Method, StatusCode};
use ratewarden::control::ModelSlot;
use ratewarden::policy::Policy;
use ratewarden::reload::Reloader;
use serde_json::{Value, json};
use std::sync::Arc;

/// An app over `POLICY` whose admin reload reads `path`, a copy of it in `dir`.
fn reloadable() -> (tempfile::TempDir, std::path::PathBuf, axum::Router) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, POLICY).unwrap();
    let (engine, _clock) = engine(POLICY);
    let reloader = Reloader::new(
        path.clone(),
        engine.clone(),
        Arc::new(ModelSlot::new(engine.metrics().clone())),
    );
    (dir, path, app(&engine, Some(TOKEN), Some(reloader)))
}

#[tokio::test]
async fn reload_swaps_a_valid_policy_and_refuses_a_broken_one_keeping_the_old() {
    let (dir, path, app) = reloadable();

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

    // A parameter these routes do not take is refused, and nothing happens: no dry run
    // reloads (and resets the thresholds) behind the operator's back.
    admin(
        &app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"anomaly_factor": 0.3}"#),
    )
    .await;
    std::fs::write(&path, POLICY.replace("burst: 20", "burst: 40")).unwrap();
    for (method, uri) in [
        (Method::POST, "/v1/admin/reload?dry_run=true"),
        (Method::GET, "/v1/admin/flagged?limit=5"),
        (Method::GET, "/v1/admin/thresholds?foo=1"),
    ] {
        let reply = admin(&app, method, uri, None).await;
        reply.assert_problem(
            StatusCode::BAD_REQUEST,
            &format!(
                "query string: this route takes no parameters (the request has `{}`)",
                uri.split_once('?').unwrap().1
            ),
        );
    }
    let reply = admin(
        &app,
        Method::PUT,
        "/v1/admin/thresholds?anomaly_factor=1",
        Some(r#"{"anomaly_factor": 1}"#),
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text);
    let thresholds = admin(&app, Method::GET, "/v1/admin/thresholds", None).await;
    assert_eq!(thresholds.json["anomaly_factor"], 0.3);
    let d = check(&app, "grace", "/anywhere").await;
    assert_eq!(d["limit"], 30, "the file was not read again");

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
async fn a_body_sent_to_a_route_that_reads_none_is_refused_unless_it_is_empty() {
    let (_dir, path, app) = reloadable();
    admin(
        &app,
        Method::PUT,
        "/v1/admin/thresholds",
        Some(r#"{"load_factor_override": 0.5}"#),
    )
    .await;
    std::fs::write(&path, POLICY.replace("burst: 20", "burst: 30")).unwrap();
    for (method, uri) in [
        (Method::POST, "/v1/admin/reload"),
        (Method::GET, "/v1/admin/thresholds"),
        (Method::GET, "/v1/admin/flagged"),
        (Method::GET, "/v1/admin/subjects/frank"),
        (Method::DELETE, "/v1/admin/subjects/frank/flag"),
        (Method::DELETE, "/v1/admin/subjects/frank/allowlist"),
    ] {
        let reply = admin(&app, method.clone(), uri, Some(r#"{"dry_run":true}"#)).await;
        reply.assert_problem(
            StatusCode::BAD_REQUEST,
            "this route takes no request body, so `dry_run` would do nothing: send none, or {}",
        );
        let reply = admin(&app, method.clone(), uri, Some("dry run")).await;
        reply.assert_problem(
            StatusCode::BAD_REQUEST,
            "this route takes no request body (the request has 7 bytes): send none, or {}",
        );
        // Without a token it is still a 401: the body is read only for an operator.
        let reply = crate::harness::send(&app, method, uri, None, Some("{}")).await;
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "{uri}: {}",
            reply.text
        );
    }
    // The reload did not happen: the live override stays and the file was not read.
    // An empty object, as many clients send by default, is no body: those routes answer.
    for (method, uri) in [
        (Method::GET, "/v1/admin/flagged"),
        (Method::GET, "/v1/admin/subjects/frank"),
        (Method::DELETE, "/v1/admin/subjects/frank/flag"),
    ] {
        let reply = admin(&app, method, uri, Some(" {} ")).await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text);
    }
    let thresholds = admin(&app, Method::GET, "/v1/admin/thresholds", None).await;
    assert_eq!(thresholds.json["load_factor_override"], json!(0.5));
    let d = check(&app, "frank", "/anywhere").await;
    assert_eq!(
        d["limit"], 10,
        "burst 20 at the override's 0.5, not the file's 30"
    );
}
