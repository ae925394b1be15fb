//! Policy hot reload: on SIGHUP, on a change of the file, and on request (admin API).
//!
//! The envoyproxy/ratelimit folder (`envoy_config`, envoy.md) is part of the policy: it reloads
//! with it, and a change of one of its files reloads the policy too.
//!
//! A file that fails validation is refused, logged with every error and counted
//! (`ratewarden_config_reloads_total`); the old policy stays.

use crate::engine::Engine;
use crate::policy::{Policy, PolicyErrors};
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Reloads one policy file into one engine.
#[derive(Clone)]
pub struct Reloader {
    path: PathBuf,
    /// `--envoy-config`, in place of the policy's `envoy_config`.
    envoy_config: Option<PathBuf>,
    engine: Arc<Engine>,
    /// One reload at a time: two concurrent ones could otherwise install the older file last.
    serial: Arc<parking_lot::Mutex<()>>,
}

impl Reloader {
    pub fn new(path: PathBuf, engine: Arc<Engine>) -> Self {
        Self {
            path,
            envoy_config: None,
            engine,
            serial: Arc::default(),
        }
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

    /// Reads, validates and swaps in the policy; on error the old one stays in force.
    pub fn reload(&self, trigger: &str) -> Result<(), PolicyErrors> {
        let _one_at_a_time = self.serial.lock();
        match Policy::load_with_envoy(&self.path, self.envoy_config.as_deref()) {
            Ok(policy) => {
                self.count("success");
                if policy.store != self.engine.policy().store {
                    tracing::warn!("store settings changed; they take effect at the next restart");
                }
                self.engine.reload(policy);
                tracing::info!(trigger, path = %self.path.display(), "policy reloaded");
                Ok(())
            }
            Err(errors) => {
                self.count("error");
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
        let watcher = self.watch_file(tx.clone());
        let envoy_watcher = self.watch_envoy_folder(tx.clone());
        #[cfg(unix)]
        spawn_sighup(tx);
        tokio::spawn(async move {
            let _watchers = (watcher, envoy_watcher);
            while let Some(trigger) = rx.recv().await {
                // Editors write a file in several steps: let them finish, then read once.
                tokio::time::sleep(Duration::from_millis(100)).await;
                while rx.try_recv().is_ok() {}
                // Reading the file blocks: off the async workers.
                let reloader = self.clone();
                let _ = tokio::task::spawn_blocking(move || reloader.reload(trigger)).await;
            }
        });
    }

    fn watch_file(&self, tx: mpsc::Sender<&'static str>) -> Option<notify::RecommendedWatcher> {
        let file_name = self.path.file_name()?.to_owned();
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                let ours = event
                    .paths
                    .iter()
                    .any(|p| p.file_name() == Some(file_name.as_os_str()));
                if ours && (event.kind.is_modify() || event.kind.is_create()) {
                    let _ = tx.try_send("file change");
                }
            })
            .map_err(
                |error| tracing::warn!(%error, "cannot watch the policy file; reload with SIGHUP"),
            )
            .ok()?;
        // The folder, not the file: editors replace files by renaming a new one over them.
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|error| tracing::warn!(%error, "cannot watch the policy folder; reload with SIGHUP"))
            .ok()?;
        Some(watcher)
    }
}

impl Reloader {
    /// Watches the envoyproxy/ratelimit folder in force at start-up for YAML file changes.
    fn watch_envoy_folder(
        &self,
        tx: mpsc::Sender<&'static str>,
    ) -> Option<notify::RecommendedWatcher> {
        let dir = self.engine.policy().envoy.as_ref()?.dir.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                let yaml = event.paths.iter().any(|p| {
                    p.extension()
                        .is_some_and(|e| e == "yaml" || e == "yml")
                });
                let changed = event.kind.is_modify() || event.kind.is_create() || event.kind.is_remove();
                if yaml && changed {
                    let _ = tx.try_send("envoy config change");
                }
            })
            .map_err(|error| tracing::warn!(%error, "cannot watch the envoy config folder; reload with SIGHUP"))
            .ok()?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|error| tracing::warn!(%error, "cannot watch the envoy config folder; reload with SIGHUP"))
            .ok()?;
        Some(watcher)
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
