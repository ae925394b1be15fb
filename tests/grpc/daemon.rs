//! The real binary: `--grpc-listen` and `--envoy-config` from the environment, hot reload of
//! the envoy configuration with the policy (a bad file keeps the old one), and SIGTERM
//! stopping both servers; a bad folder named by `--envoy-config` is reported under
//! that flag, not the policy.

use crate::common::daemon::Daemon;
use crate::harness::*;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

fn limit_file(dir: &Path, requests: &str) {
    std::fs::write(
        dir.join("edge.yaml"),
        format!(
            "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {{ unit: hour, requests_per_unit: {requests} }}\n"
        ),
    )
    .unwrap();
}

pub fn grpc_addr(daemon: &mut Daemon) -> SocketAddr {
    let line = daemon.wait_for("ratewarden listening", Duration::from_secs(20));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("grpc="))
        .expect("the listening line names the gRPC address")
        .parse()
        .unwrap()
}

/// Starts the binary with the example policy and `envoy` as --envoy-config.
pub fn start_daemon(envoy: &Path) -> (Daemon, SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, NATIVE_POLICY).unwrap();
    let mut daemon = Daemon::start(
        &policy,
        &[
            ("RATEWARDEN_GRPC_LISTEN", "127.0.0.1:0"),
            ("RATEWARDEN_ENVOY_CONFIG", envoy.to_str().unwrap()),
        ],
    );
    let addr = grpc_addr(&mut daemon);
    (daemon, addr, dir)
}

async fn limit_of(addr: SocketAddr) -> Option<u32> {
    let mut client = RateLimitServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let r = client
        .should_rate_limit(one("edge", &[("remote_address", "192.0.2.1")]))
        .await
        .unwrap()
        .into_inner();
    current(&r.statuses[0]).map(|c| c.0)
}

#[tokio::test]
async fn envoy_config_reloads_with_the_policy_and_a_bad_file_keeps_the_old() {
    let envoy = tempfile::tempdir().unwrap();
    limit_file(envoy.path(), "5");
    let (mut daemon, addr, _policy_dir) = start_daemon(envoy.path());
    assert_eq!(limit_of(addr).await, Some(5));

    limit_file(envoy.path(), "7");
    wait_for_limit(addr, 7, "the new envoy file was not loaded").await;

    limit_file(envoy.path(), "many");
    daemon.wait_for(
        "edge.yaml: descriptors[0].rate_limit.requests_per_unit: must be a number",
        Duration::from_secs(10),
    );
    assert_eq!(limit_of(addr).await, Some(7));
    let (_, metrics) = daemon.get("/metrics");
    assert!(
        metrics.contains("ratewarden_config_reloads_total{kind=\"policy\",result=\"error\"} 1")
    );

    // SIGTERM stops both servers, and the process exits cleanly.
    // (Off this thread: the clients' connections must be free to close as asked.)
    let status = tokio::task::spawn_blocking(move || daemon.stop(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn a_bad_envoy_config_folder_on_the_command_line_is_blamed_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, NATIVE_POLICY).unwrap();
    let envoy = dir.path().join("envoy");
    std::fs::create_dir(&envoy).unwrap();
    limit_file(&envoy, "many");
    let missing = dir.path().join("missing");
    for (folder, reason) in [
        (
            &envoy,
            "edge.yaml: descriptors[0].rate_limit.requests_per_unit: must be a number".to_owned(),
        ),
        (
            &missing,
            "cannot read the folder: No such file or directory (os error 2)".to_owned(),
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ratewarden"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--grpc-listen",
                "127.0.0.1:0",
            ])
            .arg("--policy")
            .arg(&policy)
            .arg("--envoy-config")
            .arg(folder)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = format!("error: --envoy-config {}: {reason}\n", folder.display());
        assert!(stderr.ends_with(&expected), "{stderr}");
    }
}

/// Waits until the gRPC service answers with `requests` for the edge limit.
async fn wait_for_limit(addr: SocketAddr, requests: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while limit_of(addr).await != Some(requests) {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A release folder renamed over the envoy folder (`mv envoy envoy.old; mv envoy.new envoy`):
/// the watch was on the old folder, which sees nothing; the poll finds the new one, and the
/// watch moves to it, so an edit there reloads too.
#[cfg(unix)]
#[tokio::test]
async fn a_release_folder_renamed_over_the_envoy_folder_is_loaded_and_watched() {
    let parent = tempfile::tempdir().unwrap();
    let envoy = parent.path().join("envoy");
    std::fs::create_dir(&envoy).unwrap();
    limit_file(&envoy, "5");
    let (daemon, addr, _policy_dir) = start_daemon(&envoy);
    assert_eq!(limit_of(addr).await, Some(5));

    let release = parent.path().join("envoy.new");
    std::fs::create_dir(&release).unwrap();
    limit_file(&release, "7");
    std::fs::rename(&envoy, parent.path().join("envoy.old")).unwrap();
    std::fs::rename(&release, &envoy).unwrap();
    wait_for_limit(addr, 7, "the folder renamed in was not loaded").await;

    limit_file(&envoy, "9");
    wait_for_limit(addr, 9, "an edit in the folder renamed in was not loaded").await;
    let status = tokio::task::spawn_blocking(move || daemon.stop(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// A ConfigMap volume for the envoy folder: `edge.yaml` links to `..data/edge.yaml`, and an
/// update swaps the `..data` link to a new folder.
#[cfg(unix)]
#[tokio::test]
async fn a_configmap_update_swapping_the_data_link_reloads_the_envoy_folder() {
    let envoy = tempfile::tempdir().unwrap();
    let version = |name: &str, requests: &str| {
        let folder = envoy.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        limit_file(&folder, requests);
    };
    version("..v1", "5");
    std::os::unix::fs::symlink("..v1", envoy.path().join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/edge.yaml", envoy.path().join("edge.yaml")).unwrap();
    let (daemon, addr, _policy_dir) = start_daemon(envoy.path());
    assert_eq!(limit_of(addr).await, Some(5));

    version("..v2", "7");
    std::os::unix::fs::symlink("..v2", envoy.path().join("..data_tmp")).unwrap();
    std::fs::rename(envoy.path().join("..data_tmp"), envoy.path().join("..data")).unwrap();
    wait_for_limit(addr, 7, "the swapped envoy folder was not loaded").await;
    let status = tokio::task::spawn_blocking(move || daemon.stop(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}
