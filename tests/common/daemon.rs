//! The real `ratewarden` binary as a child process: started on a free port, read through its
//! log, stopped by PID.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub struct Daemon {
    child: Child,
    log: Receiver<String>,
    pub addr: SocketAddr,
    /// Every log line read so far.
    pub seen: Vec<String>,
}

impl Daemon {
    /// Starts `ratewarden serve --policy POLICY --listen 127.0.0.1:0` and waits for its address.
    pub fn start(policy: &Path, extra_env: &[(&str, &str)]) -> Daemon {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ratewarden"));
        command
            .args(["serve", "--policy"])
            .arg(policy)
            .args(["--listen", "127.0.0.1:0"])
            .env("RATEWARDEN_HASH_KEY", "daemon test secret")
            .env("RATEWARDEN_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in extra_env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("ratewarden starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, log) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut daemon = Daemon {
            child,
            log,
            addr: "127.0.0.1:0".parse().unwrap(),
            seen: Vec::new(),
        };
        let line = daemon.wait_for("ratewarden listening", Duration::from_secs(20));
        let addr = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("local="))
            .expect("the listening line names the address");
        daemon.addr = addr.parse().expect("a socket address");
        daemon
    }

    /// Waits for a log line containing `needle`, returning it.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "no log line with {needle:?} within {timeout:?}; log so far:\n{}",
                        self.seen.join("\n")
                    )
                }
            }
        }
    }

    /// A plain HTTP/1.1 GET; returns (status, body).
    pub fn get(&self, path: &str) -> (u16, String) {
        http(
            self.addr,
            &format!("GET {path} HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\n\r\n"),
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Sends SIGTERM and waits for the exit, at most `within`.
    pub fn stop(mut self, within: Duration) -> ExitStatus {
        self.signal("TERM");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait works") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("ratewarden did not exit within {within:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends raw HTTP/1.1 and returns (status, body). Enough for tests that need no client crate.
pub fn http(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).expect("writes");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reads");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}
