//! What legitimate clients of any kind do now and then, laid over an archetype's requests:
//! leave by changing addresses, and have a bad day.
//!
//! Real APIs see phones move between wifi and their carrier, workloads spread over several
//! nodes and serverless functions that leave by whatever address the cloud gives them; and
//! clients whose credentials expired, that keep polling a deleted resource, or whose new
//! release sends payloads the API refuses. A model that never saw a legitimate client do so
//! reads many addresses or a run of refusals alone as abuse (two traffic generators written
//! apart from this one showed it). Parameters are listed in models/README.md.

use crate::simulate::script::Script;

/// How a client's requests leave: phones roam, machines may run on nodes or serverless.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Egress {
    Person,
    Machine,
}

/// Re-draws the addresses of `s`'s requests: a person on a phone (35 %) takes a new address
/// at a handover, on average every 2-30 min (log-uniform); a machine runs on 3-16 nodes
/// (25 %), each request from any of them, or as a serverless function (8 %) that takes a new
/// address every 1-30 requests on average (log-uniform).
pub fn spread_addresses(s: &mut Script, egress: Egress) {
    s.events.sort_by(|a, b| a.at.total_cmp(&b.at));
    let roll = s.uniform(0.0, 1.0);
    match egress {
        Egress::Person if roll < 0.35 => {
            let handover = s.log_uniform(120.0, 1800.0);
            let mut address = s.address();
            let mut last = s.events.first().map_or(0.0, |e| e.at);
            for i in 0..s.events.len() {
                let gap = s.events[i].at - last;
                last = s.events[i].at;
                if s.chance(1.0 - (-gap / handover).exp()) {
                    address = s.address();
                }
                s.events[i].ip = address.clone();
            }
        }
        Egress::Machine if roll < 0.25 => {
            let count = s.between(3, 16);
            let nodes = s.addresses(count);
            for i in 0..s.events.len() {
                s.events[i].ip = s.pick(&nodes).to_string();
            }
        }
        Egress::Machine if roll < 0.33 => {
            let per_address = s.log_uniform(1.0, 30.0);
            let mut address = s.address();
            for i in 0..s.events.len() {
                if s.chance(1.0 / per_address) {
                    address = s.address();
                }
                s.events[i].ip = address.clone();
            }
        }
        _ => {}
    }
}

/// For 20 % of clients, one bad day: for 2-30 min (log-uniform) from a random time, 30-100 %
/// of what would have succeeded fails with one status: 401 (expired credentials, 40 %), 404
/// (a deleted resource polled on, 30 %) or 400/422 (a release sending bad payloads, 30 %).
pub fn bad_day(s: &mut Script) {
    if !s.chance(0.2) {
        return;
    }
    let from = s.uniform(0.0, s.duration);
    let to = from + s.log_uniform(120.0, 1800.0);
    let share = s.uniform(0.3, 1.0);
    let kind = s.uniform(0.0, 1.0);
    for i in 0..s.events.len() {
        let (status, at) = (s.events[i].status, s.events[i].at);
        if status != 200 || !(from..to).contains(&at) || !s.chance(share) {
            continue;
        }
        s.events[i].status = match kind {
            k if k < 0.4 => 401,
            k if k < 0.7 => 404,
            _ => [400, 422][usize::from(s.chance(0.5))],
        };
    }
}
