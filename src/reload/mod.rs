//! Policy and model hot reload: on SIGHUP, on a change of either file, and on request (admin
//! API).
//!
//! The envoyproxy/ratelimit folder (`envoy_config`) is part of the policy: it reloads
//! with it, and a change of one of its files reloads the policy too.
//!
//! A file that fails validation is refused, logged with every error and counted
//! (`ratewarden_config_reloads_total{kind}`); the old policy or model stays, and
//! `ratewarden_policy_file_refused` says so until a reload succeeds. A reload that replaces
//! values set through the admin API, or changes store settings that wait for a restart, says
//! which, with old and new values ([`changes`]).

mod changes;
mod stamps;
mod watch;

use crate::control::ModelSlot;
use crate::engine::{Engine, Thresholds};
use crate::envoy_config::EnvoyConfig;
use crate::limit::Limit;
use crate::model::ModelError;
use crate::policy::PolicyErrors;
use crate::rules::{self, Rules};
use crate::store::Backend;
use stamps::{Stamp, Stamps};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Why a reload was refused; what was refused stays as it was.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("policy refused")]
    Policy(PolicyErrors),
    /// The policy (if it was reloaded too) is in force; the model file was refused.
    #[error("model {path} refused: {error}")]
    Model {
        path: String,
        error: Box<ModelError>,
    },
}

/// The limits of the policy and of its envoyproxy/ratelimit folder for which requests × window
/// (µs) reaches 2^53, once lifted by the largest load factor the policy can apply
/// (`low_factor`, by which an idle host grows limits, `high_factor` if above 1, or
/// `factor_override`) unless load scaling never applies to the limit (`adaptive: false` on it,
/// its endpoint rule or every tier): Redis's Lua computes in doubles, exact only below that. A
/// gRPC call's own `limit` override, `--pin-load-factor` and an admin override are not known
/// here.
pub fn inexact_limits(rules: &Rules) -> impl Iterator<Item = &Limit> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let policy = &rules.policy;
    let load = &policy.adaptive.load;
    let lift = [
        load.low_factor,
        load.high_factor,
        load.factor_override.unwrap_or(1.0),
        1.0,
    ]
    .into_iter()
    .fold(1.0, f64::max);
    let some_tier_scales = policy.tiers.iter().any(|t| t.adaptive);
    fn scaled(limits: &[Limit], scales: bool) -> impl Iterator<Item = (&Limit, bool)> {
        limits
            .iter()
            .map(move |limit| (limit, scales && limit.adaptive))
    }
    let envoy = rules.envoy.as_deref().map(EnvoyConfig::limits);
    policy
        .tiers
        .iter()
        .flat_map(move |t| scaled(&t.limits, t.adaptive))
        .chain(
            policy
                .endpoints
                .iter()
                .chain([&policy.default_endpoint])
                .flat_map(move |r| scaled(&r.limits, some_tier_scales && r.adaptive)),
        )
        .chain(
            envoy
                .into_iter()
                .flatten()
                .map(|limit| (limit, limit.adaptive)),
        )
        .filter(move |(limit, scales)| {
            let largest = limit.requests.get().max(limit.burst.get()) as f64;
            let lift = if *scales { lift } else { 1.0 };
            largest * lift * limit.window_micros() as f64 >= EXACT
        })
        .map(|(limit, _)| limit)
}

/// Warns about every limit of [`inexact_limits`]; for a Redis store, at start-up and after each
/// reload.
pub fn warn_inexact_limits(rules: &Rules) {
    for limit in inexact_limits(rules) {
        tracing::warn!(
            limit = %limit.label,
            "requests x window is beyond what Redis's Lua computes exactly; decisions may be off by one request"
        );
    }
}

/// Reloads one policy file (and the model it names) into one engine.
#[derive(Clone)]
pub struct Reloader {
    path: PathBuf,
    /// `--envoy-config`, in place of the policy's `envoy_config`.
    envoy_config: Option<PathBuf>,
    engine: Arc<Engine>,
    model: Arc<ModelSlot>,
    /// One reload at a time: two concurrent ones could otherwise install the older file last.
    serial: Arc<parking_lot::Mutex<()>>,
    /// The files as last read, by whichever reload: what the watch task's poll compares.
    stamps: Arc<parking_lot::Mutex<Stamps>>,
}

impl Reloader {
    pub fn new(path: PathBuf, engine: Arc<Engine>, model: Arc<ModelSlot>) -> Self {
        let stamps = Stamps {
            policy: Stamp::new(Some(&path)),
            model: Stamp::new(engine.policy().adaptive.anomaly.model.as_deref()),
        };
        Self {
            path,
            envoy_config: None,
            engine,
            model,
            serial: Arc::default(),
            stamps: Arc::new(parking_lot::Mutex::new(stamps)),
        }
    }

    pub fn model(&self) -> &Arc<ModelSlot> {
        &self.model
    }

    /// Loads the envoyproxy/ratelimit folder `dir` (when set) in place of the policy's.
    pub fn with_envoy_config(mut self, dir: Option<PathBuf>) -> Self {
        self.envoy_config = dir;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn count(&self, result: &str) {
        self.engine
            .metrics()
            .config_reloads
            .with_label_values(&["policy", result])
            .inc();
    }

    /// Reads, validates and swaps in the policy, then the model it names; on error the old
    /// one stays in force.
    pub fn reload(&self, trigger: &str) -> Result<(), ReloadError> {
        let _one_at_a_time = self.serial.lock();
        self.stamps.lock().policy.reading();
        self.reload_policy(trigger).map_err(ReloadError::Policy)?;
        self.reload_model_locked()
    }

    /// Reloads only the model file (it changed on disk).
    pub fn reload_model(&self) -> Result<(), ReloadError> {
        let _one_at_a_time = self.serial.lock();
        self.reload_model_locked()
    }

    fn reload_model_locked(&self) -> Result<(), ReloadError> {
        let path = self.engine.policy().adaptive.anomaly.model.clone();
        {
            let mut stamps = self.stamps.lock();
            stamps.model.follow(path.as_deref());
            stamps.model.reading();
        }
        let loaded = self.model.load(path.as_deref());
        // Refused or not, a model is in force (the old one stays): the window it was trained
        // over may not be the reloaded policy's.
        self.model
            .warn_if_window_differs(self.engine.policy().adaptive.anomaly.window);
        loaded.map_err(|error| ReloadError::Model {
            path: path.map(|p| p.display().to_string()).unwrap_or_default(),
            error: Box::new(error),
        })
    }

    fn reload_policy(&self, trigger: &str) -> Result<(), PolicyErrors> {
        match rules::load(&self.path, self.envoy_config.as_deref()) {
            Ok(rules) => {
                self.count("success");
                self.engine.metrics().policy_file_refused.set(0);
                let old = self.engine.policy();
                changes::log_store_changes(&old.store, &rules.policy.store);
                for warning in rules.policy.warnings() {
                    tracing::warn!("{warning}");
                }
                if !matches!(self.engine.store(), Backend::Memory(_)) {
                    warn_inexact_limits(&rules);
                }
                let live = self.engine.scale_factors().thresholds();
                changes::log_discarded_admin_changes(
                    &live,
                    &Thresholds::from_policy(&old),
                    &Thresholds::from_policy(&rules.policy),
                );
                self.engine.reload(rules);
                tracing::info!(trigger, path = %self.path.display(), "policy reloaded");
                Ok(())
            }
            Err(errors) => {
                self.count("error");
                self.engine.metrics().policy_file_refused.set(1);
                for line in errors.lines() {
                    tracing::error!(trigger, path = %self.path.display(), "policy refused: {line}");
                }
                Err(errors)
            }
        }
    }

    /// Starts watching for SIGHUP and file changes. The watches are in place when this
    /// returns (so a change right after start-up is not missed); reloads run on a task.
    pub fn spawn_watch(self) {
        let (tx, mut rx) = mpsc::channel::<&'static str>(16);
        let mut _watcher = watch::file(&self.path, POLICY, tx.clone());
        let mut watches = Watches::default();
        self.follow(&mut watches, &tx);
        #[cfg(unix)]
        spawn_sighup(tx.clone());
        tokio::spawn(async move {
            let mut poll = tokio::time::interval(FOLDER_POLL);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let trigger = tokio::select! {
                    trigger = rx.recv() => trigger,
                    _ = poll.tick() => {
                        let now = tokio::time::Instant::now();
                        // No folder to watch yet (`models/` not created): look for it now and
                        // then. A change no watch saw (the folder moved, a link out of it):
                        // the files' identities tell.
                        if watches.awaiting_model_folder()
                            && self.model_folder_appeared(&mut watches, &tx)
                        {
                            Some(MODEL_CHANGE)
                        } else {
                            let (policy_moved, model_moved, policy, model) = {
                                let mut stamps = self.stamps.lock();
                                (
                                    stamps.policy.moved_from_watch(),
                                    stamps.model.moved_from_watch(),
                                    stamps.policy.settled_change(now),
                                    stamps.model.settled_change(now),
                                )
                            };
                            // Another file behind the path (read by a reload already, or to
                            // be read now): its folder may be another one too.
                            if policy_moved {
                                _watcher = watch::file(&self.path, POLICY, tx.clone());
                            }
                            if model_moved {
                                watches.model = None;
                                self.follow(&mut watches, &tx);
                            }
                            let envoy_moved = watches.envoy_folder_moved();
                            if envoy_moved {
                                self.follow(&mut watches, &tx);
                            }
                            // A folder gone mid-deploy is read once it is back: refusing the
                            // policy for it meanwhile would only log an error.
                            let envoy_back = envoy_moved && watches.envoy_folder.is_some();
                            match (policy, envoy_back, model) {
                                (true, _, _) => Some(POLICY_CHANGE),
                                (false, true, _) => Some(ENVOY_CHANGE),
                                (false, false, true) => Some(MODEL_CHANGE),
                                (false, false, false) => continue,
                            }
                        }
                    }
                };
                let Some(trigger) = trigger else { break };
                if self.note_writing(trigger) {
                    continue;
                }
                // New permissions matter only to a file that could not be read: a reload for
                // every `touch` would reset the thresholds set through the admin API.
                let trigger = match trigger {
                    POLICY_ATTRIBUTES if self.stamps.lock().policy.read_failed_last() => {
                        POLICY_CHANGE
                    }
                    MODEL_ATTRIBUTES if self.stamps.lock().model.read_failed_last() => MODEL_CHANGE,
                    POLICY_ATTRIBUTES | MODEL_ATTRIBUTES => continue,
                    trigger => trigger,
                };
                // Editors write a file in several steps: let them finish, then read once.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let mut policy_too = trigger != MODEL_CHANGE;
                while let Ok(next) = rx.try_recv() {
                    if self.note_writing(next) {
                        continue;
                    }
                    policy_too |=
                        !matches!(next, MODEL_CHANGE | MODEL_ATTRIBUTES | POLICY_ATTRIBUTES);
                }
                // Reading the file blocks: off the async workers.
                let reloader = self.clone();
                let outcome = tokio::task::spawn_blocking(move || {
                    if policy_too {
                        reloader.reload(trigger)
                    } else {
                        reloader.reload_model()
                    }
                })
                .await;
                let now = tokio::time::Instant::now();
                match &outcome {
                    Ok(Err(ReloadError::Policy(_))) => {
                        self.stamps.lock().policy.read_failed_if_unreadable(now)
                    }
                    Ok(Err(ReloadError::Model { .. })) => {
                        self.stamps.lock().model.read_failed_if_unreadable(now)
                    }
                    _ => {}
                }
                let model_refused = matches!(outcome, Ok(Err(ReloadError::Model { .. })));
                let model_moved = self.follow(&mut watches, &tx);
                // A model file that appeared between the refused load and the new watch raised
                // no event the watch could see: look once more.
                if model_refused
                    && model_moved
                    && watches.model.as_deref().is_some_and(Path::exists)
                {
                    let _ = tx.try_send(MODEL_CHANGE);
                }
            }
        });
    }

    /// Whether `signal` says a watched file is being written (noted, so that the poll leaves
    /// it to the watch, which reports its writer's close), rather than a reason to reload.
    fn note_writing(&self, signal: &str) -> bool {
        match signal {
            s if s == POLICY.writing => self.stamps.lock().policy.being_written(),
            s if s == MODEL.writing => self.stamps.lock().model.being_written(),
            _ => return false,
        }
        true
    }

    /// Watches the model's folder once it exists; true when the model file is there too.
    fn model_folder_appeared(
        &self,
        watches: &mut Watches,
        tx: &mpsc::Sender<&'static str>,
    ) -> bool {
        let Some(model) = watches.model.clone() else {
            return false;
        };
        if !watch::folder_of(&model).is_dir() {
            return false;
        }
        // Forgetting the path makes `follow` watch it afresh.
        watches.model = None;
        self.follow(watches, tx);
        model.exists()
    }

    /// Points the model and envoy folder watches at what the policy in force names, when that
    /// changed (at start-up, or a reload named another file or none); true when the model
    /// watch moved.
    fn follow(&self, watches: &mut Watches, tx: &mpsc::Sender<&'static str>) -> bool {
        let policy = self.engine.policy();
        let model = policy.adaptive.anomaly.model.clone();
        let model_moved = model != watches.model;
        if model_moved {
            watches.model_watcher = model
                .as_deref()
                .and_then(|model| watch::file(model, MODEL, tx.clone()));
            watches.model_folder_missing = watches.model_watcher.is_none()
                && model
                    .as_deref()
                    .is_some_and(|model| !watch::folder_of(model).is_dir());
            if let Some(model) = &model {
                tracing::info!(path = %model.display(), "watching the model file");
            }
            watches.model = model;
        }
        let envoy = self
            .engine
            .rules()
            .envoy
            .as_ref()
            .map(|envoy| envoy.dir.clone());
        if envoy != watches.envoy {
            watches.envoy_folder = envoy.as_deref().and_then(stamps::folder_identity);
            watches.envoy_watcher = envoy
                .as_deref()
                .and_then(|dir| watch::envoy_folder(dir, tx.clone()));
            watches.envoy = envoy;
        }
        model_moved
    }
}

/// What the model and envoy folder watches follow; a watch stops when its watcher is dropped.
#[derive(Default)]
struct Watches {
    model: Option<PathBuf>,
    model_watcher: Option<notify::RecommendedWatcher>,
    envoy: Option<PathBuf>,
    envoy_watcher: Option<notify::RecommendedWatcher>,
    /// The envoy folder the watch is on (device, inode); `None` when it was missing.
    envoy_folder: Option<(u64, u64)>,
    model_folder_missing: bool,
}

/// What the watches and the poll send the reload task: the trigger a reload logs, that a
/// file's permissions changed (a reload only if its last read failed), or that it was
/// created and is being written (no reload: its writer's close comes next).
const POLICY: watch::Signals = watch::Signals {
    written: "file change",
    attributes: "file permissions change",
    writing: "file being written",
};
const MODEL: watch::Signals = watch::Signals {
    written: "model change",
    attributes: "model permissions change",
    writing: "model being written",
};
const POLICY_CHANGE: &str = POLICY.written;
/// A YAML file of the envoy folder changed, or another folder is behind its path: the policy
/// reloads with it.
const ENVOY_CHANGE: &str = "envoy config change";
const POLICY_ATTRIBUTES: &str = POLICY.attributes;
const MODEL_CHANGE: &str = MODEL.written;
const MODEL_ATTRIBUTES: &str = MODEL.attributes;

/// How often a model folder that does not exist yet is looked for.
const FOLDER_POLL: Duration = Duration::from_secs(2);

impl Watches {
    /// The model's watch could not be made because its folder did not exist: the folder is
    /// looked for until it does (a watch that failed for another reason, such as the inotify
    /// limit, is not retried). Set when the watch was last made, so a folder that appeared
    /// since, during a reload, is still picked up.
    fn awaiting_model_folder(&self) -> bool {
        self.model_folder_missing
    }

    /// Whether another envoy folder is behind its path than the one watched (a release folder
    /// renamed in, its symlink swapped), or the watched one went: no event on the watched
    /// folder tells. Forgets the path then, so `follow` watches what is there now.
    fn envoy_folder_moved(&mut self) -> bool {
        let Some(dir) = self.envoy.as_deref() else {
            return false;
        };
        if stamps::folder_identity(dir) == self.envoy_folder {
            return false;
        }
        self.envoy = None;
        true
    }
}

#[cfg(unix)]
fn spawn_sighup(tx: mpsc::Sender<&'static str>) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    if tx.send("SIGHUP").await.is_err() {
                        break;
                    }
                }
            });
        }
        Err(error) => tracing::warn!(%error, "cannot listen for SIGHUP"),
    }
}
