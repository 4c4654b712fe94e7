//! `dsa-load`: a lean HTTP/1.1 load generator for dsa's flood benchmark (`tests/benches/check.rs`,
//! `BENCH_MODES=flood`), run as a process of its own so that it can be pinned to other CPUs than
//! the front it measures.
//!
//! **Open loop** (`--rate R --secs D`): request *n* is due at `start + n / R`, whatever happened
//! to the others, and its latency is measured from that due time (no coordinated omission). A due
//! request goes to an idle keep-alive connection, or a new connection (at most
//! `--max-connections`), or waits for the first connection to come free; how late it was actually
//! written is its *dispatch lag*, reported so that a generator that cannot keep up is seen, not
//! mistaken for a slow server. Each request is a pre-built `GET` written on a plain socket and each
//! answer is parsed only as far as its status line and `Content-Length` (httparse), which keeps
//! the cost per request to two system calls.
//!
//! **Closed loop** (`--closed C --secs D`): C connections, each sending its next request as soon
//! as the last answer arrived → the server's capacity.
//!
//! Targets (`--targets FILE`) are request targets (path and query), one per line, used in turn.
//! Output: one JSON line `{"event":"last_send",…}` the moment the open loop's last request was
//! written, then one JSON line with the figures (statuses, latencies of 200s in ms, dispatch lag,
//! connections opened). Status 0 counts requests that got no answer (connection refused or
//! closed, or `--timeout-secs` passed).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Open- or closed-loop HTTP/1.1 load generator (dsa's flood benchmark)")]
struct Args {
    /// Server address (host:port).
    #[arg(long)]
    addr: SocketAddr,
    /// File of request targets (path and query), one per line, used in turn.
    #[arg(long)]
    targets: PathBuf,
    /// Open loop: requests per second.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Duration of the run, seconds.
    #[arg(long, default_value_t = 5.0)]
    secs: f64,
    /// Open loop: most connections open at once.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Closed loop with this many connections instead of the open loop.
    #[arg(long)]
    closed: Option<usize>,
    /// An answer not complete after this many seconds counts as none (status 0).
    #[arg(long, default_value_t = 10.0)]
    timeout_secs: f64,
}

/// What the run saw.
#[derive(Default)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    /// Latency of each 200, microseconds from the due time.
    admitted_us: Vec<u64>,
    /// Latency of every answer (any status), microseconds from the due time.
    all_us: Vec<u64>,
    /// Write time − due time of each request, microseconds.
    dispatch_lag_us: Vec<u64>,
    answered: u64,
}

/// State shared by the dispatcher and the connections (one thread: `Rc`/`Cell`).
struct Shared {
    addr: SocketAddr,
    requests: Vec<Vec<u8>>,
    timeout: Duration,
    queue: RefCell<VecDeque<(usize, Instant)>>,
    work: Notify,
    idle: Cell<usize>,
    open: Cell<usize>,
    opened: Cell<u64>,
    sending_done: Cell<bool>,
    tally: RefCell<Tally>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let targets = std::fs::read_to_string(&args.targets)?;
    let requests: Vec<Vec<u8>> = targets
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| format!("GET {t} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\r\n", args.addr).into_bytes())
        .collect();
    anyhow::ensure!(!requests.is_empty(), "no request targets in {}", args.targets.display());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let shared = Rc::new(Shared {
        addr: args.addr,
        requests,
        timeout: Duration::from_secs_f64(args.timeout_secs),
        queue: RefCell::default(),
        work: Notify::new(),
        idle: Cell::new(0),
        open: Cell::new(0),
        opened: Cell::new(0),
        sending_done: Cell::new(false),
        tally: RefCell::default(),
    });
    let report = local.block_on(&runtime, async {
        match args.closed {
            Some(connections) => closed_loop(&shared, connections, args.secs).await,
            None => open_loop(&shared, args.rate, args.secs, args.max_connections).await,
        }
    })?;
    println!("{report}");
    Ok(())
}

async fn closed_loop(shared: &Rc<Shared>, connections: usize, secs: f64) -> anyhow::Result<serde_json::Value> {
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for c in 0..connections {
        let shared = shared.clone();
        tasks.push(tokio::task::spawn_local(async move {
            let mut stream: Option<TcpStream> = None;
            let mut buffer = Vec::with_capacity(4096);
            let mut i = c;
            while Instant::now() < until {
                let due = Instant::now();
                let status = exchange(&shared, &mut stream, &mut buffer, i % shared.requests.len()).await;
                shared.tally.borrow_mut().record(status, due);
                i += connections;
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let tally = shared.tally.borrow();
    let ok = tally.statuses.get(&200).copied().unwrap_or(0);
    Ok(serde_json::json!({
        "mode": "closed",
        "connections": connections,
        "secs": elapsed,
        "ok_per_sec": ok as f64 / elapsed,
        "statuses": tally.statuses,
        "admitted_ms": percentiles(&tally.admitted_us),
    }))
}

async fn open_loop(
    shared: &Rc<Shared>,
    rate: f64,
    secs: f64,
    max_connections: usize,
) -> anyhow::Result<serde_json::Value> {
    anyhow::ensure!(rate > 0.0 && secs > 0.0, "rate and secs must be positive");
    let total = (rate * secs).round() as u64;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now() + Duration::from_millis(50);
    let due = |n: u64| start + interval.mul_f64(n as f64);
    let mut n = 0u64;
    while n < total {
        let now = Instant::now();
        while n < total && due(n) <= now {
            let job = ((n % shared.requests.len() as u64) as usize, due(n));
            n += 1;
            if shared.idle.get() <= shared.queue.borrow().len() && shared.open.get() < max_connections {
                shared.open.set(shared.open.get() + 1);
                shared.opened.set(shared.opened.get() + 1);
                tokio::task::spawn_local(connection(shared.clone(), job));
            } else {
                shared.queue.borrow_mut().push_back(job);
                shared.work.notify_one();
            }
        }
        if n < total {
            tokio::time::sleep_until(due(n)).await;
        }
    }
    // The last request is written when the queue has drained.
    while !shared.queue.borrow().is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let sent_secs = start.elapsed().as_secs_f64();
    println!("{}", serde_json::json!({"event": "last_send", "sent_secs": sent_secs}));
    std::io::stdout().flush()?;
    shared.sending_done.set(true);
    shared.work.notify_waiters();
    let deadline = Instant::now() + shared.timeout + Duration::from_secs(1);
    while shared.tally.borrow().answered < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let tally = shared.tally.borrow();
    Ok(serde_json::json!({
        "mode": "open",
        "rate": rate,
        "secs": secs,
        "scheduled": total,
        "answered": tally.answered,
        "sent_secs": sent_secs,
        "statuses": tally.statuses,
        "admitted_ms": percentiles(&tally.admitted_us),
        "all_ms": percentiles(&tally.all_us),
        "dispatch_lag_ms": percentiles(&tally.dispatch_lag_us),
        "connections_opened": shared.opened.get(),
    }))
}

/// One keep-alive connection of the open loop: serves `first`, then whatever the queue holds,
/// until sending is done and the queue is empty.
async fn connection(shared: Rc<Shared>, first: (usize, Instant)) {
    let mut stream: Option<TcpStream> = None;
    let mut buffer = Vec::with_capacity(4096);
    let mut job = Some(first);
    loop {
        let (request, due) = match job.take() {
            Some(j) => j,
            None => {
                shared.idle.set(shared.idle.get() + 1);
                let next = loop {
                    if let Some(j) = shared.queue.borrow_mut().pop_front() {
                        break Some(j);
                    }
                    if shared.sending_done.get() {
                        break None;
                    }
                    shared.work.notified().await;
                };
                shared.idle.set(shared.idle.get() - 1);
                match next {
                    Some(j) => j,
                    None => break,
                }
            }
        };
        shared.tally.borrow_mut().dispatch_lag_us.push(micros(due.elapsed()));
        let status = exchange(&shared, &mut stream, &mut buffer, request).await;
        shared.tally.borrow_mut().record(status, due);
    }
    shared.open.set(shared.open.get() - 1);
}

/// Writes request `index` on `stream` (connecting first if needed) and reads its answer's status;
/// 0 when there was none (the connection is dropped then).
async fn exchange(shared: &Shared, stream: &mut Option<TcpStream>, buffer: &mut Vec<u8>, index: usize) -> u16 {
    let attempt = async {
        if stream.is_none() {
            let s = TcpStream::connect(shared.addr).await?;
            s.set_nodelay(true)?;
            buffer.clear();
            *stream = Some(s);
        }
        let s = stream.as_mut().ok_or_else(|| std::io::Error::other("no stream"))?;
        s.write_all(&shared.requests[index]).await?;
        read_answer(s, buffer).await
    };
    match tokio::time::timeout(shared.timeout, attempt).await {
        Ok(Ok((status, keep_alive))) => {
            if !keep_alive {
                *stream = None;
            }
            status
        }
        _ => {
            *stream = None;
            0
        }
    }
}

/// Reads one HTTP/1.1 answer (headers and a `Content-Length` body) from `stream`, keeping any
/// bytes past it in `buffer`: its status, and whether the connection stays open.
async fn read_answer(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> std::io::Result<(u16, bool)> {
    loop {
        let parsed = {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut answer = httparse::Response::new(&mut headers);
            match answer.parse(buffer) {
                Ok(httparse::Status::Complete(head)) => {
                    let header = |name: &str| {
                        answer
                            .headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case(name))
                            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
                    };
                    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
                        return Err(std::io::Error::other("chunked answers are not supported"));
                    }
                    let length = header("content-length").and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
                    let close = header("connection").is_some_and(|v| v.contains("close"));
                    Some((answer.code.unwrap_or(0), head + length, !close))
                }
                Ok(httparse::Status::Partial) => None,
                Err(e) => return Err(std::io::Error::other(e)),
            }
        };
        if let Some((status, end, keep_alive)) = parsed
            && buffer.len() >= end
        {
            buffer.drain(..end);
            return Ok((status, keep_alive));
        }
        if stream.read_buf(buffer).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
}

impl Tally {
    fn record(&mut self, status: u16, due: Instant) {
        let latency = micros(due.elapsed());
        *self.statuses.entry(status).or_default() += 1;
        self.answered += 1;
        self.all_us.push(latency);
        if status == 200 {
            self.admitted_us.push(latency);
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// p50, p99 and max of `values` (microseconds) in milliseconds; `null`s when empty.
fn percentiles(values: &[u64]) -> serde_json::Value {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).map(|&us| us as f64 / 1000.0);
    serde_json::json!({"count": sorted.len(), "p50": at(0.50), "p99": at(0.99), "max": sorted.last().map(|&us| us as f64 / 1000.0)})
}
