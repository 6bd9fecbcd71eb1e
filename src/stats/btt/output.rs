//! What `btt -A` prints on standard output (btt/output.c), from the
//! state [`Btt`] collected: the same sections, headings, column widths and
//! the same arithmetic (which the comments point out where it is odd).

use std::fmt::Write as _;

use super::*;

const DASH_AVG: &str = "--------------- ------------- ------------- ------------- -----------\n";
const DASH_MERGE: &str = "---------- | -------- -------- ------- | -------- -------- -------- --------\n";
const DASH_OHEAD: &str = "---------- | --------- --------- --------- --------- ---------\n";
const DASH_SEEK: &str = "---------- | --------------- --------------- --------------- | ---------------\n";
const DASH_PLUG: &str = "---------- | ---------- ----------  | ----------------\n";
const DASH_NIOS: &str = "---------- | ----------   ----------\n";
const DASH_ACTQ: &str = "---------- | -------------\n";
const DASH_LIVE: &str = "---------- | ---------- ------------- ------------- ------\n";

/// The dm rows and the others, as the per-process and per-device tables
/// list them (M2D only in the all-devices table).
const DM_ROWS: [(usize, &str); 3] = [(Q2Q_DM, "Q2Qdm"), (Q2A_DM, "Q2Adm"), (Q2C_DM, "Q2Cdm")];
const ROWS: [(usize, &str); 9] = [(Q2Q, "Q2Q"), (Q2A, "Q2A"), (Q2G, "Q2G"), (S2G, "S2G"), (G2I, "G2I"), (Q2M, "Q2M"), (I2D, "I2D"), (D2C, "D2C"), (Q2C, "Q2C")];
const ALL_ROWS: [(usize, &str); 10] =
    [(Q2Q, "Q2Q"), (Q2A, "Q2A"), (Q2G, "Q2G"), (S2G, "S2G"), (G2I, "G2I"), (Q2M, "Q2M"), (I2D, "I2D"), (M2D, "M2D"), (D2C, "D2C"), (Q2C, "Q2C")];

/// printf's `%W.Pf`, with glibc's spelling of the values Rust spells
/// otherwise (x86 gives 0/0 the sign bit: "-nan").
fn f(v: f64, width: usize, prec: usize) -> String {
    if v.is_nan() {
        format!("{:>width$}", if v.is_sign_negative() { "-nan" } else { "nan" })
    } else if v.is_infinite() {
        format!("{:>width$}", if v < 0.0 { "-inf" } else { "inf" })
    } else {
        format!("{v:>width$.prec$}")
    }
}

fn section(out: &mut String, hdr: &str) {
    let _ = write!(out, "==================== {hdr} ====================\n\n");
}

fn avg_hdr(out: &mut String, hdr: &str) {
    let _ = writeln!(out, "{:>15} {:>13} {:>13} {:>13} {:>11}", hdr, "MIN", "AVG", "MAX", "N");
    out.push_str(DASH_AVG);
}

/// `__output_avg`.
fn avg_row(out: &mut String, label: &str, a: &AvgInfo) {
    if a.n > 0 {
        let _ = writeln!(out, "{:<15} {} {} {} {:>11}", label, f(bit_time(a.min), 13, 9), f(a.avg(), 13, 9), f(bit_time(a.max), 13, 9), a.n);
    }
}

impl Dip {
    /// `make_dev_hdr` with parentheses.
    fn hdr(&self) -> String {
        format!("({:3},{:3})", self.major, self.minor)
    }
}

impl Btt {
    /// btt -A's standard output.
    pub fn text(&self) -> String {
        let mut b = self.clone();
        let mut out = String::new();
        b.per_process(&mut out);
        b.per_device(&mut out);
        b.all_devices(&mut out);
        section(&mut out, "Device Overhead");
        b.overhead(&mut out);
        section(&mut out, "Device Merge Information");
        b.merge_ratio(&mut out);
        section(&mut out, "Device Q2Q Seek Information");
        b.seek_info(&mut out, true);
        section(&mut out, "Device D2D Seek Information");
        b.seek_info(&mut out, false);
        section(&mut out, "Plug Information");
        b.plug_info(&mut out);
        section(&mut out, "Active Requests At Q Information");
        b.act_q(&mut out);
        section(&mut out, "I/O Active Period Information");
        b.p_live(&mut out);
        section(&mut out, "Q2D Histogram");
        b.q2d_histo(&mut out);
        b.ranges(&mut out);
        out
    }

    /// Processes in name order (btt walks its tree of names).
    fn procs_by_name(&self) -> impl Iterator<Item = &Proc> {
        self.proc_by_name.values().map(|&p| &self.procs[p])
    }

    fn per_process(&self, out: &mut String) {
        section(out, "Per Process");
        let table = |out: &mut String, (which, label): (usize, &str)| {
            avg_hdr(out, label);
            for p in self.procs_by_name() {
                let name: String = p.name.chars().take(14).collect();
                avg_row(out, &name, &p.avgs[which]);
            }
            out.push('\n');
        };
        DM_ROWS.into_iter().for_each(|r| table(out, r));
        out.push('\n');
        ROWS.into_iter().for_each(|r| table(out, r));
    }

    fn per_device(&self, out: &mut String) {
        section(out, "Per Device");
        let table = |out: &mut String, (which, label): (usize, &str)| {
            avg_hdr(out, label);
            for d in &self.dips {
                avg_row(out, &d.hdr(), &d.avgs[which]);
            }
            out.push('\n');
        };
        DM_ROWS.into_iter().for_each(|r| table(out, r));
        out.push('\n');
        ROWS.into_iter().for_each(|r| table(out, r));
    }

    fn all_devices(&self, out: &mut String) {
        section(out, "All Devices");
        avg_hdr(out, "ALL");
        for (which, label) in DM_ROWS {
            avg_row(out, label, &self.all[which]);
        }
        out.push('\n');
        for (which, label) in ALL_ROWS {
            avg_row(out, label, &self.all[which]);
        }
        out.push('\n');
    }

    /// `output_dip_prep_ohead`: each stage's share of the device's Q2C
    /// total (not of their sum: they can add up past 100%).
    fn overhead(&self, out: &mut String) {
        let _ = writeln!(out, "{:>10} | {:>9} {:>9} {:>9} {:>9} {:>9}", "DEV", "Q2G", "G2I", "Q2M", "I2D", "D2C");
        out.push_str(DASH_OHEAD);
        const FIELDS: [usize; 5] = [Q2G, G2I, Q2M, I2D, D2C];
        let mut od = [AvgInfo::default(); 6];
        for d in &self.dips {
            let q2c = &d.avgs[Q2C];
            if q2c.n == 0 || q2c.total == 0 {
                continue;
            }
            let pct: Vec<String> = FIELDS.iter().map(|&x| format!("{}%", f(100.0 * d.avgs[x].total as f64 / q2c.total as f64, 8, 4))).collect();
            let _ = writeln!(out, "{:>10} | {}", d.hdr(), pct.join(" "));
            for (o, x) in od.iter_mut().zip(FIELDS.iter().chain([Q2C].iter())) {
                o.total += d.avgs[*x].total;
                o.n += d.avgs[*x].n;
            }
        }
        if od[..5].iter().any(|o| o.n > 0) {
            let q2c = od[5].total as f64;
            out.push_str(DASH_OHEAD);
            let pct: Vec<String> = od[..5].iter().map(|o| format!("{}%", f(if o.n == 0 { 0.0 } else { 100.0 * (o.total as f64 / q2c) }, 8, 4))).collect();
            let _ = writeln!(out, "{:>10} | {}", "Overall", pct.join(" "));
        }
        out.push('\n');
    }

    /// `output_dip_merge_ratio`. btt raises a device's Q count to its D
    /// count here, which the active-request figures below then use.
    fn merge_ratio(&mut self, out: &mut String) {
        let head = format!("{:>10} | {:>8} {:>8} {:>7} | {:>8} {:>8} {:>8} {:>8}\n", "DEV", "#Q", "#D", "Ratio", "BLKmin", "BLKavg", "BLKmax", "Total");
        out.push_str(&head);
        out.push_str(DASH_MERGE);
        let (mut n, mut nq, mut nd, mut total, mut bmin, mut bmax) = (0, 0u64, 0u64, 0u64, 0u64, 0u64);
        for d in &mut self.dips {
            if d.n_qs == 0 || d.n_ds == 0 {
                continue;
            }
            d.n_qs = d.n_qs.max(d.n_ds);
            let b = d.avgs[BLKS];
            let avg = (b.total as f64 / d.n_ds as f64) as u64;
            let _ = writeln!(out, "{:>10} | {:>8} {:>8} {} | {:>8} {:>8} {:>8} {:>8}", d.hdr(), d.n_qs, d.n_ds, f(d.n_qs as f64 / d.n_ds as f64, 7, 1), b.min, avg, b.max, b.total);
            if n == 0 {
                (bmin, bmax) = (b.min, b.max);
            }
            n += 1;
            nq += d.n_qs;
            nd += d.n_ds;
            total += b.total;
            bmin = bmin.min(b.min);
            bmax = bmax.max(b.max);
        }
        if n > 1 {
            out.push_str(DASH_MERGE);
            out.push_str(&head);
            let ratio = (nq as f32 / nd as f32) as f64;
            let _ = writeln!(out, "{:>10} | {:>8} {:>8} {} | {:>8} {:>8} {:>8} {:>8}", "TOTAL", nq, nd, f(ratio, 7, 1), bmin, total / nd, bmax, total);
        }
        out.push('\n');
    }

    /// `output_dip_q2q_seek_info` / `output_dip_seek_info`.
    fn seek_info(&self, out: &mut String, q2q: bool) {
        let head = |out: &mut String, first: &str| {
            let _ = writeln!(out, "{:>10} | {:>15} {:>15} {:>15} | {:<15}", first, "NSEEKS", "MEAN", "MEDIAN", "MODE");
        };
        head(out, "DEV");
        out.push_str(DASH_SEEK);
        let (mut nseeks, mut mean, mut median) = (0i64, 0.0f64, 0i64);
        // add_seek_mode_info's list: newest first.
        let mut modes: Vec<(i64, u64)> = Vec::new();
        let mut any = false;
        for d in &self.dips {
            let s = if q2q { &d.q2q_seek } else { &d.d2d_seek };
            if s.nseeks == 0 {
                continue;
            }
            let fig = s.figures();
            let _ = write!(out, "{:>10} | {:>15} {} {:>15} | {}({})", d.hdr(), fig.nseeks, f(fig.mean, 15, 1), fig.median, fig.modes.first().copied().unwrap_or(0), fig.most);
            if fig.modes.len() > 2 {
                let _ = writeln!(out, "\n{:>10}   {:>15} {:>15} {:>15}   ...({} more)", "", "", "", "", fig.modes.len() - 1);
            } else {
                for m in fig.modes.iter().skip(1) {
                    let _ = write!(out, " {m}");
                }
                out.push('\n');
            }
            nseeks += fig.nseeks as i64;
            mean += fig.nseeks as f64 * fig.mean;
            median += fig.nseeks as i64 * fig.median;
            for &m in &fig.modes {
                match modes.iter_mut().find(|(k, _)| *k == m) {
                    Some(e) => e.1 += fig.most,
                    None => modes.insert(0, (m, fig.most)),
                }
            }
            any = true;
        }
        if any {
            out.push_str(DASH_SEEK);
            head(out, "Overall");
            let best = overall_modes(&modes);
            let _ = write!(out, "{:>10} | {:>15} {} {:>15} | {}({})", "Average", nseeks, f(mean / nseeks as f64, 15, 1), median / nseeks, best[0].0, best[0].1);
            if best.len() > 1 {
                let _ = writeln!(out, "\n{:>10}   {:>15} {:>15} {:>15}   ...({} more)", "", "", "", "", best.len() - 1);
            }
            out.push('\n');
        }
        out.push('\n');
    }

    /// `output_plug_info`: a device still plugged at the end is unplugged
    /// at its last event first.
    fn plug_info(&mut self, out: &mut String) {
        let _ = writeln!(out, "{:>10} | {:>10} {:>10}  | {}", "DEV", "# Plugs", "# Timer Us", "% Time Q Plugged");
        out.push_str(DASH_PLUG);
        let (mut n, mut plugs, mut timer, mut pct_sum) = (0i64, 0i64, 0i64, 0.0);
        for d in &mut self.dips {
            if d.is_plugged {
                d.nplugs += 1;
                d.is_plugged = false;
                d.plugged_time += bit_time(d.end_ns) - d.last_plug;
            }
            if d.nplugs + d.nplugs_t == 0 {
                continue;
            }
            let pct = 100.0 * (d.plugged_time / (bit_time(d.end_ns) - d.start_time));
            let _ = writeln!(out, "{:>10} | {:>10}({:>10}) | {}%", d.hdr(), d.nplugs, d.nplugs_t, f(pct, 13, 9));
            n += 1;
            plugs += d.nplugs as i64;
            timer += d.nplugs_t as i64;
            pct_sum += pct;
        }
        if n > 1 {
            out.push_str(DASH_PLUG);
            let _ = writeln!(out, "{:>10} | {:>10} {:>10}  | {}", "Overall", "# Plugs", "# Timer Us", "% Time Q Plugged");
            let _ = writeln!(out, "{:>10} | {:>10}({:>10}) | {}%", "Average", plugs / n, timer / n, f(pct_sum / n as f64, 13, 9));
        }
        out.push('\n');
        let _ = writeln!(out, "{:>10} | {:>10}   {:>10}", "DEV", "IOs/Unp", "IOs/Unp(to)");
        out.push_str(DASH_NIOS);
        let (mut n_up, mut n_upt, mut tot, mut tot_t) = (0u64, 0u64, 0u64, 0u64);
        for d in &self.dips {
            let (mut a, mut at) = (0.0, 0.0);
            if d.nios_up > 0 && d.nplugs > 0 {
                a = d.nios_up as f64 / d.nplugs as f64;
                n_up += d.nplugs;
                tot += d.nios_up;
            }
            if d.nios_upt > 0 && d.nplugs_t > 0 {
                at = d.nios_upt as f64 / d.nplugs_t as f64;
                n_upt += d.nplugs_t;
                tot_t += d.nios_upt;
            }
            let _ = writeln!(out, "{:>10} | {}   {}", d.hdr(), f(a, 10, 1), f(at, 10, 1));
        }
        if n_up > 0 || n_upt > 0 {
            let avg = |t: u64, n: u64| if n > 0 { t as f64 / n as f64 } else { 0.0 };
            out.push_str(DASH_NIOS);
            let _ = writeln!(out, "{:>10} | {:>10}   {:>10}", "Overall", "IOs/Unp", "IOs/Unp(to)");
            let _ = writeln!(out, "{:>10} | {}   {}", "Average", f(avg(tot, n_up), 10, 1), f(avg(tot_t, n_upt), 10, 1));
        }
        out.push('\n');
    }

    /// `output_actQ_info`: requests active when each Q arrived, on
    /// devices that are not remappers.
    fn act_q(&self, out: &mut String) {
        let _ = writeln!(out, "{:>10} | {:>13}", "DEV", "Avg Reqs @ Q");
        out.push_str(DASH_ACTQ);
        let (mut n, mut qs, mut act) = (0, 0u64, 0u64);
        for d in self.dips.iter().filter(|d| d.n_qs > 0 && !remapper(d.major)) {
            let _ = writeln!(out, "{:>10} | {}", d.hdr(), f(d.t_act_q as f64 / d.n_qs as f64, 13, 1));
            n += 1;
            qs += d.n_qs;
            act += d.t_act_q;
        }
        if n > 1 {
            out.push_str(DASH_ACTQ);
            let _ = writeln!(out, "{:>10} | {:>13}", "Overall", "Avgs Reqs @ Q");
            let _ = writeln!(out, "{:>10} | {}", "Average", f(act as f64 / qs as f64, 13, 1));
        }
        out.push('\n');
    }

    fn p_live(&self, out: &mut String) {
        let _ = writeln!(out, "{:>10} | {:>10} {:>13} {:>13} {:>6}", "DEV", "# Live", "Avg. Act", "Avg. !Act", "% Live");
        out.push_str(DASH_LIVE);
        let row = |out: &mut String, name: &str, l: &Lives| {
            let i = l.info();
            let _ = writeln!(out, "{:>10} | {:>10} {} {} {}", name, i.nlives, f(i.avg_live, 13, 9), f(i.avg_lull, 13, 9), f(i.p_live, 6, 2));
        };
        for d in &self.dips {
            row(out, &d.hdr(), &d.lives);
        }
        out.push_str(DASH_LIVE);
        row(out, "Total Sys", &self.all_lives);
        out.push('\n');
    }

    /// `output_q2d_histo`. btt's header ends in ">=1.0\n" printed with a
    /// trailing space, so the dashes below start with one.
    fn q2d_histo(&self, out: &mut String) {
        const HDR: [&str; 10] = ["<.005", "<.010", "<.025", "<.050", "<.075", "<.100", "<.250", "<.500", "< 1.0", ">=1.0\n"];
        let dashes = "===== ".repeat(10) + "\n";
        let row = |out: &mut String, h: &[u64; 10]| {
            let n: u64 = h.iter().sum();
            for &c in h {
                let _ = write!(out, "{} ", f(100.0 * c as f64 / n as f64, 5, 1));
            }
            out.push('\n');
        };
        let _ = write!(out, "{:>10} | ", "DEV");
        for h in HDR {
            let _ = write!(out, "{h:>5} ");
        }
        out.push_str("--------- | ");
        out.push_str(&dashes);
        let mut all = [0u64; 10];
        let mut n = 0;
        for d in self.dips.iter().filter(|d| d.q2d.iter().sum::<u64>() > 0) {
            let _ = write!(out, "{:>10} | ", d.hdr());
            row(out, &d.q2d);
            all.iter_mut().zip(&d.q2d).for_each(|(a, b)| *a += b);
            n += 1;
        }
        if n > 0 {
            out.push_str("========== | ");
            out.push_str(&dashes);
            let _ = write!(out, "{:>10} | ", "AVG");
            row(out, &all);
            out.push('\n');
        }
    }

    /// `output_ranges`: the activity ranges of the system, each device
    /// (when there are several) and each process.
    fn ranges(&self, out: &mut String) {
        out.push_str("# Total System\n");
        let mut base = 0.0f32;
        if regions(out, "Total System", &self.all_regions, base) {
            base += 1.0;
        }
        if self.dips.len() > 1 {
            out.push_str("# Per device\n");
            for d in &self.dips {
                if regions(out, &format!("{},{}", d.major, d.minor), &d.regions, base) {
                    base += 1.0;
                }
            }
        }
        out.push_str("# Per process\n");
        for p in self.procs_by_name() {
            regions(out, &p.name, &p.regions, base);
            base += 1.0;
        }
    }
}

/// `output_regions`: false (nothing printed) without any range.
fn regions(out: &mut String, header: &str, reg: &Regions, base: f32) -> bool {
    if reg.q.0.is_empty() && reg.c.0.is_empty() {
        return false;
    }
    let ranges = |out: &mut String, r: &Ranges, base: f32| {
        let limit = (base as f64 + 0.4) as f32;
        for &(s, e) in &r.0 {
            for (t, y) in [(s, base), (s, limit), (e, limit), (e, base)] {
                let _ = writeln!(out, "{} {:5.1}", f(bit_time(t), 13, 9), y);
            }
        }
        out.push('\n');
    };
    let _ = writeln!(out, "# {header:>16} : q activity");
    ranges(out, &reg.q, base);
    let _ = writeln!(out, "# {header:>16} : c activity");
    ranges(out, &reg.c, base + 0.5);
    true
}

/// `output_seek_mode_info`'s pick among the devices' modes (`modes`
/// newest first): a mode with more seeks replaces the list; one with as
/// many is put in front, or, when already listed, replaces the list with
/// its seeks added to the listed ones.
fn overall_modes(modes: &[(i64, u64)]) -> Vec<(i64, u64)> {
    let mut list: Vec<(i64, u64)> = Vec::new();
    for &(m, n) in modes {
        match list.first() {
            None => list = vec![(m, n)],
            Some(&(_, top)) if n > top => list = vec![(m, n)],
            Some(&(_, top)) if n == top => match list.iter().find(|(k, _)| *k == m) {
                Some(&(_, seen)) => list = vec![(m, n + seen)],
                None => list.insert(0, (m, n)),
            },
            _ => {}
        }
    }
    list
}
