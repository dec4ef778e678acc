//! The studies' disks as [`DiskSpec`]s, each parameter with its source: a figure of the studies
//! (its key in `data/figures.toml`), a datasheet, or a figure it was fitted to (then said so,
//! and that figure is `fitted` in the catalogue).
//!
//! What no study gives, and is taken from the machines' manuals and datasheets for all of them:
//! - positioning: a 5400 rpm SCSI disk of 1993-95 (Seagate ST11200N, the 1.05 GB disk Sun
//!   shipped in the Sparc 10 and 20: 10.5 ms average seek, 5.6 ms half a rotation): 16 ms;
//! - the file system: 8 KiB UFS blocks, clusters of 7 blocks (SunOS 4.1's and Solaris 2's
//!   default `maxcontig`, 56 KiB) read ahead;
//! - the write-behind limit: Solaris 2's UFS write throttle, 384 KiB of a file's dirty pages
//!   (`ufs_HW`) before its writer waits;
//! - the cache: the free memory of a 64 MB workstation, 32 MiB.

use super::DiskSpec;
use crate::time::Duration;
use crate::units::Rate;

/// Positioning time of a 5400 rpm SCSI disk of the period (see the module documentation).
pub const SEEK_5400RPM: Duration = Duration::from_millis(16);
/// UFS read-ahead cluster: 7 blocks of 8 KiB.
pub const UFS_CLUSTER: u64 = 7 * 8192;
/// Solaris 2's UFS write throttle (`ufs_HW`), bytes.
pub const UFS_DIRTY_LIMIT: u64 = 384 << 10;
/// Buffer cache of a 64 MB workstation's files, bytes.
pub const WORKSTATION_CACHE: u64 = 32 << 20;

/// A SCSI disk of `rate` behind a workstation's UFS cache.
fn ufs(name: &'static str, rate: Rate) -> DiskSpec {
    DiskSpec {
        name,
        read_rate: rate,
        write_rate: rate,
        seek: SEEK_5400RPM,
        block: 8192,
        cache: WORKSTATION_CACHE,
        dirty_limit: UFS_DIRTY_LIMIT,
        readahead: UFS_CLUSTER,
    }
}

/// The desktop Sparc 20s' disk in Sandia's trial: "standard 1 GByte SCSI with a throughput of
/// roughly 16 Mbps" (input: the text's figure, read and write alike).
pub fn sandia_desktop_scsi() -> DiskSpec {
    ufs("sandia-desktop-scsi", Rate::mbps(16))
}

/// The SparcCenter 2000 file server's disks: "fast and wide SCSI-2 models capable of 96 Mbps
/// throughput" (input).
pub fn sandia_fileserver_fwscsi2() -> DiskSpec {
    ufs("sandia-fileserver-fwscsi2", Rate::mbps(96))
}

/// An SP-2 node's disk: "The SP-2s are also equipped with fast and wide SCSI interfaces" (taken
/// as the file server's 96 Mbit/s: the text gives no other figure).
pub fn sp2_fwscsi() -> DiskSpec {
    ufs("sp2-fwscsi", Rate::mbps(96))
}

/// Every preset.
pub fn all() -> Vec<DiskSpec> {
    vec![
        sandia_desktop_scsi(),
        sandia_fileserver_fwscsi2(),
        sp2_fwscsi(),
    ]
}

/// The preset named `name` (as in [`DiskSpec::name`]).
pub fn by_name(name: &str) -> Option<DiskSpec> {
    all().into_iter().find(|d| d.name == name)
}
