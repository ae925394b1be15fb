//! `PUT /v1/admin/subjects/{user}/tier`: a stored tier is used by the next check and removed
//! by `null`; bad bodies store nothing; a subject can be named by its hash, as the flagged list
//! shows it, in this route and the subject view; a stored tier a reload removed is counted and
//! shown while the default tier applies.

use crate::harness::{POLICY, TOKEN, admin, check, check_with, harness, send};
use axum::http::{Method, StatusCode};
use ratewarden::policy::Policy;
use serde_json::json;
use std::path::Path;

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
async fn a_subject_named_by_its_hash_gets_its_tier_and_its_view() {
    let h = harness(Some(TOKEN));
    let user = "frank@example.com";
    let subject = h.engine.hasher().user(user).to_string();
    let by_hash = format!("/v1/admin/subjects/{subject}/tier?hashed=true");
    let reply = admin(&h.app, Method::PUT, &by_hash, Some(r#"{"tier": "pro"}"#)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.json, json!({"subject": subject, "tier": "pro"}));
    assert_eq!(h.engine.stored_tier(user).await.as_deref(), Some("pro"));

    let view_by_hash = format!("/v1/admin/subjects/{subject}?hashed=true");
    let by_hash = admin(&h.app, Method::GET, &view_by_hash, None).await;
    let by_name = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/frank@example.com",
        None,
    )
    .await;
    assert_eq!(by_hash.status, StatusCode::OK, "{}", by_hash.text);
    assert_eq!(by_hash.json, by_name.json);
    assert_eq!(by_hash.json["tier_source"], "stored");

    // An unknown query parameter stores nothing (it used to be ignored, and `hashed` with it).
    let reply = admin(
        &h.app,
        Method::PUT,
        "/v1/admin/subjects/frank@example.com/tier?hashd=true",
        Some(r#"{"tier": "free"}"#),
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "query string: hashd: unknown field `hashd`, expected `hashed`",
    );
    let reply = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/frank?hashed=true",
        None,
    )
    .await;
    reply.assert_problem(
        StatusCode::BAD_REQUEST,
        "with hashed=true the path must be a subject hash of 32 hex digits, not \"frank\"",
    );
    assert_eq!(h.engine.stored_tier(user).await.as_deref(), Some("pro"));
}

#[tokio::test]
async fn a_stored_tier_a_reload_removed_gets_the_default_tier_is_counted_and_shown() {
    let h = harness(Some(TOKEN));
    let uri = "/v1/admin/subjects/gina@example.com/tier";
    let reply = admin(&h.app, Method::PUT, uri, Some(r#"{"tier": "pro"}"#)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);

    // The reload renames `pro`: the stored name is kept, and the default tier applies.
    let renamed = POLICY.replace("  pro:", "  premium:");
    h.engine
        .reload(Policy::from_yaml(&renamed, Path::new(".")).expect("valid"));
    let d = check(&h.app, "gina@example.com", "/anywhere").await;
    assert_eq!(d["policy"], "tier:free/burst");
    check(&h.app, "gina@example.com", "/anywhere").await;
    let counted = |metrics: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with("ratewarden_unknown_stored_tier_total{tier=\"pro\"}"))
            .map(str::to_owned)
    };
    assert_eq!(
        counted(&h.engine.metrics().render()).as_deref(),
        Some("ratewarden_unknown_stored_tier_total{tier=\"pro\"} 2")
    );
    let view = admin(
        &h.app,
        Method::GET,
        "/v1/admin/subjects/gina@example.com",
        None,
    )
    .await;
    assert_eq!(
        (
            &view.json["tier"],
            &view.json["tier_source"],
            &view.json["stored_tier"]
        ),
        (&json!("free"), &json!("default"), &json!("pro"))
    );
    // The view is not a decision, nor is a request refused with a 400 (a `key: ip` rule
    // without `ip`, a batch refused at its second item): they count nothing.
    let refused = [
        (
            "/v1/check",
            json!({"user": "gina@example.com", "endpoint": "/login"}),
        ),
        (
            "/v1/check/batch",
            json!({"requests": [{"user": "gina@example.com", "endpoint": "/x"},
                                {"user": "gina@example.com", "endpoint": "/login"}]}),
        ),
    ];
    for (uri, body) in refused {
        let reply = send(&h.app, Method::POST, uri, None, Some(&body.to_string())).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text);
    }
    assert_eq!(
        counted(&h.engine.metrics().render()).as_deref(),
        Some("ratewarden_unknown_stored_tier_total{tier=\"pro\"} 2")
    );
    // A batch that is decided counts each of its items.
    let batch = json!({"requests": [{"user": "gina@example.com", "endpoint": "/x"},
                                    {"user": "gina@example.com", "endpoint": "/y"}]});
    let reply = send(
        &h.app,
        Method::POST,
        "/v1/check/batch",
        None,
        Some(&batch.to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(
        counted(&h.engine.metrics().render()).as_deref(),
        Some("ratewarden_unknown_stored_tier_total{tier=\"pro\"} 4")
    );

    // The tier back in the policy: the subject has it again, and nothing more is counted.
    h.engine
        .reload(Policy::from_yaml(POLICY, Path::new(".")).expect("valid"));
    let d = check(&h.app, "gina@example.com", "/anywhere").await;
    assert_eq!(d["policy"], "tier:pro/hourly");
    assert_eq!(
        counted(&h.engine.metrics().render()).as_deref(),
        Some("ratewarden_unknown_stored_tier_total{tier=\"pro\"} 4")
    );
}
