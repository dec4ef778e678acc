//! A simulated host's machine is shared by everything that runs on it: a server answering many
//! clients queues them, and a host that sends and receives at once gives each direction what
//! the other leaves. Each test fails if every application gets a machine of its own.

use weft_model::calc::evaluate;
use weft_model::scenario::{Metric, Scenario};

/// Hosts `c1..cN` and `srv` on one switch over FDDI, every host with `costs`.
fn star(clients: usize, costs: &str, workloads: &str) -> Scenario {
    let mut text = String::from("name = \"star\"\n");
    let mut hosts: Vec<String> = (1..=clients).map(|k| format!("c{k}")).collect();
    hosts.push("srv".into());
    for h in &hosts {
        text += &format!("[[host]]\nname = \"{h}\"\ncosts = \"{costs}\"\n");
    }
    text += "[[switch]]\nname = \"sw\"\n";
    for h in &hosts {
        text += &format!("[[link]]\nends = [\"{h}\", \"sw\"]\ntech = \"fddi\"\ndelay = \"1us\"\n");
    }
    text += workloads;
    Scenario::parse(&text, "star.toml").expect("valid scenario")
}

fn sim(s: &Scenario) -> Vec<serde_json::Value> {
    weft_sim::scenario::run(s, 1).samples
}

/// Four clients asking one echo server at once wait for each other at its processor: the round
/// trip is four times the server's work per request, as the closed form says, where one client
/// alone sees the lone round trip.
#[test]
fn a_server_queues_its_clients() {
    let clients = r#"["c1", "c2", "c3", "c4"]"#;
    let w = |together: bool| {
        format!(
            "[[workload]]\nkind = \"rr\"\nfrom = {clients}\nto = \"srv\"\nsize = 64\ncount = 200\n\
             together = {together}\n"
        )
    };
    let apart = star(4, "sparc20-m50-solaris2.3", &w(false));
    let lone = sim(&apart)[0][Metric::RTT_MEAN_US].as_f64().expect("rtt");
    let s = star(4, "sparc20-m50-solaris2.3", &w(true));
    let x = &sim(&s)[0];
    let shared = x[Metric::RTT_MEAN_US].as_f64().expect("rtt");
    let model = &evaluate(&s)[0];
    let cycle = model.metrics[Metric::RTT_MEAN_US];
    assert!(
        shared > 1.5 * lone,
        "lone {lone} us, four at once {shared} us: {x}"
    );
    assert!(
        (shared / cycle - 1.0).abs() < 0.02,
        "sim {shared} us against the closed form's {cycle} us: {x} {:?}",
        model.notes
    );
    assert!(
        model.metrics["shared_utilisation"] > 0.99,
        "{:?}",
        model.metrics
    );
    // Each client's sessions all complete: the server is slow, not lossy.
    assert_eq!(x["sessions_failed"], 0, "{x}");
}

/// One host running four client processes, each asking a server of its own: the client host's
/// processor is what they wait for.
#[test]
fn client_processes_share_their_host() {
    let w = format!(
        "[[workload]]\nkind = \"rr\"\nfrom = \"srv\"\nto = {}\nsize = 64\ncount = 200\n\
         together = true\n",
        r#"["c1", "c2", "c3", "c4"]"#
    );
    let s = star(4, "sparc20-m50-solaris2.3", &w);
    let x = &sim(&s)[0];
    let shared = x[Metric::RTT_MEAN_US].as_f64().expect("rtt");
    let model = &evaluate(&s)[0];
    let cycle = model.metrics[Metric::RTT_MEAN_US];
    let lone = model.metrics["lone_rtt_us"];
    assert!(
        shared > 1.5 * lone,
        "lone {lone} us, four at once {shared} us: {x}"
    );
    assert!(
        (shared / cycle - 1.0).abs() < 0.02,
        "sim {shared} us against the closed form's {cycle} us: {x} {:?}",
        model.notes
    );
}

/// A host that sends one TCP transfer and receives another at once does both on one processor:
/// each direction gets about half of what one alone gets.
#[test]
fn sending_and_receiving_share_a_host() {
    let w = |from: &str, to: &str| {
        format!(
            "[[workload]]\nkind = \"tput\"\nfrom = {from}\nto = {to}\nwindow = 64512\ntime = \"2s\"\n"
        )
    };
    let one = star(1, "indigo-r4000", &w(r#""c1""#, r#""srv""#));
    let alone = sim(&one)[0][Metric::GOODPUT_MBPS]
        .as_f64()
        .expect("goodput");
    let both = star(
        1,
        "indigo-r4000",
        &w(r#"["c1", "srv"]"#, r#"["c1", "srv"]"#),
    );
    let x = &sim(&both)[0];
    let flows = x["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2, "{x}");
    for f in flows {
        let g = f["goodput_mbps"].as_f64().expect("goodput");
        assert!(
            (g / (alone / 2.0) - 1.0).abs() < 0.1,
            "one direction of two {g} Mbit/s against half of one alone, {alone}: {x}"
        );
    }
}

/// A message-passing rank pays its host's calls: a 64-byte ping-pong between two Sparc 20s
/// (427 us a `write` or `read` call, a copy and the rest per byte) takes a send call and a
/// receive call each way, not the few microseconds FDDI takes to carry it, which is all a
/// rank on a host without costs would see.
#[test]
fn a_rank_pays_its_hosts_calls() {
    let s = star(
        1,
        "sparc20-m50-solaris2.3",
        "[[workload]]\nkind = \"mp\"\nranks = [\"c1\", \"srv\"]\npattern = \"pingpong\"\n\
         size = 64\niterations = 20\n",
    );
    let one_way = sim(&s)[0]["mean_us"].as_f64().expect("mean_us");
    let calls = 2.0 * 427.154_646;
    assert!(one_way > calls && one_way < calls * 1.1, "{one_way}");
}

/// A file transfer (FTP) pays a copy more per byte on each path than ttcp, between the file
/// cache and the process: between two Sparc 20s (16.2 ns a copy) over FDDI with no disks, the
/// sender's path binds, and the file's rate falls from ttcp's by the copy's share of that
/// path's cost per byte (0.917), as the model's closed form says. The rate is read from the
/// time 8 MiB more of the file takes (what a transfer's start and end cost cancels). Without
/// the copy the file moves at ttcp's rate.
#[test]
fn a_file_transfer_pays_its_cache_copies() {
    let w = |file: &str| {
        format!(
            "[[workload]]\nkind = \"tput\"\nfrom = \"c1\"\nto = \"srv\"\nwindow = 65536\n\
             time = \"20s\"\n{file}"
        )
    };
    let host = "sparc20-m50-solaris2.3";
    let ttcp = sim(&star(1, host, &w("")))[0][Metric::GOODPUT_MBPS]
        .as_f64()
        .expect("goodput");
    let seconds = |mib: u64| {
        let s = star(1, host, &w(&format!("file = \"{mib}MiB\"\n")));
        sim(&s)[0]["seconds"].as_f64().expect("seconds")
    };
    let file = 8.0 * 8.0 * 1_048_576.0 / (seconds(12) - seconds(4)) / 1e6;
    // The send path per byte, its 8 KiB write calls spread over their bytes, with and without
    // the copy.
    let h = weft_model::host::presets::sparc20_m50_solaris23();
    let path = h.per_byte_ns(weft_model::host::Direction::Send) + h.send_call_ns / 8192.0;
    let want = path / (path + h.copy_ns_per_byte);
    assert!(
        (file / ttcp / want - 1.0).abs() < 0.01,
        "ftp {file} against ttcp {ttcp} Mbit/s: {} where the copy gives {want}",
        file / ttcp
    );
    let model = evaluate(&star(1, host, &w("file = \"12MiB\"\n")))[0].metrics[Metric::GOODPUT_MBPS];
    assert!(
        (file / model - 1.0).abs() < 0.01,
        "sim {file} model {model}"
    );
}
