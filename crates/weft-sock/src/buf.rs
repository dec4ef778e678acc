//! Page-aligned data buffers for the stream driver's reads and writes.
//!
//! Why aligned: the kernel copies socket data to and from user memory with `rep movsb`, whose
//! speed on some CPUs depends on the user buffer's alignment. On this project's AMD EPYC VM,
//! perf showed `_copy_from_iter` (sender) and `_copy_to_iter` (receiver) taking about twice the
//! CPU per byte with a plain `Vec` (glibc places a 128 KiB allocation 16 bytes past a page
//! boundary) as with iperf3's page-aligned `mmap` buffer; aligning the buffer to a page closes
//! the gap.

/// Alignment of the start of a buffer, bytes.
pub const PAGE: usize = 4096;

/// `len` bytes starting on a page boundary, zeroed.
#[derive(Debug, Default)]
pub struct PageBuf {
    mem: Vec<u8>,
    off: usize,
    len: usize,
}

impl PageBuf {
    /// A zeroed buffer of `len` bytes.
    pub fn zeroed(len: usize) -> Self {
        let mem = vec![0u8; len + PAGE];
        // Always computable for bytes; if it ever were not, an unaligned buffer still works.
        let off = mem.as_ptr().align_offset(PAGE);
        let off = if off < PAGE { off } else { 0 };
        PageBuf { mem, off, len }
    }

    /// A buffer of `len` bytes with a recognisable, not-all-zero pattern (compressing links
    /// see real work).
    pub fn pattern(len: usize) -> Self {
        let mut b = PageBuf::zeroed(len);
        for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
            *x = crate::payload::filler(i);
        }
        b
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.mem.get(self.off..self.off + self.len).unwrap_or(&[])
    }

    /// The buffer's bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.mem
            .get_mut(self.off..self.off + self.len)
            .unwrap_or(&mut [])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_a_page_and_have_their_length() {
        for len in [1, 1400, 128 * 1024, 128 * 1024 + 3] {
            let mut b = PageBuf::pattern(len);
            assert_eq!(b.as_slice().as_ptr() as usize % PAGE, 0);
            assert_eq!(b.as_slice().len(), len);
            assert_eq!(b.as_mut_slice().len(), len);
            assert_eq!(
                b.as_slice().get(252),
                if len > 252 { Some(&1) } else { None }
            );
        }
        assert!(PageBuf::zeroed(10).as_slice().iter().all(|&x| x == 0));
    }
}
