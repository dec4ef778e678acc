//! The switch the emulator runs (`weft_model::net::Network`, shared with the simulator) takes
//! whatever frames the hosts' kernels (or anything running in a host
//! namespace) send: arbitrary bytes on any port at any time must never panic, and frames must
//! leave no earlier than they are due. The first byte picks the fabric (output-queued,
//! input-FIFO, VOQ/iSLIP) and whether host a's VC is shaped or policed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::fabric::Contention;
use weft_model::net::{FabricKind, FabricSpec, HostSpec, LinkSpec, Network, Topology};
use weft_model::queue::{Buffer, DropPolicy};
use weft_model::shaper::VcContract;
use weft_model::{Duration, Instant, Rate};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let mut atm = LinkSpec::atm(Some(Rate::mbps(26)), Duration::from_micros(50), 0, 100);
    atm.buffer = Buffer::cells(300);
    atm.drop = DropPolicy::Epd {
        threshold: Buffer::cells(100),
    };
    atm.faults.loss = 0.1;
    if mode & 4 != 0 {
        atm.contract = Some(VcContract {
            pcr: Rate::mbps(10),
            scr: Some(Rate::mbps(2)),
            mbs: 20,
            cdvt: Duration::from_micros(10),
            police: mode & 8 != 0,
            tag: mode & 16 != 0,
            ppd: mode & 32 != 0,
        });
    }
    let kind = match mode % 4 {
        1 => FabricKind::InputFifo {
            contention: Contention::RoundRobin,
        },
        2 => FabricKind::VoqIslip { iterations: 2 },
        _ => FabricKind::OutputQueued,
    };
    let eth = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::from_micros(5));
    let mut small = LinkSpec::ethernet(None, Duration::ZERO);
    small.buffer = Buffer::frames(2);
    let host = |name: &str, link| HostSpec {
        name: name.into(),
        addr: None,
        link,
        switch: 0,
    };
    let fabric = FabricSpec {
        kind,
        rate: Rate::mbps(100),
        buffer_cells: 64,
        drop: DropPolicy::Ppd,
    };
    let topo = Topology::star(
        vec![host("a", atm), host("b", eth), host("c", small)],
        fabric,
        3,
    );
    let Ok(mut sw) = Network::<Vec<u8>>::new(&topo) else {
        return;
    };
    let mut now = 0u64;
    let mut rest = data;
    // Records: [port, time step (x 1 us), len_hi, len_lo, bytes...]
    while rest.len() >= 4 {
        let port = rest[0] as usize % 4; // port 3 does not exist
        now += rest[1] as u64 * 1000;
        let len = (u16::from_be_bytes([rest[2], rest[3]]) as usize).min(rest.len() - 4);
        let frame = rest[4..4 + len].to_vec();
        rest = &rest[4 + len..];
        sw.handle_frame(Instant(now), port, frame);
        while let Some((_, due, _)) = sw.poll_transmit(Instant(now)) {
            assert!(due.as_nanos() <= now);
        }
    }
    // Drain to the end: deadlines must advance.
    let mut guard = 0;
    while let Some(t) = sw.poll_timeout() {
        now = now.max(t.as_nanos());
        while let Some((_, due, _)) = sw.poll_transmit(Instant(now)) {
            assert!(due.as_nanos() <= now);
        }
        guard += 1;
        assert!(guard < 1_000_000, "deadlines do not advance");
    }
    for p in sw.all_host_stats() {
        assert!(p.egress.frames_out <= p.egress.frames_in);
    }
    if let Some(f) = sw.fabric_stats() {
        // Drained: every cell offered crossed or was dropped.
        assert_eq!(f.cells_in, f.cells_out + f.cells_dropped, "{f:?}");
    }
});
