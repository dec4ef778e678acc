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
        sync_metadata: Duration::ZERO,
    }
}

/// The desktop Sparc 20s' disk in Sandia's trial: "standard 1 GByte SCSI with a throughput of
/// roughly 16 Mbps" (input: the text's figure, read and write alike).
pub fn sandia_desktop_scsi() -> DiskSpec {
    ufs("sandia-desktop-scsi", Rate::mbps(16))
}

/// The file server's metadata time per synchronous write, fitted to
/// `sandia_atm_trial.nfs_ethernet_mbps` (3.0 Mbit/s of NFS version 2 WRITEs of 8 KB, taken as
/// bound by the server's disk: 21.85 ms a write, less the 16 ms positioning and 0.68 ms of
/// data). Close to the 5.6 ms half rotation of a 5400 rpm disk, as an inode written in the
/// data's cylinder group would take.
pub const SANDIA_FILESERVER_SYNC_METADATA: Duration = Duration(5_161_667);

/// The SparcCenter 2000 file server's disks: "fast and wide SCSI-2 models capable of 96 Mbps
/// throughput" (input); the metadata of a synchronous write fitted to NFS over Ethernet
/// ([`SANDIA_FILESERVER_SYNC_METADATA`]; only NFS's writes wait for it).
pub fn sandia_fileserver_fwscsi2() -> DiskSpec {
    DiskSpec {
        sync_metadata: SANDIA_FILESERVER_SYNC_METADATA,
        ..ufs("sandia-fileserver-fwscsi2", Rate::mbps(96))
    }
}

/// An SP-2 node's disk: "The SP-2s are also equipped with fast and wide SCSI interfaces" (taken
/// as the file server's 96 Mbit/s: the text gives no other figure).
pub fn sp2_fwscsi() -> DiskSpec {
    ufs("sp2-fwscsi", Rate::mbps(96))
}

/// The Sparc 10s' disks of RIACS's Table 2 write at one rate, fitted to the conan/dufus row's
/// sync share (29.6% at 14.9 Mbit/s: dufus's write of a 1 MiB buffer outlasts conan's read of
/// the next by 167 ms); conan's is taken as the same, and psyche's too (no row has psyche
/// receive).
const RIACS_WRITE: Rate = Rate(32_900_000);

/// A disk of RIACS's workstations read at `read`: the period's SCSI disk behind the SunOS
/// cache, each buffer written through to the platter before the receiver is ready again ("the
/// receiver writes the buffer to the disk and then waits for another start-of-buffer signal",
/// and Table 2's sync shares say those writes are waited for).
fn riacs(name: &'static str, read: Rate) -> DiskSpec {
    DiskSpec {
        read_rate: read,
        write_rate: RIACS_WRITE,
        dirty_limit: 0,
        ..ufs(name, read)
    }
}

/// psyche's disk (Sparc 2): read rate fitted to Table 2's psyche/conan disk share (27.8% at
/// 12.4 Mbit/s: 188 ms per 1 MiB buffer, 16 of them positioning).
pub fn riacs_psyche_disk() -> DiskSpec {
    riacs("riacs-psyche-disk", Rate(48_740_000))
}

/// dufus's disk (Sparc 10): read rate fitted to Table 2's dufus/conan disk share (30.7% at
/// 11.0 Mbit/s: 234 ms per buffer).
pub fn riacs_dufus_disk() -> DiskSpec {
    riacs("riacs-dufus-disk", Rate(38_460_000))
}

/// conan's disk (Sparc 10): read rate fitted to Table 2's conan/dufus disk share (18.5% at
/// 14.9 Mbit/s: 104 ms per buffer, 95 Mbit/s: faster than its SCSI disk could read, so partly
/// from the cache).
pub fn riacs_conan_disk() -> DiskSpec {
    riacs("riacs-conan-disk", Rate(95_100_000))
}

/// Every preset.
pub fn all() -> Vec<DiskSpec> {
    vec![
        sandia_desktop_scsi(),
        sandia_fileserver_fwscsi2(),
        sp2_fwscsi(),
        riacs_psyche_disk(),
        riacs_dufus_disk(),
        riacs_conan_disk(),
    ]
}

/// The preset named `name` (as in [`DiskSpec::name`]).
pub fn by_name(name: &str) -> Option<DiskSpec> {
    all().into_iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Figures;

    /// A share of row `row` of RIACS's Table 2 as seconds of a 1 MiB buffer.
    fn seconds(key: &str, row: usize) -> f64 {
        let f = Figures::bundled().unwrap();
        let pct = f.numbers(&format!("riacs_transfer.sbtp.{key}")).unwrap()[row];
        let mbps = f.numbers("riacs_transfer.sbtp.mbps").unwrap()[row];
        pct / 100.0 * 8.0 * 1_048_576.0 / (mbps * 1e6)
    }

    /// The rate that moves 1 MiB in `s` seconds after a positioning.
    fn rate(s: f64) -> f64 {
        8.0 * 1_048_576.0 / (s - SEEK_5400RPM.as_secs_f64())
    }

    /// The file server's metadata time is what makes an 8 KB synchronous write (positioning,
    /// data, metadata) take the time of one at NFS's 3.0 Mbit/s over Ethernet.
    #[test]
    fn the_fileserver_metadata_follows_nfs_over_ethernet() {
        let f = Figures::bundled().unwrap();
        let mbps = f.number("sandia_atm_trial.nfs_ethernet_mbps").unwrap();
        let d = sandia_fileserver_fwscsi2();
        let write = d.seek + d.write_rate.time_to_send(crate::units::Size(8192)) + d.sync_metadata;
        let got = 8192.0 * 8.0 / write.as_secs_f64() / 1e6;
        assert!((got - mbps).abs() < 1e-4 * mbps, "{got} {mbps}");
    }

    #[test]
    fn riacs_disks_follow_table_2() {
        let close = |a: Rate, b: f64| (a.0 as f64 - b).abs() < 1e-3 * b;
        // Rows: psyche/conan, psyche/dufus, dufus/conan, conan/dufus.
        assert!(close(
            riacs_psyche_disk().read_rate,
            rate(seconds("disk_pct", 0))
        ));
        assert!(close(
            riacs_dufus_disk().read_rate,
            rate(seconds("disk_pct", 2))
        ));
        assert!(close(
            riacs_conan_disk().read_rate,
            rate(seconds("disk_pct", 3))
        ));
        // dufus's write of a buffer: conan's read of the next and the sync after it.
        let write = seconds("sync_pct", 3) + seconds("disk_pct", 3);
        assert!(close(riacs_dufus_disk().write_rate, rate(write)));
    }
}
