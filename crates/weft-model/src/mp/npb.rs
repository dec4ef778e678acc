//! Communication skeletons of the NAS Parallel Benchmarks BT, SP and LU (NPB 2.x/3.x, MPI
//! versions): the messages of one time step of each rank, with their sizes, counts and partners,
//! and no computation. Replayed by `weft mp` (`--pattern bt.S`) and by the `mp` workload of
//! scenarios, so that a fabric can be judged by what it does to each benchmark's communication.
//!
//! Everything below is derived from the structure of the NPB 3.3 MPI sources (NASA Ames; read in
//! a copy of NPB3.3.1-MPI and cross-checked against NPB3.3-MPI for `BT/x_solve.f` and
//! `LU/exchange_1.f`); file names below are those of the distribution:
//!
//! - Problem sizes and iterations: `sys/setparams.c` (`write_bt_info`, `write_sp_info`,
//!   `write_lu_info`): BT S 12³/60, W 24³/200, A 64³/200, B 102³/200, C 162³/200; SP S 12³/100,
//!   W 36³/400, A..C 64/102/162³ with 400; LU S 12³/50, W 33³/300, A..C 64/102/162³ with 250.
//!   BT and SP need a square number of processes (`check_info`: `isqrt`), LU a grid from
//!   `isqrt2`.
//! - BT and SP, multi-partition: `p = sqrt(nprocs)` cells per process (`ncells`); cell `c` of
//!   process `node` has coordinates `((node mod p) + c) mod p`, `(node / p - c) mod p`, `c`, and
//!   the six neighbours `predecessor`/`successor` of `make_set.f`. A cell's extent in a
//!   direction is `g / p`, one more for the first `g mod p` coordinates (`make_set.f`).
//! - `copy_faces.f` (BT and SP): one exchange of six messages per time step, to and from the
//!   successor and predecessor in each direction, of the sizes `compute_buffer_size(5)`
//!   (`define.f`) gives: per cell not on the boundary of that direction, two layers of the
//!   cell's face times 5 variables.
//! - BT `x_solve.f`, `y_solve.f`, `z_solve.f`: per direction, `p - 1` forward stages, each
//!   sending `MAX_CELL_DIM² × (5×5 + 5)` doubles to the successor (`x_send_solve_info`), then
//!   `p - 1` back-substitution stages sending `MAX_CELL_DIM² × 5` doubles to the predecessor
//!   (`x_send_backsub_info`), with `MAX_CELL_DIM = g / p + 1` (`header.h`).
//! - SP `x_solve.f`, `y_solve.f`, `z_solve.f`: the same pipeline with `22 × n` doubles forward
//!   and `10 × n` doubles back, `n` the cell's face without the grid-boundary points
//!   (`buffer_size`, with `start`/`end` from `initialize.f`).
//! - LU: a `xdim × ydim` process grid (`proc_grid.f`, `neighbors.f`: north/south along the
//!   first index, west/east along the second) of `nx × ny × nz` sub-domains (`subdomain.f`).
//!   Per time step (`ssor.f`): for each of the `nz - 2` planes, the lower-triangular sweep
//!   (`blts.f`) receives `5 (jend - jst + 1)` doubles from the north and `5 (iend - ist + 1)`
//!   from the west, then sends as many south and east (`exchange_1.f`); the upper sweep
//!   (`buts.f`) goes the other way; then `rhs.f` exchanges two planes of the solution with each
//!   neighbour (`exchange_3.f`: `10 ny nz` doubles north-south, `10 nx nz` east-west), each
//!   direction as receive-then-send. The residual norm (`l2norm.f`, an all-reduce of 5
//!   doubles) runs only every `inorm = itmax` steps, i.e. once per run, and is left out.
//!
//! Within a step of a plan, messages go together, as the benchmarks post `mpi_irecv` and
//! `mpi_isend` and then wait for both.

use std::str::FromStr;

use serde::Serialize;

use super::plan::{Op, Plan, Region, Step};

/// Bytes of one double-precision value.
const DOUBLE: usize = 8;

/// A benchmark of which the skeleton is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    /// Block tridiagonal solver (5×5 blocks), multi-partition.
    Bt,
    /// Scalar pentadiagonal solver, multi-partition.
    Sp,
    /// Symmetric successive over-relaxation (lower-upper), 2-D pipelined wavefront.
    Lu,
}

impl Benchmark {
    /// Lower-case name (`bt`, `sp`, `lu`).
    pub const fn name(self) -> &'static str {
        match self {
            Benchmark::Bt => "bt",
            Benchmark::Sp => "sp",
            Benchmark::Lu => "lu",
        }
    }
}

impl FromStr for Benchmark {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bt" => Ok(Benchmark::Bt),
            "sp" => Ok(Benchmark::Sp),
            "lu" => Ok(Benchmark::Lu),
            _ => Err(format!(
                "unknown NPB benchmark {s:?}: expected bt, sp or lu"
            )),
        }
    }
}

/// A problem class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Class {
    /// Sample size.
    S,
    /// Workstation size.
    W,
    /// Class A.
    A,
    /// Class B.
    B,
    /// Class C.
    C,
}

impl Class {
    /// The class letter.
    pub const fn letter(self) -> char {
        match self {
            Class::S => 'S',
            Class::W => 'W',
            Class::A => 'A',
            Class::B => 'B',
            Class::C => 'C',
        }
    }
}

impl FromStr for Class {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "S" => Ok(Class::S),
            "W" => Ok(Class::W),
            "A" => Ok(Class::A),
            "B" => Ok(Class::B),
            "C" => Ok(Class::C),
            _ => Err(format!("unknown NPB class {s:?}: expected S, W, A, B or C")),
        }
    }
}

/// Grid points per dimension and default time steps of a benchmark and class
/// (`sys/setparams.c`).
pub const fn problem(b: Benchmark, c: Class) -> (usize, u32) {
    match (b, c) {
        (Benchmark::Bt, Class::S) => (12, 60),
        (Benchmark::Bt, Class::W) => (24, 200),
        (Benchmark::Bt, Class::A) => (64, 200),
        (Benchmark::Bt, Class::B) => (102, 200),
        (Benchmark::Bt, Class::C) => (162, 200),
        (Benchmark::Sp, Class::S) => (12, 100),
        (Benchmark::Sp, Class::W) => (36, 400),
        (Benchmark::Sp, Class::A) => (64, 400),
        (Benchmark::Sp, Class::B) => (102, 400),
        (Benchmark::Sp, Class::C) => (162, 400),
        (Benchmark::Lu, Class::S) => (12, 50),
        (Benchmark::Lu, Class::W) => (33, 300),
        (Benchmark::Lu, Class::A) => (64, 250),
        (Benchmark::Lu, Class::B) => (102, 250),
        (Benchmark::Lu, Class::C) => (162, 250),
    }
}

/// One time step of a benchmark's communication, for every rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skeleton {
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// Which class.
    pub class: Class,
    /// Grid points per dimension.
    pub grid: usize,
    /// Time steps of the benchmark (its default `niter`/`itmax`).
    pub iterations: u32,
    /// One plan per rank, for one time step.
    pub plans: Vec<Plan>,
}

/// The skeleton of `b` at class `c` on `ranks` processes, or why that combination does not exist
/// in NPB (BT and SP need a square number of processes; cells must keep at least 3 points).
pub fn skeleton(b: Benchmark, c: Class, ranks: usize) -> Result<Skeleton, String> {
    let (grid, iterations) = problem(b, c);
    let messages = match b {
        Benchmark::Bt | Benchmark::Sp => multipartition(b, grid, ranks)?,
        Benchmark::Lu => lu(grid, ranks)?,
    };
    Ok(Skeleton {
        benchmark: b,
        class: c,
        grid,
        iterations,
        plans: messages.into_plans(ranks),
    })
}

/// A rank's program while it is being built: steps of (peer, bytes, is-send).
pub(crate) struct Programs {
    steps: Vec<Vec<Vec<(usize, usize, bool)>>>,
}

impl Programs {
    pub(crate) fn new(ranks: usize) -> Programs {
        Programs {
            steps: vec![Vec::new(); ranks],
        }
    }

    /// Appends one step to every rank: the messages `(src, dst, bytes)` of a phase in which all
    /// ranks send and receive together. Receives are listed in the order of the sends, so that
    /// two messages between the same pair match in order.
    fn phase(&mut self, msgs: &[(usize, usize, usize)]) {
        for (r, prog) in self.steps.iter_mut().enumerate() {
            let ops: Vec<_> = msgs
                .iter()
                .filter_map(|&(s, d, n)| {
                    if s == r {
                        Some((d, n, true))
                    } else if d == r {
                        Some((s, n, false))
                    } else {
                        None
                    }
                })
                .collect();
            if !ops.is_empty() {
                prog.push(ops);
            }
        }
    }

    /// Appends one step to rank `r` alone.
    pub(crate) fn step(&mut self, r: usize, ops: Vec<(usize, usize, bool)>) {
        if !ops.is_empty() {
            self.steps[r].push(ops);
        }
    }

    /// Plans whose messages all use one scratch region of the largest message (the data is not
    /// looked at).
    pub(crate) fn into_plans(self, ranks: usize) -> Vec<Plan> {
        self.steps
            .into_iter()
            .enumerate()
            .map(|(rank, steps)| {
                let buffer = steps
                    .iter()
                    .flatten()
                    .map(|&(_, n, _)| n)
                    .max()
                    .unwrap_or(0);
                let steps = steps
                    .into_iter()
                    .map(|ops| {
                        Step::comm(
                            ops.into_iter()
                                .map(|(peer, n, send)| {
                                    let at = Region::new(0, n);
                                    if send {
                                        Op::Send { peer, at }
                                    } else {
                                        Op::Recv { peer, at }
                                    }
                                })
                                .collect(),
                        )
                    })
                    .collect();
                Plan {
                    rank,
                    ranks,
                    buffer,
                    steps,
                }
            })
            .collect()
    }
}

/// The cells of one process in the multi-partition of BT and SP (`make_set.f`), 0-based.
struct Cells {
    /// Coordinates of cell `c` in each direction.
    coord: Vec<[usize; 3]>,
    /// Extent of cell `c` in each direction, grid points.
    size: Vec<[usize; 3]>,
    /// Predecessor process in each direction.
    pred: [usize; 3],
    /// Successor process in each direction.
    succ: [usize; 3],
}

impl Cells {
    fn of(node: usize, p: usize, grid: usize) -> Cells {
        let (i, j) = (node % p, node / p);
        let coord: Vec<[usize; 3]> = (0..p)
            .map(|c| [(i + c) % p, (j + p * p - c) % p, c])
            .collect();
        let extent = |k: usize| grid / p + usize::from(k < grid % p);
        let size = coord
            .iter()
            .map(|k| [extent(k[0]), extent(k[1]), extent(k[2])])
            .collect();
        let m = |a: usize| (a + p) % p;
        Cells {
            coord,
            size,
            pred: [
                m(i + p - 1) + p * j,
                i + p * m(j + p - 1),
                m(i + 1) + p * m(j + p - 1),
            ],
            succ: [
                m(i + 1) + p * j,
                i + p * m(j + 1),
                m(i + p - 1) + p * m(j + 1),
            ],
        }
    }

    /// The cell at coordinate `s` of direction `dir` (`slice(dir, s)`).
    fn slice(&self, dir: usize, s: usize) -> usize {
        self.coord.iter().position(|k| k[dir] == s).unwrap_or(0)
    }
}

/// BT or SP on `ranks` processes: copy_faces, then the three line-solve pipelines.
fn multipartition(b: Benchmark, grid: usize, ranks: usize) -> Result<Programs, String> {
    let p = (1..=ranks).find(|p| p * p >= ranks).unwrap_or(1);
    if p * p != ranks {
        return Err(format!(
            "{} needs a square number of processes (1, 4, 9, 16, ...), not {ranks}",
            b.name().to_uppercase()
        ));
    }
    if grid / p < 3 {
        return Err(format!(
            "{} with {grid}³ points cannot be cut into cells of at least 3 points for {ranks} \
             processes",
            b.name().to_uppercase()
        ));
    }
    let mut prog = Programs::new(ranks);
    if ranks == 1 {
        return Ok(prog);
    }
    let cells: Vec<Cells> = (0..ranks).map(|n| Cells::of(n, p, grid)).collect();
    // copy_faces: compute_buffer_size(5), sent east, west, north, south, top, bottom.
    let mut faces = Vec::new();
    for (n, cs) in cells.iter().enumerate() {
        let mut low = [0usize; 3];
        let mut high = [0usize; 3];
        for (k, s) in cs.coord.iter().zip(&cs.size) {
            for dir in 0..3 {
                let (a, b) = ((dir + 1) % 3, (dir + 2) % 3);
                let face = s[a] * s[b] * 5 * 2;
                if k[dir] != 0 {
                    low[dir] += face;
                }
                if k[dir] != p - 1 {
                    high[dir] += face;
                }
            }
        }
        for dir in 0..3 {
            faces.push((n, cs.succ[dir], high[dir] * DOUBLE));
            faces.push((n, cs.pred[dir], low[dir] * DOUBLE));
        }
    }
    prog.phase(&faces);
    let mcd = grid / p + 1;
    for dir in 0..3 {
        // Forward elimination: stages 1..p-1 send to the successor.
        for s in 0..p - 1 {
            let msgs: Vec<_> = cells
                .iter()
                .enumerate()
                .map(|(n, cs)| {
                    let doubles = match b {
                        Benchmark::Bt => mcd * mcd * (5 * 5 + 5),
                        _ => 22 * sp_face(cs, cs.slice(dir, s), dir, p),
                    };
                    (n, cs.succ[dir], doubles * DOUBLE)
                })
                .collect();
            prog.phase(&msgs);
        }
        // Back substitution: stages p..2 send to the predecessor.
        for s in (1..p).rev() {
            let msgs: Vec<_> = cells
                .iter()
                .enumerate()
                .map(|(n, cs)| {
                    let doubles = match b {
                        Benchmark::Bt => mcd * mcd * 5,
                        _ => 10 * sp_face(cs, cs.slice(dir, s), dir, p),
                    };
                    (n, cs.pred[dir], doubles * DOUBLE)
                })
                .collect();
            prog.phase(&msgs);
        }
    }
    Ok(prog)
}

/// SP's `buffer_size` for cell `c` in a sweep along `dir`: the cell's face across `dir` without
/// the points on the grid's boundary (`start`/`end` are 1 on the first and last cell).
fn sp_face(cs: &Cells, c: usize, dir: usize, p: usize) -> usize {
    let (k, s) = (cs.coord[c], cs.size[c]);
    [(dir + 1) % 3, (dir + 2) % 3]
        .iter()
        .map(|&d| s[d] - usize::from(k[d] == 0) - usize::from(k[d] == p - 1))
        .product()
}

/// `isqrt2` of `sys/setparams.c`: the number of process rows of LU's grid, or `None` when no
/// grid with `2 * ydim >= xdim` exists.
fn lu_rows(n: usize) -> Option<usize> {
    let root = (1..=n).find(|x| x * x >= n)?;
    if root * root == n {
        return Some(root);
    }
    let mut x = root - 1;
    let mut y = n / x;
    while x * y != n && 2 * y >= x {
        x += 1;
        y = n / x;
    }
    (x * y == n && 2 * y >= x).then_some(x)
}

/// LU on `ranks` processes: the lower and upper sweeps plane by plane, then `rhs`'s exchanges.
fn lu(grid: usize, ranks: usize) -> Result<Programs, String> {
    let xdim = lu_rows(ranks)
        .ok_or_else(|| format!("LU cannot lay {ranks} processes out on a 2-D grid"))?;
    let ydim = ranks / xdim;
    if grid / xdim < 3 || grid / ydim < 3 {
        return Err(format!(
            "LU with {grid}³ points leaves sub-domains under 3 points on {xdim}×{ydim} processes"
        ));
    }
    let mut prog = Programs::new(ranks);
    let nz = grid;
    for id in 0..ranks {
        let (row, col) = (id % xdim, id / xdim);
        let north = (row > 0).then(|| id - 1);
        let south = (row + 1 < xdim).then_some(id + 1);
        let west = (col > 0).then(|| id - xdim);
        let east = (col + 1 < ydim).then_some(id + xdim);
        let nx = grid / xdim + usize::from(row < grid % xdim);
        let ny = grid / ydim + usize::from(col < grid % ydim);
        // ist..iend and jst..jend leave out the global boundary (subdomain.f).
        let icount = nx - usize::from(north.is_none()) - usize::from(south.is_none());
        let jcount = ny - usize::from(west.is_none()) - usize::from(east.is_none());
        let line_ns = 5 * jcount * DOUBLE;
        let line_ew = 5 * icount * DOUBLE;
        let ops = |list: &[(Option<usize>, usize, bool)]| -> Vec<(usize, usize, bool)> {
            list.iter()
                .filter_map(|&(peer, n, send)| peer.map(|p| (p, n, send)))
                .collect()
        };
        for _ in 1..nz - 1 {
            prog.step(id, ops(&[(north, line_ns, false), (west, line_ew, false)]));
            prog.step(id, ops(&[(south, line_ns, true), (east, line_ew, true)]));
        }
        for _ in 1..nz - 1 {
            prog.step(id, ops(&[(south, line_ns, false), (east, line_ew, false)]));
            prog.step(id, ops(&[(north, line_ns, true), (west, line_ew, true)]));
        }
        let plane_ns = 10 * ny * nz * DOUBLE;
        let plane_ew = 10 * nx * nz * DOUBLE;
        prog.step(
            id,
            ops(&[(north, plane_ns, false), (south, plane_ns, true)]),
        );
        prog.step(
            id,
            ops(&[(south, plane_ns, false), (north, plane_ns, true)]),
        );
        prog.step(id, ops(&[(west, plane_ew, false), (east, plane_ew, true)]));
        prog.step(id, ops(&[(east, plane_ew, false), (west, plane_ew, true)]));
    }
    Ok(prog)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_of_the_multipartition() {
        // 4 processes, p = 2: node 0 at (0, 0).
        let c = Cells::of(0, 2, 12);
        assert_eq!(c.coord, [[0, 0, 0], [1, 1, 1]]);
        assert_eq!(c.succ, [1, 2, 3]);
        assert_eq!(c.pred, [1, 2, 3]);
        // 9 processes, p = 3: node 4 at (1, 1).
        let c = Cells::of(4, 3, 64);
        assert_eq!(c.coord, [[1, 1, 0], [2, 0, 1], [0, 2, 2]]);
        assert_eq!(c.succ, [5, 7, 6]);
        assert_eq!(c.pred, [3, 1, 2]);
        // 64 = 22 + 21 + 21.
        assert_eq!(c.size[2], [22, 21, 21]);
    }

    /// NPB posts each receive with the receiver's own buffer size (`b_size` of the receiving
    /// process): the faces must agree with what the neighbour sends.
    #[test]
    fn face_sizes_agree_between_neighbours() {
        for (ranks, grid) in [(4, 12), (9, 64), (16, 102), (9, 36)] {
            let p = (ranks as f64).sqrt() as usize;
            let cells: Vec<Cells> = (0..ranks).map(|n| Cells::of(n, p, grid)).collect();
            let sizes = |cs: &Cells| {
                let (mut low, mut high) = ([0usize; 3], [0usize; 3]);
                for (k, s) in cs.coord.iter().zip(&cs.size) {
                    for dir in 0..3 {
                        let face = s[(dir + 1) % 3] * s[(dir + 2) % 3] * 10;
                        low[dir] += if k[dir] != 0 { face } else { 0 };
                        high[dir] += if k[dir] != p - 1 { face } else { 0 };
                    }
                }
                (low, high)
            };
            for (n, cs) in cells.iter().enumerate() {
                let (_, high) = sizes(cs);
                for dir in 0..3 {
                    let (low_succ, _) = sizes(&cells[cs.succ[dir]]);
                    assert_eq!(high[dir], low_succ[dir], "{ranks} ranks, {grid} points");
                    assert_eq!(cells[cs.succ[dir]].pred[dir], n);
                }
            }
        }
    }

    #[test]
    fn bt_class_s_on_four() {
        let s = skeleton(Benchmark::Bt, Class::S, 4).unwrap();
        assert_eq!((s.grid, s.iterations), (12, 60));
        let p = &s.plans[0];
        // copy_faces + 3 directions x (1 forward + 1 backward) stages.
        assert_eq!(p.steps.len(), 7);
        // copy_faces: 6 messages of one cell face (6 x 6 points, 2 layers, 5 variables).
        let faces: Vec<usize> = p.steps[0]
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Send { .. }))
            .map(|o| o.region().len)
            .collect();
        assert_eq!(faces, vec![6 * 6 * 10 * 8; 6]);
        // MAX_CELL_DIM = 7: 49 x 30 doubles forward, 49 x 5 back.
        assert_eq!(p.steps[1].ops[0].region().len, 49 * 30 * 8);
        assert_eq!(p.steps[2].ops[0].region().len, 49 * 5 * 8);
    }

    #[test]
    fn sp_and_lu_sizes() {
        let s = skeleton(Benchmark::Sp, Class::A, 4).unwrap();
        // First forward stage in x: cell at x = 0 has faces 32 x 32; node 0's cell 0 is at
        // (0,0,0): both y and z at the low boundary, so 31 x 31 points, 22 doubles each.
        assert_eq!(s.plans[0].steps[1].ops[0].region().len, 22 * 31 * 31 * 8);
        let l = skeleton(Benchmark::Lu, Class::S, 4).unwrap();
        // Rank 0 (north-west corner): 6 x 6 x 12, no north, no west; 10 planes per sweep.
        let p = &l.plans[0];
        assert_eq!(p.steps.len(), 10 + 10 + 4);
        assert_eq!(p.steps[0].ops.len(), 2); // sends south and east (no receives)
        assert_eq!(p.steps[0].ops[0].region().len, 5 * 5 * 8);
        assert!(skeleton(Benchmark::Bt, Class::S, 3).is_err());
        assert!(skeleton(Benchmark::Bt, Class::S, 25).is_err());
        assert!(skeleton(Benchmark::Lu, Class::S, 7).is_err());
        assert_eq!(lu_rows(9), Some(3));
        assert_eq!(lu_rows(8), Some(2));
        assert_eq!(skeleton(Benchmark::Lu, Class::A, 9).unwrap().plans.len(), 9);
        assert!(
            skeleton(Benchmark::Sp, Class::S, 1).unwrap().plans[0]
                .steps
                .is_empty()
        );
    }
}
