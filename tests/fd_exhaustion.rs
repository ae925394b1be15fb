//! The real binary out of file descriptors: while `accept` fails, neither listener spins a
//! core (tonic's own accept loop retried at once) nor writes a warning per try, and both serve
//! again once connections close.

mod common;

use common::daemon::Daemon;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// Far fewer than the connections opened below, enough for the daemon's own files.
const MAX_FDS: u32 = 64;
const CONNECTIONS: usize = 150;
const HELD_FOR: Duration = Duration::from_secs(3);

/// The CPU time (user and system) the process has used, from `/proc`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name in parentheses: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// Opens connections to `addr` until `CONNECTIONS` (those the kernel queues count: the
/// daemon cannot accept them), holds them `HELD_FOR`, and returns the CPU the daemon used then.
fn cpu_while_flooded(daemon: &Daemon, addr: SocketAddr) -> Duration {
    let connections: Vec<TcpStream> = (0..CONNECTIONS)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok())
        .collect();
    assert!(
        connections.len() > MAX_FDS as usize,
        "{}",
        connections.len()
    );
    let before = cpu_time(daemon.pid());
    let started = Instant::now();
    std::thread::sleep(HELD_FOR);
    let used = cpu_time(daemon.pid()) - before;
    assert!(started.elapsed() < HELD_FOR * 2);
    drop(connections);
    used
}

#[test]
fn out_of_file_descriptors_neither_listener_spins_or_floods_the_log() {
    let policy = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/ratewarden.yaml"));
    let mut daemon = Daemon::start_with_fd_limit(policy, &[], MAX_FDS);
    let listening = daemon.wait_for("ratewarden listening", Duration::from_secs(1));
    let grpc: SocketAddr = listening
        .split_whitespace()
        .find_map(|w| w.strip_prefix("grpc="))
        .expect("the listening line names the gRPC address")
        .parse()
        .unwrap();

    // A spinning accept loop takes most of a core: well over a quarter of the time held.
    for (what, addr) in [("gRPC", grpc), ("HTTP", daemon.addr)] {
        let used = cpu_while_flooded(&daemon, addr);
        assert!(
            used < HELD_FOR / 4,
            "{what}: {used:?} of CPU in {HELD_FOR:?}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while daemon.get("/healthz").0 != 200 {
        assert!(Instant::now() < deadline, "HTTP never served again");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut warnings = |what: &str| {
        let needle = format!("cannot accept {what} connections");
        let log = daemon.drain_log();
        log.iter().filter(|l| l.contains(&needle)).count()
    };
    assert_eq!(warnings("gRPC"), 1);
    assert_eq!(warnings("HTTP"), 1);
    assert!(daemon.stop(Duration::from_secs(20)).success());
}
