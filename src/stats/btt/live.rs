//! btt's I/O active periods (btt/p_live.c): the union of the times
//! between a request's issue and completion, touching spans joined.

use super::bit_time;

#[derive(Clone, Debug, Default)]
pub struct Lives {
    /// Disjoint spans (start, end) in ns, in order: apart, since spans
    /// that touch are joined, so their ends are in order too. Most new
    /// spans join or follow the last one.
    spans: Vec<(u64, u64)>,
}

/// `struct p_live_info`.
pub struct LiveInfo {
    pub nlives: u64,
    pub avg_live: f64,
    pub avg_lull: f64,
    pub p_live: f64,
}

impl Lives {
    /// `p_live_add`: join [dt, ct] with every span it overlaps or touches.
    pub fn add(&mut self, mut dt: u64, mut ct: u64) {
        // The spans it joins: those ending at dt or after and starting at
        // ct or before, one run of the list.
        let first = self.spans.partition_point(|&(_, e)| e < dt);
        let last = first + self.spans[first..].partition_point(|&(s, _)| s <= ct);
        if first < last {
            dt = dt.min(self.spans[first].0);
            ct = ct.max(self.spans[last - 1].1);
        }
        self.spans.splice(first..last, [(dt, ct)]);
    }

    /// `p_live_get`. btt measures the whole time from 0 (its start is
    /// never moved off 0) to the last span's end; with one span it
    /// reports 100% live and, having set no average, 0.
    pub fn info(&self) -> LiveInfo {
        let nlives = self.spans.len() as u64;
        let tot: u64 = self.spans.iter().map(|(s, e)| e - s).sum();
        let t_end = self.spans.iter().map(|s| s.1).max().unwrap_or(0);
        match nlives {
            0 => LiveInfo { nlives, avg_live: 0.0, avg_lull: 0.0, p_live: 0.0 },
            1 => LiveInfo { nlives, avg_live: 0.0, avg_lull: 0.0, p_live: 100.0 },
            _ => {
                let (t_time, tot) = (bit_time(t_end), bit_time(tot));
                LiveInfo { nlives, avg_live: tot / nlives as f64, avg_lull: (t_time - tot) / (nlives - 1) as f64, p_live: 100.0 * (tot / t_time) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_join_when_they_touch() {
        // [1, 3] and [3, 5] touch: one span of 4 ns. [10, 12] stands
        // apart; [2, 11] then joins all three into [1, 12].
        let mut l = Lives::default();
        l.add(1, 3);
        l.add(3, 5);
        l.add(10, 12);
        assert_eq!(l.info().nlives, 2);
        l.add(2, 11);
        assert_eq!(l.spans, [(1, 12)]);
    }
}
