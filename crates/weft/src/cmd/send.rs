//! `weft send`: send files and directories over UDP to a `weft recv` (SBTP, MBTP or the reliable
//! mode), with a progress bar and a JSON summary.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context;
use weft_model::{Duration, Rate, Size};
use weft_xfer::auth::Key;
use weft_xfer::net::send::{
    Progress, SendItem, SendOptions, SendReport, collect_files, memory_item, send, send_striped,
};
use weft_xfer::proto::{Checksum, RateMode};
use weft_xfer::wire::Mode;

/// Arguments of `weft send`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories to send, then the receiver as HOST[:DIR] (DIR is relative to the
    /// receiver's --dir, and `HOST:.` is --dir itself, as with scp; IPv6 hosts in brackets:
    /// [::1]:DIR). With --mem, only HOST[:DIR]. With --receiver, no HOST: FILE... [:DIR].
    #[arg(required_unless_present = "receiver", num_args = 1.., value_name = "FILE... HOST[:DIR]")]
    args: Vec<String>,
    /// Send this many bytes generated in memory instead of files (the ttcp -s source, iperf3's
    /// default): measures the network and the protocol without the file system. The receiver
    /// names it weft-memory (or drops it with `weft recv --discard`).
    #[arg(long, conflicts_with = "resume", value_parser = crate::cmd::bounds::size("1", "1024TiB"))]
    mem: Option<Size>,
    /// The receiver's control (TCP) port.
    #[arg(short, long, default_value_t = 7140)]
    port: u16,
    /// reliable (rate-controlled, retransmits, BLAKE3-verified), sbtp (one buffer at a time,
    /// unreliable, as published) or mbtp (one sender, --receivers sessions, unreliable).
    #[arg(long, default_value = "reliable", value_parser = parse_mode)]
    mode: Mode,
    /// Fixed sending rate (e.g. 500Mbps). Default: adaptive in reliable mode, unlimited in
    /// sbtp/mbtp as published.
    #[arg(long, value_parser = crate::cmd::bounds::rate("1kbps", "10Tbps"))]
    rate: Option<Rate>,
    /// Adaptive mode: starting rate.
    #[arg(long, default_value = "1Gbps", value_parser = crate::cmd::bounds::rate("1kbps", "10Tbps"))]
    initial_rate: Rate,
    /// Adaptive mode: highest rate.
    #[arg(long, default_value = "40Gbps", value_parser = crate::cmd::bounds::rate("1kbps", "10Tbps"))]
    max_rate: Rate,
    /// Adaptive mode: loss fraction of a round that counts as congestion.
    #[arg(long, default_value_t = 0.02)]
    loss_threshold: f64,
    /// Payload bytes per datagram. Default: fit the path MTU (about 64 KiB on loopback, 8952
    /// on a 9000-byte jumbo path, 1452 on Ethernet).
    #[arg(long, value_parser = crate::cmd::bounds::size("1", "64KiB"))]
    packet_size: Option<Size>,
    /// Buffer size. Default: 8MiB in reliable mode, 1MiB in sbtp/mbtp (the study's MBTP).
    #[arg(long, value_parser = crate::cmd::bounds::size("1", "2GiB"))]
    buffer_size: Option<Size>,
    /// Buffers in flight in reliable mode (the receiver may grant fewer). Default: 8 when the
    /// round trip to the receiver is 10 ms or more (eight of 8 MiB keep an OC-3c path of 300 ms
    /// busy while buffers at 5% loss wait out their recovery rounds), else 4.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    window: Option<u16>,
    /// MBTP: number of receiver sessions the sender serves in turn, all to HOST (one `weft
    /// recv`, which writes each file whole).
    #[arg(long, default_value_t = 5)]
    receivers: u16,
    /// MBTP over separate receivers: one session to each `weft recv` named (HOST or HOST:PORT,
    /// repeated or comma-separated; IPv6 in brackets). Receiver K of R keeps its share of each
    /// file as NAME.mbtp-K-of-R with a manifest; `weft join` puts the R stripes together.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "HOST[:PORT]",
        conflicts_with = "receivers"
    )]
    receiver: Vec<String>,
    /// Pre-shared key (visible in the process list: prefer --key-file).
    #[arg(long, conflicts_with = "key_file")]
    key: Option<String>,
    /// File holding the pre-shared key.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// Continue an interrupted transfer from the receiver's journal (reliable mode).
    #[arg(long)]
    resume: bool,
    /// Checksum of each buffer in reliable mode, verified by the receiver before the file is
    /// renamed into place: blake3 (keyed with the session key when --key is set, so a tampered
    /// datagram is detected) or xxh3 (XXH3-128: faster, against corruption only).
    #[arg(long, default_value = "blake3", value_parser = Checksum::parse)]
    checksum: Checksum,
    /// Give up after this long without hearing from the receiver.
    #[arg(long, default_value = "30s", value_parser = crate::cmd::bounds::duration("10ms", "1d"))]
    timeout: Duration,
    /// Give up on a receiver that stays connected but makes no progress for this long while
    /// the sender waits on it (for its answer to an offer, a buffer slot, a report on a buffer sent): a stopped process, a frozen VM. Default: max(10 round trips, 5 s); 0 never.
    #[arg(long, value_parser = crate::cmd::bounds::duration("0", "1d"))]
    stall_timeout: Option<Duration>,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Print the JSON summary on stdout (nothing else).
    #[arg(long)]
    json: bool,
    /// Write the JSON summary to this file.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// CSV export of the files sent.
    #[command(flatten)]
    csv: crate::output::CsvArg,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "reliable" => Ok(Mode::Reliable),
        "sbtp" => Ok(Mode::Sbtp),
        "mbtp" => Ok(Mode::Mbtp),
        _ => Err(format!(
            "unknown mode {s:?}: expected reliable, sbtp or mbtp"
        )),
    }
}

/// Splits `HOST[:DIR]` (or `[V6]:DIR`).
fn split_target(t: &str) -> (String, String) {
    if let Some(rest) = t.strip_prefix('[')
        && let Some((h, after)) = rest.split_once(']')
    {
        return (
            h.to_string(),
            after.strip_prefix(':').unwrap_or("").to_string(),
        );
    }
    match t.split_once(':') {
        Some((h, d)) => (h.to_string(), d.to_string()),
        None => (t.to_string(), String::new()),
    }
}

/// The address of a `--receiver`: HOST, HOST:PORT, [V6] or [V6]:PORT (a bare IPv6 address
/// takes `port`).
fn receiver_addr(r: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let (host, p) = match r.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        Some((h, after)) => (h, after.strip_prefix(':')),
        None => match r.split_once(':') {
            Some((h, p)) if !p.contains(':') => (h, Some(p)),
            _ => (r, None),
        },
    };
    let port = match p {
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| crate::cli::usage(format!("--receiver {r:?}: {p:?} is not a port")))?,
        None => port,
    };
    if host.is_empty() {
        return Err(crate::cli::usage(format!("--receiver {r:?} names no host")));
    }
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {host}"))?
        .next()
        .with_context(|| format!("{host} has no address"))
}

/// The receive directory itself for `.` and `./` (scp's `HOST:.`), else `dir` unchanged.
fn remote_dir(dir: String) -> String {
    if dir.trim_end_matches('/') == "." || dir == "./" {
        String::new()
    } else {
        dir
    }
}

pub(crate) fn load_key(
    key: &Option<String>,
    file: &Option<PathBuf>,
) -> anyhow::Result<Option<Key>> {
    let bad = |e: weft_gate::KeyError, from: &str| crate::cli::usage(format!("{from}: {e}"));
    if let Some(k) = key {
        return Ok(Some(
            Key::from_secret(k.as_bytes()).map_err(|e| bad(e, "--key"))?,
        ));
    }
    if let Some(p) = file {
        let b =
            std::fs::read(p).with_context(|| format!("reading the key file {}", p.display()))?;
        if let Some(w) = key_file_exposed(p) {
            eprintln!("weft: warning: {w}");
        }
        let trimmed = b.strip_suffix(b"\n").unwrap_or(&b);
        let from = format!("key file {}", p.display());
        return Ok(Some(Key::from_secret(trimmed).map_err(|e| bad(e, &from))?));
    }
    Ok(None)
}

/// What is wrong with a key file that users other than its owner may read or change (as ssh
/// says of a private key), or `None`.
pub(crate) fn key_file_exposed(p: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(p).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "key file {} is open to users other than its owner (mode {mode:03o}): anyone who \
             reads it holds the key; `chmod 600 {}`",
            p.display(),
            p.display()
        )
    })
}

/// Runs `weft send`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let (host, dir, paths) = target(&a)?;
    check_flags(&a, &dir)?;
    let items = items(&a, paths, &dir)?;
    let addrs = addresses(&a, &host)?;
    let (opts, buffer_size) = options(&a)?;
    let report = transfer(&a, &addrs, &items, &opts)?;
    let doc = weft_xfer::report::send_doc(&report, params(&a, &addrs, &opts, buffer_size, &report));
    a.csv.write(&doc)?;
    if let Some(o) = &a.output {
        weft_report::write_atomic(o, doc.to_json_pretty().as_bytes())
            .with_context(|| format!("writing {}", o.display()))?;
    }
    if a.json {
        println!("{}", doc.to_json_pretty());
    } else {
        print_report(&doc, &report);
    }
    all_delivered(&report)
}

/// The host, the remote directory and the files of the command line (with --receiver there is
/// no HOST: the files, and maybe `:DIR`).
fn target(a: &Args) -> anyhow::Result<(String, String, &[String])> {
    let (target, paths) = match a.args.split_last() {
        Some((last, rest)) if !a.receiver.is_empty() && last.starts_with(':') => {
            (last.as_str(), rest)
        }
        _ if !a.receiver.is_empty() => (":", &a.args[..]),
        Some((last, rest)) => (last.as_str(), rest),
        None => return Err(crate::cli::usage("give FILE... HOST[:DIR]")),
    };
    let (host, dir) = split_target(target);
    let dir = remote_dir(dir);
    if host.is_empty() && a.receiver.is_empty() {
        return Err(crate::cli::usage(format!(
            "no host in {target:?}: expected HOST[:DIR]"
        )));
    }
    Ok((host, dir, paths))
}

/// Refuses flags that do not go together, or a remote directory that is not a plain name.
fn check_flags(a: &Args, dir: &str) -> anyhow::Result<()> {
    if !a.receiver.is_empty() && a.mode != Mode::Mbtp {
        return Err(crate::cli::usage(
            "--receiver (separate receivers) is MBTP's: add --mode mbtp",
        ));
    }
    if !dir.is_empty() {
        weft_xfer::net::store::validate_name(dir)
            .map_err(|e| crate::cli::usage(format!("remote directory: {e}")))?;
    }
    if a.resume && a.mode != Mode::Reliable {
        return Err(crate::cli::usage(
            "--resume needs --mode reliable (sbtp and mbtp keep no journal)",
        ));
    }
    if (a.key.is_some() || a.key_file.is_some())
        && let Some(why) = weft_xfer::net::keyed_refusal(a.mode, a.checksum)
    {
        return Err(crate::cli::usage(why));
    }
    if !(0.0..=1.0).contains(&a.loss_threshold) {
        return Err(crate::cli::usage(
            "--loss-threshold is a fraction between 0 and 1",
        ));
    }
    Ok(())
}

/// What to send: the files under `paths`, or `--mem`'s bytes, into `dir`.
fn items(a: &Args, paths: &[String], dir: &str) -> anyhow::Result<Vec<SendItem>> {
    Ok(match a.mem {
        Some(_) if !paths.is_empty() => {
            return Err(crate::cli::usage(
                "--mem sends memory, not files: give only HOST[:DIR]",
            ));
        }
        Some(size) => vec![memory_item(size.as_bytes(), dir)?],
        None if paths.is_empty() => {
            return Err(crate::cli::usage(
                "give FILE... HOST[:DIR] (or --mem SIZE HOST[:DIR])",
            ));
        }
        None => {
            let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
            collect_files(&paths, dir).map_err(|e| crate::cli::usage(e.to_string()))?
        }
    })
}

/// The receivers' addresses: HOST's, or each --receiver's.
fn addresses(a: &Args, host: &str) -> anyhow::Result<Vec<SocketAddr>> {
    if a.receiver.is_empty() {
        Ok(vec![
            (host, a.port)
                .to_socket_addrs()
                .with_context(|| format!("resolving {host}"))?
                .next()
                .with_context(|| format!("{host} has no address"))?,
        ])
    } else {
        a.receiver
            .iter()
            .map(|r| receiver_addr(r, a.port))
            .collect()
    }
}

/// The sender's options from the flags, and the buffer size they give.
fn options(a: &Args) -> anyhow::Result<(SendOptions, u64)> {
    let buffer_size = a
        .buffer_size
        .map(|s| s.as_bytes())
        .unwrap_or(if a.mode == Mode::Reliable {
            8 << 20
        } else {
            1 << 20
        });
    if buffer_size == 0 || buffer_size > 1 << 30 {
        return Err(crate::cli::usage(
            "--buffer-size must be between 1 byte and 1GiB",
        ));
    }
    let packet_size = match a.packet_size {
        Some(p)
            if p.as_bytes() == 0 || p.as_bytes() > weft_xfer::wire::data::MAX_PAYLOAD as u64 =>
        {
            return Err(crate::cli::usage(format!(
                "--packet-size must be between 1 and {} bytes",
                weft_xfer::wire::data::MAX_PAYLOAD
            )));
        }
        Some(p) => Some(p.as_bytes() as u32),
        None => None,
    };
    let rate = match (a.rate, a.mode) {
        (Some(r), _) if r.as_bps() == 0 => {
            return Err(crate::cli::usage("--rate must be above zero"));
        }
        (Some(r), _) => RateMode::Fixed(r),
        (None, Mode::Reliable) => RateMode::Adaptive {
            initial: a.initial_rate,
            min: Rate::mbps(1),
            max: a.max_rate,
            loss_threshold_ppm: (a.loss_threshold * 1e6) as u32,
        },
        (None, _) => RateMode::Unlimited,
    };
    let opts = SendOptions {
        mode: a.mode,
        packet_size,
        buffer_size: buffer_size as u32,
        window: a.window.unwrap_or(0),
        rate,
        key: load_key(&a.key, &a.key_file)?,
        resume: a.resume,
        receivers: a.receivers.max(1),
        timeout: a.timeout,
        stall: a.stall_timeout,
        checksum: a.checksum,
    };
    Ok((opts, buffer_size))
}

/// Sends `items` to `addrs` (one receiver, or striped over several), with a progress bar
/// unless --no-progress or --json.
fn transfer(
    a: &Args,
    addrs: &[SocketAddr],
    items: &[SendItem],
    opts: &SendOptions,
) -> anyhow::Result<SendReport> {
    let progress = Arc::new(Progress::default());
    let bar = if a.no_progress || a.json {
        None
    } else {
        Some(crate::progress::Progress::bytes("send", 0))
    };
    let result = std::thread::scope(|scope| {
        if let Some(bar) = &bar {
            let p = &*progress;
            scope.spawn(move || follow(p, bar));
        }
        let r = if a.receiver.is_empty() {
            send(addrs[0], items, opts, progress.clone())
        } else {
            send_striped(addrs, items, opts, progress.clone())
        };
        progress.done.store(true, Ordering::Relaxed);
        r
    });
    drop(bar);
    let to: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    result.with_context(|| format!("sending to {}", to.join(", ")))
}

/// The result document's parameters.
fn params(
    a: &Args,
    addrs: &[SocketAddr],
    opts: &SendOptions,
    buffer_size: u64,
    report: &SendReport,
) -> serde_json::Value {
    let to: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    serde_json::json!({
        "mode": format!("{:?}", a.mode).to_lowercase(),
        "to": if a.receiver.is_empty() { serde_json::json!(addrs[0].to_string()) } else { serde_json::json!(to) },
        "buffer_size": buffer_size,
        "packet_size": report.packet_size,
        "window_requested": a.window,
        "rate": match opts.rate { RateMode::Fixed(r) => serde_json::json!(r.as_bps()), RateMode::Unlimited => serde_json::json!("unlimited"), RateMode::Adaptive { .. } => serde_json::json!("adaptive") },
        "receivers": match a.mode {
            Mode::Mbtp if !a.receiver.is_empty() => addrs.len() as u16,
            Mode::Mbtp => a.receivers,
            _ => 1,
        },
        "resume": a.resume,
        "authenticated": opts.key.is_some(),
        "checksum": a.checksum.name(),
    })
}

/// The summary line, a line per file and one per striped receiver.
fn print_report(doc: &weft_report::ResultDoc, report: &SendReport) {
    let s = &doc.summary;
    println!(
        "sent {} of {} files, {} bytes in {:.3} s: {:.1} Mbit/s; sync {}% disk {}% transfer {}%; {} datagrams, {} retransmitted, {} lost",
        s["files_ok"],
        s["files"],
        s["bytes"],
        report.elapsed.as_secs_f64(),
        s["goodput_mbps"].as_f64().unwrap_or(0.0),
        s["sync_pct"],
        s["disk_pct"],
        s["transfer_pct"],
        s["packets_sent"],
        s["packets_retransmitted"],
        s["packets_lost"]
    );
    for f in &report.files {
        println!(
            "  {:<40} {:>14} {} {}",
            f.name,
            f.size,
            if f.ok { "ok" } else { "FAILED" },
            f.msg
        );
    }
    for p in report.receivers.iter().filter(|p| p.stripe.is_some()) {
        println!(
            "  receiver {:<22} {:>4} buffers {:>14} bytes  {}",
            p.addr, p.buffers, p.bytes, p.msg
        );
    }
}

/// An error naming the files not delivered, if any.
fn all_delivered(report: &SendReport) -> anyhow::Result<()> {
    let failed: Vec<&str> = report
        .files
        .iter()
        .filter(|f| !f.ok)
        .map(|f| f.name.as_str())
        .collect();
    if !failed.is_empty() {
        let first = report
            .files
            .iter()
            .find(|f| !f.ok)
            .map(|f| f.msg.clone())
            .unwrap_or_default();
        anyhow::bail!(
            "{} file(s) not delivered ({}): {first}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// Moves `bar` with the sender's counters until the transfer is done.
fn follow(p: &Progress, bar: &crate::progress::Progress) {
    while !p.done.load(Ordering::Relaxed) {
        let sent = p.packets_sent.load(Ordering::Relaxed).max(1);
        let miss = p.packets_missing.load(Ordering::Relaxed);
        bar.set_total(p.bytes_total.load(Ordering::Relaxed));
        bar.set(p.bytes_done.load(Ordering::Relaxed));
        bar.message(format!("loss {:.2}%", miss as f64 * 100.0 / sent as f64));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
