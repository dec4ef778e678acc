//! The keys of a workload of kind `nfs` (NFS over UDP RPC, [`crate::app::nfs`]):
//!
//! ```toml
//! [[workload]]
//! kind = "nfs"
//! from = "ss20"            # the client
//! to = "fs"                # the server (its `disk`, if it has one, holds the file)
//! op = "write"             # write (the default) | read
//! size = 8192              # bytes of each READ or WRITE (NFS version 2's 8 KB, the default)
//! biods = 4                # requests outstanding at most (default 1: one at a time)
//! count = 256              # requests (default 256)
//! timeout = "1100ms"       # before a request is sent again (default 1.1 s, Sun's timeo=11)
//! ```

use super::reader::{Result, Tbl};
use super::{NfsWorkload, WorkloadKind};
use crate::app::nfs::NfsOp;

/// The keys only a workload of kind `nfs` takes.
pub(super) const NFS_KEYS: &[&str] = &["op", "biods"];

/// The `nfs` keys of a workload; refused on other kinds.
pub(super) fn workload(w: &Tbl<'_, '_>, kind: WorkloadKind) -> Result<Option<NfsWorkload>> {
    if kind != WorkloadKind::Nfs {
        w.refuse_keys(NFS_KEYS.iter().copied(), "nfs")?;
        return Ok(None);
    }
    let op = match w.string("op")?.as_deref() {
        None | Some("write") => NfsOp::Write,
        Some("read") => NfsOp::Read,
        Some(_) => return Err(w.err("op", "expected read or write")),
    };
    let biods = w.count32("biods", 1, 64)?.unwrap_or(1);
    Ok(Some(NfsWorkload { op, biods }))
}
