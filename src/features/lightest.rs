//! Which subjects to forget when tracking is full: those with the fewest requests.
//!
//! The recorder (subjects seen lately) and the window (subjects' buckets) both shed their
//! lightest subjects so that a flood of made-up ones, a request or two each, gives way to the
//! next newcomers; this is the rule they share.

/// Chooses the `excess` lightest of some subjects by their request counts: call
/// [`Lightest::forget`] with each subject's count, in any order but each once, and it answers
/// whether that subject goes. Of those tied at the cut-off, the first met go.
pub struct Lightest<T> {
    cut: T,
    at_cut: usize,
}

impl<T: Copy + Ord> Lightest<T> {
    /// `counts` are every subject's requests; `None` when nothing is to go.
    pub fn new(mut counts: Vec<T>, excess: usize) -> Option<Self> {
        if excess == 0 || excess > counts.len() {
            return None;
        }
        let cut = *counts.select_nth_unstable(excess - 1).1;
        let below = counts.iter().filter(|&&n| n < cut).count();
        Some(Lightest {
            cut,
            at_cut: excess - below,
        })
    }

    pub fn forget(&mut self, requests: T) -> bool {
        let tied = requests == self.cut && self.at_cut > 0;
        self.at_cut -= usize::from(tied);
        requests < self.cut || tied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_excess_goes_ties_cut_in_the_order_met() {
        let counts = vec![9, 1, 1, 5, 1, 9, 5];
        let mut lightest = Lightest::new(counts.clone(), 4).unwrap();
        let gone: Vec<bool> = counts.iter().map(|&n| lightest.forget(n)).collect();
        assert_eq!(gone, [false, true, true, true, true, false, false]);
        assert!(Lightest::new(counts.clone(), 0).is_none());
        assert!(Lightest::new(counts, 8).is_none());
    }
}
