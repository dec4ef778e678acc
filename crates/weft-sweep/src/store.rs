//! The result store: JSON lines, one [`Record`] per finished run, appended as runs finish.
//!
//! Each record is written with one `write` of the whole line and its newline, then `fdatasync`, so
//! that a crash or a kill loses at most the runs still in flight. A kill in the middle of a write
//! leaves a torn last line: readers skip it, and the next writer cuts it off before appending. A
//! file has one writer at a time (the local sweep holding the directory's lock, or one Slurm
//! array task with a file of its own), so nothing else interleaves.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::SweepError;

/// Whether a run produced its result document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It exited 0 and printed a result document.
    Ok,
    /// It failed; `error` says how.
    Failed,
}

/// One finished run, as one line of `results.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The run's id.
    pub id: String,
    /// The run's grid point.
    pub params: Map<String, Value>,
    /// The run's seed (`null` when the plan has none).
    pub seed: Option<u64>,
    /// Ok or failed.
    pub status: Status,
    /// The run's whole result document (when ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// What went wrong (when failed): the exit status and the end of the run's stderr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the run, seconds.
    #[serde(default)]
    pub elapsed_s: f64,
}

impl Record {
    /// The record as one line of JSON, without the newline.
    pub fn line(&self) -> String {
        // A structure of strings, numbers and `Value`s always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The records read from a store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Every complete record, in file order.
    pub records: Vec<Record>,
    /// Line numbers (from 1) of complete lines that are not records.
    pub bad_lines: Vec<usize>,
    /// Byte offset where a torn last line (no newline, not a record) starts.
    pub torn_at: Option<usize>,
    /// Whether the last line is a record without its newline (written by hand or another tool).
    pub unterminated: bool,
}

/// Reads store text: complete lines that are records, the numbers of those that are not, and
/// where a torn last line starts. Never fails: any bytes give an answer.
pub fn parse(bytes: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    let mut start = 0;
    let mut number = 0;
    while start < bytes.len() {
        number += 1;
        let (line, next, terminated) = match bytes
            .get(start..)
            .and_then(|r| r.iter().position(|&b| b == b'\n'))
        {
            Some(i) => (
                bytes.get(start..start + i).unwrap_or_default(),
                start + i + 1,
                true,
            ),
            None => (bytes.get(start..).unwrap_or_default(), bytes.len(), false),
        };
        let blank = line.iter().all(u8::is_ascii_whitespace);
        if !blank {
            match serde_json::from_slice::<Record>(line) {
                Ok(r) => {
                    out.records.push(r);
                    out.unterminated = !terminated;
                }
                Err(_) if !terminated => out.torn_at = Some(start),
                Err(_) => out.bad_lines.push(number),
            }
        }
        start = next;
    }
    out
}

/// Reads the store at `path`; a missing file is an empty store.
pub fn read(path: &Path) -> Result<Parsed, SweepError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(parse(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Parsed::default()),
        Err(e) => Err(SweepError::io(path, e)),
    }
}

/// The record that stands for each id: an ok one over a failed one, and among equals the last.
pub fn by_id(records: &[Record]) -> HashMap<&str, &Record> {
    let mut map: HashMap<&str, &Record> = HashMap::new();
    for r in records {
        let keep_old = map
            .get(r.id.as_str())
            .is_some_and(|old| old.status == Status::Ok && r.status != Status::Ok);
        if !keep_old {
            map.insert(&r.id, r);
        }
    }
    map
}

/// The one writer of a store file.
#[derive(Debug)]
pub struct Appender {
    file: File,
    path: PathBuf,
}

impl Appender {
    /// Opens `path` for appending (creating it), cuts off a torn last line, and returns what the
    /// file holds. The caller must be the file's only writer.
    pub fn open(path: &Path) -> Result<(Appender, Parsed), SweepError> {
        let io = |e| SweepError::io(path, e);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let parsed = parse(&bytes);
        if let Some(at) = parsed.torn_at {
            file.set_len(at as u64).map_err(io)?;
        }
        file.seek(SeekFrom::End(0)).map_err(io)?;
        if parsed.torn_at.is_none() && parsed.unterminated {
            file.write_all(b"\n").map_err(io)?;
        }
        Ok((
            Appender {
                file,
                path: path.to_path_buf(),
            },
            parsed,
        ))
    }

    /// Appends `record` as one line and waits until it is on disk.
    pub fn append(&mut self, record: &Record) -> Result<(), SweepError> {
        let mut line = record.line();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| SweepError::io(&self.path, e))
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(id: &str, status: Status) -> Record {
        Record {
            id: id.into(),
            params: Map::new(),
            seed: Some(1),
            status,
            result: (status == Status::Ok).then(|| json!({ "kind": "x" })),
            error: (status == Status::Failed).then(|| "boom".into()),
            elapsed_s: 0.5,
        }
    }

    #[test]
    fn torn_last_line_is_skipped_then_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (mut a, parsed) = Appender::open(&path).unwrap();
        assert!(parsed.records.is_empty());
        a.append(&rec("a", Status::Ok)).unwrap();
        a.append(&rec("b", Status::Failed)).unwrap();
        drop(a);
        // A kill in the middle of the third line.
        let third = rec("c", Status::Ok).line();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&third.as_bytes()[..third.len() / 2]).unwrap();
        drop(f);
        let parsed = read(&path).unwrap();
        assert_eq!(parsed.records.len(), 2);
        assert!(parsed.torn_at.is_some());
        let (mut a, _) = Appender::open(&path).unwrap();
        a.append(&rec("c", Status::Ok)).unwrap();
        let parsed = read(&path).unwrap();
        let ids: Vec<&str> = parsed.records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(parsed.torn_at, None);
        assert!(parsed.bad_lines.is_empty());
    }

    #[test]
    fn unterminated_record_gets_its_newline_and_bad_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let text = format!(
            "{}\nnot json\n\n{}",
            rec("a", Status::Ok).line(),
            rec("b", Status::Ok).line()
        );
        std::fs::write(&path, text).unwrap();
        let (mut a, parsed) = Appender::open(&path).unwrap();
        assert_eq!(parsed.records.len(), 2);
        assert_eq!(parsed.bad_lines, vec![2]);
        assert!(parsed.unterminated);
        a.append(&rec("c", Status::Ok)).unwrap();
        assert_eq!(read(&path).unwrap().records.len(), 3);
    }

    #[test]
    fn ok_records_stand_for_their_id() {
        let rs = vec![
            rec("a", Status::Failed),
            rec("a", Status::Ok),
            rec("a", Status::Failed),
            rec("b", Status::Failed),
        ];
        let m = by_id(&rs);
        assert_eq!(m["a"].status, Status::Ok);
        assert_eq!(m["b"].status, Status::Failed);
    }

    #[test]
    fn a_file_cut_anywhere_keeps_its_complete_lines() {
        let text: String = ["a", "b", "c"]
            .iter()
            .map(|id| rec(id, Status::Ok).line() + "\n")
            .collect();
        let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
        for cut in 0..=text.len() {
            let p = parse(&text.as_bytes()[..cut]);
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            // A cut just before a newline leaves a whole record without it.
            let whole_unterminated = ends.contains(&(cut + 1));
            assert_eq!(
                p.records.len(),
                complete + usize::from(whole_unterminated),
                "cut at {cut}"
            );
            assert!(p.bad_lines.is_empty());
            assert_eq!(
                p.torn_at.is_some(),
                !ends.contains(&cut) && cut > 0 && !whole_unterminated
            );
        }
    }

    #[test]
    fn any_bytes_parse() {
        for bytes in [&b""[..], b"\n\n", b"{", b"\xff\xfe\n{}", b"{\"id\":1}\n"] {
            let p = parse(bytes);
            assert!(p.records.is_empty());
        }
    }
}
