//! `ratewarden simulate`: labelled synthetic traffic (replay's JSON lines) to train and test
//! the abuse model on.
//!
//! Subjects are split among the archetypes by [`MIX`] (every archetype gets at least one
//! subject once there are as many subjects as archetypes); each subject draws its tier and
//! its parameters from wide ranges out of its own ChaCha stream of the seed, so one seed
//! covers idle to heavy clients of every tier and always writes the same file. Tiers and
//! endpoints are the example policy's, so the limiter denies what it would deny in
//! production, and machines run at a chosen share of their own binding limit.

mod abuse;
pub mod command;
mod normal;
mod record;
mod script;
mod tier;

pub use record::{Label, TrafficRecord, json_line_problem, write_jsonl};
pub use tier::Tier;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use script::Script;
use std::time::Duration;

/// The behaviours a simulated subject can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Archetype {
    Browser,
    MobilePoller,
    FastPoller,
    Integration,
    RetryBursts,
    NatUser,
    CatalogSync,
    BatchJob,
    CredentialStuffing,
    Scraper,
    SmsPumping,
    IdEnumeration,
    LowAndSlow,
    SlowCredentialStuffing,
    DistributedLowAndSlow,
    InventoryHoarding,
}

/// Share of subjects per archetype: 87 % normal, 13 % abuse (6 % of it under the limits).
pub const MIX: [(Archetype, f64); 16] = [
    (Archetype::Browser, 0.30),
    (Archetype::NatUser, 0.18),
    (Archetype::MobilePoller, 0.10),
    (Archetype::FastPoller, 0.06),
    (Archetype::Integration, 0.05),
    (Archetype::RetryBursts, 0.08),
    (Archetype::CatalogSync, 0.06),
    (Archetype::BatchJob, 0.04),
    (Archetype::CredentialStuffing, 0.014),
    (Archetype::Scraper, 0.014),
    (Archetype::SmsPumping, 0.014),
    (Archetype::IdEnumeration, 0.014),
    (Archetype::LowAndSlow, 0.014),
    (Archetype::SlowCredentialStuffing, 0.02),
    (Archetype::DistributedLowAndSlow, 0.02),
    (Archetype::InventoryHoarding, 0.02),
];

/// Users behind one carrier-grade NAT, and the addresses it shares among them.
pub const NAT_GROUP: usize = 25;
pub const NAT_ADDRESSES: usize = 2;

/// Where a person on the free tier (which allows 100 an hour) stops in an hour: drawn per
/// person from this range, so a few meet the limit and see some refusals before they stop.
pub const FREE_QUOTA: std::ops::RangeInclusive<usize> = 90..=106;

impl Archetype {
    /// A person at a browser or an app, who stops when refused (machines retry regardless).
    pub fn is_person(self) -> bool {
        matches!(
            self,
            Archetype::Browser | Archetype::NatUser | Archetype::MobilePoller
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Archetype::Browser => "browser",
            Archetype::MobilePoller => "mobile_poller",
            Archetype::FastPoller => "fast_poller",
            Archetype::Integration => "integration",
            Archetype::RetryBursts => "retry_bursts",
            Archetype::NatUser => "nat_user",
            Archetype::CatalogSync => "catalog_sync",
            Archetype::BatchJob => "batch_job",
            Archetype::CredentialStuffing => "credential_stuffing",
            Archetype::Scraper => "scraper",
            Archetype::SmsPumping => "sms_pumping",
            Archetype::IdEnumeration => "id_enumeration",
            Archetype::LowAndSlow => "low_and_slow",
            Archetype::SlowCredentialStuffing => "slow_credential_stuffing",
            Archetype::DistributedLowAndSlow => "distributed_low_and_slow",
            Archetype::InventoryHoarding => "inventory_hoarding",
        }
    }

    pub fn label(self) -> Label {
        match self {
            Archetype::CredentialStuffing
            | Archetype::Scraper
            | Archetype::SmsPumping
            | Archetype::IdEnumeration
            | Archetype::LowAndSlow
            | Archetype::SlowCredentialStuffing
            | Archetype::DistributedLowAndSlow
            | Archetype::InventoryHoarding => Label::Abuse,
            _ => Label::Normal,
        }
    }

    /// Abuse built to stay under every limit of the shipped policy: the policy never denies
    /// it, only its shape gives it away.
    pub fn stays_under_limits(self) -> bool {
        matches!(
            self,
            Archetype::SlowCredentialStuffing
                | Archetype::DistributedLowAndSlow
                | Archetype::InventoryHoarding
        )
    }
}

#[derive(Debug, Clone)]
pub struct SimulateConfig {
    pub seed: u64,
    pub duration: Duration,
    pub subjects: usize,
    /// Seconds since the epoch of the first possible request.
    pub start: f64,
}

impl Default for SimulateConfig {
    fn default() -> Self {
        SimulateConfig {
            seed: 1,
            duration: Duration::from_secs(3600),
            subjects: 2000,
            // 2026-01-05T00:00:00Z
            start: 1_767_571_200.0,
        }
    }
}

/// How many subjects each archetype gets: by share, largest remainders first, each at
/// least one when there are enough subjects. The total is always `subjects`: when the
/// minimums overshoot it (16 to 50 subjects), the archetypes furthest over their share give
/// the surplus back.
pub fn allocate(subjects: usize) -> Vec<(Archetype, usize)> {
    let min = usize::from(subjects >= MIX.len());
    let mut counts: Vec<(Archetype, usize, f64)> = MIX
        .iter()
        .map(|&(a, share)| {
            let exact = share * subjects as f64;
            (a, (exact.floor() as usize).max(min), exact)
        })
        .collect();
    let mut left = subjects.saturating_sub(counts.iter().map(|c| c.1).sum());
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|&a, &b| {
        let remainder = |i: usize| counts[i].2 - counts[i].2.floor();
        remainder(b).total_cmp(&remainder(a))
    });
    for i in order.into_iter().cycle().take(subjects) {
        if left == 0 {
            break;
        }
        counts[i].1 += 1;
        left -= 1;
    }
    let mut surplus = counts
        .iter()
        .map(|c| c.1)
        .sum::<usize>()
        .saturating_sub(subjects);
    while surplus > 0 {
        let furthest_over = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| c.1 > min)
            .max_by(|(_, a), (_, b)| (a.1 as f64 - a.2).total_cmp(&(b.1 as f64 - b.2)))
            .map(|(i, _)| i);
        let Some(i) = furthest_over else { break };
        counts[i].1 -= 1;
        surplus -= 1;
    }
    counts.into_iter().map(|(a, n, _)| (a, n)).collect()
}

/// The traffic of a run, in time order.
pub fn simulate(config: &SimulateConfig) -> Vec<TrafficRecord> {
    let mut archetypes: Vec<Archetype> = allocate(config.subjects)
        .into_iter()
        .flat_map(|(a, n)| std::iter::repeat_n(a, n))
        .collect();
    let mut shuffle = ChaCha8Rng::seed_from_u64(config.seed);
    shuffle.set_stream(u64::MAX);
    archetypes.shuffle(&mut shuffle);
    let nat_pools = nat_pools(&mut shuffle, &archetypes);
    let mut nat_seen = 0;
    let mut records = Vec::new();
    for (index, archetype) in archetypes.iter().copied().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        rng.set_stream(index as u64);
        let mut script = Script::new(rng, config.duration.as_secs_f64());
        let nat = (archetype == Archetype::NatUser).then(|| {
            nat_seen += 1;
            &nat_pools[(nat_seen - 1) / NAT_GROUP]
        });
        let tier = play(&mut script, archetype, nat);
        vary(&mut script, archetype);
        if archetype.is_person() && tier == Tier::Free {
            let quota = script.between(*FREE_QUOTA.start(), *FREE_QUOTA.end());
            script.give_up_past(quota, 3600.0);
        }
        let user = format!("user-{index:05}");
        records.extend(script.events.into_iter().map(|e| TrafficRecord {
            ts: ((config.start + e.at) * 1000.0).round() / 1000.0,
            user: user.clone(),
            endpoint: e.endpoint,
            ip: Some(e.ip),
            tier: Some(tier.name().to_string()),
            status: Some(e.status),
            cost: None,
            label: Some(archetype.label()),
            archetype: Some(archetype.name().to_string()),
        }));
    }
    records.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    records
}

/// The shared addresses of each NAT group.
fn nat_pools(rng: &mut ChaCha8Rng, archetypes: &[Archetype]) -> Vec<Vec<String>> {
    let users = archetypes
        .iter()
        .filter(|a| **a == Archetype::NatUser)
        .count();
    let mut script = Script::new(rng.clone(), 0.0);
    (0..users.div_ceil(NAT_GROUP))
        .map(|_| script.addresses(NAT_ADDRESSES))
        .collect()
}

/// Writes one subject's requests; returns its tier.
fn play(s: &mut Script, archetype: Archetype, nat: Option<&Vec<String>>) -> Tier {
    match archetype {
        Archetype::Browser => normal::browser(s),
        Archetype::NatUser => {
            let pool = nat.cloned().unwrap_or_else(|| s.addresses(NAT_ADDRESSES));
            normal::nat_user(s, &pool)
        }
        Archetype::MobilePoller => normal::mobile_poller(s),
        Archetype::FastPoller => normal::fast_poller(s),
        Archetype::Integration => normal::integration(s),
        Archetype::RetryBursts => normal::retry_bursts(s),
        Archetype::CatalogSync => normal::catalog_sync(s),
        Archetype::BatchJob => normal::batch_job(s),
        Archetype::CredentialStuffing => abuse::credential_stuffing(s),
        Archetype::Scraper => abuse::scraper(s),
        Archetype::SmsPumping => abuse::sms_pumping(s),
        Archetype::IdEnumeration => abuse::id_enumeration(s),
        Archetype::LowAndSlow => abuse::low_and_slow(s),
        Archetype::SlowCredentialStuffing => abuse::slow_credential_stuffing(s),
        Archetype::DistributedLowAndSlow => abuse::distributed_low_and_slow(s),
        Archetype::InventoryHoarding => abuse::inventory_hoarding(s),
    }
}

/// What legitimate clients do whatever their archetype: changing addresses, a bad day.
/// Users behind a NAT share its addresses, and a browsing person's errors are their own.
fn vary(s: &mut Script, archetype: Archetype) {
    use normal::Egress;
    match archetype {
        Archetype::Browser => normal::spread_addresses(s, Egress::Person),
        Archetype::MobilePoller => {
            normal::spread_addresses(s, Egress::Person);
            normal::bad_day(s);
        }
        Archetype::FastPoller
        | Archetype::Integration
        | Archetype::RetryBursts
        | Archetype::CatalogSync
        | Archetype::BatchJob => {
            normal::spread_addresses(s, Egress::Machine);
            normal::bad_day(s);
        }
        _ => {}
    }
}

/// Simulates and writes the run to `path`; returns the number of requests written.
pub fn write_file(config: &SimulateConfig, path: &std::path::Path) -> std::io::Result<usize> {
    let records = simulate(config);
    let file = std::fs::File::create(path)?;
    write_jsonl(std::io::BufWriter::new(file), &records)?;
    Ok(records.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_gets_exactly_its_subjects_and_every_archetype_from_16() {
        for subjects in 1..=300 {
            let counts = allocate(subjects);
            assert_eq!(
                counts.iter().map(|c| c.1).sum::<usize>(),
                subjects,
                "{subjects}"
            );
            if subjects >= MIX.len() {
                assert!(counts.iter().all(|c| c.1 >= 1), "{subjects}: {counts:?}");
            }
        }
        // The sizes the model card and the guides simulate keep their split.
        let browsers = |n| allocate(n).into_iter().find(|c| c.0 == Archetype::Browser);
        assert_eq!(browsers(2000), Some((Archetype::Browser, 600)));
        assert_eq!(browsers(1000), Some((Archetype::Browser, 300)));
    }
}
