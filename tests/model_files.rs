//! Model files: every refused file is refused naming its problem (a pipe or a folder at once),
//! a missing or bad `evaluation` block is no reason to refuse one, and a `gmm` file scores in the
//! unit interval.

use ratewarden::features::{Features, SubjectFeatures};
use ratewarden::model::{Model, ModelKind};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shipped() -> Model {
    Model::load(&root().join("models/abuse.json")).expect("the shipped model loads")
}

#[test]
fn corrupt_or_incompatible_model_files_are_refused_naming_the_problem() {
    let cases = [
        (
            "truncated.json",
            "not valid JSON: EOF while parsing a list at line 44 column 9",
        ),
        (
            "nan_weight.json",
            "parameters.weights[2] is not a finite number",
        ),
        (
            "nan_literal.json",
            "not valid JSON: expected value at line 96 column 7",
        ),
        (
            "wrong_feature_order.json",
            "features [\"limit_usage\", \"endpoints_per_request\", \"denied_ratio\", \
             \"ips_per_request\", \"auth_failure_ratio\", \"not_found_ratio\", \
             \"other_client_error_ratio\", \"interarrival_cv\", \"client_error_ratio\", \
             \"address_spread\", \"limit_demand\"] do not match this build's \
             [\"limit_usage\", \"denied_ratio\", \"endpoints_per_request\", \"ips_per_request\", \
             \"auth_failure_ratio\", \"not_found_ratio\", \"other_client_error_ratio\", \
             \"interarrival_cv\", \"client_error_ratio\", \"address_spread\", \"limit_demand\"]",
        ),
        (
            "unknown_kind.json",
            "unknown kind \"svm\" (this build knows \"logistic\" and \"gmm\")",
        ),
        (
            "wrong_format.json",
            "not a ratewarden abuse model (format is \"onnx\", expected \"ratewarden-abuse-model\")",
        ),
        (
            "future_format_version.json",
            "format_version \"4\" is not supported (this build reads \"3\")",
        ),
        (
            "format_version_1.json",
            "format_version \"1\" was trained on features this build no longer computes (an \
             absolute request rate, one error ratio) and has no training ranges or evidence \
             settings; retrain it with `ratewarden train` (this build reads \"3\")",
        ),
        (
            "format_version_2.json",
            "format_version \"2\" was trained without the features this build's models weigh \
             (client_error_ratio, address_spread, limit_demand); retrain it with `ratewarden train` \
             (this build reads \"3\")",
        ),
        (
            "zero_scale.json",
            "preprocessing.scale[1]: must be positive",
        ),
        (
            "low_above_high.json",
            "preprocessing.low[0]: must not exceed preprocessing.high",
        ),
        ("missing_evidence.json", "missing `evidence`"),
        (
            "zero_max_logit.json",
            "evidence.max_logit: must be a finite number above 0",
        ),
        (
            "one_weight_short.json",
            "parameters.weights has 10 values, expected 11",
        ),
        ("missing_parameters.json", "missing `parameters`"),
        ("missing_intercept.json", "missing `parameters.intercept`"),
        (
            "missing_preprocessing_mean.json",
            "missing `preprocessing.mean`",
        ),
        ("missing_weights.json", "missing `parameters.weights`"),
        (
            "null_mean.json",
            "preprocessing.mean: is null, expected a list",
        ),
        ("parameters_as_a_list.json", "parameters: must be an object"),
        (
            "preprocessing_as_a_list.json",
            "preprocessing: must be an object",
        ),
        (
            "format_version_as_number.json",
            "format_version: invalid type: integer `3`, expected a string at line 3 column 21",
        ),
        (
            "misspelt_top_level_key.json",
            "preprocesing: unknown field `preprocesing`, expected one of `format`, `format_version`, \
             `version`, `kind`, `features`, `preprocessing`, `evidence`, `parameters`, `training`, \
             `evaluation` at line 115 column 16",
        ),
        (
            "weight_as_string.json",
            "parameters.weights[3]: invalid type: string \"0.5\", expected f64",
        ),
        (
            "gmm_precision_not_positive_definite.json",
            "parameters.components[1]: precision is not positive definite",
        ),
        (
            "subnormal_scale.json",
            "parameters: give no score somewhere in the training range (a weight, scale or mean \
             so large that the arithmetic overflows)",
        ),
        (
            "weights_overflow.json",
            "parameters: give no score somewhere in the training range (a weight, scale or mean \
             so large that the arithmetic overflows)",
        ),
        (
            "gmm_mean_overflows.json",
            "parameters: give no score somewhere in the training range (a weight, scale or mean \
             so large that the arithmetic overflows)",
        ),
        (
            "long_version.json",
            "version: must be at most 128 characters",
        ),
        (
            "gmm_quantiles_not_ascending.json",
            "parameters: log_likelihood_quantiles is not ascending",
        ),
    ];
    let dir = root().join("tests/fixtures/models");
    for (file, problem) in cases {
        let path = dir.join(file);
        let error = Model::load(&path).expect_err(file);
        assert_eq!(
            error.to_string(),
            format!("model file {}: {problem}", path.display()),
            "{file}"
        );
    }
}

#[test]
fn a_bad_evaluation_does_not_refuse_the_model() {
    // The daemon reads none of its figures: a `null` or an extra key in them is no reason.
    let path = root().join("tests/fixtures/models/bad_evaluation_is_ignored.json");
    assert!(Model::load(&path).is_ok());
}

#[test]
fn a_missing_model_file_is_refused() {
    let path = root().join("tests/fixtures/models/no_such_model.json");
    let error = Model::load(&path).expect_err("missing");
    assert_eq!(
        error.to_string(),
        format!(
            "cannot read model file {}: No such file or directory (os error 2)",
            path.display()
        )
    );
}

/// A pipe named as the model would hold `check-policy` and the daemon's start-up until a writer
/// came (opening it waits); a folder is no model either.
#[test]
fn a_model_path_that_is_no_regular_file_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("model.json");
    let made = std::process::Command::new("mkfifo").arg(&pipe).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    for path in [pipe, dir.path().to_path_buf()] {
        let (tx, rx) = std::sync::mpsc::channel();
        let probe = path.clone();
        std::thread::spawn(move || {
            tx.send(Model::load(&probe).map(|_| ()).map_err(|e| e.to_string()))
        });
        let refused = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("refused at once, not waiting for a writer");
        assert_eq!(
            refused,
            Err(format!(
                "cannot read model file {}: not a regular file (a pipe or a device would hold \
                 the daemon's start-up until it ends)",
                path.display()
            ))
        );
    }
}
#[test]
fn a_byte_order_mark_before_the_json_is_ignored() {
    let text = std::fs::read_to_string(root().join("models/abuse.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("saved_by_notepad.json");
    std::fs::write(&path, format!("\u{feff}{text}")).unwrap();
    let model = Model::load(&path).expect("loads");
    assert_eq!(model.version(), shipped().version());
}

/// An intercept beyond `evidence.max_logit` (no trained model has one, a hand-edited file may)
/// once turned the explanation's parts around: features that raised the score were shown
/// lowering it.
#[test]
fn an_intercept_beyond_the_logit_bound_turns_no_contribution_around() {
    let text = std::fs::read_to_string(root().join("models/abuse.json")).unwrap();
    let mut file: serde_json::Value = serde_json::from_str(&text).unwrap();
    file["parameters"]["intercept"] = serde_json::json!(12.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("high_intercept.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let edited = Model::load(&path).expect("loads");
    let abusive = SubjectFeatures {
        features: Features {
            client_error_ratio: 0.9,
            auth_failure_ratio: 0.9,
            address_spread: 0.5,
            limit_demand: 3.0,
            ..Features::default()
        },
        requests: 500,
    };
    let (shipped, edited) = (shipped().explain(&abusive), edited.explain(&abusive));
    let sum = edited.base
        + edited
            .features
            .iter()
            .filter_map(|c| c.contribution)
            .sum::<f64>();
    assert!(
        (sum - edited.logit).abs() < 1e-9,
        "{sum} against {}",
        edited.logit
    );
    for (a, b) in shipped.features.iter().zip(&edited.features) {
        let (before, after) = (a.contribution.unwrap(), b.contribution.unwrap());
        assert!(
            before * after >= 0.0,
            "{}: {before} shipped, {after} edited",
            a.feature
        );
    }
}

#[test]
fn a_gmm_file_loads_and_scores_in_the_unit_interval() {
    let model = Model::load(&root().join("tests/fixtures/models/gmm_small.json")).expect("loads");
    assert_eq!(model.kind(), ModelKind::Gmm);
    let odd = [
        Features::default(),
        Features {
            limit_usage: f64::INFINITY,
            endpoints_per_request: f64::NAN,
            ips_per_request: 1e300,
            auth_failure_ratio: -1.0,
            denied_ratio: 1.0,
            interarrival_cv: 10.0,
            client_error_ratio: f64::NAN,
            address_spread: f64::NEG_INFINITY,
            ..Features::default()
        },
    ]
    .map(|features| SubjectFeatures {
        features,
        requests: 1_000,
    });
    for model in [model, shipped()] {
        let scores = model.score_many(&odd);
        assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
    }
}

#[test]
fn a_version_names_what_the_file_holds_until_the_file_is_edited() {
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    let text = std::fs::read_to_string(&shipped).unwrap();
    assert!(Model::from_json(&text).unwrap().version_matches());
    // A training range cut by hand: the same version, other scores.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["preprocessing"]["high"][8] = serde_json::json!(0.8);
    let edited = Model::from_json(&value.to_string()).unwrap();
    assert!(!edited.version_matches());
    // A version of an operator's own says nothing of the contents.
    value["version"] = serde_json::json!("acme-2026-12");
    assert!(
        Model::from_json(&value.to_string())
            .unwrap()
            .version_matches()
    );
}
