//! What fleet mode costs Redis, counted by Redis itself (`INFO commandstats`, a script's inner
//! commands included): per control interval a few commands per daemon, as many with 2,000
//! active subjects as with 10, and none for subjects that went idle.

use super::shared::{POLICY, command_calls, daemon_on, send};
use crate::common::START;
use crate::common::redis::RedisServer;
use ratewarden::clock::ManualClock;
use ratewarden::store::RedisStore;
use std::time::Duration;

const ACTIVE_INTERVALS: usize = 3;
const IDLE_INTERVALS: usize = 3;

fn total(calls: &[(String, u64)]) -> u64 {
    calls.iter().map(|(_, n)| n).sum()
}

/// The commands of each control interval of two daemons with the shipped model: first
/// intervals where `subjects` users each send a request to both daemons, then idle ones.
/// The decisions themselves are left out: only the cycles are counted.
async fn commands_per_interval(subjects: usize) -> (Vec<u64>, Vec<u64>) {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(START);
    let mut daemons = Vec::new();
    for _ in 0..2 {
        let store = RedisStore::connect(&server.url(), "rw", Duration::from_secs(2)).unwrap();
        daemons.push(daemon_on(store, POLICY, &clock, true));
    }
    let (mut active, mut idle) = (Vec::new(), Vec::new());
    for interval in 0..ACTIVE_INTERVALS + IDLE_INTERVALS {
        if interval < ACTIVE_INTERVALS {
            for (engine, _) in &daemons {
                for user in 0..subjects {
                    send(engine, &format!("user-{user}"), "/a", "192.0.2.1", 1).await;
                }
            }
        }
        let before = command_calls(&server);
        clock.advance(Duration::from_secs(1));
        for (_, control) in &mut daemons {
            control.cycle().await;
        }
        let after = command_calls(&server);
        let sent = total(&after) - total(&before);
        if interval < ACTIVE_INTERVALS {
            active.push(sent);
        } else {
            let pushed = |calls: &[(String, u64)]| {
                calls
                    .iter()
                    .find(|(name, _)| name == "rpush")
                    .map_or(0, |(_, n)| *n)
            };
            assert_eq!(pushed(&after), pushed(&before), "an idle interval flushed");
            idle.push(sent);
        }
    }
    let user = daemons[0].0.hasher().user("user-0");
    for (engine, _) in &daemons {
        let seen = engine.scale_factors().observed(user).expect("user-0 seen");
        assert_eq!(
            seen.requests,
            2 * ACTIVE_INTERVALS as u64,
            "both daemons' requests"
        );
    }
    (active, idle)
}

#[tokio::test]
async fn fleet_commands_per_interval_do_not_grow_with_active_subjects() {
    let (few_active, few_idle) = commands_per_interval(10).await;
    let (many_active, many_idle) = commands_per_interval(2_000).await;
    println!(
        "commands per interval, two daemons: 10 subjects {few_active:?} then idle {few_idle:?}"
    );
    println!(
        "commands per interval, two daemons: 2,000 subjects {many_active:?} then idle {many_idle:?}"
    );
    assert_eq!(few_active, many_active, "active intervals");
    assert_eq!(few_idle, many_idle, "idle intervals");
    // Per daemon and interval: a flush (2), the lease (a script and 2), and the leader's read
    // of the window's 7 lists (14) and publication (a script and 4), or a follower's read (1).
    for sent in many_active.iter().chain(&many_idle) {
        assert!(*sent <= 40, "{sent} commands in one interval");
    }
    for (idle, active) in many_idle.iter().zip(&many_active[1..]) {
        assert!(idle < active, "idle {idle} vs active {active}");
    }
}
