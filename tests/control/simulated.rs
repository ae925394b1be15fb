//! The shipped model in the control loop, on simulated traffic it was not trained on, driven
//! through the engine on a manual clock: abusers are flagged and their limits shrink; people
//! browsing, alone or behind a shared NAT address, are never flagged.

use super::cycle::Scripted;
use crate::common::logs::Captured;
use ratewarden::clock::ManualClock;
use ratewarden::control::{ControlLoop, ModelSlot};
use ratewarden::engine::{CheckRequest, Engine, Outcome, Reason, SubjectHasher};
use ratewarden::simulate::{Label, SimulateConfig, simulate};
use ratewarden::store::{Backend, MemoryStore};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn the_shipped_model_flags_abusers_and_never_browsers_or_nat_users() {
    let log = Captured::default();
    let _guard = log.start();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy =
        ratewarden::rules::load_policy(&root.join("ratewarden.yaml")).expect("the example policy");
    let model_path = policy.adaptive.anomaly.model.clone();
    let interval = policy.adaptive.interval;
    let min_requests = policy.adaptive.anomaly.min_requests.get();
    let config = SimulateConfig {
        seed: 424_242,
        duration: Duration::from_secs(1800),
        subjects: 330,
        ..SimulateConfig::default()
    };
    let traffic = simulate(&config);
    let start = (config.start * 1e6) as u64;
    let clock = ManualClock::starting_at(start);
    let store = MemoryStore::new(Arc::new(clock.clone()), 4_000_000);
    let engine = Arc::new(
        Engine::new(
            policy,
            Backend::Memory(store),
            SubjectHasher::from_secret("sim"),
        )
        .with_clock(Arc::new(clock.clone())),
    );
    let model = Arc::new(ModelSlot::new(engine.metrics().clone()));
    model
        .load(model_path.as_deref())
        .expect("the shipped model loads");
    let mut control = ControlLoop::new(
        engine.clone(),
        model,
        Box::new(Scripted(Default::default())),
    );

    let interval_us = interval.as_micros() as u64;
    let mut next_cycle = start + interval_us;
    let mut archetype = HashMap::new();
    let mut label = HashMap::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    // When a subject had min_requests requests, and when it was first flagged.
    let mut enough_at: HashMap<String, u64> = HashMap::new();
    let mut flagged_at: HashMap<String, u64> = HashMap::new();
    let mut anomaly_denials = 0usize;
    let by_hash: HashMap<_, _> = traffic
        .iter()
        .map(|r| (engine.hasher().user(&r.user), r.user.clone()))
        .collect();
    for record in &traffic {
        let at = (record.ts * 1e6) as u64;
        while next_cycle <= at {
            clock.set(next_cycle);
            control.cycle().await;
            for (subject, user) in &by_hash {
                if engine
                    .scale_factors()
                    .standing(*subject)
                    .is_some_and(|s| s.flagged(0.8, next_cycle))
                {
                    flagged_at.entry(user.clone()).or_insert(next_cycle);
                }
            }
            next_cycle += interval_us;
        }
        clock.set(at.max(clock_now(&clock)));
        archetype.insert(
            record.user.clone(),
            record.archetype.clone().unwrap_or_default(),
        );
        label.insert(record.user.clone(), record.label);
        let count = seen.entry(record.user.clone()).or_default();
        *count += 1;
        if *count == min_requests {
            enough_at.insert(record.user.clone(), at);
        }
        let mut request = CheckRequest::new(&record.user, &record.endpoint);
        request.tier = record.tier.as_deref();
        request.ip = record.ip.as_deref().and_then(|ip| ip.parse().ok());
        let decision = engine.check(&request).await.expect("decidable");
        anomaly_denials += usize::from(decision.reason == Some(Reason::Anomaly));
        if let (true, Some(status)) = (decision.allowed, record.status) {
            engine.report(&Outcome::new(&record.user, &record.endpoint, status));
        }
    }

    // Pollers and integrations may have a bad day in the simulator (a run of 401s, 404s or
    // 400s for minutes, or a new address per call): the model may flag such a one.
    let never = ["browser", "nat_user"];
    let wrongly: Vec<_> = flagged_at
        .keys()
        .filter(|u| label[*u] == Some(Label::Normal))
        .map(|u| format!("{u} ({})", archetype[u]))
        .collect();
    let of_kind = |kind: &str| archetype.values().filter(|a| *a == kind).count();
    for kind in never {
        assert!(of_kind(kind) > 0, "the run has {kind}s");
        assert!(
            !wrongly.iter().any(|w| w.contains(kind)),
            "a {kind} was flagged: {wrongly:?}"
        );
    }
    let normal = label
        .values()
        .filter(|l| **l == Some(Label::Normal))
        .count();
    assert!(
        wrongly.len() * 100 <= normal * 2,
        "over 2 % of normal subjects flagged: {wrongly:?}"
    );

    // Abusers the model could judge: those with `min_requests` in a window (a distributed
    // low-and-slow subject at a few tries an hour never gets there, nor does the daemon score it).
    let abusers: HashSet<_> = label
        .iter()
        .filter(|(u, l)| **l == Some(Label::Abuse) && enough_at.contains_key(*u))
        .map(|(u, _)| u.clone())
        .collect();
    let caught = abusers
        .iter()
        .filter(|u| flagged_at.contains_key(*u))
        .count();
    let mut delays: Vec<f64> = abusers
        .iter()
        .filter_map(|u| Some((flagged_at.get(u)? - enough_at.get(u)?) as f64 / 1e6))
        .collect();
    delays.sort_by(f64::total_cmp);
    eprintln!(
        "abusers flagged: {caught}/{}; seconds from the {min_requests}th request to the flag: {delays:?}; normal flagged: {wrongly:?}; anomaly denials: {anomaly_denials}",
        abusers.len()
    );
    // 21 of 35 with the shipped model: trained on legitimate clients that change addresses
    // and have bad days, it needs refusals or excess demand, not addresses alone, and misses
    // stealthy campaigns half done when this 30-minute run ends (the model card's figures
    // are on hour-long runs).
    assert!(
        caught * 10 >= abusers.len() * 4,
        "at least 40 % of the abusers scored were flagged"
    );
    assert!(anomaly_denials > 0, "flagged abusers' limits shrank");
    // Each flag's line names the subject as the admin API does: 32 hex digits, leading zeros
    // kept (seed and secret give one flagged subject whose hash starts with 0).
    let hashes: HashMap<String, &String> =
        by_hash.iter().map(|(h, u)| (h.to_string(), u)).collect();
    let named: Vec<String> = log
        .lines()
        .iter()
        .filter(|line| line.contains("subject flagged; top features"))
        .filter_map(|line| {
            Some(
                line.split(" subject=")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        named.len(),
        flags_begun(&engine) as usize,
        "{:#?}",
        log.lines()
    );
    for subject in &named {
        assert!(hashes.contains_key(subject), "{subject} names no subject");
    }
    assert!(named.iter().any(|s| s.starts_with('0')), "{named:?}");

    admin_actions_reach_the_control_loop(&engine, &mut control, &clock, next_cycle, interval_us)
        .await;
}

/// A cleared flag loses its hold in the control loop too (a flag there again is a new one);
/// an allowlisted subject is never flagged until its allowlisting ends, and holds no flag then.
async fn admin_actions_reach_the_control_loop(
    engine: &Arc<Engine>,
    control: &mut ControlLoop,
    clock: &ManualClock,
    mut next_cycle: u64,
    interval_us: u64,
) {
    let flagged = engine.flagged_subjects();
    assert!(flagged.len() >= 2, "two abusers still flagged: {flagged:?}");
    let (cleared, allowlisted) = (flagged[0].subject, flagged[1].subject);
    let old_start = flagged[0]
        .since
        .expect("the loop published when the flag began");
    let exemptions = engine.scale_factors().exemptions();

    let at_clear = clock_now(clock);
    assert!(engine.clear_flag(cleared));
    engine.allowlist(allowlisted, Duration::from_secs(3600));
    // The first cycle may flag `cleared` again (it is judged afresh); from then on nothing
    // is flagged anew, although the allowlisted abuser is judged every cycle.
    clock.set(next_cycle);
    control.cycle().await;
    next_cycle += interval_us;
    let begun = flags_begun(engine);
    let mut gauge = Vec::new();
    for _ in 0..3 {
        clock.set(next_cycle);
        gauge.push(control.cycle().await.flagged);
        next_cycle += interval_us;
        let now = engine.flagged_subjects();
        assert!(now.iter().all(|f| f.subject != allowlisted), "{now:?}");
    }
    assert_eq!(
        flags_begun(engine),
        begun,
        "an allowlisted subject's flag was announced again"
    );
    let listed = engine.flagged_subjects().len();
    assert!(
        gauge.iter().all(|&n| n <= listed),
        "gauge {gauge:?}, listed {listed}"
    );
    let start = exemptions.flag_start(cleared);
    assert!(
        start.is_none_or(|s| s > old_start && s >= at_clear),
        "the cleared flag kept its start {old_start}: {start:?}"
    );

    let at_removal = clock_now(clock);
    // The allowlisting leaves no hold behind: until the next cycle the subject is judged on
    // its score against the live threshold alone (it was flagged then, with a hold nobody set).
    let standing = engine.scale_factors().standing(allowlisted);
    assert_eq!(standing.map(|s| s.held_until), Some(0), "{standing:?}");
    assert!(engine.remove_from_allowlist(allowlisted));
    clock.set(next_cycle);
    control.cycle().await;
    if let Some(start) = exemptions.flag_start(allowlisted) {
        assert!(start > at_removal, "a flag from the allowlisting: {start}");
    }
}

/// Every flag announced so far (`ratewarden_flags_total` over its `top_feature`s).
fn flags_begun(engine: &Engine) -> u64 {
    engine
        .metrics()
        .render()
        .lines()
        .filter(|line| line.starts_with("ratewarden_flags_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn clock_now(clock: &ManualClock) -> u64 {
    use ratewarden::clock::Clock;
    clock.now()
}
