//! The HTML report in a real browser: `weft repro --engine model -o DIR` writes report.html,
//! headless Chromium loads it, and the test fails on any console message (the page has no
//! scripts, so every one is an error), on any request the page makes beyond itself, or when no
//! screenshot comes out. The screenshot is kept at `$CARGO_TARGET_TMPDIR/report-chromium.png`.
//!
//! How requests are seen: the page is served over HTTP by a server in this test that records
//! every request it receives (a relative reference, a favicon), and Chromium writes its NetLog
//! (`--log-net-log`), in which every URL request carries the origin that initiated it. The
//! NetLog is what sees a request to another host; the initiator is what tells the page's
//! requests from the browser's own (update checks, time, accounts), which Chromium makes even
//! with background networking off and which a recording proxy would have mixed in. Every host
//! but 127.0.0.1 fails to resolve, so nothing leaves the machine whatever the page asks.
//! A second page that does ask for things (a console error, a relative image, an image on
//! another host) checks that the test sees each.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

const CHROMIUM: &str = "/usr/bin/chromium";

/// A server of one page at `/report.html` that records the request line of every request.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    fn start(page: Vec<u8>) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => serve(conn, &page, &s),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Recorder {
            port,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/report.html", self.port)
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers the requests of one connection: the page at `/report.html`, 404 for anything else.
fn serve(conn: TcpStream, page: &[u8], seen: &Mutex<Vec<String>>) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        // The rest of the head.
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" || h == "\n" {
                break;
            }
        }
        let line = line.trim().to_string();
        seen.lock().unwrap().push(line.clone());
        let ok = line.starts_with("GET /report.html ");
        let (status, body): (&str, &[u8]) = if ok {
            ("200 OK", page)
        } else {
            ("404 Not Found", b"not here")
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(body).is_err() {
            return;
        }
    }
}

/// What Chromium did with a page.
struct Visit {
    /// The request lines the page's server received.
    served: Vec<String>,
    /// Console messages (Chromium's log lines tagged CONSOLE).
    console: Vec<String>,
    /// URLs the page (not the browser) asked for, from the NetLog, the page itself left out.
    asked: Vec<String>,
    /// Whether the screenshot was written.
    screenshot: bool,
}

fn visit(page: Vec<u8>, dir: &Path, shot: &Path) -> Visit {
    let server = Recorder::start(page);
    let net_log = dir.join("netlog.json");
    let profile = tempfile::tempdir().unwrap();
    let _ = std::fs::remove_file(shot);
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=1",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--window-size=1280,2600",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--log-net-log={}", net_log.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(server.url())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr while it runs (it is verbose), and give up after two minutes.
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .filter(|l| l.contains(":CONSOLE"))
            .collect::<Vec<String>>()
    });
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let console = reader.join().unwrap();
    let origin = format!("http://127.0.0.1:{}", server.port);
    let asked = page_requests(&net_log, &origin, &server.url());
    Visit {
        served: server.seen(),
        console,
        asked,
        screenshot: shot.is_file(),
    }
}

/// The URLs of the NetLog's requests that a document of `origin` initiated, `page` left out.
fn page_requests(net_log: &Path, origin: &str, page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).unwrap_or_default();
    // Chromium may stop before closing the JSON; close it as its docs suggest.
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .unwrap_or_else(|e| panic!("the NetLog does not parse: {e}"));
    let types = &log["constants"]["logEventTypes"];
    let start_job = types["URL_REQUEST_START_JOB"].as_u64().unwrap();
    log["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter(|e| {
            e["params"]["initiator"]
                .as_str()
                .is_some_and(|i| i == origin)
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_string))
        .filter(|u| u != page)
        .collect()
}

#[test]
fn the_report_loads_in_chromium_without_errors_and_asks_for_nothing() {
    if !Path::new(CHROMIUM).exists() {
        weft_testutil::skip(&format!(
            "{CHROMIUM} is not installed (apt-get install chromium; .ci/apt-packages lists it)"
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["repro", "--engine", "model", "-q", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "weft repro failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read(dir.path().join("report.html")).unwrap();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-chromium.png");
    let v = visit(page, dir.path(), &shot);
    assert_eq!(
        v.served,
        ["GET /report.html HTTP/1.1"],
        "the page asked its server for more"
    );
    assert!(v.console.is_empty(), "console messages: {:#?}", v.console);
    assert!(v.asked.is_empty(), "the page asked for: {:#?}", v.asked);
    assert!(v.screenshot, "no screenshot at {}", shot.display());
    println!("screenshot: {}", shot.display());

    // A page that asks for things: each is seen.
    let bad = b"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>t</title></head><body>\
                <img src=\"here.png\"><img src=\"http://cdn.example/x.png\">\
                <script>console.error('boom')</script></body></html>"
        .to_vec();
    let bad_shot = dir.path().join("bad.png");
    let v = visit(bad, dir.path(), &bad_shot);
    assert!(
        v.served.iter().any(|l| l.contains("/here.png")),
        "{:?}",
        v.served
    );
    assert!(
        v.console.iter().any(|l| l.contains("boom")),
        "{:?}",
        v.console
    );
    assert!(
        v.asked.iter().any(|u| u.contains("cdn.example")),
        "{:?}",
        v.asked
    );
}
