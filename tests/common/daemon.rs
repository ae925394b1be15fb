//! The real `ratewarden` binary as a child process: started on a free port, read through its
//! log, stopped by PID.

use std::io::{self, BufRead, BufReader, Read, Write};
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
    /// Starts `ratewarden serve --policy POLICY --listen 127.0.0.1:0` (gRPC on a free port too,
    /// unless `RATEWARDEN_GRPC_LISTEN` is in `extra_env`) and waits for its address.
    pub fn start(policy: &Path, extra_env: &[(&str, &str)]) -> Daemon {
        Self::spawn(
            Command::new(env!("CARGO_BIN_EXE_ratewarden")),
            policy,
            extra_env,
        )
    }

    /// As [`Daemon::start`], with at most `max_fds` file descriptors open (`ulimit -n`).
    pub fn start_with_fd_limit(policy: &Path, extra_env: &[(&str, &str)], max_fds: u32) -> Daemon {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(format!("ulimit -n {max_fds} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_ratewarden"));
        Self::spawn(shell, policy, extra_env)
    }

    fn spawn(mut command: Command, policy: &Path, extra_env: &[(&str, &str)]) -> Daemon {
        command
            .args(["serve", "--policy"])
            .arg(policy)
            .args(["--listen", "127.0.0.1:0"])
            .env("RATEWARDEN_GRPC_LISTEN", "127.0.0.1:0")
            .env("RATEWARDEN_HASH_KEY", "daemon test secret")
            .env("RATEWARDEN_LOG", "info")
            // Limits as written, whatever the CPU of this shared machine (a test may override).
            .env("RATEWARDEN_PIN_LOAD_FACTOR", "1")
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

    /// A GET; returns (status, headers, body).
    pub fn get_full(&self, path: &str) -> (u16, Vec<(String, String)>, String) {
        let reply = send(
            self.addr,
            format!("GET {path} HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        let text = reply.text();
        (reply.status, reply.headers, text)
    }

    /// A POST of `body` as `application/json`; returns (status, headers, body).
    pub fn post_json(&self, path: &str, body: &str) -> (u16, Vec<(String, String)>, String) {
        self.request("POST", path, &[("Content-Type", "application/json")], body)
    }

    /// Any request with a body (its Content-Length is set here); returns (status, headers,
    /// body).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let reply = request(self.addr, method, path, headers, body);
        let text = reply.text();
        (reply.status, reply.headers, text)
    }

    /// Every log line written so far (read without waiting), kept in `seen` too.
    pub fn drain_log(&mut self) -> &[String] {
        while let Ok(line) = self.log.try_recv() {
            self.seen.push(line);
        }
        &self.seen
    }

    /// Stops reading the log, as when the process a daemon's stderr is piped to exits: the
    /// pipe's read end closes at the next line, and later writes fail.
    pub fn close_log(&mut self) {
        self.log = channel().1;
    }

    /// Whether the process has not exited.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("wait works").is_none()
    }

    /// The exit status, once the process has exited.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("wait works")
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

    /// `GET /v1/admin/subjects/{user}` with the admin `token`, which must answer 200: the view.
    pub fn subject_view(&self, user: &str, token: &str) -> serde_json::Value {
        let (code, _, text) = self.request(
            "GET",
            &format!("/v1/admin/subjects/{user}"),
            &[("Authorization", &format!("Bearer {token}"))],
            "",
        );
        assert_eq!(code, 200, "{text}");
        serde_json::from_str(&text).expect("a subject view")
    }

    /// Control cycles completed so far (the count of the cycle duration histogram).
    pub fn control_cycles(&self) -> u64 {
        let (code, text) = self.get("/metrics");
        assert_eq!(code, 200, "{text}");
        text.lines()
            .find_map(|l| l.strip_prefix("ratewarden_control_cycle_duration_seconds_count "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits until a whole control cycle has run since this call (the one running now may
    /// have drained its events before what was just sent): what a cycle does with requests
    /// already sent is then done, however slow the machine.
    pub fn await_a_whole_cycle(&self) {
        let target = self.control_cycles() + 2;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.control_cycles() < target {
            assert!(
                Instant::now() < deadline,
                "no control cycle ran within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
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
    let reply = send(addr, request.as_bytes());
    (reply.status, reply.text())
}

/// Any request with a body to `addr` on a new connection (its Content-Length is set here); for
/// threads that share a daemon by its address.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: ratewarden\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        raw.push_str(&format!("{name}: {value}\r\n"));
    }
    raw.push_str("\r\n");
    raw.push_str(body);
    send(addr, raw.as_bytes())
}

/// Sends raw bytes on a new connection and reads one response (panics on a transport error).
pub fn send(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut connection = Connection::open(addr).expect("connects");
    let head = request.starts_with(b"HEAD ");
    connection
        .exchange(request, head)
        .unwrap_or_else(|e| panic!("no HTTP response: {e}"))
}

/// A response read off the wire: status, headers in order (names lower-cased), body (chunked
/// transfer coding removed).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether the server said it closes the connection after this response.
    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.to_ascii_lowercase().contains("close"))
    }
}

/// The first value of header `name` (case-insensitive) in a list of (name, value).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// One client connection that can carry several requests (keep-alive), read with a 15 s timeout.
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Connection {
    pub fn open(addr: SocketAddr) -> io::Result<Connection> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(15)))?;
        stream.set_write_timeout(Some(Duration::from_secs(15)))?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream,
            buffer: Vec::new(),
        })
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Closes the sending side: the server reads end of file after what was written.
    pub fn shutdown_write(&self) -> io::Result<()> {
        self.stream.shutdown(std::net::Shutdown::Write)
    }

    /// Writes `request` and reads its response (`head`: the request was a HEAD, so the
    /// response has no body whatever its Content-Length says).
    pub fn exchange(&mut self, request: &[u8], head: bool) -> io::Result<Reply> {
        self.write(request)?;
        self.read_reply(head)
    }

    /// Reads one final response, skipping any 1xx. A connection closed before the first byte
    /// of a response is `UnexpectedEof`.
    pub fn read_reply(&mut self, head: bool) -> io::Result<Reply> {
        loop {
            let end = self.fill_until_head_end()?;
            let head_bytes = self.buffer.drain(..end + 4).collect::<Vec<u8>>();
            let head_text = String::from_utf8_lossy(&head_bytes[..end]).into_owned();
            let mut lines = head_text.split("\r\n");
            let status_line = lines.next().unwrap_or("");
            let status: u16 = status_line
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| invalid(format!("not an HTTP status line: {status_line:?}")))?;
            let headers: Vec<(String, String)> = lines
                .filter_map(|line| line.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            if (100..200).contains(&status) {
                continue;
            }
            let body = if head || status == 204 || status == 304 {
                Vec::new()
            } else if header(&headers, "transfer-encoding")
                .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
            {
                self.read_chunked()?
            } else if let Some(length) = header(&headers, "content-length") {
                let length: usize = length
                    .parse()
                    .map_err(|_| invalid(format!("bad Content-Length {length:?}")))?;
                self.take(length)?
            } else {
                // Delimited by the end of the connection.
                let mut rest = std::mem::take(&mut self.buffer);
                self.stream.read_to_end(&mut rest)?;
                rest
            };
            return Ok(Reply {
                status,
                headers,
                body,
            });
        }
    }

    /// Reads more bytes; `Ok(false)` at end of file. A read a signal interrupted (an in-process
    /// daemon's signal handlers, a child's exit) is tried again, as `read_to_end` does.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 16 * 1024];
        let n = loop {
            match self.stream.read(&mut chunk) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                read => break read?,
            }
        };
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    fn fill_until_head_end(&mut self) -> io::Result<usize> {
        loop {
            if let Some(i) = find(&self.buffer, b"\r\n\r\n") {
                return Ok(i);
            }
            if !self.fill()? {
                return Err(if self.buffer.is_empty() {
                    io::Error::new(io::ErrorKind::UnexpectedEof, "closed before a response")
                } else {
                    invalid("closed inside a response head".to_owned())
                });
            }
        }
    }

    fn take(&mut self, length: usize) -> io::Result<Vec<u8>> {
        while self.buffer.len() < length {
            if !self.fill()? {
                return Err(invalid("closed inside a response body".to_owned()));
            }
        }
        Ok(self.buffer.drain(..length).collect())
    }

    fn read_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(i) = find(&self.buffer, b"\r\n") {
                let line = self.buffer.drain(..i + 2).collect::<Vec<u8>>();
                return Ok(String::from_utf8_lossy(&line[..i]).into_owned());
            }
            if !self.fill()? {
                return Err(invalid("closed inside a chunked body".to_owned()));
            }
        }
    }

    fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line()?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| invalid(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.read_line()?.is_empty() {}
                return Ok(body);
            }
            body.extend(self.take(size)?);
            self.read_line()?;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}
