//! `ratewarden simulate`: labelled synthetic traffic (replay's JSON lines) to train and test
//! the abuse model on.
//!
//! Subjects are split among the archetypes by [`MIX`] (every archetype gets at least one
//! subject once there are as many subjects as archetypes); each subject draws from its own
//! ChaCha stream of the seed, so a seed always writes the same file. Tiers and endpoints are
//! the example policy's, so the limiter denies what it would deny in production.

mod abuse;
pub mod command;
mod normal;
mod record;
mod script;

pub use record::{Label, ReadError, Traffic, TrafficRecord, read_jsonl, write_jsonl};

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
    CredentialStuffing,
    Scraper,
    SmsPumping,
    IdEnumeration,
    LowAndSlow,
}

/// Share of subjects per archetype: 90 % normal, 10 % abuse.
pub const MIX: [(Archetype, f64); 11] = [
    (Archetype::Browser, 0.33),
    (Archetype::MobilePoller, 0.12),
    (Archetype::FastPoller, 0.08),
    (Archetype::Integration, 0.07),
    (Archetype::RetryBursts, 0.10),
    (Archetype::NatUser, 0.20),
    (Archetype::CredentialStuffing, 0.02),
    (Archetype::Scraper, 0.02),
    (Archetype::SmsPumping, 0.02),
    (Archetype::IdEnumeration, 0.02),
    (Archetype::LowAndSlow, 0.02),
];

/// Users behind one carrier-grade NAT, and the addresses it shares among them.
pub const NAT_GROUP: usize = 25;
pub const NAT_ADDRESSES: usize = 2;

/// What a person on the free tier stops at in an hour (the example policy's free tier allows
/// 100 an hour).
pub const FREE_QUOTA: usize = 95;

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
            Archetype::CredentialStuffing => "credential_stuffing",
            Archetype::Scraper => "scraper",
            Archetype::SmsPumping => "sms_pumping",
            Archetype::IdEnumeration => "id_enumeration",
            Archetype::LowAndSlow => "low_and_slow",
        }
    }

    pub fn label(self) -> Label {
        match self {
            Archetype::CredentialStuffing
            | Archetype::Scraper
            | Archetype::SmsPumping
            | Archetype::IdEnumeration
            | Archetype::LowAndSlow => Label::Abuse,
            _ => Label::Normal,
        }
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
/// least one when there are enough subjects.
pub fn allocate(subjects: usize) -> Vec<(Archetype, usize)> {
    let mut counts: Vec<(Archetype, usize, f64)> = MIX
        .iter()
        .map(|&(a, share)| {
            let exact = share * subjects as f64;
            let floor = exact.floor() as usize;
            let min = usize::from(subjects >= MIX.len());
            (a, floor.max(min), exact - floor as f64)
        })
        .collect();
    let mut left = subjects.saturating_sub(counts.iter().map(|c| c.1).sum());
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|&a, &b| counts[b].2.total_cmp(&counts[a].2));
    for i in order.into_iter().cycle().take(subjects) {
        if left == 0 {
            break;
        }
        counts[i].1 += 1;
        left -= 1;
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
        if archetype.is_person() && tier == "free" {
            script.give_up_past(FREE_QUOTA, 3600.0);
        }
        let user = format!("user-{index:05}");
        records.extend(script.events.into_iter().map(|e| TrafficRecord {
            ts: ((config.start + e.at) * 1000.0).round() / 1000.0,
            user: user.clone(),
            endpoint: e.endpoint,
            ip: Some(e.ip),
            tier: Some(tier.to_string()),
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
fn play(s: &mut Script, archetype: Archetype, nat: Option<&Vec<String>>) -> &'static str {
    match archetype {
        Archetype::Browser => {
            let count = 1 + usize::from(s.chance(0.15));
            let home = s.addresses(count);
            normal::browse(s, &home);
            free_or(s, 0.7, "pro")
        }
        Archetype::NatUser => {
            let pool = nat.cloned().unwrap_or_else(|| s.addresses(NAT_ADDRESSES));
            normal::browse(s, &pool);
            "free"
        }
        Archetype::MobilePoller => mobile_poller(s),
        Archetype::FastPoller => fast_poller(s),
        Archetype::Integration => integration(s),
        Archetype::RetryBursts => retry_bursts(s),
        Archetype::CredentialStuffing => {
            attack(s, abuse::credential_stuffing);
            free_or(s, 0.7, "pro")
        }
        Archetype::Scraper => {
            attack(s, abuse::scrape);
            free_or(s, 0.4, "pro")
        }
        Archetype::SmsPumping => {
            attack(s, abuse::sms_pump);
            free_or(s, 0.5, "pro")
        }
        Archetype::IdEnumeration => {
            attack(s, abuse::enumerate_ids);
            free_or(s, 0.4, "pro")
        }
        Archetype::LowAndSlow => {
            attack(s, abuse::low_and_slow);
            "free"
        }
    }
}

/// `free` with probability `p_free`, else `other`.
fn free_or(s: &mut Script, p_free: f64, other: &'static str) -> &'static str {
    if s.chance(p_free) { "free" } else { other }
}

/// Runs an abuse script, stealthy for 40 % of abusers.
fn attack(s: &mut Script, script: fn(&mut Script, bool)) {
    let stealthy = s.chance(0.4);
    script(s, stealthy);
}

/// Half on pro polling every 20 or 30 s, half on free every minute.
fn mobile_poller(s: &mut Script) -> &'static str {
    if s.chance(0.5) {
        let period = [20.0, 30.0][usize::from(s.chance(0.5))];
        normal::mobile_poll(s, period);
        "pro"
    } else {
        normal::mobile_poll(s, 60.0);
        "free"
    }
}

/// Pro or enterprise, by how fast it polls.
fn fast_poller(s: &mut Script) -> &'static str {
    let roll = s.uniform(0.0, 1.0);
    // The fastest poll faster than the default endpoint limit (50/min) allows.
    let (period, tier) = match roll {
        r if r < 0.5 => (s.uniform(4.0, 10.0), "pro"),
        r if r < 0.8 => (s.uniform(1.5, 4.0), "enterprise"),
        _ => (s.uniform(0.8, 1.5), "enterprise"),
    };
    normal::fast_poll(s, period);
    tier
}

/// An enterprise API client.
fn integration(s: &mut Script) -> &'static str {
    // 15 % are misconfigured: faster than their limits, and 10-50 % invalid calls.
    let (rate, errors) = if s.chance(0.15) {
        (s.uniform(0.7, 1.5), s.uniform(0.1, 0.5))
    } else {
        (s.uniform(0.2, 0.7), 0.0)
    };
    normal::integrate(s, rate, errors);
    "enterprise"
}

/// Half on free calling every 45 s on average, half on pro every 12 s.
fn retry_bursts(s: &mut Script) -> &'static str {
    if s.chance(0.5) {
        normal::retry_bursts(s, 45.0);
        "free"
    } else {
        normal::retry_bursts(s, 12.0);
        "pro"
    }
}

/// Simulates and writes the run to `path`; returns the number of requests written.
pub fn write_file(config: &SimulateConfig, path: &std::path::Path) -> std::io::Result<usize> {
    let records = simulate(config);
    let file = std::fs::File::create(path)?;
    write_jsonl(std::io::BufWriter::new(file), &records)?;
    Ok(records.len())
}
