//! `ratewarden simulate` against the shipped policy: one seed covers every archetype, puts
//! legitimate subjects on every tier from idle to near their binding limit, and the abuse
//! built to stay under the limits is (nearly) never denied by the policy as written.

use ratewarden::engine::{CheckRequest, Engine, SubjectHasher};
use ratewarden::simulate::{Label, MIX, SimulateConfig, Tier, TrafficRecord, simulate};
use ratewarden::store::MemoryStore;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const MINUTES: u64 = 30;

fn run() -> Vec<TrafficRecord> {
    simulate(&SimulateConfig {
        seed: 11,
        subjects: 600,
        duration: Duration::from_secs(MINUTES * 60),
        ..SimulateConfig::default()
    })
}

/// Requests and policy denials per archetype, replayed in time order through the engine on
/// the embedded store with a manual clock (no model, no load scaling: the limits as written).
fn denials(records: &[TrafficRecord]) -> HashMap<String, (usize, usize)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy =
        ratewarden::rules::load_policy(&root.join("ratewarden.yaml")).expect("the example policy");
    let first = (records[0].ts * 1e6) as u64;
    let clock = ratewarden::clock::ManualClock::starting_at(first);
    let store = MemoryStore::new(Arc::new(clock.clone()), 10_000_000);
    let engine = Engine::new(policy, store, SubjectHasher::from_secret("simulate test"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut tally: HashMap<String, (usize, usize)> = HashMap::new();
    runtime.block_on(async {
        for record in records {
            clock.set(((record.ts * 1e6) as u64).max(first));
            let mut request = CheckRequest::new(&record.user, &record.endpoint);
            request.tier = record.tier.as_deref();
            request.ip = record.ip.as_deref().and_then(|ip| ip.parse().ok());
            let decision = engine.check(&request).await.expect("decidable");
            let entry = tally
                .entry(record.archetype.clone().unwrap_or_default())
                .or_default();
            entry.0 += 1;
            entry.1 += usize::from(!decision.allowed);
        }
    });
    tally
}

#[test]
fn one_seed_covers_every_archetype_every_tier_and_quiet_abuse_stays_under_the_limits() {
    let records = run();
    let mut tiers: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut per_subject: HashMap<&str, (usize, &str, &str)> = HashMap::new();
    for r in &records {
        let archetype = r.archetype.as_deref().expect("an archetype");
        let tier = r.tier.as_deref().expect("a tier");
        tiers.entry(archetype).or_default().insert(tier);
        per_subject.entry(&r.user).or_insert((0, archetype, tier)).0 += 1;
    }
    for (archetype, _) in MIX {
        assert!(
            tiers.contains_key(archetype.name()),
            "{} missing",
            archetype.name()
        );
    }
    let normal = |name: &str| {
        MIX.iter()
            .any(|(a, _)| a.name() == name && a.label() == Label::Normal)
    };
    let normal_tiers: HashSet<&str> = tiers
        .iter()
        .filter(|(a, _)| normal(a))
        .flat_map(|(_, t)| t.iter().copied())
        .collect();
    assert_eq!(normal_tiers.len(), 3, "legitimate tiers: {normal_tiers:?}");
    for machine in ["fast_poller", "integration", "catalog_sync", "batch_job"] {
        assert!(
            tiers[machine].contains("pro") && tiers[machine].contains("enterprise"),
            "{machine}: {:?}",
            tiers[machine]
        );
    }

    // Legitimate machines from idle to near their binding limit, on paid tiers too.
    let share = |(count, _, tier): &(usize, &str, &str)| {
        let tier = Tier::ALL
            .into_iter()
            .find(|t| t.name() == *tier)
            .expect("a known tier");
        *count as f64 / (tier.ceiling() * MINUTES as f64 * 60.0)
    };
    let machines: Vec<_> = per_subject
        .values()
        .filter(|s| ["fast_poller", "catalog_sync"].contains(&s.1) && s.2 != "free")
        .collect();
    assert!(
        machines.iter().any(|s| share(s) < 0.1),
        "an idle paid machine"
    );
    assert!(
        machines.iter().any(|s| share(s) > 0.8),
        "a paid machine near its limit"
    );

    let tally = denials(&records);
    let mut names: Vec<_> = tally.keys().collect();
    names.sort();
    for name in names {
        let (requests, denied) = tally[name];
        eprintln!("{name:26} {requests:7} requests {denied:6} denied");
    }
    for (archetype, _) in MIX.iter().filter(|(a, _)| a.stays_under_limits()) {
        let (requests, denied) = tally[archetype.name()];
        assert!(requests > 100, "{}: {requests} requests", archetype.name());
        assert!(
            denied * 1000 <= requests,
            "{}: {denied} of {requests} denied",
            archetype.name()
        );
    }
    assert!(
        MIX.iter()
            .filter(|(a, _)| a.stays_under_limits())
            .all(|(a, _)| a.label() == Label::Abuse)
    );
}
