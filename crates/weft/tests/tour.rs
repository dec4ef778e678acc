//! The README's tour runs as written (issue 31): every command of its "A tour" section not marked
//! `[root]` or `[hosts]` runs, in order, in one shell, from a scratch directory that holds what
//! the repository's root gives the tour (`scenarios/`, `plans/`), with the built `weft` first
//! on the PATH. The test fails on a command's error exit, on a process the tour left running,
//! on a file it left in `/tmp`, and on any change to the repository's files.
//!
//! The tour runs in namespaces of its own (root): a network namespace (its agents' ports are its
//! own), a PID namespace (what is left running is listed, then killed with it) and a mount
//! namespace with an empty tmpfs on `/tmp` (what is left there is listed).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// A tour line: the command and whether it runs here.
#[derive(Debug, PartialEq)]
struct Line {
    command: String,
    /// `[root]` or `[hosts]` when the line's comment starts with one.
    needs: Option<String>,
}

/// The command lines of the `sh` blocks of `text`'s section `## A tour` (up to the next `## `).
fn tour_lines(text: &str) -> Vec<Line> {
    let start = text
        .find("\n## A tour")
        .expect("the README has no '## A tour' section");
    let rest = &text[start + 1..];
    let section = match rest[3..].find("\n## ") {
        Some(end) => &rest[..end + 3],
        None => rest,
    };
    let mut lines = Vec::new();
    let mut in_block = false;
    for l in section.lines() {
        if l.starts_with("```") {
            in_block = !in_block && l.trim() == "```sh";
            continue;
        }
        if !in_block || l.trim().is_empty() {
            continue;
        }
        let comment = comment_of(l);
        let needs = comment
            .and_then(|c| ["[root]", "[hosts]"].into_iter().find(|m| c.starts_with(m)))
            .map(str::to_string);
        lines.push(Line {
            command: l.to_string(),
            needs,
        });
    }
    lines
}

/// The text of a line's trailing comment: after the first `#` that follows white space and is
/// outside quotes.
fn comment_of(line: &str) -> Option<&str> {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return Some(line[i + 1..].trim());
            }
            _ => {}
        }
        prev = c;
    }
    None
}

#[test]
fn tour_lines_and_their_marks_are_read() {
    let text = "# x\n\n## A tour\n\ntext\n\n```sh\nweft a   # [root] needs it\n\
                weft b '#' c   # [hosts] two\nweft c   # plain\n```\n\n```toml\nx = 1\n```\n\n\
                ## Next\n\n```sh\nweft d\n```\n";
    let l = tour_lines(text);
    let got: Vec<(&str, Option<&str>)> = l
        .iter()
        .map(|l| (l.command.as_str(), l.needs.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("weft a   # [root] needs it", Some("[root]")),
            ("weft b '#' c   # [hosts] two", Some("[hosts]")),
            ("weft c   # plain", None),
        ]
    );
}

#[test]
fn the_readme_set_up_commands_are_what_ci_runs() {
    let text = readme();
    let first = text
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let cmds: Vec<&str> = first
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim())
        .collect();
    assert_eq!(
        cmds,
        ["cargo run --release -- demo", "cargo test --workspace"],
        "the README's first block"
    );
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.starts_with(cmds[1])),
        ".ci/run does not run the README's test command {:?}",
        cmds[1]
    );
}

#[test]
fn the_readme_stays_under_200_lines() {
    let n = readme().lines().count();
    assert!(n < 200, "README.md has {n} lines");
}

/// `git status` of the repository, ignored files included, `target/` left out (None where it is
/// not a git tree).
fn repo_status() -> Option<String> {
    let o = Command::new("git")
        .args([
            "status",
            "--porcelain",
            "--ignored",
            "--untracked-files=all",
        ])
        .current_dir(repo())
        .output()
        .ok()?;
    // target/ holds the build and this test's scratch directory.
    o.status.success().then(|| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l[3..].starts_with("target/"))
            .map(|l| format!("{l}\n"))
            .collect()
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// The tour as one bash script: each command echoed before it runs, the first failure fatal.
fn script(lines: &[&Line]) -> String {
    let mut s = String::from(
        "set -eE -o pipefail\ntrap 'echo \"tour: FAILED ($?): $BASH_COMMAND\" >&2' ERR\n",
    );
    for l in lines {
        s.push_str(&format!(
            "printf '%s\\n' {} >&2\n{}\n",
            shell_quote(&format!("+ {}", l.command)),
            l.command
        ));
    }
    s
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs inside the namespaces: loopback up, an empty /tmp, the tour; then lists what is left
/// (bash builtins only, so that the listing starts no process of its own).
const WRAPPER: &str = r#"
cd "$1" || exit 92
ip link set lo up || exit 90
mount -t tmpfs -o size=512m weft-tour-tmp /tmp || exit 91
bash ./tour.sh
rc=$?
sleep 0.5
echo "--- left running"
for p in /proc/[0-9]*; do
  n=${p#/proc/}
  [ "$n" = "$$" ] && continue
  c=; read -r c < "$p/cmdline" 2>/dev/null || true
  echo "$n ${c//$'\0'/ }"
done
echo "--- left in /tmp"
shopt -s nullglob dotglob
for f in /tmp/*; do echo "$f"; done
echo "--- end"
exit $rc
"#;

#[test]
fn the_tour_runs_as_written_and_leaves_nothing_behind() {
    weft_testutil::skip_if!(weft_testutil::missing_root(
        "the tour in namespaces of its own"
    ));
    weft_testutil::skip_if!(weft_testutil::missing_tool("tshark"));
    weft_testutil::skip_if!(weft_testutil::missing_tool("unshare"));
    let text = readme();
    let all = tour_lines(&text);
    let run: Vec<&Line> = all.iter().filter(|l| l.needs.is_none()).collect();
    let skipped: Vec<&Line> = all.iter().filter(|l| l.needs.is_some()).collect();
    assert!(
        run.len() >= 15 && !skipped.is_empty(),
        "{} lines to run, {} marked",
        run.len(),
        skipped.len()
    );
    for l in &skipped {
        println!(
            "not run here, {}: {}",
            l.needs.as_deref().unwrap(),
            l.command
        );
    }
    // Not under /tmp, which the tour sees as an empty tmpfs.
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = scratch.path();
    copy_dir(&repo().join("scenarios"), &dir.join("scenarios"));
    copy_dir(&repo().join("plans"), &dir.join("plans"));
    std::fs::write(dir.join("tour.sh"), script(&run)).unwrap();
    let before = repo_status();
    let bin = Path::new(env!("CARGO_BIN_EXE_weft")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("unshare")
        .args([
            "--net",
            "--mount",
            "--propagation",
            "private",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "bash",
            "-c",
            WRAPPER,
            "tour-wrapper",
        ])
        .arg(dir)
        .env("PATH", path)
        .env_remove("TMPDIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let deadline = Instant::now() + Duration::from_secs(900);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the tour ran past 15 minutes:\n{}", err.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let report = format!("--- stdout\n{out}\n--- stderr\n{err}");
    assert!(status.success(), "the tour failed ({status}):\n{report}");
    let section = |name: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| *l != format!("--- {name}"))
            .skip(1)
            .take_while(|l| !l.starts_with("--- "))
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    };
    assert!(
        out.contains("--- end"),
        "the listing did not run:\n{report}"
    );
    let procs = section("left running");
    assert!(procs.is_empty(), "left running: {procs:?}\n{report}");
    let tmp = section("left in /tmp");
    assert!(tmp.is_empty(), "left in /tmp: {tmp:?}\n{report}");
    assert_eq!(
        repo_status(),
        before,
        "the tour changed the repository's files"
    );
    // What the tour's comments promise a command prints: the capture's protocol stack.
    let readme = readme();
    let stack = "atm:llc:ip:udp:data";
    assert!(
        readme.contains(&format!("# SunATM: {stack}")),
        "the README's tshark line no longer promises {stack}: update this test"
    );
    assert!(
        out.lines().any(|l| l.trim() == stack),
        "tshark did not print the stack {stack} the README promises\n{report}"
    );
    // The tour's outputs are where it says: under weft-out/ of the directory it ran from.
    for f in [
        "weft-out/rr.json",
        "weft-out/repro/report.html",
        "weft-out/in/big.img",
    ] {
        assert!(dir.join(f).is_file(), "{f} is missing\n{report}");
    }
}
