//! Bring-up, traffic and teardown of a small emulation.

mod common;

use std::time::Duration;
use weft_emu::LinkSpec;
use weft_emu::workload;

#[test]
fn two_hosts_exchange_tcp_and_leave_nothing() {
    require_root!();
    let _g = common::serial();
    let topo = common::star(
        &["a", "b"],
        LinkSpec::ethernet(None, weft_model::Duration::ZERO),
    );
    let (r, report) = common::with_emulation(&topo, |emu| {
        workload::tcp_bulk(
            emu,
            "a",
            "b",
            None,
            Duration::from_millis(500),
            Duration::from_millis(100),
        )
    });
    println!(
        "unlimited tcp: {:.1} Mbit/s, lag {:?}",
        r.mean_bps / 1e6,
        report.lag
    );
    assert!(r.bytes > 1_000_000, "{r:?}");
    assert!(report.ports[0].ingress.frames > 100);
}
