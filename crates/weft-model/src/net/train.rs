//! A frame in flight between two parts of the switch, as the train of units (cells, or the
//! whole frame) that carries it: when its first unit arrives, how far apart the units are, and
//! how many there are.

/// A frame on its way into a switch port or queue: its units arrive at `first`,
/// `first + spacing`, ... (`units` of them), in ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Train<F> {
    /// The frame.
    pub frame: F,
    /// Arrival of the first unit (ns).
    pub first: u64,
    /// Time between units (ns).
    pub spacing: u64,
    /// Number of units (cells, or 1 for a frame).
    pub units: u64,
    /// The circuit (flow) it belongs to: the host it entered the network from. Queues keep
    /// their drop-policy state per flow, and count per flow.
    pub flow: u32,
    /// Cells of it were lost upstream: it still occupies queues but is not delivered.
    pub damaged: bool,
    /// A policer tagged cells of it (CLP = 1): queues above their CLP threshold drop its cells
    /// (the frame as the unit of tagging: see [`crate::net::LinkSpec::clp_threshold`]).
    pub tagged: bool,
    /// Its VPI/VCI on the link it is on, when the switches forward by circuit
    /// ([`super::VcSwitch`]); unused otherwise.
    pub vc: crate::vc::Vc,
    /// A congested ATM queue set EFCI on its cells ([`crate::net::LinkSpec::efci_threshold`]).
    pub efci: bool,
    /// Forward RM cells of an ABR source travelling with it ([`crate::shaper::AbrSource`]):
    /// cells of the train on an ATM line, counted in `units` beside the frame's own.
    pub rm: super::abr_loop::RmMark,
    /// What a lossless input of the switch counted of it, released when it leaves the output
    /// that holds it (set by the switch; `None` where the input released it at once or never
    /// counted it, and on every train a line or a fabric makes).
    pub counted: Option<Counted>,
}

/// What a lossless input counted of a frame ([`super::PfcIngress`]): the switch port it came in
/// by, its class and its bytes as it came in (before any trim).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    /// The switch port it came in by.
    pub from: u32,
    /// Its priority class as it came in.
    pub class: u8,
    /// Its bytes as it came in.
    pub bytes: u32,
}

impl<F> Train<F> {
    /// The forward RM cells among its cells (on an ATM line).
    #[inline]
    pub fn rm_cells(&self) -> u64 {
        u64::from(self.rm.cells)
    }

    /// Arrival of the last unit (ns).
    #[inline]
    pub fn last(&self) -> u64 {
        self.first + self.spacing * self.units.saturating_sub(1)
    }

    /// A train of `units` units from `first_end` to `last_end` (the instants the first and last
    /// left a line, ns), spaced evenly, shifted by `delay` (ns).
    #[inline]
    pub fn between(
        frame: F,
        first_end: u64,
        last_end: u64,
        units: u64,
        delay: u64,
        flow: u32,
    ) -> Self {
        let units = units.max(1);
        let spacing = if units > 1 {
            last_end.saturating_sub(first_end) / (units - 1)
        } else {
            0
        };
        let last = last_end + delay;
        Train {
            frame,
            first: last - spacing * (units - 1),
            spacing,
            units,
            flow,
            damaged: false,
            tagged: false,
            vc: crate::vc::Vc::default(),
            efci: false,
            rm: Default::default(),
            counted: None,
        }
    }
}
