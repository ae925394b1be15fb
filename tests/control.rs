//! The control loop: load factor from a scripted load curve, the cgroup quota's share, the
//! flag `hold` rule, features from recorded traffic, and the fleet-wide state in a real Redis.

mod common;

#[path = "control/load.rs"]
mod load;

#[path = "control/judge.rs"]
mod judge;

#[path = "control/cycle.rs"]
mod cycle;

#[path = "control/upstream.rs"]
mod upstream;

#[path = "control/prometheus.rs"]
mod prometheus;

#[path = "control/shared.rs"]
mod shared;

#[path = "control/fleet_cost.rs"]
mod fleet_cost;

#[path = "control/simulated.rs"]
mod simulated;

#[path = "control/lost_values.rs"]
mod lost_values;
