//! `ratewarden replay` (docs/reference/cli.md, replay), through the real binary: live and replayed decisions
//! agree; the access-log excerpts Debian's fail2ban ships parse as their lines say; a sweep's
//! table matches a direct count over its per-request decisions and its plot is a PNG;
//! malformed input is counted and reported, never a panic; bad inputs and settings are refused
//! with exact messages; gzip and RFC 3339 times replay like plain lines; `load` denials only
//! under a pinned load factor; an enumerator that pauses or sends in bursts stays flagged; a novel
//! subject that the novelty rule kept from a flag is listed with that reason.

mod common;

#[path = "replay/harness.rs"]
mod harness;

#[path = "replay/malformed.rs"]
mod malformed;

#[path = "replay/refused.rs"]
mod refused;

#[path = "replay/formats.rs"]
mod formats;

#[path = "replay/load_factor.rs"]
mod load_factor;

#[path = "replay/fail2ban.rs"]
mod fail2ban;

#[path = "replay/sweep.rs"]
mod sweep;

#[path = "replay/differential.rs"]
mod differential;

#[path = "replay/upstream.rs"]
mod upstream;

#[path = "replay/evasion.rs"]
mod evasion;

#[path = "replay/novel.rs"]
mod novel;
