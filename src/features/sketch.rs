//! A 33-byte distinct-count sketch: exact up to 8 values, then a HyperLogLog of 64 four-bit
//! registers. It lives inline in every window bucket, so a subject costs no heap for it.
//!
//! Exact mode keeps 32-bit fingerprints (two of 8 values collide with odds of about 1 in
//! 10^8). Past 8 values the fingerprints become registers: the standard error is about
//! 1.04/√64 ≈ 13 %, with linear counting (a few % or better) while some registers are
//! still zero, that is up to about 160 values. Merging is exact for exact sketches and
//! register-wise maximum otherwise, so a union of buckets estimates like one sketch.

const EXACT: usize = 8;
const REGISTERS: usize = 64;
const MAX_RANK: u8 = 15;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DistinctSketch {
    /// Exact mode: up to 8 nonzero fingerprints (0 is an empty slot). Register mode: 64
    /// nibbles, register `r` in byte `r / 2`, low nibble for even `r`.
    data: [u8; 32],
    registers: bool,
}

impl DistinctSketch {
    /// Adds a value by its 64-bit hash.
    pub fn insert_hash(&mut self, hash: u64) {
        self.insert_fingerprint(fingerprint(hash).max(1));
    }

    fn insert_fingerprint(&mut self, fp: u32) {
        if self.registers {
            return self.raise(fp);
        }
        for slot in 0..EXACT {
            match self.slot(slot) {
                0 => return self.set_slot(slot, fp),
                existing if existing == fp => return,
                _ => {}
            }
        }
        self.switch_to_registers();
        self.raise(fp);
    }

    /// The union with `other`.
    pub fn merge(&mut self, other: &DistinctSketch) {
        if !other.registers {
            for fp in other.fingerprints() {
                self.insert_fingerprint(fp);
            }
            return;
        }
        self.switch_to_registers();
        for r in 0..REGISTERS {
            let rank = other.register(r);
            if rank > self.register(r) {
                self.set_register(r, rank);
            }
        }
    }

    /// The estimated number of distinct values (exact up to 8).
    pub fn estimate(&self) -> u64 {
        if !self.registers {
            return self.fingerprints().count() as u64;
        }
        let m = REGISTERS as f64;
        let (mut sum, mut zeros) = (0.0, 0u32);
        for r in 0..REGISTERS {
            let rank = self.register(r);
            sum += (-f64::from(rank)).exp2();
            zeros += u32::from(rank == 0);
        }
        let raw = 0.709 * m * m / sum;
        let estimate = if raw <= 2.5 * m && zeros > 0 {
            m * (m / f64::from(zeros)).ln()
        } else {
            raw
        };
        estimate.round() as u64
    }

    fn fingerprints(&self) -> impl Iterator<Item = u32> + '_ {
        (0..EXACT).map(|s| self.slot(s)).filter(|&fp| fp != 0)
    }

    fn slot(&self, slot: usize) -> u32 {
        let b = &self.data[slot * 4..slot * 4 + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn set_slot(&mut self, slot: usize, fp: u32) {
        self.data[slot * 4..slot * 4 + 4].copy_from_slice(&fp.to_le_bytes());
    }

    fn switch_to_registers(&mut self) {
        if self.registers {
            return;
        }
        let exact: Vec<u32> = self.fingerprints().collect();
        self.data = [0; 32];
        self.registers = true;
        for fp in exact {
            self.raise(fp);
        }
    }

    /// Register mode: the register the low 6 bits name keeps the highest rank (position of
    /// the first 1 in the other 26 bits) seen.
    fn raise(&mut self, fp: u32) {
        let r = (fp as usize) % REGISTERS;
        let rest = fp >> 6;
        let rank = if rest == 0 {
            MAX_RANK
        } else {
            ((rest.leading_zeros() - 6 + 1) as u8).min(MAX_RANK)
        };
        if rank > self.register(r) {
            self.set_register(r, rank);
        }
    }

    fn register(&self, r: usize) -> u8 {
        (self.data[r / 2] >> ((r % 2) * 4)) & 0x0f
    }

    fn set_register(&mut self, r: usize, rank: u8) {
        let shift = (r % 2) * 4;
        let byte = &mut self.data[r / 2];
        *byte = (*byte & !(0x0f << shift)) | (rank << shift);
    }
}

/// A well-mixed nonzero 32-bit fingerprint of a 64-bit hash (callers' hashes need not be
/// uniform in every bit).
fn fingerprint(hash: u64) -> u32 {
    // SplitMix64's finaliser: every output bit depends on every input bit.
    let mut z = hash.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::DistinctSketch;

    fn sketch_of(values: impl Iterator<Item = u64>) -> DistinctSketch {
        let mut s = DistinctSketch::default();
        for v in values {
            s.insert_hash(v);
        }
        s
    }

    #[test]
    fn small_counts_are_exact_and_repeats_count_once() {
        for n in 0..=8 {
            assert_eq!(sketch_of((0..n).chain(0..n)).estimate(), n);
        }
    }

    #[test]
    fn large_counts_are_within_the_stated_error() {
        for n in [9u64, 20, 50, 100, 300, 1_000, 10_000, 100_000] {
            let estimate = sketch_of(0..n).estimate() as f64;
            let error = (estimate - n as f64).abs() / n as f64;
            assert!(error < 0.4, "{n}: {estimate}");
        }
    }

    #[test]
    fn merging_is_the_union() {
        let mut a = sketch_of(0..5);
        a.merge(&sketch_of(3..7));
        assert_eq!(a.estimate(), 7);
        let mut big = sketch_of(0..500);
        big.merge(&sketch_of(250..1_000));
        let (union, whole) = (big.estimate(), sketch_of(0..1_000).estimate());
        assert_eq!(union, whole, "a union estimates like one sketch");
    }
}
