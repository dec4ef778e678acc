//! The layer-by-layer rate chain of a link: line -> frames or cells -> cell payload -> AAL5 SDU ->
//! IP -> transport payload, with what each step costs.

use serde::Serialize;

use crate::tech::{
    AAL5_TRAILER_BYTES, CELL_BYTES, CELL_HEADER_BYTES, CELL_PAYLOAD_BYTES, Framing, Tech,
    TechError, Transport, aal5_pad,
};

/// One layer of the chain: the rate of the bytes that exist at this layer when datagrams of the
/// chosen size are sent back to back.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Layer {
    /// What the bytes at this layer are.
    pub name: String,
    /// Their rate, bits/s (fractional: exact ratios of the link rate).
    pub rate_bps: f64,
    /// Bytes of this layer per datagram (for the line layer, the wire bytes scaled by line/rate).
    pub bytes: f64,
    /// What was removed going from the previous layer to this one.
    pub removed: String,
}

/// The whole chain for one technology, datagram size and transport.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Chain {
    /// The technology as configured.
    pub tech: Tech,
    /// IP datagram size, bytes.
    pub datagram: u64,
    /// The transport whose payload is the last layer.
    pub transport: String,
    /// Cells per datagram on ATM.
    pub cells: Option<u64>,
    /// Layers from the line down to the transport payload.
    pub layers: Vec<Layer>,
    /// Transport payload rate over the rate available to frames or cells, 0..=1.
    pub efficiency: f64,
}

impl Chain {
    /// The rate chain for datagrams of `datagram` bytes carrying `transport` over `tech`.
    pub fn new(tech: &Tech, datagram: u64, transport: Transport) -> Result<Chain, TechError> {
        let headers = transport.header_bytes();
        if datagram <= headers {
            return Err(TechError::TooSmall {
                size: datagram,
                headers,
            });
        }
        let wire = tech.wire_bytes(datagram) as f64;
        let rate = tech.rate.0 as f64;
        let at = |bytes: f64| rate * bytes / wire;
        let encap = tech.encap.header_bytes();
        let sdu = tech.sdu_bytes(datagram);
        let mut layers = vec![Layer {
            name: "line (signalling)".into(),
            rate_bps: tech.line_rate.0 as f64,
            bytes: wire * tech.line_rate.0 as f64 / rate,
            removed: String::new(),
        }];
        match tech.framing {
            Framing::Cells => {
                let cells = tech.cells(datagram).unwrap_or(0);
                layers.push(Layer {
                    name: "cell stream".into(),
                    rate_bps: rate,
                    bytes: wire,
                    removed: physical_overhead(tech),
                });
                layers.push(Layer {
                    name: "cell payload".into(),
                    rate_bps: at((cells * CELL_PAYLOAD_BYTES) as f64),
                    bytes: (cells * CELL_PAYLOAD_BYTES) as f64,
                    removed: format!("{CELL_HEADER_BYTES}-byte header in each of {cells} cells"),
                });
                layers.push(Layer {
                    name: "AAL5 SDU".into(),
                    rate_bps: at(sdu as f64),
                    bytes: sdu as f64,
                    removed: format!(
                        "AAL5 trailer {AAL5_TRAILER_BYTES} + padding {}",
                        aal5_pad(sdu)
                    ),
                });
            }
            Framing::Frame(f) => {
                let frame = wire - (f.preamble + f.gap) as f64;
                layers.push(Layer {
                    name: "frame slots".into(),
                    rate_bps: rate,
                    bytes: wire,
                    removed: physical_overhead(tech),
                });
                layers.push(Layer {
                    name: "MAC frame".into(),
                    rate_bps: at(frame),
                    bytes: frame,
                    removed: format!("preamble {} + gap {}", f.preamble, f.gap),
                });
                let pad = frame - (f.header + sdu + f.trailer) as f64;
                layers.push(Layer {
                    name: "MAC payload".into(),
                    rate_bps: at(sdu as f64),
                    bytes: sdu as f64,
                    removed: if pad > 0.0 {
                        format!(
                            "header {} + trailer {} + padding {pad}",
                            f.header, f.trailer
                        )
                    } else {
                        format!("header {} + trailer {}", f.header, f.trailer)
                    },
                });
            }
        }
        layers.push(Layer {
            name: "IP datagram".into(),
            rate_bps: at(datagram as f64),
            bytes: datagram as f64,
            removed: format!("{} encapsulation {encap}", tech.encap),
        });
        let payload = datagram - headers;
        layers.push(Layer {
            name: format!("{} payload", transport_label(transport)),
            rate_bps: at(payload as f64),
            bytes: payload as f64,
            removed: format!("IP + {} headers {headers}", transport_label(transport)),
        });
        Ok(Chain {
            tech: tech.clone(),
            datagram,
            transport: transport.name(),
            cells: tech.cells(datagram),
            efficiency: payload as f64 / wire,
            layers,
        })
    }

    /// The transport payload rate, bits/s (the last layer).
    pub fn goodput_bps(&self) -> f64 {
        self.layers.last().map_or(0.0, |l| l.rate_bps)
    }

    /// The rate of the layer called `name`, bits/s.
    pub fn layer_bps(&self, name: &str) -> Option<f64> {
        self.layers
            .iter()
            .find(|l| l.name == name)
            .map(|l| l.rate_bps)
    }

    /// Overhead of everything between the cell payload (or MAC payload) and the transport
    /// payload, as a fraction of the former: Sandia's "AAL5 and TCP/IP overhead".
    pub fn upper_overhead(&self) -> f64 {
        let base = self
            .layer_bps("cell payload")
            .or_else(|| self.layer_bps("MAC payload"))
            .unwrap_or(0.0);
        if base == 0.0 {
            return 0.0;
        }
        1.0 - self.goodput_bps() / base
    }

    /// The chain as a text table.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{}: {} B IP datagrams{}, {}\n",
            self.tech,
            self.datagram,
            self.cells
                .map_or(String::new(), |c| format!(" in {c} cells")),
            self.transport
        );
        out.push_str(&format!(
            "{:<16} {:>13} {:>10}  {}\n",
            "layer", "rate Mbit/s", "bytes", "removed"
        ));
        for l in &self.layers {
            out.push_str(&format!(
                "{:<16} {:>13.3} {:>10.1}  {}\n",
                l.name,
                l.rate_bps / 1e6,
                l.bytes,
                l.removed
            ));
        }
        out.push_str(&format!(
            "efficiency {:.4} of the {} rate; overhead above the {} {:.2}%\n",
            self.efficiency,
            if self.tech.is_cells() {
                "cell-stream"
            } else {
                "frame"
            },
            if self.tech.is_cells() {
                "cell payload"
            } else {
                "MAC payload"
            },
            self.upper_overhead() * 100.0
        ));
        out
    }
}

fn transport_label(t: Transport) -> &'static str {
    match t {
        Transport::Tcp { .. } => "TCP",
        Transport::Udp => "UDP",
        Transport::Ip => "IP",
    }
}

fn physical_overhead(tech: &Tech) -> String {
    if tech.line_rate == tech.rate {
        return "none".into();
    }
    if let Ok(preset) = Tech::preset(&tech.name)
        && preset.rate != tech.rate
    {
        return format!(
            "shaped to {} (the {} {} carries {})",
            tech.rate,
            tech.name,
            if tech.is_cells() {
                "cell stream"
            } else {
                "link"
            },
            preset.rate
        );
    }
    let what = match tech.name.as_str() {
        n if n.starts_with("oc3c") => "SONET section, line and path overhead (10 of 270 columns)",
        n if n.starts_with("oc12c") => "SONET section, line and path overhead (40 of 1080 columns)",
        "ds3" => "DS-3 framing and PLCP (12 cells per 125 us)",
        "e3" => "G.832 frame overhead (530 of 537 bytes per 125 us)",
        "taxi100" | "fddi" | "ethernet100" => "4B/5B line code",
        "gige" | "gige-jumbo" | "fc266" | "fc1062" => "8B/10B line code",
        "10gige" | "10gige-jumbo" => "64B/66B line code",
        "ethernet10" => "Manchester line code",
        _ => "physical-layer overhead",
    };
    what.into()
}

/// The SONET payload rate Sandia's study (000) states for OC-3c, bits/s ("151.488 Mbps").
pub const SANDIA_SONET_PAYLOAD_BPS: f64 = 151.488e6;
/// The usable rate Sandia's study (000) states after cell headers, bits/s ("137.19 Mbps").
pub const SANDIA_USABLE_BPS: f64 = 137.19e6;

/// Sandia's OC-3c arithmetic (study 000) set beside the standard one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SandiaNote {
    /// SONET payload the paper states, bits/s (151.488 Mbit/s).
    pub paper_payload_bps: f64,
    /// Usable rate the paper states, bits/s (137.19 Mbit/s).
    pub paper_usable_bps: f64,
    /// The paper's payload in 125 us frames: bytes per frame, and 9-row columns.
    pub paper_payload_columns: f64,
    /// The standard STS-3c payload, bits/s (149.76 Mbit/s: 260 columns).
    pub standard_payload_bps: f64,
    /// The standard usable cell payload rate, bits/s (149.76 * 48/53).
    pub standard_usable_bps: f64,
    /// AAL5 + LLC/SNAP + TCP/IP overhead at the chain's datagram size, 0..=1.
    pub upper_overhead: f64,
    /// TCP goodput from the paper's usable rate, bits/s.
    pub paper_tcp_bps: f64,
    /// TCP goodput from the standard usable rate, bits/s.
    pub standard_tcp_bps: f64,
}

impl SandiaNote {
    /// Sandia's figures against the chain of an OC-3c `chain` (9180-byte CLIP for the paper's case).
    pub fn new(chain: &Chain, paper_payload_bps: f64, paper_usable_bps: f64) -> SandiaNote {
        let standard_payload_bps = chain.layer_bps("cell stream").unwrap_or(0.0);
        let standard_usable_bps =
            standard_payload_bps * CELL_PAYLOAD_BYTES as f64 / CELL_BYTES as f64;
        let keep = 1.0 - chain.upper_overhead();
        SandiaNote {
            paper_payload_bps,
            paper_usable_bps,
            paper_payload_columns: paper_payload_bps / (8.0 * 8000.0 * 9.0),
            standard_payload_bps,
            standard_usable_bps,
            upper_overhead: chain.upper_overhead(),
            paper_tcp_bps: paper_usable_bps * keep,
            standard_tcp_bps: standard_usable_bps * keep,
        }
    }

    /// The explanation as text.
    pub fn text(&self) -> String {
        format!(
            "Sandia (000) states {p:.3} Mbit/s of SONET payload and {pu:.2} Mbit/s usable.\n\
             {p:.3} Mbit/s is {bytes:.0} bytes per 125 us frame = {cols:.0} of the 270 columns of \
             an STS-3c frame;\n\
             the standard STS-3c payload is 260 columns (9 columns of section and line overhead \
             and 1 of path overhead removed) = {s:.3} Mbit/s.\n\
             Both then lose 5 of every 53 bytes to cell headers: {p:.3} * 48/53 = {pu2:.3} \
             (the paper's {pu:.2}), {s:.3} * 48/53 = {su:.3}.\n\
             AAL5 + LLC/SNAP + TCP/IP take {o:.2}% more at this datagram size (the paper: \
             'less than 2%'),\n\
             leaving {pt:.2} Mbit/s from the paper's figure and {st:.2} Mbit/s from the standard \
             one: both 'roughly 135 Mbps'.\n",
            p = self.paper_payload_bps / 1e6,
            pu = self.paper_usable_bps / 1e6,
            pu2 = self.paper_payload_bps * 48.0 / 53.0 / 1e6,
            bytes = self.paper_payload_bps / 8.0 / 8000.0,
            cols = self.paper_payload_columns,
            s = self.standard_payload_bps / 1e6,
            su = self.standard_usable_bps / 1e6,
            o = self.upper_overhead * 100.0,
            pt = self.paper_tcp_bps / 1e6,
            st = self.standard_tcp_bps / 1e6,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oc3c_clip_chain() {
        let oc3 = Tech::preset("oc3c").unwrap();
        let c = Chain::new(&oc3, 9180, Transport::Tcp { options: 0 }).unwrap();
        assert_eq!(c.cells, Some(192));
        let r: Vec<f64> = c.layers.iter().map(|l| l.rate_bps).collect();
        assert_eq!(r[0], 155.52e6);
        assert_eq!(r[1], 149.76e6);
        // 192 cells * 48 of 192 * 53.
        assert!((r[2] - 149.76e6 * 48.0 / 53.0).abs() < 1e-3);
        // 9140 of 10176 wire bytes.
        assert!((c.goodput_bps() - 149.76e6 * 9140.0 / 10176.0).abs() < 1e-3);
        assert!(c.upper_overhead() < 0.02);
    }

    #[test]
    fn ethernet_chain_pads_small_frames() {
        let e = Tech::preset("ethernet10").unwrap();
        let c = Chain::new(&e, 30, Transport::Udp).unwrap();
        assert_eq!(c.layers[2].bytes, 64.0);
        assert!(c.layers[3].removed.contains("padding"), "{:?}", c.layers[3]);
        assert!((c.goodput_bps() - 10e6 * 2.0 / 84.0).abs() < 1e-6);
    }
}
