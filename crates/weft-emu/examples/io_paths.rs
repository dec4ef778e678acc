//! Forwards frames between two ports as fast as it can, through AF_PACKET sockets on two
//! existing interfaces (`packet IF0 IF1`) or through two TAP devices it creates
//! (`tap NAME0 NAME1`), for `SECS` seconds, busy-polling like the switch; prints frames forwarded
//! per second. `bench/emu-io.sh` sets up the namespaces and the traffic and compares the two.
//! With `tap`, it prints `ready` once the devices exist, so that the script can move them into
//! the hosts' namespaces, then waits for a line on stdin before it starts the clock.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use weft_sys::{PacketOptions, PacketSocket, TapDevice};

enum Port {
    Packet(PacketSocket),
    Tap(TapDevice),
}

impl Port {
    fn recv(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        match self {
            Port::Packet(s) => Ok(s.recv(buf)?.map(|r| r.stored)),
            Port::Tap(t) => t.recv(buf),
        }
    }
    fn send(&self, frame: &[u8]) -> bool {
        match self {
            Port::Packet(s) => s.send(frame).is_ok(),
            Port::Tap(t) => t.send(frame).is_ok(),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, a, b, secs] = args.as_slice() else {
        return Err("usage: io_paths packet|tap IF0 IF1 SECS".into());
    };
    let secs: f64 = secs.parse()?;
    let ports = match mode.as_str() {
        "packet" => [
            Port::Packet(PacketSocket::open(a, PacketOptions::switch_port(8 << 20))?),
            Port::Packet(PacketSocket::open(b, PacketOptions::switch_port(8 << 20))?),
        ],
        "tap" => {
            let p = [
                Port::Tap(TapDevice::create(a)?),
                Port::Tap(TapDevice::create(b)?),
            ];
            println!("ready");
            std::io::stdout().flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            p
        }
        _ => return Err(format!("unknown mode {mode:?}").into()),
    };
    let mut buf = vec![0u8; 1 << 16];
    let (mut frames, mut failed) = (0u64, 0u64);
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        for (i, p) in ports.iter().enumerate() {
            for _ in 0..64 {
                let Some(n) = p.recv(&mut buf)? else { break };
                if ports[1 - i].send(&buf[..n]) {
                    frames += 1;
                } else {
                    failed += 1;
                }
            }
        }
    }
    let el = start.elapsed().as_secs_f64();
    println!("{mode}: {frames} frames forwarded ({failed} refused) in {el:.2} s");
    Ok(())
}
