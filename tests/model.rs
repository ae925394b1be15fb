//! The abuse model: file round trips, explanations that add up, the evidence rule, leave-one-archetype-out, the shipped model against its model card on simulated traffic
//! it has not seen, and the simulation itself.

use ratewarden::features::{Features, SubjectFeatures};
use ratewarden::model::samples::{DEFAULT_EVERY, SampleOptions, Samples, feature_samples};
use ratewarden::model::train::{TrainOptions, train};
use ratewarden::model::{Model, ModelKind, evaluate::evaluate};
use ratewarden::policy::Policy;
use ratewarden::simulate::{Label, MIX, SimulateConfig, TrafficRecord, simulate};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// What models/README.md (the model card) promises for the shipped model on fresh
/// simulated traffic at the example policy's threshold.
const CARD_THRESHOLD: f64 = 0.8;
/// Floors a little under the measured figures (held out: precision 0.959, recall 0.561; on
/// this fresh seed: 0.957, 0.642, ROC AUC 0.962, 45 of 65 abusive and 3 of 419 normal subjects).
const CARD_PRECISION: f64 = 0.94;
const CARD_RECALL: f64 = 0.55;
const CARD_ROC_AUC: f64 = 0.95;
/// Of the subjects: abusive ones flagged at least once, normal ones flagged at most.
const CARD_SUBJECT_RECALL: f64 = 0.65;
const CARD_NORMAL_FLAGGED: f64 = 0.015;

/// A seed the shipped model was not trained on (it was trained on seed 1).
const FRESH_SEED: u64 = 20_261_122;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example_policy() -> Policy {
    ratewarden::rules::load_policy(&root().join("ratewarden.yaml"))
        .expect("the example policy is valid")
}

fn samples_of(records: &[TrafficRecord]) -> Samples {
    let policy = example_policy();
    let options = SampleOptions::from_policy(&policy, DEFAULT_EVERY);
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(feature_samples(policy, records, &options, |_| {}))
}

fn small_run(seed: u64, subjects: usize, minutes: u64) -> Vec<TrafficRecord> {
    simulate(&SimulateConfig {
        seed,
        subjects,
        duration: Duration::from_secs(minutes * 60),
        ..SimulateConfig::default()
    })
}

/// Fresh traffic for the model card checks, simulated once for all tests.
fn fresh() -> &'static Samples {
    static FRESH: OnceLock<Samples> = OnceLock::new();
    FRESH.get_or_init(|| samples_of(&small_run(FRESH_SEED, 600, 40)))
}

fn features(samples: &Samples) -> Vec<SubjectFeatures> {
    samples.samples.iter().map(|s| s.observed()).collect()
}

fn shipped() -> Model {
    Model::load(&root().join("models/abuse.json")).expect("the shipped model loads")
}

#[test]
fn trained_models_round_trip_through_a_file_with_identical_scores() {
    let samples = samples_of(&small_run(7, 300, 20));
    let dir = tempfile::tempdir().expect("temp dir");
    for kind in [ModelKind::Logistic, ModelKind::Gmm] {
        let report = train(
            &samples,
            &TrainOptions {
                kind,
                seed: 3,
                threshold: CARD_THRESHOLD,
                components: 3,
                data: "small.jsonl".into(),
                sampling: "test".into(),
                window: None,
                leave_one_archetype_out: false,
                pairs: false,
                ignore: Vec::new(),
            },
        )
        .expect("trains");
        let path = dir.path().join(format!("{kind}.json"));
        report.model.save(&path).expect("saves");
        let loaded = Model::load(&path).expect("loads");
        assert_eq!(loaded.kind(), kind);
        assert_eq!(loaded.version(), report.model.version());
        assert!(loaded.version().starts_with(&format!("{kind}-")));
        assert_eq!(loaded.evaluation(), Some(&report.held_out));
        let rows = features(&samples);
        let before = report.model.score_many(&rows);
        let after = loaded.score_many(&rows);
        assert_eq!(before, after, "{kind}: scores differ after a round trip");
        assert!(after.iter().all(|s| (0.0..=1.0).contains(s)));
        // Saving the loaded model writes the same file.
        assert_eq!(loaded.to_json(), report.model.to_json());
    }
}

#[test]
fn a_gmm_score_is_the_share_of_training_traffic_more_typical() {
    let samples = samples_of(&small_run(11, 300, 20));
    let report = train(
        &samples,
        &TrainOptions {
            kind: ModelKind::Gmm,
            seed: 5,
            threshold: 0.9,
            components: 3,
            data: "small.jsonl".into(),
            sampling: "test".into(),
            window: None,
            leave_one_archetype_out: false,
            pairs: false,
            ignore: Vec::new(),
        },
    )
    .expect("trains");
    // With overwhelming evidence the evidence rule leaves the mixture's score as it is.
    let rows: Vec<SubjectFeatures> = features(&samples)
        .into_iter()
        .map(|o| SubjectFeatures {
            requests: 1_000_000_000_000,
            ..o
        })
        .collect();
    let scores = report.model.score_many(&rows);
    for threshold in [0.5, 0.9] {
        let share = scores.iter().filter(|s| **s >= threshold).count() as f64 / scores.len() as f64;
        assert!(
            (share - (1.0 - threshold)).abs() < 0.06,
            "at {threshold}, {share:.3} of the traffic scores over"
        );
    }
}

#[test]
fn the_shipped_model_meets_its_model_card_on_traffic_it_has_not_seen() {
    let model = shipped();
    assert_eq!(model.kind(), ModelKind::Logistic);
    assert_ne!(model.training().map(|t| t.seed), Some(FRESH_SEED));
    let samples = fresh();
    let scores = model.score_many(&features(samples));
    let abuse: Vec<bool> = samples.samples.iter().map(|s| s.abuse).collect();
    let subjects: Vec<u32> = samples.samples.iter().map(|s| s.subject).collect();
    let e = evaluate(&scores, &abuse, &subjects, CARD_THRESHOLD);
    eprintln!(
        "fresh traffic: {} samples ({} abuse): precision {:.4}, recall {:.4}, ROC AUC {:.4}, \
         subjects flagged {}/{} abusive, {}/{} normal",
        e.samples,
        e.abuse_samples,
        e.precision,
        e.recall,
        e.roc_auc,
        e.subjects.abuse_flagged,
        e.subjects.abuse,
        e.subjects.normal_flagged,
        e.subjects.normal
    );
    assert!(e.abuse_samples > 500, "too little abuse to measure");
    assert!(e.precision >= CARD_PRECISION, "precision {}", e.precision);
    assert!(e.recall >= CARD_RECALL, "recall {}", e.recall);
    assert!(e.roc_auc >= CARD_ROC_AUC, "ROC AUC {}", e.roc_auc);
    let s = &e.subjects;
    assert!(s.abuse_flagged as f64 >= CARD_SUBJECT_RECALL * s.abuse as f64);
    assert!(s.normal_flagged as f64 <= CARD_NORMAL_FLAGGED * s.normal as f64);
    // The held-out figures stored in the file are the ones the card quotes.
    let stored = model
        .evaluation()
        .expect("the shipped model has held-out metrics");
    assert_eq!(stored.threshold, CARD_THRESHOLD);
    assert!(stored.precision >= CARD_PRECISION && stored.recall >= CARD_RECALL);
}

#[test]
fn nat_users_and_browsers_score_under_the_threshold() {
    // Pollers may have a bad day in the simulator (minutes of 401s, 404s or 400s): a model
    // may rightly take such a run for abuse. People browsing have none.
    let model = shipped();
    let samples = fresh();
    for archetype in ["nat_user", "browser"] {
        let rows: Vec<SubjectFeatures> = samples
            .samples
            .iter()
            .filter(|s| {
                samples.subjects[s.subject as usize].archetype.as_deref() == Some(archetype)
            })
            .map(|s| s.observed())
            .collect();
        assert!(rows.len() > 100, "{archetype}: only {} samples", rows.len());
        let worst = model.score_many(&rows).into_iter().fold(0.0f64, f64::max);
        assert!(
            worst < CARD_THRESHOLD,
            "{archetype}: a sample scores {worst:.3}"
        );
    }
}

#[test]
fn simulate_is_deterministic_per_seed_and_labels_every_line() {
    let a = small_run(42, 120, 10);
    let b = small_run(42, 120, 10);
    let c = small_run(43, 120, 10);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.windows(2).all(|w| w[0].ts <= w[1].ts), "time order");
    for (archetype, _) in MIX {
        let lines: Vec<&TrafficRecord> = a
            .iter()
            .filter(|r| r.archetype.as_deref() == Some(archetype.name()))
            .collect();
        assert!(!lines.is_empty(), "{} missing", archetype.name());
        assert!(lines.iter().all(|r| r.label == Some(archetype.label())));
    }
    assert!(a.iter().any(|r| r.label == Some(Label::Abuse)));
}

#[test]
fn simulated_lines_are_replay_jsonl() {
    let records = small_run(5, 20, 5);
    let mut text = Vec::new();
    ratewarden::simulate::write_jsonl(&mut text, &records).expect("writes");
    let first = String::from_utf8_lossy(&text);
    let line = first.lines().next().expect("a line");
    let value: serde_json::Value = serde_json::from_str(line).expect("json");
    for key in ["ts", "user", "endpoint", "ip", "tier", "status", "label"] {
        assert!(value.get(key).is_some(), "{key} missing in {line}");
    }
    assert!(value["ts"].is_f64() || value["ts"].is_u64());
    let read = ratewarden::model::traffic::read_jsonl(&text[..], |_| {}).expect("reads");
    assert_eq!(read.records, records);
    assert_eq!(read.skipped, 0);
}

#[test]
fn an_explanation_adds_up_to_the_scores_logit() {
    let model = shipped();
    for observed in features(fresh()).into_iter().step_by(997) {
        let e = model.explain(&observed);
        let sum: f64 = e.base
            + e.features
                .iter()
                .filter_map(|c| c.contribution)
                .sum::<f64>();
        assert!((sum - e.logit).abs() < 1e-9, "{e:?}");
        assert!((e.score - model.score(&observed)).abs() < 1e-12);
        assert_eq!(e.features.len(), ratewarden::features::FEATURE_COUNT);
    }
}

#[test]
fn asking_past_the_trained_demand_is_novel_and_its_own_second_signal() {
    let model = shipped();
    // A few refused requests of a huge cost among many small ones: each refusal adds one
    // allowance to `limit_demand` (past the 46.54 seen in training), and the limits refused
    // under 5 % of the requests. Asking that much is the limits' judgement: the score counts.
    let features = Features {
        limit_usage: 0.3,
        denied_ratio: 48.0 / 1048.0,
        endpoints_per_request: 0.1,
        ips_per_request: 0.001,
        auth_failure_ratio: 0.0,
        not_found_ratio: 0.0,
        other_client_error_ratio: 0.0,
        interarrival_cv: 0.5,
        client_error_ratio: 0.0,
        address_spread: 0.001,
        limit_demand: 48.3,
    };
    let assessed = model.assess(&SubjectFeatures {
        features,
        requests: 1048,
    });
    assert!(assessed.novel, "{assessed:?}");
    assert!(
        assessed.second_signal && assessed.score_counts(),
        "{assessed:?}"
    );
    assert!(assessed.score > 0.99, "{assessed:?}");
    // Asking less than the limits allow and refused under 5 %: no second signal, so a subject
    // novel in some other feature would not be flagged by its score alone.
    let narrow = Features {
        limit_demand: 0.9,
        denied_ratio: 0.04,
        ..features
    };
    let assessed = model.assess(&SubjectFeatures {
        features: narrow,
        requests: 1048,
    });
    assert!(!assessed.second_signal, "{assessed:?}");
}

#[test]
fn few_requests_are_weak_evidence_whatever_the_features() {
    let model = shipped();
    let worst = Features {
        limit_usage: 1.0,
        denied_ratio: 1.0,
        endpoints_per_request: 1.0,
        ips_per_request: 1.0,
        auth_failure_ratio: 1.0,
        not_found_ratio: 0.0,
        other_client_error_ratio: 0.0,
        interarrival_cv: 0.0,
        client_error_ratio: 1.0,
        address_spread: 1.0,
        limit_demand: 100.0,
    };
    let score = |requests| {
        model.score(&SubjectFeatures {
            features: worst,
            requests,
        })
    };
    // Half the model's say at `half_weight_requests`, so a handful of requests cannot be
    // certain; with more the score grows, and it never reaches 1.
    let evidence = model.evidence();
    assert_eq!(evidence.half_weight_requests, 30.0);
    assert!(score(5) < 0.5, "5 requests: {}", score(5));
    assert!(score(5) < score(20) && score(20) < score(200));
    assert!(score(1_000_000) < 1.0);
}

#[test]
fn leave_one_archetype_out_scores_each_archetype_with_a_model_fitted_without_it() {
    let samples = samples_of(&small_run(9, 400, 20));
    let options = TrainOptions {
        kind: ModelKind::Logistic,
        seed: 2,
        threshold: CARD_THRESHOLD,
        components: 3,
        data: "small.jsonl".into(),
        sampling: "test".into(),
        window: None,
        leave_one_archetype_out: true,
        pairs: false,
        ignore: vec![2, 7],
    };
    let report = train(&samples, &options).expect("trains");
    let left_out = &report.held_out.leave_one_archetype_out;
    let named: Vec<&str> = left_out.iter().map(|g| g.archetype.as_str()).collect();
    for (archetype, _) in MIX {
        if samples.subjects.iter().any(|s| {
            s.archetype.as_deref() == Some(archetype.name())
                && samples
                    .samples
                    .iter()
                    .any(|x| samples.subjects[x.subject as usize].user == s.user)
        }) {
            assert!(
                named.contains(&archetype.name()),
                "{} missing",
                archetype.name()
            );
        }
    }
    for g in left_out {
        assert!(
            g.flagged[0] >= g.flagged[1] && g.flagged[1] >= g.flagged[2],
            "{g:?}"
        );
        assert!(g.flagged[0] <= g.subjects);
    }
    // Ignored features weigh nothing.
    let e = report.model.explain(&features(&samples)[0]);
    assert_eq!(e.features[2].contribution, Some(0.0));
    assert_eq!(e.features[7].contribution, Some(0.0));
}

/// A stray line from 1970 (a `ts` of 0, or milliseconds read as seconds the other way) once
/// made training step through 56 years of one-second cycles. Idle cycles are skipped, and the
/// samples of the real traffic are the same as without the stray line.
#[test]
fn a_stray_line_decades_before_the_traffic_changes_no_sample() {
    let run = small_run(5, 40, 15);
    let mut with_stray = run.clone();
    with_stray.insert(
        0,
        TrafficRecord {
            ts: 0.0,
            user: "stray".to_owned(),
            endpoint: "/".to_owned(),
            ip: None,
            tier: None,
            status: None,
            cost: None,
            label: None,
            archetype: None,
        },
    );
    let shape = |samples: &Samples| -> Vec<(String, u64)> {
        samples
            .samples
            .iter()
            .map(|s| {
                let user = &samples.subjects[s.subject as usize].user;
                (user.clone(), s.requests)
            })
            .collect()
    };
    let plain = samples_of(&run);
    let stray = samples_of(&with_stray);
    assert!(!plain.samples.is_empty());
    assert_eq!(shape(&stray), shape(&plain));
    assert_eq!(features(&stray), features(&plain));
}
