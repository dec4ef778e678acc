//! `weft recv`: receive files sent by `weft send` into a directory, writing only inside it.

use std::net::TcpListener;
use std::path::PathBuf;

use anyhow::Context;
use weft_model::{Duration, Size};
use weft_xfer::net::recv::{RecvOptions, serve};
use weft_xfer::net::store::Store;

/// The default control port of `weft recv`.
const RECV_PORT: u16 = 7140;

/// Arguments of `weft recv`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to receive into (created if missing). Nothing is written outside it.
    #[arg(long)]
    dir: PathBuf,
    /// Address to listen on for control connections: HOST:PORT, HOST (port 7140) or :PORT
    /// (port 0: any free port, printed on stderr). `--listen` is the older name.
    #[arg(long, alias = "listen", default_value = "0.0.0.0:7140")]
    bind: String,
    /// Port to listen on (overrides the port of --bind).
    #[arg(short, long)]
    port: Option<u16>,
    /// UDP sockets per session to stripe data over (the study's K).
    #[arg(long, default_value_t = 4)]
    sockets: u16,
    /// Pre-shared key senders must prove (visible in the process list: prefer --key-file).
    #[arg(long, conflicts_with = "key_file")]
    key: Option<String>,
    /// File holding the pre-shared key.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Replace existing files.
    #[arg(long)]
    force: bool,
    /// Largest file accepted.
    #[arg(long, default_value = "64GiB", value_parser = crate::cmd::bounds::size("1", "1024TiB"))]
    max_size: Size,
    /// Largest buffer accepted.
    #[arg(long, default_value = "256MiB", value_parser = crate::cmd::bounds::size("1", "2GiB"))]
    max_buffer: Size,
    /// Most buffers in flight granted to a sender (reliable mode).
    #[arg(long, default_value_t = 8)]
    max_window: u16,
    /// Buffer memory per session (window times buffer size).
    #[arg(long, default_value = "1GiB", value_parser = crate::cmd::bounds::size("1", "1024GiB"))]
    max_memory: Size,
    /// Buffer memory of all sessions together: a file whose buffers would pass it is refused
    /// until others end (16 sessions of 1 GiB each could otherwise pin 16 GiB).
    #[arg(long, default_value = "2GiB", value_parser = crate::cmd::bounds::size("1", "1024TiB"))]
    max_total_memory: Size,
    /// Leave protected mode: without a key, serve senders from any address (not only this
    /// host's).
    #[arg(long)]
    open: bool,
    /// Remove part files (and their journals) left by transfers that have not been resumed for
    /// this long, at start; 0 keeps them for ever.
    #[arg(long, default_value = "7d", value_parser = crate::cmd::bounds::duration("0", "3650d"))]
    part_max_age: Duration,
    /// How long to wait after a round's end for datagrams still in flight.
    #[arg(long, default_value = "2ms", value_parser = crate::cmd::bounds::duration("0", "10s"))]
    settle: Duration,
    /// Give up on a sender silent for this long.
    #[arg(long, default_value = "30s", value_parser = crate::cmd::bounds::duration("10ms", "1d"))]
    timeout: Duration,
    /// Give up on a sender that stays connected but makes no progress for this long while
    /// a buffer it started is in flight: a stopped process, a frozen VM. Default: max(10 round trips, 5 s); 0 never.
    #[arg(long, value_parser = crate::cmd::bounds::duration("0", "1d"))]
    stall_timeout: Option<Duration>,
    /// Exit after this many sessions (default: serve until killed).
    #[arg(long)]
    sessions: Option<u64>,
    /// Sessions served at once.
    #[arg(long, default_value_t = 16)]
    max_concurrent: usize,
    /// Print one JSON summary per session on stdout (nothing else).
    #[arg(long)]
    json: bool,
    /// Check each file's whole digest by reading all of it back from disk (default: from the
    /// BLAKE3s of its buffers, verified in memory before they were written; only buffers resumed
    /// from a journal are read back).
    #[arg(long)]
    read_back: bool,
    /// Verify what arrives, then drop it instead of writing it (the ttcp -s sink, an iperf3
    /// server): measures the network and the protocol without the file system. Reliable mode
    /// still checks every buffer's BLAKE3 and the whole-file digest; nothing is written into
    /// --dir.
    #[arg(long, conflicts_with = "read_back")]
    discard: bool,
    /// Keep a CSV of the sessions served in FILE, one row per session (its summary), rewritten
    /// after each session.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Files one session may have open at once (each holds a part file and a journal open);
    /// further offers are refused until one ends.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    max_open_files: u32,
    /// Buffer hashes kept per session for the whole-file digests (about 50 bytes each); past it
    /// buffers are read back from disk at the end (`hashes_not_kept` in --json).
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(0..=1 << 32))]
    max_known_hashes: u64,
    #[command(flatten)]
    lobby: super::gate::LobbyArgs,
}

/// Runs `weft recv`.
pub fn run(a: Args) -> anyhow::Result<()> {
    if a.sockets == 0 || a.sockets > 64 {
        return Err(crate::cli::usage("--sockets must be between 1 and 64"));
    }
    if a.max_buffer.as_bytes() == 0 || a.max_buffer.as_bytes() > u32::MAX as u64 {
        return Err(crate::cli::usage(
            "--max-buffer must be between 1 byte and 4GiB",
        ));
    }
    let key = super::send::load_key(&a.key, &a.key_file)?;
    let store = Store::new(&a.dir, a.force)
        .with_context(|| format!("using {} as the receiving directory", a.dir.display()))?;
    if !a.discard {
        check_writable(store.root())?;
    }
    let mut bind = super::serve::parse_bind_with(&a.bind, RECV_PORT)?;
    if let Some(p) = a.port {
        bind.set_port(p);
    }
    let listener = TcpListener::bind(bind).with_context(|| format!("listening on {bind}"))?;
    let local = listener.local_addr()?;
    if a.discard {
        eprintln!("weft recv: listening on {local}, verifying and discarding what arrives");
    } else {
        eprintln!(
            "weft recv: listening on {local}, writing into {}",
            store.root().display()
        );
    }
    let opts = RecvOptions {
        sockets: a.sockets,
        key,
        max_file: a.max_size.as_bytes(),
        max_buffer: a.max_buffer.as_bytes() as u32,
        max_window: a.max_window.max(1),
        max_memory: a.max_memory.as_bytes(),
        settle: a.settle,
        timeout: a.timeout,
        stall: a.stall_timeout,
        max_sessions: a.sessions,
        max_concurrent: a.max_concurrent,
        lobby: a.lobby.limits(),
        max_open_files: a.max_open_files as usize,
        max_known_hashes: a.max_known_hashes as usize,
        read_back: a.read_back,
        discard: a.discard,
        open: a.open,
        memory: weft_xfer::net::recv::MemoryBudget::new(a.max_total_memory.as_bytes()),
    };
    if opts.key.is_none() && !opts.open {
        eprintln!(
            "weft recv: protected mode: with no key it serves only senders on this host \
             (loopback); give it --key-file to serve others that prove the key, or --open to \
             serve anyone who reaches it"
        );
    }
    if a.part_max_age.as_nanos() > 0 {
        let age = std::time::Duration::from_nanos(a.part_max_age.as_nanos());
        for p in store.remove_stale_parts(age) {
            eprintln!(
                "weft recv: removed {} (older than --part-max-age)",
                p.display()
            );
        }
    }
    let json = a.json;
    let failures = std::sync::atomic::AtomicU64::new(0);
    let sessions = std::sync::Mutex::new(Vec::new());
    let summary = serve(listener, store, opts, &|r| {
        let doc = weft_xfer::report::recv_doc(&r);
        // A row per session that got past its handshake: a stranger's failed handshakes are
        // counted in the summary, not written (each row rewrites the file).
        if let Some(path) = a.csv.as_ref().filter(|_| r.mode.is_some()) {
            let mut rows = sessions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            rows.push(doc.summary.clone());
            let written = weft_report::csv::rows_to_csv(&rows, &[])
                .and_then(|b| weft_report::csv::write_csv(path, &b));
            if let Err(e) = written {
                eprintln!("weft recv: {e}");
            }
        }
        if r.error.is_some() || r.files.iter().any(|f| !f.ok) {
            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if json {
            println!("{}", serde_json::to_string(&doc).unwrap_or_default());
        }
        let peer = r.peer.map(|p| p.to_string()).unwrap_or_default();
        for f in &r.files {
            let lost: u64 = f.gaps.iter().map(|g| g.1).sum();
            let mut status = match (f.ok, f.msg.is_empty()) {
                (false, _) => format!("FAILED: {}", f.msg),
                (true, true) => "ok".to_string(),
                (true, false) => format!("ok, {}", f.msg),
            };
            if f.ok && lost > 0 {
                status += &format!(" ({lost} bytes lost in {} gaps)", f.gaps.len());
            }
            eprintln!("weft recv: {peer}: {} ({} bytes): {status}", f.name, f.size);
        }
        if let Some(e) = &r.error {
            eprintln!("weft recv: {peer}: session failed: {e}");
        }
    })
    .context("serving senders")?;
    if summary.unidentified_closed > 0 || summary.busy > 0 {
        eprintln!(
            "weft recv: {} session(s); {} refused as busy; {} connection(s) closed before \
             completing a handshake",
            summary.sessions, summary.busy, summary.unidentified_closed
        );
    }
    let n = failures.load(std::sync::atomic::Ordering::Relaxed);
    if n > 0 {
        anyhow::bail!("{n} session(s) failed or refused files");
    }
    Ok(())
}

/// Fails at start, naming the directory and the cause, when a file cannot be created in `dir`
/// (a read-only mount, another owner's directory, a virtual file system), rather than at the
/// first file's first block.
fn check_writable(dir: &std::path::Path) -> anyhow::Result<()> {
    let probe = dir.join(format!(".weft-recv-check-{}", std::process::id()));
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        // procfs and sysfs answer a new file with ENOENT though the directory exists: say so,
        // rather than print "No such file or directory" beside a directory that is there.
        let why = if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() {
            format!("its file system does not allow new files there ({e})")
        } else {
            e.to_string()
        };
        anyhow::bail!(
            "cannot write into the receiving directory {}: {why}",
            dir.display()
        );
    }
    std::fs::remove_file(&probe)
        .with_context(|| format!("removing the write check {}", probe.display()))?;
    Ok(())
}
