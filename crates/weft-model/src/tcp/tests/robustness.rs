//! Untrusted input: a connection in any state survives any segment, answers within bounds, and
//! keeps its counters consistent.

use proptest::prelude::*;

use super::*;
use crate::tcp::{Flags, SackBlock, SackBlocks, State};

fn segment() -> impl Strategy<Value = Segment> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u8>(),
        any::<u16>(),
        0u32..3000,
        proptest::option::of(any::<u16>()),
        proptest::option::of(any::<u8>()),
        any::<bool>(),
        proptest::collection::vec(any::<(u32, u32)>(), 0..=4),
    )
        .prop_map(|(seq, ack, flags, window, len, mss, ws, sp, blocks)| {
            let mut sack = SackBlocks::EMPTY;
            for (l, r) in blocks {
                sack.push(SackBlock {
                    left: SeqNum(l),
                    right: SeqNum(r),
                });
            }
            Segment {
                src_port: 80,
                dst_port: 1000,
                seq: SeqNum(seq),
                ack: SeqNum(ack),
                flags: Flags(flags),
                window,
                len,
                mss,
                window_scale: ws,
                sack_permitted: sp,
                sack,
                ..Default::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random segments thrown at both ends of a connection at each stage of its life, with
    /// nearby sequence numbers mixed in so that some are acceptable.
    #[test]
    fn any_segment_at_any_time_is_survived(
        stage in 0u64..6,
        segs in proptest::collection::vec((segment(), any::<bool>(), any::<(i16, i16)>()), 1..40),
    ) {
        let (ab, ba) = clean(ms(10));
        let cfg = Config { sack: true, window_scale: Some(4), ..Config::default() };
        let mut s = pair(cfg.clone(), cfg, ab, ba);
        let mut app = bulk(30_000, true);
        s.run_until(at_ms(stage * 15), &mut app);
        let mut now = s.now;
        for (mut seg, to_a, (ds, da)) in segs {
            let c = if to_a { &mut s.a } else { &mut s.b };
            // Half the time, aim close to what the receiver expects.
            if ds % 2 == 0 {
                seg.seq = c.rcv_nxt().add(ds as u32 % 3000);
                seg.ack = c.snd_una().add(da as u32 % 3000);
            }
            c.handle_segment(now, &seg);
            let mut n = 0;
            while c.poll_transmit(now).is_some() {
                n += 1;
                prop_assert!(n < 1000, "poll_transmit does not end");
            }
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
            now += ms(1);
            let st = c.stats();
            prop_assert!(st.bytes_read <= st.bytes_delivered);
            prop_assert!(c.cwnd() >= 1);
        }
        // Whatever happened, time moves both ends on without a panic or a busy loop: the
        // harness would never return from a timer that does not advance.
        s.app_tick = ms(100);
        s.run_until(now + Duration::from_secs(600), &mut app);
        for c in [&s.a, &s.b] {
            prop_assert!(c.poll_timeout().is_none_or(|t| t > now + Duration::from_secs(600)) || c.state() != State::Closed);
        }
    }
}
