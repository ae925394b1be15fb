//! A flood of made-up subjects does not blind the abuse model, through the real binary: after
//! a million one-request subjects (the tracker's capacity), a new subject's requests are still
//! counted, because each control cycle forgets the subjects with the fewest requests. Before,
//! the tracker refused every newcomer until the flood's subjects left the window, 30 minutes
//! later, and the new subject's view read 0 requests.
//!
//! Room is made by a control cycle, not by the request path: a flood that fills the tracker
//! between two cycles shuts newcomers out until the next one. So the newcomer comes once a
//! whole cycle has run after the flood.

mod common;

use common::daemon::Daemon;
use common::flood;
use std::time::{Duration, Instant};

const SUBJECTS: u64 = 1_000_000;
const TOKEN: &str = "flood-tracking-token";

fn policy() -> String {
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/abuse.json");
    format!(
        "\
store:
  url: memory://
default_tier: t
tiers:
  t:
    limits:
      - {{ name: hourly, algorithm: fixed_window, requests: 10, window: 1h }}
adaptive:
  interval: 250ms
  anomaly:
    model: {}
    window: 30m
",
        model.display()
    )
}

/// The requests the last control cycle counted for `user` (the admin subject view).
fn counted(daemon: &Daemon, user: &str) -> u64 {
    daemon.subject_view(user, TOKEN)["scoring"]["requests"]
        .as_u64()
        .expect("a count")
}

#[test]
fn a_million_made_up_subjects_leave_room_for_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, policy()).unwrap();
    let mut daemon = Daemon::start(&path, &[("RATEWARDEN_ADMIN_TOKEN", TOKEN)]);
    daemon.wait_for("model loaded", Duration::from_secs(10));

    flood::send(daemon.addr, "made-up", SUBJECTS, |_| {});
    daemon.await_a_whole_cycle();

    for _ in 0..25 {
        let (code, _, text) =
            daemon.post_json("/v1/check", r#"{"user":"newcomer","endpoint":"/x"}"#);
        assert!(code == 200 || code == 429, "{code} {text}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = counted(&daemon, "newcomer");
    while seen < 25 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        seen = counted(&daemon, "newcomer");
    }
    assert_eq!(seen, 25, "the newcomer's requests counted after the flood");
}
