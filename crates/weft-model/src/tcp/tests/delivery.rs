//! Byte-exact delivery both ways under random loss, reordering and duplication, over seeds.

use proptest::prelude::*;

use super::*;
use crate::rng::Rng;
use crate::tcp::{ByteConnection, CcAlgorithm, State};
use crate::units::Rate;

const LEN: usize = 60_000;

fn data(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    (0..LEN).map(|_| r.next_u64() as u8).collect()
}

fn impaired() -> PipeConfig {
    PipeConfig {
        delay: ms(10),
        // 2 Mbit/s holds 5 kB in flight over the 20 ms round trip; the 16 kB windows below
        // overflow a 6-segment queue.
        rate: Some(Rate::mbps(2)),
        queue: 6,
        loss: 0.03,
        reorder: 0.05,
        reorder_delay: ms(4),
        duplicate: 0.02,
        ecn_k: None,
    }
}

/// Both ends send `LEN` bytes and close; returns what each received.
fn exchange(seed: u64, cfg: Config) -> (Vec<u8>, Vec<u8>, Sim<ByteConnection, ByteConnection>) {
    let a = ByteConnection::new(Connection::connect(
        cfg.clone(),
        1000,
        80,
        SeqNum(seed as u32),
        Instant::ZERO,
    ));
    let b = ByteConnection::new(Connection::listen(cfg, 80, SeqNum((seed >> 32) as u32)));
    let mut s = Sim::new(a, b, impaired(), impaired(), seed);
    let (da, db) = (data(seed), data(!seed));
    let (mut wa, mut wb) = (0, 0);
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    let mut buf = [0u8; 3000];
    s.run_until(Instant::ZERO + Duration::from_secs(300), |s| {
        // Writes of awkward sizes; close once everything is queued.
        if s.a.connection().state().is_synchronized() {
            if wa < LEN {
                wa += s.a.send(&da[wa..(wa + 1777).min(LEN)]);
            } else {
                s.a.close();
            }
        }
        if s.b.connection().state().is_synchronized() {
            if wb < LEN {
                wb += s.b.send(&db[wb..(wb + 2500).min(LEN)]);
            } else {
                s.b.close();
            }
        }
        loop {
            let n = s.a.recv(&mut buf[..1234]);
            ra.extend_from_slice(&buf[..n]);
            let m = s.b.recv(&mut buf);
            rb.extend_from_slice(&buf[..m]);
            if n + m == 0 {
                break;
            }
        }
    });
    assert_eq!(rb, da, "a -> b, seed {seed}");
    assert_eq!(ra, db, "b -> a, seed {seed}");
    (ra, rb, s)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn bytes_arrive_exactly_despite_loss_reordering_and_duplication(
        seed in any::<u64>(),
        sack in any::<bool>(),
        cc in 0..3u8,
    ) {
        let cfg = Config {
            sack,
            cc: [CcAlgorithm::Reno, CcAlgorithm::NewReno, CcAlgorithm::Cubic][cc as usize],
            mss: 1000,
            recv_buffer: 16_000,
            send_buffer: 16_000,
            time_wait: ms(100),
            max_retransmits: 30,
            rto: crate::tcp::RtoConfig { min: ms(200), ..crate::tcp::RtoConfig::RFC6298 },
            ..Config::default()
        };
        let (_, _, s) = exchange(seed, cfg);
        prop_assert_eq!(s.a.connection().state(), State::Closed);
        prop_assert_eq!(s.b.connection().state(), State::Closed);
    }
}

/// The proptest above is only as good as its impairments: over a few seeds they cause
/// retransmissions, out-of-order arrivals, duplicates and drop-tail overflows.
#[test]
fn the_impairments_are_exercised() {
    let cfg = Config {
        sack: true,
        mss: 1000,
        recv_buffer: 16_000,
        time_wait: ms(100),
        ..Config::default()
    };
    let mut total = [0u64; 5];
    for seed in 1..=4 {
        let (_, _, s) = exchange(seed, cfg.clone());
        let (a, b) = (s.a.connection().stats(), s.b.connection().stats());
        total[0] += a.segments_retransmitted;
        total[1] += b.segments_retransmitted;
        total[2] += a.out_of_order_segments + b.out_of_order_segments;
        total[3] += a.duplicate_segments + b.duplicate_segments;
        total[4] += s.queue_drops(Dir::AtoB) + s.queue_drops(Dir::BtoA);
    }
    assert!(total.iter().all(|&n| n > 0), "{total:?}");
}
