use proptest::prelude::*;

use super::*;

#[derive(Clone, Debug, PartialEq)]
struct C {
    flow: u32,
    eof: bool,
    len: usize,
}

impl WireLen for C {
    fn wire_len(&self) -> usize {
        self.len
    }
}

impl Queued for C {
    fn flow(&self) -> u32 {
        self.flow
    }
    fn end_of_frame(&self) -> bool {
        self.eof
    }
}

fn frame(flow: u32, cells: usize) -> Vec<C> {
    (0..cells)
        .map(|i| C {
            flow,
            eof: i + 1 == cells,
            len: 53,
        })
        .collect()
}

#[test]
fn tail_drop_drops_what_does_not_fit() {
    let mut q = Queue::new(Capacity::Cells(3), DropPolicy::Tail);
    let r: Vec<_> = frame(1, 5).into_iter().map(|c| q.offer(c)).collect();
    assert_eq!(r.iter().filter(|r| r.is_ok()).count(), 3);
    assert_eq!(q.counters().dropped_full, 2);
}

#[test]
fn ppd_keeps_the_end_of_frame_cell() {
    let mut q = Queue::new(Capacity::Cells(4), DropPolicy::Ppd);
    for c in frame(1, 3) {
        q.offer(c).unwrap();
    }
    // 1 slot left: a 4-cell frame of flow 2 gets its first cell in, then is discarded, and its
    // end-of-frame cell is dropped only because the buffer is still full.
    let r: Vec<_> = frame(2, 4).into_iter().map(|c| q.offer(c)).collect();
    assert_eq!(r[0], Ok(()));
    assert_eq!(r[1], Err(DropReason::Full));
    assert_eq!(r[2], Err(DropReason::Partial));
    assert_eq!(r[3], Err(DropReason::Full));
    // Once room appears, a partly discarded frame's end cell is kept.
    q.dequeue();
    let mut f3 = frame(3, 4).into_iter();
    assert_eq!(q.offer(f3.next().unwrap()), Ok(()));
    assert_eq!(q.offer(f3.next().unwrap()), Err(DropReason::Full));
    assert_eq!(q.offer(f3.next().unwrap()), Err(DropReason::Partial));
    q.dequeue();
    assert_eq!(q.offer(f3.next().unwrap()), Ok(()));
    assert_eq!(q.counters().dropped_partial, 2);
}

#[test]
fn epd_refuses_whole_frames_above_threshold() {
    let mut q = Queue::new(Capacity::Cells(10), DropPolicy::Epd { threshold: 4 });
    for c in frame(1, 4) {
        q.offer(c).unwrap();
    }
    let r: Vec<_> = frame(2, 3).into_iter().map(|c| q.offer(c)).collect();
    assert!(r.iter().all(|r| *r == Err(DropReason::Early)));
    assert_eq!(q.counters().dropped_early, 3);
    // A frame already started when the threshold is crossed is let in.
    let mut q = Queue::new(Capacity::Cells(10), DropPolicy::Epd { threshold: 2 });
    for c in frame(1, 5) {
        q.offer(c).unwrap();
    }
}

#[test]
fn byte_capacity() {
    let mut q = Queue::new(Capacity::Bytes(100), DropPolicy::Tail);
    assert!(q.offer(vec![0u8; 60]).is_ok());
    assert!(q.offer(vec![0u8; 60]).is_err());
    assert!(q.offer(vec![0u8; 40]).is_ok());
    assert_eq!(q.bytes(), 100);
    assert!(q.is_full());
}

fn policy() -> impl Strategy<Value = DropPolicy> {
    prop_oneof![
        Just(DropPolicy::Tail),
        Just(DropPolicy::Ppd),
        (0u64..40).prop_map(|threshold| DropPolicy::Epd { threshold }),
    ]
}

fn capacity() -> impl Strategy<Value = Capacity> {
    prop_oneof![
        (0u64..40).prop_map(Capacity::Cells),
        (0u64..40).prop_map(Capacity::Frames),
        (0u64..2000).prop_map(Capacity::Bytes),
    ]
}

proptest! {
    /// No queue ever holds more than its buffer, and every item offered is queued or dropped, and
    /// every queued item is dequeued or still held: nothing vanishes.
    #[test]
    fn never_over_capacity_and_nothing_vanishes(
        cap in capacity(),
        pol in policy(),
        ops in proptest::collection::vec((0u32..4, any::<bool>(), 1usize..100, 0u8..3), 0..400),
    ) {
        let mut q = Queue::new(cap, pol);
        let mut out = 0u64;
        for (flow, eof, len, op) in ops {
            if op == 0 {
                out += u64::from(q.dequeue().is_some());
            } else {
                let _ = q.offer(C { flow, eof, len });
            }
            match cap {
                Capacity::Cells(n) | Capacity::Frames(n) => prop_assert!(q.len() as u64 <= n),
                Capacity::Bytes(n) => prop_assert!(q.bytes() <= n),
            }
            let c = *q.counters();
            prop_assert_eq!(c.offered, c.queued + c.dropped());
            prop_assert_eq!(c.queued, c.dequeued + q.len() as u64);
            prop_assert_eq!(c.dequeued, out);
        }
    }
}
