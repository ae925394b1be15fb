//! Real `redis-server` processes for tests: started on free loopback ports with no
//! persistence, stopped (or killed with SIGKILL) by PID. A Redis Cluster too, and a primary with a
//! replica watched by three Sentinels (servers and clusters that also serve TLS: `redis_tls.rs`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One redis-server child process.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    /// The TLS port, when started with [`RedisServer::start_tls`] (plain `port` stays open for
    /// `redis-cli`).
    pub tls_port: Option<u16>,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
    extra: Vec<String>,
}

/// Ports handed to test servers. They sit below Linux's ephemeral range (32768 and up), where
/// outgoing connections take their local ports, so a port found free stays free until the server
/// binds it; and so does its cluster bus port (port + 10000), which a cluster node needs too.
const TEST_PORTS: std::ops::Range<u16> = 12_000..22_000;
const CLUSTER_BUS_OFFSET: u16 = 10_000;

fn is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A free loopback port whose port + 10000 is free too (the listener is closed before the server
/// binds it; another test may still take it first, which `RedisServer::start_with` survives by
/// trying another).
pub fn free_port() -> u16 {
    for _ in 0..1_000 {
        let port = rand::random_range(TEST_PORTS);
        if is_free(port) && is_free(port + CLUSTER_BUS_OFFSET) {
            return port;
        }
    }
    panic!("no free port pair in {TEST_PORTS:?}");
}

/// Start-up attempts on fresh ports before a test gives up.
const START_ATTEMPTS: usize = 4;

impl RedisServer {
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts redis-server with extra `--flag value` arguments (e.g. cluster mode), on another
    /// free port when the first one was taken between being picked and being bound.
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            tls_port: None,
            dir: tmp.path().to_owned(),
            _tmp: tmp,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        for _ in 1..START_ATTEMPTS {
            if server.try_spawn() {
                return server;
            }
            server.kill();
            server.port = free_port();
        }
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        if !self.try_spawn() {
            panic!("redis-server on port {} did not start", self.port);
        }
    }

    /// Starts the process and waits for it to answer; false when it exited or stayed silent.
    fn try_spawn(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/test installs it)");
        self.child = Some(child);
        self.wait_ready()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Adds an ACL user allowed every command and key (`ACL SETUSER`, over the plain port).
    pub fn add_user(&self, user: &str, password: &str) {
        let password = format!(">{password}");
        let reply = self.cli(&["ACL", "SETUSER", user, "on", &password, "~*", "&*", "+@all"]);
        assert_eq!(reply.trim(), "OK", "ACL SETUSER {user}: {reply}");
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `redis-cli -p PORT ARGS...`, its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.cli(&["PING"]).trim() == "PONG" {
                return true;
            }
            // A port (or bus port) taken by someone else: redis-server exits at once.
            if let Some(child) = self.child.as_mut()
                && matches!(child.try_wait(), Ok(Some(_)))
            {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-9", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }

    /// Starts again on the same port (empty: no persistence).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Every key in the server.
    pub fn keys(&self) -> Vec<String> {
        self.cli(&["--scan"])
            .lines()
            .map(str::to_owned)
            .filter(|l| !l.is_empty())
            .collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis Cluster of `masters` nodes with no replicas, made by `redis-cli --cluster create`.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

pub(super) const CLUSTER_NODE_ARGS: [&str; 4] =
    ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"];

impl RedisCluster {
    pub fn start(masters: usize) -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..masters)
            .map(|_| RedisServer::start_with(&CLUSTER_NODE_ARGS))
            .collect();
        Self::create(nodes, &[])
    }

    /// `redis-cli --cluster create` over `nodes` (their TLS ports when they have one), then waits
    /// for `cluster_state:ok`.
    pub(super) fn create(nodes: Vec<RedisServer>, cli_args: &[&str]) -> RedisCluster {
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.tls_port.unwrap_or(n.port)))
            .collect();
        let out = Command::new("redis-cli")
            .args(cli_args)
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create runs");
        assert!(
            out.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = RedisCluster { nodes };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if cluster
                .nodes
                .iter()
                .all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"))
            {
                return cluster;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the cluster did not reach cluster_state:ok");
    }

    /// The `redis+cluster://` URL of the policy file.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Node URLs, for `RedisStore::connect_cluster`.
    pub fn node_urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect()
    }
}

/// The name Sentinels monitor the test's primary under.
pub const PRIMARY_NAME: &str = "mymaster";

/// One `redis-sentinel` process with its own config file (Sentinel rewrites it) in a temp dir.
pub struct Sentinel {
    child: Option<Child>,
    pub port: u16,
    _tmp: tempfile::TempDir,
}

impl Sentinel {
    /// Watches the primary on `primary_port` with a quick failure detector: down after 1 s.
    pub fn start(primary_port: u16, quorum: u32) -> Sentinel {
        Self::start_on(free_port(), primary_port, quorum)
    }

    /// The same on a given port.
    pub fn start_on(port: u16, primary_port: u16, quorum: u32) -> Sentinel {
        let tmp = tempfile::tempdir().expect("temp dir");
        let config = tmp.path().join("sentinel.conf");
        std::fs::write(
            &config,
            format!(
                "port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {dir}\n\
                 sentinel monitor {PRIMARY_NAME} 127.0.0.1 {primary_port} {quorum}\n\
                 sentinel down-after-milliseconds {PRIMARY_NAME} 1000\n\
                 sentinel failover-timeout {PRIMARY_NAME} 10000\n\
                 sentinel parallel-syncs {PRIMARY_NAME} 1\n",
                dir = tmp.path().display()
            ),
        )
        .expect("sentinel config");
        let child = Command::new("redis-sentinel")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-sentinel runs (scripts/test installs it)");
        let sentinel = Sentinel {
            child: Some(child),
            port,
            _tmp: tmp,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while sentinel.cli(&["PING"]).trim() != "PONG" {
            assert!(
                Instant::now() < deadline,
                "sentinel on {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        sentinel
    }

    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A field of `SENTINEL MASTER <name>` (the primary as this Sentinel sees it).
    pub fn primary_field(&self, field: &str) -> Option<String> {
        let out = self.cli(&["SENTINEL", "MASTER", PRIMARY_NAME]);
        let lines: Vec<&str> = out.lines().collect();
        lines
            .chunks(2)
            .find(|pair| pair[0] == field)
            .and_then(|pair| pair.get(1))
            .map(|v| v.to_string())
    }

    /// The port of the primary in this Sentinel's `SENTINEL MASTER` (what clients read): the
    /// promoted replica's once the failover has ended (`+switch-master`; GET-MASTER-ADDR-BY-NAME
    /// names it a little earlier, while the other replicas are still being reconfigured).
    pub fn primary_port(&self) -> Option<u16> {
        self.primary_field("port")?.parse().ok()
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-9", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A primary, one replica of it and three Sentinels (quorum 2), all on loopback.
pub struct SentinelGroup {
    pub primary: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<Sentinel>,
}

impl SentinelGroup {
    /// Starts the group and waits until the replica is in sync and every Sentinel knows the
    /// replica and the two other Sentinels (they meet through the primary every 2 s), so that a
    /// failover can be agreed on.
    pub fn start() -> SentinelGroup {
        let primary = RedisServer::start();
        let port = primary.port.to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
        wait_until_within(Duration::from_secs(10), "the replica syncs", || {
            replica
                .cli(&["INFO", "replication"])
                .contains("master_link_status:up")
        });
        let sentinels: Vec<Sentinel> = (0..3).map(|_| Sentinel::start(primary.port, 2)).collect();
        wait_until_within(Duration::from_secs(20), "the sentinels meet", || {
            sentinels.iter().all(|s| {
                s.primary_field("num-other-sentinels").as_deref() == Some("2")
                    && s.primary_field("num-slaves").as_deref() == Some("1")
            })
        });
        SentinelGroup {
            primary,
            replica,
            sentinels,
        }
    }

    /// The `redis+sentinel://` URL of the policy file.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        format!("redis+sentinel://{}/{PRIMARY_NAME}/0", hosts.join(","))
    }

    /// Whether any Sentinel has ended the failover to the replica.
    pub fn replica_promoted(&self) -> bool {
        self.sentinels
            .iter()
            .any(|s| s.primary_port() == Some(self.replica.port))
    }
}

fn wait_until_within(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
