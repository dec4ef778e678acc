//! A receiver that is late to read is not a slow path: on the simulated channel of `harness/`,
//! a fast path (10 Gbit/s behind a deep queue, as loopback is) whose receiver is descheduled
//! for 8 ms in the middle of the probe train. By the instants the receiver read it the train
//! arrived at half the rate it left at, which the rate control took for a bottleneck (startup
//! then creeps up by a quarter per round with two buffers in flight); by the instants it
//! reached the receiver's host (the kernel's receive timestamps, reported since protocol 5) it
//! arrived as it left, and startup doubles to the path's rate. See the weft-xfer README.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod harness;

use harness::{ChannelCfg, Outcome, RxStall, cfg, data, run};
use weft_model::{Duration, Rate};
use weft_xfer::proto::RateMode;
use weft_xfer::wire::Mode;

/// The path's rate.
const PATH: Rate = Rate(10_000_000_000);

/// A fast, short path with a deep queue (16 MiB), the receiver stalled as `stall` says.
fn fast_path(stall: Option<RxStall>) -> ChannelCfg {
    ChannelCfg {
        delay: Duration::from_micros(20),
        ctl_delay: Duration::from_micros(30),
        disk: Duration::from_micros(200),
        bottleneck: Some((PATH, 16 << 20)),
        settle: Some(Duration::from_micros(500)),
        rx_stall: stall,
        ..ChannelCfg::default()
    }
}

/// 128 MiB in 4 MiB buffers of 60 000-byte datagrams, a window of four (as `weft send` on
/// loopback), starting at 1 Gbit/s; the file must arrive whole.
fn transfer(ch: ChannelCfg) -> Outcome {
    let files = vec![data(128 << 20, 9)];
    let rate = RateMode::Adaptive {
        initial: Rate::mbps(1000),
        min: Rate::mbps(1),
        max: Rate::mbps(40_000),
        loss_threshold_ppm: 20_000,
    };
    let o = run(
        Mode::Reliable,
        &files,
        1,
        cfg(Mode::Reliable, 60_000, 4 << 20, 4, rate),
        ch,
        9,
    );
    assert_eq!(o.files, files);
    assert!(o.oks[0]);
    o
}

/// How many reports the sender took to pace at 90% of the path's rate or more (`None`: never).
fn reports_to_full_rate(o: &Outcome) -> Option<usize> {
    o.report_rates
        .iter()
        .position(|(_, r)| *r >= PATH.as_bps() / 10 * 9)
        .map(|i| i + 1)
}

/// The receiver stops reading for 8 ms after the fourth datagram of the 16-datagram train
/// (which takes 7.7 ms at the starting rate), and reads the rest at once when it runs again.
fn stalled(stamps: bool) -> Option<RxStall> {
    Some(RxStall {
        after: 4,
        pause: Duration::from_millis(8),
        stamps,
    })
}

#[test]
fn a_receiver_late_to_read_the_probe_train_is_no_bottleneck() {
    let on_time = reports_to_full_rate(&transfer(fast_path(None))).unwrap();
    let late = transfer(fast_path(stalled(true)));
    let first: Vec<u64> = late.report_rates.iter().take(8).map(|r| r.1).collect();
    let late = reports_to_full_rate(&late);
    assert!(
        on_time <= 5 && late.is_some_and(|n| n <= on_time + 1),
        "full rate after {on_time} reports on time, {late:?} after a stall (rates {first:?})"
    );
    // The premise: timed by when the receiver read it (an older receiver, or a driver without
    // timestamps), the same stall makes the train look like a bottleneck, and startup creeps.
    let unstamped = reports_to_full_rate(&transfer(fast_path(stalled(false))));
    assert!(
        unstamped.is_none_or(|n| n > on_time + 4),
        "without arrival times: full rate after {unstamped:?} reports"
    );
}
