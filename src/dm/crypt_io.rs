//! The queues a dm-crypt bio goes through (drivers/md/dm-crypt.c), with the
//! CPU time of encryption as the target's service parameter.
//!
//! * A read is cloned and submitted at once by the submitter
//!   (`kcryptd_io_read` from `crypt_map`). When the clone completes
//!   (`crypt_endio`), its decryption is queued on kcryptd
//!   (`kcryptd_queue_crypt`), or runs in the completion itself with
//!   `no_read_workqueue`; the bio ends when it is decrypted.
//! * A write is queued on kcryptd (`kcryptd_queue_crypt`), or encrypted by
//!   the submitter with `no_write_workqueue`. kcryptd encrypts into a copy
//!   (`kcryptd_crypt_write_convert`) and then
//!   `kcryptd_crypt_write_io_submit` either submits it from the worker
//!   (`submit_from_crypt_cpus`) or inserts it into `write_tree`, an
//!   rb-tree sorted by sector, and wakes the `dmcrypt_write` thread. That
//!   thread takes the whole tree and submits it in sector order inside a
//!   plug (`dmcrypt_write`): writes reach the disk sorted per batch, not in
//!   submission order, which is what a trace shows.
//!
//! The cost: encrypting or decrypting `n` bytes occupies one CPU for
//! `n / rate` (bytes per second per CPU, `cryptsetup benchmark`'s figure).
//! kcryptd is unbound with `num_online_cpus()` active works (one with
//! `same_cpu_crypt`): a work starts on the CPU free first, in queue order.
//! The submitter's own encryption (`no_write_workqueue`) and a completion's
//! decryption (`no_read_workqueue`) run one after the other on one CPU of
//! their own. The write thread runs as soon as a write is in the tree: the
//! wake-up preempts the kcryptd worker at its next `cond_resched` (one
//! crypt sector later), as a 6.1 guest with one CPU shows — eight writes
//! submitted at once leave the thread one by one, in the order kcryptd
//! encrypted them. The tree sorts the writes that finish encrypting at
//! the same instant (several CPUs, or no cost).

use std::collections::{BTreeMap, VecDeque};

use crate::bio::BioId;
use crate::genhd::DevId;

/// The CPU side of a dm-crypt device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CryptCpu {
    /// Encryption throughput of one CPU, bytes/s (0: no cost).
    pub encrypt_bps: f64,
    /// Decryption throughput of one CPU, bytes/s (0: no cost).
    pub decrypt_bps: f64,
    /// CPUs kcryptd may use at once (`num_online_cpus()`).
    pub cpus: u32,
}

/// `cryptsetup benchmark` for aes-xts with a 512-bit key (aes-256, the
/// LUKS2 default) on an AMD CPU with AES-NI, Linux 5.12-rc1 without
/// Spectre v2 mitigations: 2596.5 MiB/s encryption, 2566.2 MiB/s
/// decryption (linuxreviews.org, "Linux 5.12 Mostly Restores Long-Horrid
/// AES-XTS Performance", 2021).
pub const AES_XTS_512_ENCRYPT_MIB_S: f64 = 2596.5;
pub const AES_XTS_512_DECRYPT_MIB_S: f64 = 2566.2;

impl Default for CryptCpu {
    fn default() -> CryptCpu {
        CryptCpu { encrypt_bps: AES_XTS_512_ENCRYPT_MIB_S * 1_048_576.0, decrypt_bps: AES_XTS_512_DECRYPT_MIB_S * 1_048_576.0, cpus: 1 }
    }
}

/// Nanoseconds one CPU spends on `bytes` at `bps`.
pub fn crypt_cost_ns(bytes: u32, bps: f64) -> u64 {
    if bps <= 0.0 {
        return 0;
    }
    (bytes as f64 * 1e9 / bps).round() as u64
}

/// Where a finished encryption's write goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteSubmit {
    /// Into `write_tree`, for the `dmcrypt_write` thread.
    Tree,
    /// Submitted by the kcryptd worker (`submit_from_crypt_cpus`).
    Worker,
    /// Submitted by the task that encrypted it (`no_write_workqueue`).
    Task(u32),
}

/// A write ready for the disk: the encrypted clone (chained to its dm io),
/// and the dm device and sector it was remapped from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CryptWrite {
    pub clone: BioId,
    pub from_dev: DevId,
    pub from_sector: u64,
    /// The clone's sector on the disk (the rb-tree's key is `io->sector`,
    /// the target offset; both order the same within a target).
    pub sector: u64,
}

#[derive(Clone, Copy, Debug)]
enum Work {
    Write(CryptWrite, WriteSubmit),
    /// A read is decrypted: its dm io ends.
    ReadDone { io: BioId },
}

/// kcryptd, the inline CPU and the write thread of one dm-crypt device.
#[derive(Clone, Debug)]
pub struct CryptQueue {
    pub cpu: CryptCpu,
    /// When each kcryptd CPU is free again.
    kcryptd_free: Vec<u64>,
    /// When the CPU of the inline paths is free again.
    inline_free: u64,
    /// Work in progress, by (finish time, order queued).
    due: BTreeMap<(u64, u64), Work>,
    seq: u64,
    /// `cc->write_tree`: encrypted writes by (sector, arrival).
    write_tree: BTreeMap<(u64, u64), CryptWrite>,
    /// The tree `dmcrypt_write` took and is submitting.
    batch: VecDeque<CryptWrite>,
}

/// What came due: writes to submit now, from which task.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Due {
    pub submit: Vec<(WriteSubmit, CryptWrite)>,
    /// Read ios whose decryption finished.
    pub reads_done: Vec<BioId>,
}

impl CryptQueue {
    pub fn new(cpu: CryptCpu, same_cpu: bool) -> CryptQueue {
        let n = if same_cpu { 1 } else { cpu.cpus.max(1) };
        CryptQueue { cpu, kcryptd_free: vec![0; n as usize], inline_free: 0, due: BTreeMap::new(), seq: 0, write_tree: BTreeMap::new(), batch: VecDeque::new() }
    }

    /// `kcryptd_queue_crypt` for a write (or the submitter's own
    /// encryption when `inline`): returns when it is done, the time the
    /// device's work event is due.
    pub fn queue_write(&mut self, now: u64, bytes: u32, w: CryptWrite, submit: WriteSubmit, inline: bool) -> u64 {
        let cost = crypt_cost_ns(bytes, self.cpu.encrypt_bps);
        let at = if inline { self.run_inline(now, cost) } else { self.run_kcryptd(now, cost) };
        self.add(at, Work::Write(w, submit));
        at
    }

    /// `kcryptd_queue_crypt` from `crypt_endio` for a read clone that
    /// completed without error: its decryption.
    pub fn queue_read(&mut self, now: u64, bytes: u32, io: BioId, inline: bool) -> u64 {
        let cost = crypt_cost_ns(bytes, self.cpu.decrypt_bps);
        let at = if inline { self.run_inline(now, cost) } else { self.run_kcryptd(now, cost) };
        self.add(at, Work::ReadDone { io });
        at
    }

    fn add(&mut self, at: u64, w: Work) {
        self.seq += 1;
        self.due.insert((at, self.seq), w);
    }

    /// A kcryptd work of `cost` ns: on the CPU free first (the lowest
    /// numbered among equals), after what it already has.
    fn run_kcryptd(&mut self, now: u64, cost: u64) -> u64 {
        let (i, &free) = self.kcryptd_free.iter().enumerate().min_by_key(|&(i, &t)| (t.max(now), i)).expect("at least one CPU");
        let end = free.max(now) + cost;
        self.kcryptd_free[i] = end;
        end
    }

    fn run_inline(&mut self, now: u64, cost: u64) -> u64 {
        self.inline_free = self.inline_free.max(now) + cost;
        self.inline_free
    }

    /// Work finished by `now`, in finishing order: encrypted writes go
    /// into the tree (`kcryptd_crypt_write_io_submit`) or out to be
    /// submitted; decrypted reads out to be ended.
    pub fn work_due(&mut self, now: u64) -> Due {
        let mut out = Due::default();
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            match entry.remove() {
                Work::Write(w, WriteSubmit::Tree) => {
                    self.seq += 1;
                    self.write_tree.insert((w.sector, self.seq), w);
                }
                Work::Write(w, how) => out.submit.push((how, w)),
                Work::ReadDone { io } => out.reads_done.push(io),
            }
        }
        out
    }

    /// `dmcrypt_write`: the next write to submit — from the tree it took,
    /// or, once that is done, from the whole current tree taken at once;
    /// `None` when it sleeps.
    pub fn dmcrypt_write_next(&mut self) -> Option<CryptWrite> {
        if self.batch.is_empty() && !self.write_tree.is_empty() {
            self.batch.extend(std::mem::take(&mut self.write_tree).into_values());
        }
        self.batch.pop_front()
    }

    /// Nothing queued, encrypting or waiting for the thread.
    pub fn idle(&self) -> bool {
        self.due.is_empty() && self.write_tree.is_empty() && self.batch.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(clone: BioId, sector: u64) -> CryptWrite {
        CryptWrite { clone, from_dev: 9, from_sector: sector, sector }
    }

    #[test]
    fn cost_is_bytes_over_rate() {
        // 128 KiB at 2596.5 MiB/s: 131072 / (2596.5 × 1048576) s = 1 / 20772 s = 48.142 µs.
        assert_eq!(crypt_cost_ns(131_072, CryptCpu::default().encrypt_bps), 48_142);
        // 4 KiB at 100 MiB/s: 4096 / 104857600 s = 39062.5 ns, rounded half away from zero: 39063.
        assert_eq!(crypt_cost_ns(4096, 100.0 * 1_048_576.0), 39_063);
        assert_eq!(crypt_cost_ns(4096, 0.0), 0);
    }

    #[test]
    fn one_cpu_serialises_and_the_thread_takes_each_write() {
        // 1 CPU at 4096 bytes per µs (4096e6 B/s): each 4 KiB write takes 1000 ns.
        let cpu = CryptCpu { encrypt_bps: 4.096e9, decrypt_bps: 4.096e9, cpus: 1 };
        let mut q = CryptQueue::new(cpu, false);
        // Writes at sectors 300, 100, 200 queued at t=0 finish at 1000, 2000, 3000.
        let ends: Vec<u64> = [(1, 300), (2, 100), (3, 200)].iter().map(|&(c, s)| q.queue_write(0, 4096, w(c, s), WriteSubmit::Tree, false)).collect();
        assert_eq!(ends, [1000, 2000, 3000]);
        // Each is alone in the tree when the thread runs: submission order, 300, 100, 200.
        let mut order = Vec::new();
        for t in ends {
            assert_eq!(q.work_due(t), Due::default());
            order.extend(std::iter::from_fn(|| q.dmcrypt_write_next()).map(|x| x.sector));
        }
        assert_eq!(order, [300, 100, 200]);
        assert!(q.idle());
    }

    #[test]
    fn writes_done_together_leave_sorted() {
        // 2 CPUs: writes of 4 KiB (1000 ns) at 0 go to CPU 0 and 1 (both end at 1000), the third
        // to CPU 0 (ends 2000). At 1000 the tree holds 300 and 100: the thread takes them by sector.
        let cpu = CryptCpu { encrypt_bps: 4.096e9, decrypt_bps: 4.096e9, cpus: 2 };
        let mut q = CryptQueue::new(cpu, false);
        let ends: Vec<u64> = [(1, 300), (2, 100), (3, 200)].iter().map(|&(c, s)| q.queue_write(0, 4096, w(c, s), WriteSubmit::Tree, false)).collect();
        assert_eq!(ends, [1000, 1000, 2000]);
        q.work_due(1000);
        let first: Vec<u64> = std::iter::from_fn(|| q.dmcrypt_write_next()).map(|x| x.sector).collect();
        assert_eq!(first, [100, 300]);
        q.work_due(2000);
        assert_eq!(q.dmcrypt_write_next().map(|x| x.sector), Some(200));
        // No cost: all three finish at 0 and leave sorted, 100, 200, 300.
        let mut q = CryptQueue::new(CryptCpu { encrypt_bps: 0.0, ..cpu }, false);
        for (c, s) in [(1, 300), (2, 100), (3, 200)] {
            q.queue_write(0, 4096, w(c, s), WriteSubmit::Tree, false);
        }
        q.work_due(0);
        assert_eq!(std::iter::from_fn(|| q.dmcrypt_write_next()).map(|x| x.sector).collect::<Vec<_>>(), [100, 200, 300]);
        // same_cpu_crypt: one CPU whatever cpus says.
        assert_eq!(CryptQueue::new(cpu, true).kcryptd_free.len(), 1);
    }

    #[test]
    fn inline_and_worker_submissions_keep_order() {
        let cpu = CryptCpu { encrypt_bps: 4.096e9, decrypt_bps: 2.048e9, cpus: 4 };
        let mut q = CryptQueue::new(cpu, false);
        // no_write_workqueue: the submitter's CPU, one after the other: 1000, 2000.
        assert_eq!(q.queue_write(0, 4096, w(1, 300), WriteSubmit::Task(7), true), 1000);
        assert_eq!(q.queue_write(0, 4096, w(2, 100), WriteSubmit::Task(7), true), 2000);
        // A read's decryption at half the rate: 8 KiB... 4 KiB / 2.048e9 = 2000 ns, on a kcryptd CPU.
        assert_eq!(q.queue_read(0, 4096, 42, false), 2000);
        let d = q.work_due(2000);
        assert_eq!(d.submit.iter().map(|(h, x)| (*h, x.sector)).collect::<Vec<_>>(), [(WriteSubmit::Task(7), 300), (WriteSubmit::Task(7), 100)]);
        assert_eq!(d.reads_done, [42]);
    }
}
