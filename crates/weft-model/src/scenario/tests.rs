//! Parser tests: a full scenario, sweeps, overrides, and errors that name line and key.

use super::*;
use crate::tech::Encap;

const GOOD: &str = r#"
name = "t"
seed = 7

[[host]]
name = "a"
[[host]]
name = "b"

[[switch]]
name = "sw"
fabric = "input-fifo"
ports = 5
buffer = "512 frames"
drop = "epd"
epd_threshold = 0.5

[[link]]
ends = ["a", "sw"]
tech = "fddi"
delay = "1us"

[[link]]
ends = ["sw", "b"]
tech = { preset = "e3", rate = "26Mbps", encap = "null" }
mtu = 4490
delay = "8.5ms"
loss = 0.001

[[workload]]
kind = "saturated"
inputs = [1, 2, 3]
outputs = 5
rate = "95Mbps"
slots = 1e6

[[workload]]
kind = "tput"
from = "a"
to = ["b"]
window = "64KiB"

[expect]
source = "gigaswitch.contention_model_mbps"
tolerance = 0.01
"#;

#[test]
fn parses_a_full_scenario() {
    let s = Scenario::parse(GOOD, "good.toml").unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.seed, 7);
    assert_eq!(s.hosts.len(), 2);
    let sw = &s.switches[0];
    assert_eq!(sw.fabric, Fabric::InputFifo);
    assert_eq!(
        sw.drop,
        DropPolicy::Epd {
            threshold: Buffer {
                amount: 256,
                unit: BufferUnit::Frames
            }
        }
    );
    let e3 = &s.links[1].tech;
    assert_eq!(e3.rate, Rate::mbps(26));
    assert_eq!(e3.line_rate, Rate(34_368_000));
    assert_eq!(e3.encap, Encap::Null);
    assert_eq!(e3.mtu, Size(4490));
    assert_eq!(s.links[1].delay, Duration::from_micros(8500));
    let w = &s.workloads[0];
    assert_eq!(w.slots, Some(1_000_000));
    assert_eq!(w.inputs, None);
    let points = s.points();
    assert_eq!(points.len(), 4);
    assert_eq!(points[2].spec.inputs, Some(3));
    assert_eq!(points[2].value, Some(Param::Count(3)));
    assert_eq!(points[3].spec.window, Some(Size(65536)));
    assert_eq!(points[3].spec.proto, Some(Transport::Tcp { options: 0 }));
    assert_eq!(s.expect[0].metric, Metric::THROUGHPUT_MBPS);
    let path = s.path("a", "b").unwrap();
    assert_eq!(path.len(), 2);
    assert_eq!(path[1].tech.name, "e3");
}

/// Parses `text` expecting an error; returns it.
fn error(text: &str) -> ScenarioError {
    match Scenario::parse(text, "bad.toml") {
        Ok(s) => panic!("parsed: {s:?}"),
        Err(e) => e,
    }
}

#[test]
fn errors_name_file_line_and_key() {
    let text = GOOD.replace("delay = \"8.5ms\"", "delay = \"8.5 parsecs\"");
    let e = error(&text);
    assert_eq!(e.file, "bad.toml");
    assert_eq!(e.key, "link[1].delay");
    let line = GOOD.lines().position(|l| l.contains("8.5ms")).unwrap() + 1;
    assert_eq!(e.line, line, "{e}");
    assert!(e.message.contains("duration"), "{e}");
    assert!(
        e.to_string().starts_with(&format!("bad.toml:{line}:")),
        "{e}"
    );
}

#[test]
fn unknown_keys_and_names_are_reported_where_they_are() {
    let e = error(&GOOD.replace("fabric = \"input-fifo\"", "fabrik = \"input-fifo\""));
    assert_eq!(e.key, "switch[0].fabrik");
    assert!(e.message.contains("expected one of"), "{e}");

    let e = error(&GOOD.replace("ends = [\"a\", \"sw\"]", "ends = [\"a\", \"sx\"]"));
    assert_eq!(e.key, "link[0].ends");
    assert!(e.message.contains("\"sx\""), "{e}");

    let e = error(&GOOD.replace("tech = \"fddi\"", "tech = \"token-ring\""));
    assert_eq!(e.key, "link[0].tech");
    assert!(e.message.contains("oc3c"), "{e}");

    let e = error(&GOOD.replace("outputs = 5", "outputs = [4, 5]"));
    assert_eq!(e.key, "workload[0].outputs");
    assert!(e.message.contains("only one field"), "{e}");

    let e = error(&GOOD.replace("to = [\"b\"]", "to = [\"c\"]"));
    assert_eq!(e.key, "workload[1].to");

    let e = error(&GOOD.replace("inputs = [1, 2, 3]", "inputs = [1, 2, 6]"));
    assert_eq!(e.key, "workload[0]");
    assert!(e.message.contains("6 inputs"), "{e}");
}

#[test]
fn missing_keys_point_at_their_table() {
    let e = error(&GOOD.replace("kind = \"tput\"\n", ""));
    assert_eq!(e.key, "workload[1]");
    assert!(e.message.contains("missing `kind`"), "{e}");
    let e = error("seed = 1\n");
    assert_eq!(e.key, "(document)");
    assert!(e.message.contains("name"), "{e}");
}

#[test]
fn syntax_errors_have_a_line() {
    let e = error("name = \"x\"\n\n[[host]\nname = \"a\"\n");
    assert_eq!(e.line, 3, "{e}");
    assert_eq!(e.key, "(document)");
}

#[test]
fn kind_requirements_are_checked() {
    let e = error("name = \"x\"\n[[workload]]\nkind = \"bernoulli\"\nports = 4\n");
    assert!(e.message.contains("`load`"), "{e}");
    let e = error("name = \"x\"\n[[workload]]\nkind = \"bernoulli\"\nports = 4\nload = 1.5\n");
    assert_eq!(e.key, "workload[0].load");
    assert_eq!(e.line, 5);
    let ok = Scenario::parse(
        "name = \"x\"\n[[workload]]\nkind = \"bernoulli\"\nports = 16\nload = [0.5, 0.8, 0.9]\n",
        "ok.toml",
    )
    .unwrap();
    assert_eq!(ok.points().len(), 3);
    assert_eq!(ok.expect.len(), 0);
}

#[test]
fn odd_keys_are_quoted_in_errors() {
    // Found by the fuzzer: an empty key gave an empty key path.
    let e = error("''=\t''\n");
    assert_eq!(e.key, "\"\"");
    let e = error("name = \"x\"\n\"a.b\" = 1\n");
    assert_eq!(e.key, "\"a.b\"");
    assert_eq!(e.line, 2);
}

#[test]
fn never_panics_on_odd_input() {
    // Each is refused, and the error says where and what, as every scenario error must.
    for (text, line, column, key, says) in [
        ("", 1, 1, "(document)", "missing `name`"),
        ("=", 1, 1, "(document)", "not valid TOML"),
        ("name = 1", 1, 8, "name", "expected a string, found integer"),
        ("[[link]]\nends = 3", 1, 1, "(document)", "missing `name`"),
        (
            "name=\"x\"\n[expect]\nworkload = 9\nsource=\"a.b\"",
            3,
            12,
            "expect.workload",
            "there is no workload 9",
        ),
        (
            "name = \"\u{0}\"\n[[workload]]\nkind=\"tput\"\nwindow=[]",
            1,
            9,
            "(document)",
            "not valid TOML",
        ),
    ] {
        let e = Scenario::parse(text, "odd.toml").unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.line, e.column, e.key.as_str()),
            ("odd.toml", line, column, key),
            "{text:?}: {e}"
        );
        assert!(e.message.contains(says), "{text:?}: {e}");
    }
}

#[test]
fn vc_contracts_parse_and_bad_ones_are_named() {
    let with = |keys: &str| {
        GOOD.replacen(
            "delay = \"8.5ms\"",
            &format!("delay = \"8.5ms\"\n{keys}"),
            1,
        )
    };
    let s = Scenario::parse(
        &with("pcr = \"26Mbps\"\nscr = \"10Mbps\"\nmbs = 32\ncdvt = \"50us\"\npolice = true"),
        "vc.toml",
    )
    .unwrap();
    let c = s.links[1].contract.expect("contract");
    assert_eq!(c.pcr, Rate::mbps(26));
    assert_eq!(c.scr, Some(Rate::mbps(10)));
    assert_eq!((c.mbs, c.cdvt, c.police), (32, Duration(50_000), true));
    assert_eq!(c.pcr_cells(), 26_000_000 / 424);
    assert!(s.links[0].contract.is_none());
    let e = error(&with("pcr = \"26Mbps\"\nscr = \"10Mbps\""));
    assert_eq!(e.key, "link[1]", "{e}");
    assert!(e.message.contains("mbs"), "{e}");
    let e = error(&with("pcr = \"26Mbps\"\nscr = \"30Mbps\"\nmbs = 2"));
    assert_eq!(e.key, "link[1].scr", "{e}");
    let s = Scenario::parse(&with("pcr = \"26Mbps\"\npolice = \"tag\""), "vc.toml").unwrap();
    let c = s.links[1].contract.expect("contract");
    assert_eq!((c.police, c.tag, c.ppd), (true, true, false));
    let s = Scenario::parse(&with("pcr = \"26Mbps\"\npolice = \"ppd\""), "vc.toml").unwrap();
    let c = s.links[1].contract.expect("contract");
    assert_eq!((c.police, c.tag, c.ppd), (true, false, true));
    let e = error(&with("pcr = \"26Mbps\"\npolice = \"yes\""));
    assert_eq!(e.key, "link[1].police", "{e}");
    let e = error(&with("mbs = 4"));
    assert!(e.message.contains("pcr"), "{e}");
}

#[test]
fn numbers_out_of_range_are_refused_with_the_range_at_their_line() {
    // (what is replaced, by what, the key named, what the message says)
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "window = \"64KiB\"",
            "window = 1e18",
            "workload[1].window",
            "between 1B and 1GiB (or a list of them), found 1e18: out of range",
        ),
        (
            "delay = \"1us\"",
            "delay = \"1e30s\"",
            "link[0].delay",
            "584 years",
        ),
        (
            "delay = \"1us\"",
            "delay = \"2h\"",
            "link[0].delay",
            "between 0ns and 3600s",
        ),
        (
            "ports = 5",
            "ports = 2.5",
            "switch[0].ports",
            "a count cannot be a fraction",
        ),
        (
            "ports = 5",
            "ports = 5000",
            "switch[0].ports",
            "between 1 and 4096",
        ),
        (
            "ports = 5",
            "ports = 0",
            "switch[0].ports",
            "between 1 and 4096",
        ),
        (
            "outputs = 5",
            "outputs = -1",
            "workload[0].outputs",
            "between 1 and 4096",
        ),
        (
            "slots = 1e6",
            "slots = 12.5",
            "workload[0].slots",
            "cannot be a fraction",
        ),
        (
            "slots = 1e6",
            "slots = 1e30",
            "workload[0].slots",
            "between 1 and",
        ),
        (
            "inputs = [1, 2, 3]",
            "inputs = [1, 2.5]",
            "workload[0].inputs",
            "fraction",
        ),
        (
            "rate = \"95Mbps\"",
            "rate = \"20Tbps\"",
            "workload[0].rate",
            "between 1bps",
        ),
        (
            "mtu = 4490",
            "mtu = 100000",
            "link[1].mtu",
            "between 41B and",
        ),
        (
            "loss = 0.001",
            "loss = 1.5",
            "link[1].loss",
            "between 0 and 1",
        ),
        ("seed = 7", "seed = 7.5", "seed", "fraction"),
        (
            "tolerance = 0.01",
            "tolerance = -1",
            "expect.tolerance",
            "between 0 and 10",
        ),
        (
            "epd_threshold = 0.5",
            "epd_threshold = 2",
            "switch[0].epd_threshold",
            "between 0 and 1",
        ),
        (
            "buffer = \"512 frames\"",
            "buffer = \"0 frames\"",
            "switch[0].buffer",
            "between 1",
        ),
        (
            "rate = \"26Mbps\"",
            "rate = \"0\"",
            "link[1].tech.rate",
            "between 1bps",
        ),
    ];
    for (from, to, key, says) in cases {
        assert!(GOOD.contains(from), "{from}");
        let text = GOOD.replacen(from, to, 1);
        let e = error(&text);
        assert_eq!(e.key, *key, "{to}: {e}");
        assert!(e.message.contains(says), "{to}: {e}");
        let line = text.lines().position(|l| l.contains(to)).map(|i| i + 1);
        assert_eq!(Some(e.line), line, "{to}: {e}");
        assert!(e.column > 1, "{to}: {e}");
        assert!(e.to_string().starts_with("bad.toml:"), "{e}");
    }
}

#[test]
fn every_workload_number_has_a_range() {
    for (key, value) in [
        ("hotspot", "1.5"),
        ("burst", "0.5"),
        ("load", "-0.1"),
        ("warmup", "0.5"),
        ("size", "\"2GiB\""),
        ("time", "\"0s\""),
        ("rtt", "\"1d\""),
    ] {
        let text = format!(
            "name = \"x\"\n[[workload]]\nkind = \"saturated\"\nports = 2\n{key} = {value}\n"
        );
        let e = error(&text);
        assert_eq!(e.key, format!("workload[0].{key}"), "{e}");
        assert!(e.message.contains("between"), "{e}");
        assert_eq!(e.line, 5, "{e}");
    }
}

#[test]
fn rr_runs_beside_an_earlier_tput_workload_only() {
    let rr = |beside: &str| {
        GOOD.replace(
            "\n[expect]",
            &format!(
                "\n[[workload]]\nkind = \"rr\"\nfrom = \"a\"\nto = \"b\"\nsize = 64\n{beside}\n\n[expect]"
            ),
        )
    };
    let s = Scenario::parse(&rr("beside = 1"), "ok.toml").unwrap();
    assert_eq!(s.workloads[2].beside, Some(1));
    assert_eq!(s.workloads[1].beside, None);
    // Workload 0 is not a tput workload; workload 2 is this one; 9 does not exist.
    for bad in ["beside = 0", "beside = 2", "beside = 9"] {
        let e = error(&rr(bad));
        assert_eq!(e.key, "workload[2].beside", "{bad}: {e}");
    }
    // Only an rr workload runs beside another.
    let e = error(&GOOD.replace("window = \"64KiB\"", "window = \"64KiB\"\nbeside = 0"));
    assert_eq!(e.key, "workload[1].beside", "{e}");
}

#[test]
fn rr_over_tcp_takes_its_answer_size_nagle_and_echo() {
    let rr = |keys: &str| {
        GOOD.replace(
            "\n[expect]",
            &format!("\n[[workload]]\nkind = \"rr\"\nfrom = \"a\"\nto = \"b\"\n{keys}\n\n[expect]"),
        )
    };
    let s = Scenario::parse(
        &rr("proto = \"tcp\"\nsize = 64\nresponse_size = 1000\nnodelay = true"),
        "ok.toml",
    )
    .unwrap();
    let w = &s.workloads[2];
    assert_eq!(
        (w.response_size, w.nodelay, w.echo),
        (Some(Size(1000)), true, false)
    );
    assert!(!w.tcp_config(1500).nagle, "nodelay turns Nagle off");
    let s = Scenario::parse(
        &rr("proto = \"tcp\"\nsize = [64, 1500]\necho = true"),
        "ok.toml",
    )
    .unwrap();
    assert!(s.workloads[2].echo);
    for (bad, key) in [
        // An echo answers with the request's bytes, over TCP.
        (
            "proto = \"tcp\"\nsize = 64\necho = true\nresponse_size = 10",
            "response_size",
        ),
        ("size = 64\necho = true", "workload[2]"),
        ("proto = \"tcp\"\nsize = 64\nnodelay = 1", "nodelay"),
    ] {
        let e = error(&rr(bad));
        assert!(
            e.key.starts_with("workload[2]") && e.key.contains(key),
            "{bad}: {e}"
        );
    }
    // Only an rr workload takes them.
    let e = error(&GOOD.replace("window = \"64KiB\"", "window = \"64KiB\"\nnodelay = true"));
    assert_eq!(e.key, "workload[1].nodelay", "{e}");
}

#[test]
fn a_linux_window_is_the_senders_buffer_and_scales_as_linux_does() {
    let with = |stack: &str, window: &str| {
        let text = GOOD.replace(
            "window = \"64KiB\"",
            &format!("window = {window}\nstack = \"{stack}\""),
        );
        Scenario::parse(&text, "ok.toml").unwrap().workloads[1].tcp_config(4490)
    };
    // Linux: the shift that carries the clamp (none below 64 KiB), a receive buffer four times
    // the window (the emulator's), the window the sender's buffer.
    let c = with("linux", "35600");
    assert_eq!(
        (c.window_scale, c.send_buffer, c.recv_buffer),
        (Some(0), 35600, 142_400)
    );
    assert_eq!(with("linux", "262144").window_scale, Some(3));
    // BSD: both buffers, scaled only past 16 bits.
    let b = with("bsd", "35600");
    assert_eq!(
        (b.window_scale, b.send_buffer, b.recv_buffer),
        (None, 35600, 35600)
    );
    assert_eq!(with("bsd", "131072").window_scale, Some(2));
}

/// Two workloads to hang items and checks on: three swept points, then one.
const LINKED: &str = r#"
name = "linked"
[[workload]]
kind = "saturated"
inputs = [1, 2, 3]
outputs = 5
[[workload]]
kind = "saturated"
inputs = 4
outputs = 5
"#;

#[test]
fn expect_rows_name_their_catalogue_items() {
    let s = Scenario::parse(
        &format!(
            "{LINKED}[[expect]]\nsource = \"g.v\"\nitems = [\"003.t7.1\", \"-\", \"003.t7.3\"]\n\
             [[expect]]\nsource = \"g.w\"\nworkload = 1\nselect = [0, 1]\nitems = [\"a.1\", \"a.2\"]\n"
        ),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(s.expect[0].item(0), Some("003.t7.1"));
    assert_eq!(s.expect[0].item(1), None);
    assert_eq!(s.expect[1].items.len(), 2);
    let bad = |items: &str, extra: &str| {
        error(&format!(
            "{LINKED}[[expect]]\nsource = \"g.v\"\n{extra}items = {items}\n"
        ))
    };
    let e = bad("[\"a.1\", \"a.2\"]", "");
    assert_eq!(e.key, "expect[0].items");
    assert!(e.message.contains("at least 3"), "{e}");
    let e = bad(
        "[\"a.1\", \"a.2\", \"a.3\"]",
        "select = [0]\nworkload = 1\n",
    );
    assert!(e.message.contains("expected 1"), "{e}");
    let e = bad("[\"a.1\", \"a 2\", \"a.3\"]", "");
    assert!(e.message.contains("\"a 2\""), "{e}");
    assert_eq!(e.column, 17, "{e}");
    let e = bad("[\"a.1\", \"a.1\", \"a.3\"]", "");
    assert!(e.message.contains("twice"), "{e}");
    let e = bad("\"a.1\"", "");
    assert!(e.message.contains("list"), "{e}");
}

#[test]
fn checks_parse_in_each_form() {
    let s = Scenario::parse(
        &format!(
            "{LINKED}[[check]]\nitem = \"003.falls\"\nwhat = \"less with more inputs\"\n\
             decreasing = \"throughput_mbps @ w0\"\n\
             [[check]]\nitem = \"x.2\"\nincreasing = [\"e @ w1\", \"e @ w0 #0\"]\n\
             [[check]]\nitem = \"x.3\"\nratio = [\"e @ w0 #2\", \"e@w1\"]\nwithin = [0.5, 2]\n\
             [[check]]\nitem = \"-\"\nvalue = \"e @ w0\"\nabove = 0.1\nbelow = 1\n"
        ),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(s.checks.len(), 4);
    assert_eq!(s.checks[0].item, "003.falls");
    assert_eq!(s.checks[0].what, "less with more inputs");
    // "-": a check of weft's own, no catalogue item.
    assert_eq!(s.checks[3].item, "-");
    assert!(matches!(&s.checks[0].test, CheckTest::Decreasing(r) if r.len() == 1));
    assert!(
        matches!(&s.checks[2].test, CheckTest::Ratio { num, lo, hi, .. } if num.point == Some(2) && *lo == 0.5 && *hi == 2.0)
    );
    assert!(matches!(
        &s.checks[3].test,
        CheckTest::Bound {
            above: Some(_),
            below: Some(_),
            ..
        }
    ));
    assert_eq!(
        s.checks[1].test.to_string(),
        "e @ w1 < e @ w0 #0",
        "the claim reads back"
    );
}

#[test]
fn bad_checks_say_what_is_expected() {
    let bad = |body: &str| error(&format!("{LINKED}[[check]]\nitem = \"x.1\"\n{body}\n"));
    let e = bad("");
    assert_eq!(e.key, "check[0]");
    assert!(e.message.contains("increasing"), "{e}");
    let e = bad("increasing = \"e @ w0\"\ndecreasing = \"e @ w0\"");
    assert_eq!(e.key, "check[0].decreasing");
    assert!(e.message.contains("one relation"), "{e}");
    let e = bad("increasing = \"e @ w1\"");
    assert!(e.message.contains("at least two"), "{e}");
    let e = bad("increasing = [\"e @ w0\", \"e @ w7\"]");
    assert!(e.message.contains("no workload 7"), "{e}");
    let e = bad("increasing = [\"e @ w0 #3\"]");
    assert!(e.message.contains("3 point(s)"), "{e}");
    let e = bad("increasing = [\"e w0\"]");
    assert!(e.message.contains("METRIC @ wW"), "{e}");
    let e = bad("ratio = [\"e @ w0\", \"e @ w1\"]\nwithin = [1, 2]");
    assert!(e.message.contains("name one with #P"), "{e}");
    let e = bad("ratio = [\"e @ w1\", \"e @ w1\"]");
    assert!(e.message.contains("needs `within`"), "{e}");
    let e = bad("ratio = [\"e @ w1\", \"e @ w1\"]\nwithin = [2, 1]");
    assert_eq!(e.key, "check[0].within");
    let e = bad("ratio = [\"e @ w1\"]\nwithin = [1, 2]");
    assert!(e.message.contains("two values"), "{e}");
    let e = bad("value = \"e @ w1\"");
    assert!(e.message.contains("`above` or `below`"), "{e}");
    let e = bad("value = \"e @ w1\"\nabove = 2\nbelow = 1");
    assert_eq!(e.key, "check[0].below");
    let e = bad("value = \"e @ w1\"\nwithin = [1, 2]");
    assert!(e.message.contains("does not go with `value`"), "{e}");
    let e = bad("value = [\"e @ w1\", \"e @ w0\"]\nabove = 1");
    assert!(e.message.contains("one value"), "{e}");
    let e = error(&format!(
        "{LINKED}[[check]]\nitem = \"a b\"\nvalue = \"e @ w1\"\nabove = 1\n"
    ));
    assert_eq!(e.key, "check[0].item");
    let e = error(&format!(
        "{LINKED}[[check]]\nvalue = \"e @ w1\"\nabove = 1\n"
    ));
    assert!(e.message.contains("missing `item`"), "{e}");
}

#[test]
fn an_ecn_threshold_reaches_the_switchs_queues() {
    let text = GOOD.replacen(
        "epd_threshold = 0.5",
        "epd_threshold = 0.5\necn_threshold = \"20 frames\"",
        1,
    );
    let s = Scenario::parse(&text, "ecn.toml").unwrap();
    assert_eq!(s.switches[0].ecn_threshold, Some(Buffer::frames(20)));
    let (topo, _) = crate::net::Topology::from_scenario(&s, 1).unwrap();
    assert!(
        topo.hosts
            .iter()
            .all(|h| h.link.ecn_threshold == Some(Buffer::frames(20)))
    );
    assert!(
        Scenario::parse(GOOD, "good.toml").unwrap().switches[0]
            .ecn_threshold
            .is_none()
    );
    let e = error(&GOOD.replacen(
        "epd_threshold = 0.5",
        "epd_threshold = 0.5\necn_threshold = \"lots\"",
        1,
    ));
    assert_eq!(e.key, "switch[0].ecn_threshold", "{e}");
}

#[test]
fn pfc_reaches_the_switchs_links_with_its_thresholds() {
    let text = GOOD.replacen("epd_threshold = 0.5", "epd_threshold = 0.5\npfc = true", 1);
    let s = Scenario::parse(&text, "pfc.toml").unwrap();
    let (topo, _) = crate::net::Topology::from_scenario(&s, 1).unwrap();
    // Ethernet-like links only (the E3 link's cells stay lossy).
    let frames: Vec<_> = topo.hosts.iter().filter(|h| !h.link.is_atm()).collect();
    assert!(!frames.is_empty());
    assert!(
        topo.hosts
            .iter()
            .filter(|h| h.link.is_atm())
            .all(|h| h.link.pfc.is_none())
    );
    for h in frames {
        let p = h.link.pfc.expect("lossless");
        // XOFF a quarter of the 512-frame buffer, XON half of that, in MTU-sized frames.
        let frame = h.link.mtu_frame().1;
        assert_eq!((p.xoff, p.xon), (128 * frame, 64 * frame));
        assert_eq!(
            p.headroom,
            crate::net::PfcSpec::headroom_for(h.link.rate.unwrap(), h.link.delay.as_nanos(), frame)
        );
    }
    let text = text.replacen("pfc = true", "pfc = true\npfc_xoff = \"8 frames\"", 1);
    let (topo, _) =
        crate::net::Topology::from_scenario(&Scenario::parse(&text, "pfc.toml").unwrap(), 1)
            .unwrap();
    let h = topo.hosts.iter().find(|h| !h.link.is_atm()).unwrap();
    let (frame, p) = (h.link.mtu_frame().1, h.link.pfc.unwrap());
    assert_eq!((p.xoff, p.xon), (8 * frame, 4 * frame));
    let (topo, _) =
        crate::net::Topology::from_scenario(&Scenario::parse(GOOD, "good.toml").unwrap(), 1)
            .unwrap();
    assert!(topo.hosts.iter().all(|h| h.link.pfc.is_none()));
    let e = error(&GOOD.replacen(
        "epd_threshold = 0.5",
        "epd_threshold = 0.5\npfc_xoff = \"8 frames\"",
        1,
    ));
    assert_eq!(e.key, "switch[0].pfc_xoff", "{e}");
}

#[test]
fn trimming_reaches_the_switchs_queues() {
    let text = GOOD.replacen("epd_threshold = 0.5", "epd_threshold = 0.5\ntrim = true", 1);
    let s = Scenario::parse(&text, "trim.toml").unwrap();
    assert!(s.switches[0].trim);
    let (topo, _) = crate::net::Topology::from_scenario(&s, 1).unwrap();
    assert!(topo.hosts.iter().all(|h| h.link.trim));
    let (topo, _) =
        crate::net::Topology::from_scenario(&Scenario::parse(GOOD, "good.toml").unwrap(), 1)
            .unwrap();
    assert!(topo.hosts.iter().all(|h| !h.link.trim));
    let e = error(&GOOD.replacen("epd_threshold = 0.5", "epd_threshold = 0.5\ntrim = 1", 1));
    assert_eq!(e.key, "switch[0].trim", "{e}");
}

#[test]
fn ndp_is_a_transport_of_tput_workloads_only() {
    let ok = |text: &str| Scenario::parse(text, "w.toml");
    let base = "name = \"n\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
                [[link]]\nends = [\"a\", \"b\"]\ntech = \"gige\"\n[[workload]]\n";
    let s = ok(&format!(
        "{base}kind = \"tput\"\nfrom = [\"a\"]\nto = \"b\"\ntransport = \"ndp\"\n"
    ))
    .unwrap();
    assert!(s.workloads[0].ndp);
    let s = ok(&format!(
        "{base}kind = \"tput\"\nfrom = [\"a\"]\nto = \"b\"\n"
    ))
    .unwrap();
    assert!(!s.workloads[0].ndp && !s.workloads[0].dcqcn);
    let s = ok(&format!(
        "{base}kind = \"tput\"\nfrom = [\"a\"]\nto = \"b\"\ntransport = \"dcqcn\"\n"
    ))
    .unwrap();
    assert!(s.workloads[0].dcqcn && !s.workloads[0].ndp);
    let e = ok(&format!(
        "{base}kind = \"rr\"\nfrom = [\"a\"]\nto = \"b\"\ntransport = \"ndp\"\n"
    ))
    .unwrap_err();
    assert_eq!(e.key, "workload[0].transport", "{e}");
}

#[test]
fn red_marking_reaches_the_switchs_queues() {
    let text = GOOD.replacen(
        "epd_threshold = 0.5",
        "epd_threshold = 0.5\necn_red = \"dcqcn\"",
        1,
    );
    let s = Scenario::parse(&text, "red.toml").unwrap();
    assert_eq!(s.switches[0].ecn_red, Some(crate::net::RedSpec::DCQCN));
    let (topo, _) = crate::net::Topology::from_scenario(&s, 1).unwrap();
    assert!(
        topo.hosts
            .iter()
            .all(|h| h.link.ecn_red == Some(crate::net::RedSpec::DCQCN))
    );
    let e = error(&GOOD.replacen(
        "epd_threshold = 0.5",
        "epd_threshold = 0.5\necn_red = \"steep\"",
        1,
    ));
    assert_eq!(e.key, "switch[0].ecn_red", "{e}");
}

#[test]
fn idle_share_and_gain_bound_follow_the_transfer_share() {
    let [(k0, idle), (k1, gain)] = Metric::idle(40.0);
    assert_eq!((k0.as_str(), k1.as_str()), ("idle_share", "gain_bound"));
    assert!((idle - 0.6).abs() < 1e-12 && (gain - 2.5).abs() < 1e-12);
}

#[test]
fn a_shared_buffer_reaches_the_switch_with_its_threshold() {
    let shared = |keys: &str| {
        GOOD.replacen(
            "buffer = \"512 frames\"\ndrop = \"epd\"\nepd_threshold = 0.5",
            keys,
            1,
        )
    };
    let s = Scenario::parse(&shared("buffer = \"shared 2MB\"\nalpha = 0.125"), "s.toml").unwrap();
    let spec = crate::net::SharedBufferSpec {
        bytes: 2_000_000,
        alpha: 0.125,
    };
    assert_eq!(s.switches[0].shared, Some(spec));
    let (topo, _) = crate::net::Topology::from_scenario(&s, 1).unwrap();
    assert_eq!(topo.switches[0].shared_buffer, Some(spec));
    // Each queue may grow to the whole buffer; the threshold holds it below.
    assert!(
        topo.hosts
            .iter()
            .all(|h| h.link.buffer == Buffer::bytes(2_000_000))
    );
    let s = Scenario::parse(&shared("buffer = \"shared 1MB\""), "s.toml").unwrap();
    assert_eq!(s.switches[0].shared.map(|b| b.alpha), Some(1.0));
    for (keys, key) in [
        ("buffer = \"shared 100 frames\"", "switch[0].buffer"),
        ("buffer = \"100 frames\"\nalpha = 1", "switch[0].alpha"),
        ("buffer = \"shared 2MB\"\nalpha = 100", "switch[0].alpha"),
    ] {
        assert_eq!(error(&shared(keys)).key, key, "{keys}");
    }
}
