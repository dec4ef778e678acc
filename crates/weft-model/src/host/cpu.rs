//! A host's processors, I/O bus and adapter as resources that everything on the host shares.
//!
//! [`HostCpu`] is a handle on one host's machine: its processors (one or more, each a server with
//! a busy-until time), the threads of its applications (each runs one piece of work at a time),
//! its interrupt context (the network adapter's receive work, one packet at a time) and the path
//! frames take between memory and the wire (the I/O bus, shared by both directions, and the
//! adapter's transmit and receive engines). Cloning a handle, or asking it for a
//! [`HostCpu::thread`], gives another handle on the same machine: every application of a host
//! charges the same processors and the same bus, whichever workload drives it. So a server that
//! answers seven clients queues their requests, and a host that sends and receives at once gives
//! each direction what the other leaves.
//!
//! Work is served in the order it is asked for (no preemption): a piece asked for at `now` by a
//! thread starts when the thread's previous piece has ended and a processor is free (the one
//! free earliest), and the caller learns at once when it will end. A thread whose previous work
//! ended before `now` was blocked (in `read`, or in `write` on a full socket buffer): its next
//! call first pays for waking it: [`HostCosts::wakeup_ns`] if no processor had other work (the
//! host comes back from its idle loop), [`HostCosts::switch_ns`] (a context switch) if the host
//! was busy with other threads. A thread that is still busy when its next input arrives pays
//! nothing extra: a server kept busy by many clients finds their requests waiting and reads
//! them without sleeping in between, which is why it answers each faster than it answers one
//! client alone, and a host running many client processes switches among them at the cost of a
//! context switch, not of a wakeup from idle.
//!
//! Time comes only from the caller's `now`; the handle holds no clock.

use std::cell::RefCell;
use std::rc::Rc;

use super::{Direction, HostCosts};
use crate::time::{Duration, Instant};
use crate::units::Rate;

/// The thread index of the interrupt context.
const INTERRUPT: usize = 0;

/// The shared state of one host's machine.
#[derive(Debug)]
struct Machine {
    costs: HostCosts,
    /// When each processor is next free.
    processors: Vec<Instant>,
    /// When each thread's last piece of work ends ([`INTERRUPT`] first).
    threads: Vec<Instant>,
    /// Work done, summed over processors.
    busy: Duration,
    /// When the I/O bus is next free.
    bus: Instant,
    /// When the adapter's transmit and receive engines are next free.
    nic_tx: Instant,
    nic_rx: Instant,
    /// Calls that found their thread blocked on an idle host, and on a busy one.
    wakeups: u64,
    switches: u64,
}

impl Machine {
    /// Runs `work` for thread `t`, ready at `ready`; returns when it ends.
    fn run(&mut self, t: usize, ready: Instant, work: Duration) -> Instant {
        let ready = ready.max(self.threads[t]);
        // The processor that can start it first (the lowest index among equals). Work of no
        // length still waits for one: a packet that costs nothing to send leaves when the
        // processor has finished what was asked before it.
        let (p, free) = self
            .processors
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, f)| (f.max(ready), i))
            .unwrap_or((0, Instant::ZERO));
        let end = free.max(ready) + work;
        if let Some(slot) = self.processors.get_mut(p) {
            *slot = end;
        }
        self.threads[t] = end;
        self.busy += work;
        end
    }

    /// A call on thread `t` asked for at `now`: waking the thread first if it was blocked (its
    /// last work ended before `now`): from idle if every processor is free at `now`, else a
    /// context switch; then `work`.
    /// `idle`, if given, says whether the host was idle when what the call waited for arrived
    /// (in place of looking at `now`).
    fn call(&mut self, t: usize, now: Instant, work: Duration, idle: Option<bool>) -> Instant {
        let blocked = self.threads[t] < now;
        let wake = if !blocked {
            Duration::ZERO
        } else if idle.unwrap_or_else(|| self.idle(now)) {
            self.wakeups += 1;
            ns(self.costs.wakeup_ns)
        } else {
            self.switches += 1;
            ns(self.costs.switch_ns)
        };
        self.run(t, now, wake + work)
    }

    /// No processor has work at `now`.
    fn idle(&self, now: Instant) -> bool {
        self.processors.iter().all(|&p| p <= now)
    }

    /// `bytes` through a FIFO resource free at `*free` with `rate`, from `ready`; returns when
    /// they are through (at once without a rate).
    fn through(free: &mut Instant, rate: Option<Rate>, ready: Instant, bytes: u64) -> Instant {
        let Some(r) = rate.filter(|r| r.0 > 0) else {
            return ready;
        };
        let start = (*free).max(ready);
        *free = start + Duration::from_secs_f64(bytes as f64 * 8.0 / r.0 as f64);
        *free
    }
}

fn ns(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e9)
}

/// A handle on one host's processors, bus and adapter, for one thread of it (see the module's
/// documentation). `Clone` gives another handle on the same thread of the same machine.
#[derive(Clone, Debug)]
pub struct HostCpu {
    machine: Rc<RefCell<Machine>>,
    thread: usize,
}

impl HostCpu {
    /// A new idle machine with `costs` ([`HostCosts::cpus`] processors), and a handle on its
    /// first thread.
    pub fn new(costs: HostCosts) -> Self {
        let processors = vec![Instant::ZERO; costs.cpus.max(1) as usize];
        HostCpu {
            machine: Rc::new(RefCell::new(Machine {
                costs,
                processors,
                threads: vec![Instant::ZERO; 2],
                busy: Duration::ZERO,
                bus: Instant::ZERO,
                nic_tx: Instant::ZERO,
                nic_rx: Instant::ZERO,
                wakeups: 0,
                switches: 0,
            })),
            thread: 1,
        }
    }

    /// A handle on a new thread (another process) of the same machine.
    pub fn thread(&self) -> HostCpu {
        let mut m = self.machine.borrow_mut();
        m.threads.push(Instant::ZERO);
        HostCpu {
            machine: Rc::clone(&self.machine),
            thread: m.threads.len() - 1,
        }
    }

    /// True if `other` is a handle on the same machine.
    pub fn same_machine(&self, other: &HostCpu) -> bool {
        Rc::ptr_eq(&self.machine, &other.machine)
    }

    /// The costs charged.
    pub fn costs(&self) -> HostCosts {
        self.machine.borrow().costs.clone()
    }

    /// Runs `work` on this thread, asked for at `now`; returns when it is done.
    pub fn run(&mut self, now: Instant, work: Duration) -> Instant {
        self.machine.borrow_mut().run(self.thread, now, work)
    }

    /// Runs `work` in the interrupt context, asked for at `now`; returns when it is done.
    pub fn interrupt(&mut self, now: Instant, work: Duration) -> Instant {
        self.machine.borrow_mut().run(INTERRUPT, now, work)
    }

    /// A write (or send) of `bytes` from this thread at `now`: the switch to the thread if it
    /// was blocked, the call if `call` (false: a blocked write going on), and the copies and
    /// the rest of the send path's work per byte. Returns when the bytes are in the kernel.
    pub fn write(&mut self, now: Instant, bytes: u64, call: bool) -> Instant {
        let mut m = self.machine.borrow_mut();
        let work = m.costs.cost(Direction::Send, bytes, 0, u64::from(call));
        m.call(self.thread, now, work, None)
    }

    /// A read (or receive) call of `bytes` on this thread at `now`: the switch to the thread
    /// if it was blocked, the call, and the receive path's work per byte. Returns when the
    /// application has the bytes.
    pub fn read(&mut self, now: Instant, bytes: u64) -> Instant {
        let mut m = self.machine.borrow_mut();
        let work = m.costs.cost(Direction::Receive, bytes, 0, 1);
        m.call(self.thread, now, work, None)
    }

    /// True if no processor of the host has work at `now` (it sits in its idle loop).
    pub fn idle(&self, now: Instant) -> bool {
        self.machine.borrow().idle(now)
    }

    /// A read of `bytes` at `now` as [`HostCpu::read`], for data that arrived when the host
    /// was `idle` or not ([`HostCpu::idle`] then): a blocked thread pays the wakeup from idle
    /// only if nothing else held a processor when its data came in, and a context switch if
    /// something did, even if that work has ended by `now` (as the arriving packet's own
    /// interrupt, queued behind it, has).
    pub fn read_arrived(&mut self, now: Instant, bytes: u64, idle: bool) -> Instant {
        let mut m = self.machine.borrow_mut();
        let work = m.costs.cost(Direction::Receive, bytes, 0, 1);
        m.call(self.thread, now, work, Some(idle))
    }

    /// As [`HostCpu::read_arrived`], for a daemon that asks `select` which socket is ready
    /// before it reads ([`HostCosts::select_ns`]): the select is the call that wakes it, and
    /// it pays the select whether it was blocked or not.
    pub fn select_read_arrived(&mut self, now: Instant, bytes: u64, idle: bool) -> Instant {
        let mut m = self.machine.borrow_mut();
        let work = ns(m.costs.select_ns) + m.costs.cost(Direction::Receive, bytes, 0, 1);
        m.call(self.thread, now, work, Some(idle))
    }

    /// A packet of `frame_bytes` leaves at `now`: this thread's per-packet send work, then the
    /// frame crosses the I/O bus and the adapter's transmit engine. Returns when the adapter
    /// has it (ready for the wire).
    pub fn transmit(&mut self, now: Instant, frame_bytes: u64) -> Instant {
        let mut guard = self.machine.borrow_mut();
        let m = &mut *guard;
        let work = m.costs.cost(Direction::Send, 0, 1, 0);
        let t = m.run(self.thread, now, work);
        let (bus, nic) = (m.costs.bus, m.costs.nic);
        let t = Machine::through(&mut m.bus, bus, t, frame_bytes);
        Machine::through(&mut m.nic_tx, nic, t, frame_bytes)
    }

    /// A packet of `frame_bytes` arrives from the wire at `now`: the adapter's receive engine
    /// and the I/O bus carry it into memory, then the interrupt and the per-packet receive work
    /// run in the interrupt context. Returns when the protocol has it.
    pub fn arrive(&mut self, now: Instant, frame_bytes: u64) -> Instant {
        let mut guard = self.machine.borrow_mut();
        let m = &mut *guard;
        let (bus, nic) = (m.costs.bus, m.costs.nic);
        let t = Machine::through(&mut m.nic_rx, nic, now, frame_bytes);
        let t = Machine::through(&mut m.bus, bus, t, frame_bytes);
        let work = m.costs.cost(Direction::Receive, 0, 1, 0);
        m.run(INTERRUPT, t, work)
    }

    /// Sends `bytes` in `packets` packets written with `calls` system calls, asked for at
    /// `now`: the calls and the bytes as [`HostCpu::write`] (a blocked thread is woken), then
    /// the packets' work on the same thread (frames of unknown size: no bus or adapter time).
    /// Returns when the last is ready for the adapter.
    pub fn send(&mut self, now: Instant, bytes: u64, packets: u64, calls: u64) -> Instant {
        let mut m = self.machine.borrow_mut();
        let mut t = now;
        if bytes > 0 || calls > 0 {
            let work = m.costs.cost(Direction::Send, bytes, 0, calls);
            t = m.call(self.thread, now, work, None);
        }
        let work = m.costs.cost(Direction::Send, 0, packets, 0);
        m.run(self.thread, t, work)
    }

    /// Receives `bytes` in `packets` packets read with `calls` system calls, asked for at `now`:
    /// the packets' work in the interrupt context, then the calls and the bytes on this thread
    /// (a blocked thread is woken). Returns when the application has them.
    pub fn receive(&mut self, now: Instant, bytes: u64, packets: u64, calls: u64) -> Instant {
        let mut m = self.machine.borrow_mut();
        let work = m.costs.cost(Direction::Receive, 0, packets, 0);
        let t = m.run(INTERRUPT, now, work);
        if bytes == 0 && calls == 0 {
            return t;
        }
        let work = m.costs.cost(Direction::Receive, bytes, 0, calls);
        m.call(self.thread, t, work, None)
    }

    /// When this thread's work asked for so far ends.
    pub fn busy_until(&self) -> Instant {
        self.machine.borrow().threads[self.thread]
    }

    /// Total work done on the machine so far (every processor, every thread).
    pub fn busy_time(&self) -> Duration {
        self.machine.borrow().busy
    }

    /// Calls that found their thread blocked on an idle machine (and paid its wakeup).
    pub fn wakeups(&self) -> u64 {
        self.machine.borrow().wakeups
    }

    /// Calls that found their thread blocked while the machine was busy with other work (and
    /// paid a context switch).
    pub fn switches(&self) -> u64 {
        self.machine.borrow().switches
    }

    /// Share of the machine's processor time from the epoch to `now` that was busy (work queued
    /// past `now` not counted).
    pub fn utilisation(&self, now: Instant) -> f64 {
        if now.as_nanos() == 0 {
            return 0.0;
        }
        let m = self.machine.borrow();
        let ahead: u64 = m
            .processors
            .iter()
            .map(|p| p.saturating_duration_since(now).as_nanos())
            .sum();
        let capacity = now.as_nanos() as f64 * m.processors.len() as f64;
        m.busy.as_nanos().saturating_sub(ahead) as f64 / capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The costs the host module's own tests use.
    use crate::host::tests::host;

    #[test]
    fn the_cpu_serves_work_in_order() {
        let mut cpu = HostCpu::new(host());
        // Two sends asked for at once queue behind each other.
        let a = cpu.send(Instant(0), 1000, 1, 1);
        let b = cpu.send(Instant(0), 1000, 1, 0);
        assert_eq!(a, Instant(34_100));
        assert_eq!(b, Instant(34_100 + 33_100));
        // Work asked for after an idle gap starts at once.
        let c = cpu.receive(Instant(100_000), 0, 1, 0);
        assert_eq!(c, Instant(100_300));
        assert_eq!(cpu.busy_time(), Duration(34_100 + 33_100 + 300));
        assert!((cpu.utilisation(Instant(100_300)) - 67_500.0 / 100_300.0).abs() < 1e-12);
    }

    /// The applications of one host share its processor: two threads asking at once are served
    /// one after the other, whichever workload they belong to. Removing the sharing (a machine
    /// per handle) makes the second end at 34.1 us.
    #[test]
    fn threads_of_a_host_share_its_processor() {
        let mut a = HostCpu::new(host());
        let mut b = a.thread();
        assert!(a.same_machine(&b));
        let ta = a.write(Instant(0), 1000, true);
        let tb = b.write(Instant(0), 1000, true);
        assert_eq!(ta, Instant(34_000));
        assert_eq!(tb, Instant(68_000));
        assert_eq!(a.busy_time(), Duration(68_000));
        // A clone is the same thread on the same machine.
        let mut c = a.clone();
        assert_eq!(c.run(Instant(0), Duration(1)), Instant(68_001));
    }

    /// With two processors two threads run at once, but one thread's work stays in order.
    #[test]
    fn processors_serve_threads_in_parallel() {
        let mut a = HostCpu::new(HostCosts { cpus: 2, ..host() });
        let mut b = a.thread();
        assert_eq!(a.run(Instant(0), Duration(100)), Instant(100));
        assert_eq!(b.run(Instant(0), Duration(100)), Instant(100));
        // The same thread again: after its first piece, on whichever processor is free.
        assert_eq!(a.run(Instant(0), Duration(100)), Instant(200));
        assert!((a.utilisation(Instant(200)) - 300.0 / 400.0).abs() < 1e-12);
    }

    /// A call that finds its thread blocked pays the switch to it; one that finds the thread
    /// still busy does not. Without the rule both calls cost the same.
    #[test]
    fn a_blocked_thread_pays_its_wakeup() {
        let costs = HostCosts {
            wakeup_ns: 5000.0,
            ..host()
        };
        let mut cpu = HostCpu::new(costs);
        // Idle since the epoch: woken.
        let t1 = cpu.read(Instant(10_000), 100);
        assert_eq!(t1, Instant(10_000 + 5000 + 2000 + 1200));
        // Asked while the thread is still busy with the first read: no switch.
        let t2 = cpu.read(Instant(11_000), 100);
        assert_eq!(t2, t1 + Duration(3200));
        assert_eq!(cpu.wakeups(), 1);
        // The receive path: the packet's interrupt, then the woken read.
        let t3 = cpu.receive(Instant(100_000), 100, 1, 1);
        assert_eq!(t3, Instant(100_000 + 300 + 5000 + 3200));
        assert_eq!(cpu.wakeups(), 2);
    }

    /// A blocked thread woken while another thread keeps the processor busy pays a context
    /// switch, not a wakeup from idle: seven client processes on one host switch among
    /// themselves cheaply. Without the distinction the second read would end at 18 us.
    #[test]
    fn a_busy_host_switches_instead_of_waking() {
        let costs = HostCosts {
            wakeup_ns: 5000.0,
            switch_ns: 500.0,
            ..host()
        };
        let mut a = HostCpu::new(costs);
        let mut b = a.thread();
        // Thread a works until 10 us.
        assert_eq!(a.run(Instant(0), Duration(10_000)), Instant(10_000));
        // Thread b, blocked since the epoch, reads at 1 us: the host is busy, so a switch.
        let t = b.read(Instant(1000), 100);
        assert_eq!(t, Instant(10_000 + 500 + 3200));
        assert_eq!((b.wakeups(), b.switches()), (0, 1));
        // Later, on an idle host: a wakeup.
        let t = b.read(Instant(100_000), 100);
        assert_eq!(t, Instant(100_000 + 5000 + 3200));
        assert_eq!((b.wakeups(), b.switches()), (1, 1));
    }

    /// A packet that arrives while another thread holds the processor wakes its blocked reader
    /// with a context switch, even though its interrupt, queued behind that work, ends at the
    /// very instant the processor frees: asked at that instant, a plain read finds every
    /// processor free and pays the wakeup from idle (the test's second read), which made seven
    /// client processes on one busy host pay it on every answer.
    #[test]
    fn a_read_woken_by_a_packet_that_found_the_host_busy_switches() {
        let costs = HostCosts {
            wakeup_ns: 5000.0,
            switch_ns: 500.0,
            ..host()
        };
        let mut a = HostCpu::new(costs.clone());
        let mut b = a.thread();
        assert_eq!(a.run(Instant(0), Duration(10_000)), Instant(10_000));
        // A packet for b at 1 us: busy host; its interrupt (300 ns) runs after a's work.
        let idle = b.idle(Instant(1000));
        assert!(!idle);
        let t = b.arrive(Instant(1000), 100);
        assert_eq!(t, Instant(10_300));
        assert_eq!(b.read_arrived(t, 100, idle), Instant(10_300 + 500 + 3200));
        assert_eq!((b.wakeups(), b.switches()), (0, 1));
        // The same asked as a plain read: the processor is free at 10.3 us, so a wakeup.
        let mut c = HostCpu::new(costs);
        let mut d = c.thread();
        c.run(Instant(0), Duration(10_000));
        let t = d.arrive(Instant(1000), 100);
        assert_eq!(d.read(t, 100), Instant(10_300 + 5000 + 3200));
    }

    /// A daemon pays its select before each read, busy or not, and a blocked one is woken
    /// first. Without the select both reads would end 3.2 us after they start.
    #[test]
    fn a_daemon_selects_before_it_reads() {
        let costs = HostCosts {
            wakeup_ns: 5000.0,
            select_ns: 700.0,
            ..host()
        };
        let mut cpu = HostCpu::new(costs);
        let t = cpu.select_read_arrived(Instant(1000), 100, true);
        assert_eq!(t, Instant(1000 + 5000 + 700 + 3200));
        // Asked while still busy with the first: the select and the read, no wakeup.
        let u = cpu.select_read_arrived(Instant(2000), 100, false);
        assert_eq!(u, t + Duration(700 + 3200));
        assert_eq!(cpu.wakeups(), 1);
    }

    /// The interrupt context is not the thread: a packet's receive work does not make the
    /// reader look busy, and the reader waits for it.
    #[test]
    fn interrupts_run_apart_from_threads() {
        let costs = HostCosts {
            wakeup_ns: 5000.0,
            ..host()
        };
        let mut cpu = HostCpu::new(costs);
        let t = cpu.arrive(Instant(1000), 1500);
        assert_eq!(t, Instant(1300));
        assert_eq!(cpu.busy_until(), Instant::ZERO);
        let r = cpu.read(t, 100);
        assert_eq!(r, Instant(1300 + 5000 + 3200));
    }

    /// Frames cross the I/O bus, which both directions share, and the adapter's engines, one
    /// per direction. Without the bus the arriving frame would be in memory at 1000 + 8 us.
    #[test]
    fn the_bus_is_shared_by_both_directions() {
        let costs = HostCosts {
            bus: Some(Rate::mbps(100)),
            nic: Some(Rate::mbps(1000)),
            ..HostCosts::FREE
        };
        let mut cpu = HostCpu::new(costs);
        // 1250 bytes: 100 us on the bus, 10 us in the adapter.
        let tx = cpu.transmit(Instant(0), 1250);
        assert_eq!(tx, Instant(110_000));
        // A frame arriving meanwhile waits for the bus after its 10 us in the adapter.
        let rx = cpu.arrive(Instant(0), 1250);
        assert_eq!(rx, Instant(200_000));
        // Without a bus limit only the adapter's engine: 10 us.
        let mut free = HostCpu::new(HostCosts {
            nic: Some(Rate::mbps(1000)),
            ..HostCosts::FREE
        });
        assert_eq!(free.arrive(Instant(0), 1250), Instant(10_000));
    }
}
