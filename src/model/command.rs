//! `ratewarden train`: read traffic, replay it into feature samples, fit, print the held-out
//! metrics, write the model. Progress goes to stderr (indicatif), results to stdout.

use super::evaluate::FreshResult;
use super::loao::graded;
use super::print::{print_data, print_graded, print_report};
use super::samples::{DEFAULT_EVERY, Sample, SampleOptions, Samples, feature_samples};
use super::traffic::{ReadError, Traffic, read_jsonl};
use super::train::{TrainError, TrainOptions, TrainReport, train};
use super::{ModelError, ModelKind};
use crate::features::FEATURE_NAMES;
use crate::files::refuse_replacing;
use crate::policy::Policy;
use clap::builder::BoolishValueParser;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct TrainArgs {
    /// Labelled (for `logistic`) or unlabelled jsonl traffic.
    #[arg(long, env = "RATEWARDEN_DATA")]
    pub data: PathBuf,
    /// `logistic` (supervised) or `gmm` (unsupervised Gaussian mixture).
    #[arg(long, env = "RATEWARDEN_KIND", default_value = "logistic")]
    pub kind: ModelKind,
    /// Where to write the model. No default: a running daemon watching its model file loads a
    /// new one at once, so the place is always named.
    #[arg(long, env = "RATEWARDEN_OUT")]
    pub out: PathBuf,
    /// Overwrite `--out` (and `--samples-out`) when it exists.
    #[arg(long, env = "RATEWARDEN_FORCE", value_parser = BoolishValueParser::new())]
    pub force: bool,
    /// The policy whose limits decide the requests and whose `adaptive` settings sample
    /// the features [default: ./ratewarden.yaml, else the policy shipped with ratewarden].
    #[arg(long, env = "RATEWARDEN_POLICY")]
    pub policy: Option<PathBuf>,
    /// Seed of the subject split (and of the mixture's subsample).
    #[arg(long, env = "RATEWARDEN_SEED", default_value_t = 1)]
    pub seed: u64,
    /// Threshold of the reported precision and recall [default: the policy's
    /// `anomaly.threshold`].
    #[arg(long, env = "RATEWARDEN_THRESHOLD")]
    pub threshold: Option<f64>,
    /// Gaussians in a `gmm` model (1 to 16).
    #[arg(long, env = "RATEWARDEN_COMPONENTS", default_value_t = 4, value_parser = component_count)]
    pub components: usize,
    /// Also weigh pairs of features (`x_i · x_j`) in a `logistic` model: it can then tell
    /// combinations apart, and extrapolates more boldly from them.
    #[arg(long, env = "RATEWARDEN_PAIRS", value_parser = BoolishValueParser::new())]
    pub pairs: bool,
    /// A feature the model is fitted without (weight 0; it never makes a subject novel);
    /// may be given several times.
    #[arg(long, env = "RATEWARDEN_IGNORE_FEATURE", value_name = "FEATURE", value_parser = feature_index)]
    pub ignore_feature: Vec<usize>,
    /// Also fit one model per archetype of the data without that archetype, and report how
    /// it scores the one left out (one more fit per archetype).
    #[arg(long, env = "RATEWARDEN_LEAVE_ONE_ARCHETYPE_OUT", value_parser = BoolishValueParser::new())]
    pub leave_one_archetype_out: bool,
    /// Traffic never used for fitting (say, `simulate` with other seeds) to score per
    /// archetype; may be given several times.
    #[arg(long, env = "RATEWARDEN_EVALUATE_ON", value_name = "JSONL")]
    pub evaluate_on: Vec<PathBuf>,
    /// Write the held-out reliability diagram to this PNG.
    #[arg(long, env = "RATEWARDEN_RELIABILITY_PLOT", value_name = "PNG")]
    pub reliability_plot: Option<PathBuf>,
    /// Also write every feature sample of `--data` (a subject's features at one sampling
    /// instant, its archetype, label and requests) to this file as JSON lines, to fit other
    /// models on.
    #[arg(long, env = "RATEWARDEN_SAMPLES_OUT", value_name = "JSONL")]
    pub samples_out: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrainCommandError {
    #[error("{} exists; pass --force to overwrite it (a daemon watching it loads the new model at once)", .0.display())]
    WouldOverwrite(PathBuf),
    #[error("policy {path}:{errors}")]
    Policy { path: PathBuf, errors: String },
    #[error("cannot open {path}: {error}")]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {error}")]
    Read { path: PathBuf, error: ReadError },
    #[error("--threshold must be between 0 and 1")]
    Threshold,
    #[error("starting the runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error(transparent)]
    Save(#[from] ModelError),
    #[error("cannot write the samples to {0}: {1}")]
    SamplesOut(PathBuf, std::io::Error),
    #[error("cannot draw {0}: {1}")]
    Plot(PathBuf, String),
    #[error("{path}: no folder {folder} to write it in")]
    NoFolder { path: PathBuf, folder: PathBuf },
    #[error("{0} is a folder; --out names the model file")]
    OutIsFolder(PathBuf),
    #[error("{0} is a folder; --samples-out names a file")]
    SamplesOutIsFolder(PathBuf),
    #[error("{} is a folder; {} names a file", .1.display(), .0)]
    Folder(&'static str, PathBuf),
    #[error("{0} exists; pass --force to replace it")]
    SamplesWouldOverwrite(PathBuf),
    #[error(transparent)]
    OutputIsInput(#[from] crate::files::OutputIsInput),
    #[error("--reliability-plot {0}: the diagram is drawn as PNG; name a .png file")]
    PlotFormat(PathBuf),
    #[error("{0} apply to the logistic kind only")]
    LogisticOnly(&'static str),
    #[error(
        "{unlabelled} of {lines} lines have no `label`: the logistic kind needs every line labelled (an unlabelled line would count as normal)"
    )]
    PartlyLabelled { unlabelled: usize, lines: usize },
    #[error(
        "{unlabelled} of {lines} lines have no `label`: --samples-out needs every line labelled or none (a subject's label would be a guess)"
    )]
    SamplesPartlyLabelled { unlabelled: usize, lines: usize },
}

fn component_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=super::mixture::MAX_COMPONENTS).contains(&n) => Ok(n),
        Ok(_) => Err(format!(
            "a mixture has 1 to {} components",
            super::mixture::MAX_COMPONENTS
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// A feature's column from its name.
fn feature_index(name: &str) -> Result<usize, String> {
    FEATURE_NAMES
        .iter()
        .position(|f| *f == name)
        .ok_or_else(|| {
            format!(
                "unknown feature (expected one of {})",
                FEATURE_NAMES.join(", ")
            )
        })
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

pub fn run(args: &TrainArgs) -> Result<TrainReport, TrainCommandError> {
    refuse_before_training(args)?;
    let policy = training_policy(args.policy.as_deref())?;
    let threshold = args.threshold.unwrap_or(policy.adaptive.anomaly.threshold);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(TrainCommandError::Threshold);
    }
    let traffic = read_traffic(&args.data)?;
    refuse_partly_labelled(args, &traffic)?;
    if args.leave_one_archetype_out {
        warn_without_archetypes(&args.data, &traffic, "--leave-one-archetype-out is skipped");
    }
    let options = SampleOptions::from_policy(&policy, DEFAULT_EVERY);
    let samples = replay_into_samples(policy.clone(), &traffic, &options)?;
    print_data(&samples, &options);
    if let Some(path) = &args.samples_out {
        super::samples_out::write(&samples, path)
            .map_err(|error| TrainCommandError::SamplesOut(path.clone(), error))?;
        say!(
            "wrote {} feature samples to {}",
            samples.samples.len(),
            path.display()
        );
    }
    let mut report = fit(args, &samples, threshold, &options)?;
    print_report(&report);
    warn_if_few_abusers(&report);
    for path in &args.evaluate_on {
        let fresh = evaluate_on(&report, &policy, path, &options)?;
        print_graded(&format!("fresh traffic {}:", fresh.data), &fresh.archetypes);
        if let Some(evaluation) = report.model.evaluation_mut() {
            evaluation.fresh.push(fresh);
        }
    }
    if let Some(path) = &args.reliability_plot {
        super::reliability::draw(&report.held_out, path)
            .map_err(|problem| TrainCommandError::Plot(path.clone(), problem))?;
        say!("wrote the reliability diagram to {}", path.display());
    }
    report.model.save(&args.out)?;
    say!(
        "wrote {} ({} model, version {})",
        args.out.display(),
        report.model.kind(),
        report.model.version()
    );
    Ok(report)
}

/// What would fail only after the fit, refused before it: the fit is the slow part.
fn refuse_before_training(args: &TrainArgs) -> Result<(), TrainCommandError> {
    if args.out.is_dir() {
        return Err(TrainCommandError::OutIsFolder(args.out.clone()));
    }
    refuse_overwriting_inputs(args)?;
    if args.out.exists() && !args.force {
        return Err(TrainCommandError::WouldOverwrite(args.out.clone()));
    }
    if let Some(path) = &args.reliability_plot
        && !path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
    {
        return Err(TrainCommandError::PlotFormat(path.clone()));
    }
    if let Some(path) = &args.samples_out {
        refuse_samples_out(args, path)?;
    }
    if args.kind == ModelKind::Gmm && (args.pairs || !args.ignore_feature.is_empty()) {
        return Err(TrainCommandError::LogisticOnly(
            "--pairs and --ignore-feature",
        ));
    }
    let outputs = std::iter::once(&args.out)
        .chain(&args.reliability_plot)
        .chain(&args.samples_out);
    for path in outputs {
        if let Some(folder) = crate::files::missing_folder(path) {
            return Err(TrainCommandError::NoFolder {
                path: path.clone(),
                folder,
            });
        }
    }
    for path in &args.evaluate_on {
        let metadata = std::fs::metadata(path).map_err(|error| TrainCommandError::Open {
            path: path.clone(),
            error,
        })?;
        if metadata.is_dir() {
            return Err(TrainCommandError::Folder("--evaluate-on", path.clone()));
        }
    }
    match &args.reliability_plot {
        Some(path) if path.is_dir() => Err(TrainCommandError::Folder(
            "--reliability-plot",
            path.clone(),
        )),
        _ => Ok(()),
    }
}

/// The figures by archetype need the `archetype` field `simulate` writes; recorded traffic has
/// none, and would print an empty table without a word.
fn warn_without_archetypes(path: &Path, traffic: &Traffic, consequence: &str) {
    if traffic.records.iter().all(|r| r.archetype.is_none()) {
        note(format_args!(
            "warning: {} has no `archetype` field (simulate writes one): {consequence}",
            path.display()
        ));
    }
}

/// A logistic fit on data labelled in part would take every unlabelled line as normal, and so
/// would the samples written for `--samples-out`.
fn refuse_partly_labelled(args: &TrainArgs, traffic: &Traffic) -> Result<(), TrainCommandError> {
    let unlabelled = traffic.records.iter().filter(|r| r.label.is_none()).count();
    let lines = traffic.records.len();
    if unlabelled == 0 || unlabelled == lines {
        return Ok(());
    }
    if args.kind == ModelKind::Logistic {
        return Err(TrainCommandError::PartlyLabelled { unlabelled, lines });
    }
    if args.samples_out.is_some() {
        return Err(TrainCommandError::SamplesPartlyLabelled { unlabelled, lines });
    }
    Ok(())
}

/// An output that names a file the command reads (the policy read without `--policy`, from
/// `./ratewarden.yaml`, included) or another output is refused, `--force` or not: a typing slip
/// must not cost the training traffic, and two outputs in one file would keep only the last.
fn refuse_overwriting_inputs(args: &TrainArgs) -> Result<(), TrainCommandError> {
    let local_policy = Path::new(LOCAL_POLICY);
    let policy = match &args.policy {
        Some(path) => Some((path.as_path(), "--policy")),
        None => local_policy
            .exists()
            .then_some((local_policy, "the policy read without --policy")),
    };
    let inputs = std::iter::once((args.data.as_path(), "--data"))
        .chain(
            args.evaluate_on
                .iter()
                .map(|p| (p.as_path(), "--evaluate-on")),
        )
        .chain(policy);
    let outputs = [
        (Some(&args.out), "--out"),
        (args.reliability_plot.as_ref(), "--reliability-plot"),
        (args.samples_out.as_ref(), "--samples-out"),
    ];
    let mut named: Vec<(&Path, &'static str)> = inputs.collect();
    for (path, flag) in outputs {
        let Some(path) = path else { continue };
        refuse_replacing(flag, path, named.iter().copied())?;
        named.push((path, flag));
    }
    Ok(())
}

/// `--samples-out` replaces no file by surprise: not a folder, nor an existing file without
/// `--force` (nor another file of the command: [`refuse_overwriting_inputs`]).
fn refuse_samples_out(args: &TrainArgs, path: &Path) -> Result<(), TrainCommandError> {
    if path.is_dir() {
        return Err(TrainCommandError::SamplesOutIsFolder(path.to_path_buf()));
    }
    if path.exists() && !args.force {
        return Err(TrainCommandError::SamplesWouldOverwrite(path.to_path_buf()));
    }
    Ok(())
}

/// The policy `train` reads when none is named and the folder has one.
const LOCAL_POLICY: &str = "ratewarden.yaml";

/// The policy named, else `./ratewarden.yaml`, else the one shipped with ratewarden (so
/// training works from any folder).
fn training_policy(named: Option<&Path>) -> Result<Policy, TrainCommandError> {
    const SHIPPED: &str = include_str!("../../ratewarden.yaml");
    let local = Path::new(LOCAL_POLICY);
    let path = match named {
        Some(path) => path,
        None if local.exists() => local,
        None => {
            note(format_args!(
                "no --policy and no ./ratewarden.yaml: using the policy shipped with ratewarden"
            ));
            return Policy::from_yaml(SHIPPED, Path::new(".")).map_err(|e| {
                TrainCommandError::Policy {
                    path: PathBuf::from("(shipped ratewarden.yaml)"),
                    errors: e.after_heading(),
                }
            });
        }
    };
    crate::rules::load_policy(path).map_err(|e| TrainCommandError::Policy {
        path: path.to_path_buf(),
        errors: e.after_heading(),
    })
}

/// Below this many held-out abusive subjects, precision, recall and ROC AUC say little.
const FEW_HELD_OUT_ABUSERS: u64 = 30;

fn warn_if_few_abusers(report: &TrainReport) {
    let abusers = report.held_out.subjects.abuse;
    if abusers < FEW_HELD_OUT_ABUSERS {
        note(format_args!(
            "warning: only {abusers} abusive subjects were held out; below {FEW_HELD_OUT_ABUSERS} the figures above mean little (train on more subjects)"
        ));
    }
}

/// The jsonl traffic at `path`, in time order; unparsable lines are told on stderr and left
/// out.
fn read_traffic(path: &Path) -> Result<Traffic, TrainCommandError> {
    let file = std::fs::File::open(path).map_err(|error| TrainCommandError::Open {
        path: path.to_path_buf(),
        error,
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reading = bar(
        size,
        "reading  [{bar:40}] {bytes}/{total_bytes} {elapsed_precise}",
    );
    let mut traffic =
        read_jsonl(BufReader::new(file), |b| reading.set_position(b)).map_err(|source| {
            TrainCommandError::Read {
                path: path.to_path_buf(),
                error: source,
            }
        })?;
    reading.finish();
    if traffic.skipped > 0 {
        note(format_args!(
            "skipped {} unparsable lines:",
            traffic.skipped
        ));
        for (line, problem) in &traffic.examples {
            note(format_args!("  line {line}: {problem}"));
        }
    }
    traffic.records.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    Ok(traffic)
}

/// Replays the traffic through the policy's engine (on a runtime of its own: the samples
/// need its async store) and samples the features.
fn replay_into_samples(
    policy: Policy,
    traffic: &Traffic,
    options: &SampleOptions,
) -> Result<Samples, TrainCommandError> {
    let replaying = bar(
        traffic.records.len() as u64,
        "replaying [{bar:40}] {pos}/{len} requests {elapsed_precise}",
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(TrainCommandError::Runtime)?;
    let samples = runtime.block_on(feature_samples(policy, &traffic.records, options, |done| {
        replaying.set_position(done)
    }));
    replaying.finish();
    Ok(samples)
}

/// Scores another traffic file with the trained model, per archetype.
fn evaluate_on(
    report: &TrainReport,
    policy: &Policy,
    path: &Path,
    options: &SampleOptions,
) -> Result<FreshResult, TrainCommandError> {
    let traffic = read_traffic(path)?;
    warn_without_archetypes(path, &traffic, "its table by archetype is empty");
    let samples = replay_into_samples(policy.clone(), &traffic, options)?;
    let rows: Vec<&Sample> = samples.samples.iter().collect();
    Ok(FreshResult {
        data: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        archetypes: graded(&samples, &rows, &report.model),
    })
}

/// Fits the model under a spinner (linfa tells no progress).
fn fit(
    args: &TrainArgs,
    samples: &Samples,
    threshold: f64,
    options: &SampleOptions,
) -> Result<TrainReport, TrainCommandError> {
    let fitting = ProgressBar::new_spinner();
    fitting.set_message(format!("fitting {} with linfa", args.kind));
    fitting.enable_steady_tick(Duration::from_millis(120));
    let report = train(
        samples,
        &TrainOptions {
            kind: args.kind,
            seed: args.seed,
            threshold,
            components: args.components,
            data: args
                .data
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            sampling: options.describe(),
            window: Some(options.window),
            leave_one_archetype_out: args.leave_one_archetype_out,
            pairs: args.pairs,
            ignore: args.ignore_feature.clone(),
        },
    )?;
    fitting.finish_and_clear();
    Ok(report)
}

/// A line on stderr. A reader that left (`train 2>&1 | head`) must not stop the model being
/// written, as `eprintln!` would by panicking.
fn note(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
