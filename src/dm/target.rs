//! The device-mapper driver for linear and striped tables (drivers/md/dm.c):
//! `dm_submit_bio` → `dm_split_and_process_bio` →
//! `__split_and_process_bio`, with the targets' `map` from [`super::linear`]
//! and [`super::stripe`].
//!
//! Each call handles one target's worth of the bio: a read or write gets
//! one clone cut to [`DmTarget::max_io_len`] (target end, and for
//! dm-stripe the chunk and dm's `max_sectors`); a discard, secure erase or
//! write zeroes — first split to dm's own limits — gets
//! `num_discard_bios` clones up to the target end. What is left is trimmed
//! off the original bio, traced as a split and resubmitted with
//! `submit_bio_noacct` (the tail of `current->bio_list`), "so it gets
//! handled *after* bios already submitted have been completely processed".
//! A flush sends an empty flush to every device of every target; its data
//! then goes on at once (the kernel resubmits it when the flushes
//! complete).

use crate::bio::{bvec_iter_advance, req, Bio, BioId, BioVecs, Op, SECTOR_SHIFT};
use crate::genhd::DevId;
use crate::md::personality::{alloc_bio, clone_part, submit_remapped};
use crate::submit::{BioDriver, BlockCore, DriverSubmit, SimEvent, EIO};
use crate::trace::Action;

use super::crypt::{crypt_alloc_buffer, CryptC};
use super::crypt_io::{CryptCpu, CryptQueue, CryptWrite, WriteSubmit};
use super::{dm_table_find_target, DmMap, DmTarget, TargetKind};

/// A dm device (`struct mapped_device` with its live table).
pub struct MappedDevice {
    pub targets: Vec<DmTarget>,
    /// For each target, its devices in table order (one for linear, one per
    /// stripe for striped).
    pub devs: Vec<Vec<DevId>>,
    /// dm-crypt's kcryptd and write thread, when the table has a crypt
    /// target (one set for the device: a table has one crypt target in
    /// practice; the kernel has a set per target).
    pub crypt: Option<CryptQueue>,
    /// The kcryptd worker's task.
    worker: u32,
    /// Where the next encrypted copy's pages go (`crypt_alloc_buffer`).
    crypt_pages: u64,
}

/// Where dm-crypt's page pool lives in the model's physical memory: far
/// above the sources' buffers and the blk-crypto bounce pages.
const CRYPT_PAGES_BASE: u64 = 3 << 46;

/// `is_abnormal_io`: ops dm splits to its queue limits and duplicates.
fn is_abnormal_io(op: Op) -> bool {
    matches!(op, Op::Discard | Op::SecureErase | Op::WriteZeroes)
}

impl BioDriver for MappedDevice {
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        self.dm_split_and_process_bio(core, bio);
    }

    /// `kthread_run(dmcrypt_write, cc, "dmcrypt_write/%s", devname)`: the
    /// name is cut to 15 characters (`TASK_COMM_LEN`), so every dm device's
    /// thread (devname `253:N`) shows as `dmcrypt_write/2`.
    fn thread_comm(&self, _dev_name: &str) -> Option<String> {
        self.crypt.as_ref().map(|_| "dmcrypt_write/2".to_string())
    }

    /// `dmcrypt_write`: the next encrypted write in sector order.
    fn thread_next(&mut self, core: &mut BlockCore) -> Option<BioId> {
        let w = self.crypt.as_mut()?.dmcrypt_write_next()?;
        core.trace_bio_remap(w.clone, w.from_dev, w.from_sector);
        Some(w.clone)
    }

    /// kcryptd's worker (an unbound workqueue's kworker).
    fn worker_name(&self) -> Option<String> {
        self.crypt.as_ref().map(|_| "kworker/u8:1".to_string())
    }

    fn set_worker(&mut self, task: u32) {
        self.worker = task;
    }

    /// kcryptd work finished: decrypted reads end, encrypted writes go to
    /// the tree or out to be submitted by the worker or the submitter.
    fn work_due(&mut self, core: &mut BlockCore, out: &mut Vec<DriverSubmit>) {
        let Some(q) = self.crypt.as_mut() else { return };
        let due = q.work_due(core.now);
        for io in due.reads_done {
            core.bio_endio(io, 0);
        }
        for (how, w) in due.submit {
            let task = match how {
                WriteSubmit::Task(t) => t,
                WriteSubmit::Worker | WriteSubmit::Tree => self.worker,
            };
            out.push(DriverSubmit { task, bio: w.clone, from_dev: w.from_dev, from_sector: w.from_sector });
        }
    }

    /// `crypt_endio` of a read clone: the dm io waits for its decryption
    /// (on kcryptd, or in the completion with `no_read_workqueue`); a
    /// failed read ends at once.
    fn bio_deferred_end(&mut self, core: &mut BlockCore, io: BioId, status: i32) {
        let b = core.bio(io);
        let (dev, sector, bytes) = (b.dev, b.iter.sector, b.iter.size);
        let inline = self.crypt_target(sector).is_some_and(|cc| cc.flags.no_read_workqueue);
        match self.crypt.as_mut() {
            Some(q) if status == 0 => {
                let at = q.queue_read(core.now, bytes, io, inline);
                core.schedule(at, SimEvent::DriverWork { dev });
            }
            _ => core.bio_endio(io, status),
        }
    }
}

impl MappedDevice {
    /// A dm device over `devs` with `targets`; `cpu` is the CPU side of its
    /// crypt targets, if any.
    pub fn new(targets: Vec<DmTarget>, devs: Vec<Vec<DevId>>, cpu: CryptCpu) -> MappedDevice {
        let same_cpu = targets.iter().any(|t| matches!(&t.kind, TargetKind::Crypt(c) if c.flags.same_cpu_crypt));
        let crypt = targets.iter().any(|t| matches!(t.kind, TargetKind::Crypt(_))).then(|| CryptQueue::new(cpu, same_cpu));
        MappedDevice { targets, devs, crypt, worker: 0, crypt_pages: CRYPT_PAGES_BASE }
    }

    /// The crypt target holding dm `sector`, if it is one.
    fn crypt_target(&self, sector: u64) -> Option<&CryptC> {
        match &dm_table_find_target(&self.targets, sector)?.kind {
            TargetKind::Crypt(cc) => Some(cc),
            _ => None,
        }
    }

    /// `dm_table_find_target`, as an index into the table.
    fn target_index(&self, sector: u64) -> Option<usize> {
        let ti = dm_table_find_target(&self.targets, sector)?;
        self.targets.iter().position(|t| std::ptr::eq(t, ti))
    }

    /// `dm_split_and_process_bio`.
    fn dm_split_and_process_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        let abnormal = is_abnormal_io(core.bio(bio).op);
        let bio = if abnormal {
            match core.bio_split_to_limits(bio) {
                Some((b, _)) => b,
                None => return,
            }
        } else {
            bio
        };
        if core.bio(bio).flags & req::PREFLUSH != 0 {
            self.send_empty_flush(core, bio);
            if core.bio(bio).iter.size == 0 {
                core.bio_endio(bio, 0);
                return;
            }
            core.bio_mut(bio).flags &= !req::PREFLUSH;
        }
        let Some(len) = self.split_and_process_bio(core, bio, abnormal) else {
            core.bio_io_error(bio, EIO);
            return;
        };
        if len < core.bio(bio).sectors() {
            self.resubmit_remainder(core, bio, len);
        } else {
            core.bio_endio(bio, 0);
        }
    }

    /// `__split_and_process_bio`: clone what fits the bio's first target
    /// and map it; returns how many sectors were handled (`None`: no target).
    fn split_and_process_bio(&mut self, core: &mut BlockCore, bio: BioId, abnormal: bool) -> Option<u32> {
        let b = core.bio(bio);
        let (dm, sector, count) = (b.dev, b.iter.sector, b.sectors());
        let t = self.target_index(sector)?;
        let ti = &self.targets[t];
        let len = if abnormal {
            (ti.begin + ti.len - sector).min(count as u64) as u32
        } else {
            let max_sectors = core.topo.limits(dm).max_sectors;
            let len = ti.max_io_len(sector, max_sectors)?.min(count as u64) as u32;
            match &ti.kind {
                TargetKind::Crypt(cc) => self.crypt_accept_partial(core, bio, t, cc, len),
                _ => len,
            }
        };
        let io = self.start_io_acct(core, bio, len);
        if abnormal {
            self.process_abnormal_io(core, io, t, sector, len);
        } else {
            self.map_bio(core, io, t, sector, len);
        }
        core.bio_endio(io, 0);
        Some(len)
    }

    /// The `dm_io` of one call: an accounting clone of the handled part,
    /// chained to the original; the target clones complete into it.
    fn start_io_acct(&self, core: &mut BlockCore, bio: BioId, len: u32) -> BioId {
        let dm = core.bio(bio).dev;
        let io = core.bio_alloc_clone(bio, dm);
        core.bio_mut(io).iter.size = len << SECTOR_SHIFT;
        core.bio_chain(io, bio);
        core.bio_start_io_acct(io);
        io
    }

    /// `alloc_tio` + `__map_bio` for a read or write: the clone is mapped
    /// by the target, traced as a remap and submitted.
    fn map_bio(&mut self, core: &mut BlockCore, io: BioId, t: usize, sector: u64, len: u32) {
        let ti = &self.targets[t];
        if let TargetKind::Crypt(cc) = &ti.kind {
            let cc = cc.clone();
            return self.crypt_map(core, io, t, &cc, sector, len);
        }
        let DmMap { dev, sector: to } = ti.map_sector(sector).expect("sector inside its target");
        let flags = core.bio(io).flags;
        let clone = clone_part(core, io, self.devs[t][dev as usize], 0, len, to, flags);
        submit_remapped(core, io, clone, sector);
    }

    /// `crypt_map`'s `dm_accept_partial_bio`: the target takes at most
    /// the version's request size of `len` (the rest is resubmitted).
    fn crypt_accept_partial(&self, core: &BlockCore, bio: BioId, t: usize, cc: &CryptC, len: u32) -> u32 {
        let write = core.bio(bio).op.is_write();
        let lower_lbs = core.topo.limits(self.devs[t][0]).logical_block_size;
        cc.max_request_sectors(write, len, lower_lbs, core.beh.crypt_max_request).unwrap_or(len)
    }

    /// `crypt_map` for a read or write of `len` sectors at dm `sector`: a
    /// misaligned bio is killed; a read's clone is submitted at once and
    /// its end waits for decryption; a write is encrypted into a copy of
    /// its own pages, queued for kcryptd (or the submitter), and submitted
    /// when that is done ([`super::crypt_io`]).
    fn crypt_map(&mut self, core: &mut BlockCore, io: BioId, t: usize, cc: &CryptC, sector: u64, len: u32) {
        let ti = &self.targets[t];
        let dev = self.devs[t][0];
        let (dm, op, flags) = { let b = core.bio(io); (b.dev, b.op, b.flags) };
        if !cc.aligned(sector - ti.begin, len) {
            core.bio_io_error(io, EIO);
            return;
        }
        let to = cc.start + (sector - ti.begin);
        if op == Op::Read {
            // The io's end is held for decryption (bio_deferred_end).
            core.bio_mut(io).flags |= req::DEFER_END;
            let clone = clone_part(core, io, dev, 0, len, to, flags);
            submit_remapped(core, io, clone, sector);
            return;
        }
        let bytes = len << SECTOR_SHIFT;
        let bvecs = crypt_alloc_buffer(bytes, core.beh.crypt_pages, &mut self.crypt_pages);
        let l = core.bio(io);
        let (owner, cookie) = (l.owner, l.cookie);
        let clone = core.alloc_bio(Bio { owner, cookie, ..Bio::new(dev, op, flags, to, bytes, BioVecs::new(&bvecs)) });
        core.bio_chain(clone, io);
        let submit = if cc.flags.no_write_workqueue {
            WriteSubmit::Task(core.current)
        } else if cc.flags.submit_from_crypt_cpus {
            WriteSubmit::Worker
        } else {
            WriteSubmit::Tree
        };
        let w = CryptWrite { clone, from_dev: dm, from_sector: sector, sector: to };
        let q = self.crypt.as_mut().expect("a crypt target has its queues");
        let at = q.queue_write(core.now, bytes, w, submit, cc.flags.no_write_workqueue);
        core.schedule(at, SimEvent::DriverWork { dev: dm });
    }

    /// `__process_abnormal_io` → `__send_duplicate_bios`: one clone per
    /// `num_discard_bios`, each mapped to its own piece; a striped clone
    /// whose stripe holds none of the range is ended unsubmitted.
    fn process_abnormal_io(&self, core: &mut BlockCore, io: BioId, t: usize, sector: u64, len: u32) {
        let b = core.bio(io);
        let (op, flags) = (b.op, b.flags);
        let mut pieces = Vec::new();
        self.targets[t].map_discard(sector, len as u64, &mut pieces);
        for (m, n) in pieces {
            let clone = alloc_bio(core, io, self.devs[t][m.dev as usize], op, flags, m.sector, n as u32);
            submit_remapped(core, io, clone, sector);
        }
    }

    /// `__send_empty_flush`: an empty `REQ_PREFLUSH` write to each device
    /// of each target (`num_flush_bios`: 1 for linear, one per stripe).
    fn send_empty_flush(&self, core: &mut BlockCore, bio: BioId) {
        for devs in &self.devs {
            for &dev in devs {
                let flush = alloc_bio(core, bio, dev, Op::Write, req::PREFLUSH, 0, 0);
                submit_remapped(core, bio, flush, 0);
            }
        }
    }

    /// `bio_trim` of the handled part, `trace_block_split` (of the
    /// remainder itself, as dm does), and `submit_bio_noacct`.
    fn resubmit_remainder(&self, core: &mut BlockCore, bio: BioId, len: u32) {
        let b = core.bio_mut(bio);
        bvec_iter_advance(&b.bvecs, &mut b.iter, len << SECTOR_SHIFT);
        let (dev, sector) = (b.dev, b.iter.sector);
        core.stats[dev as usize].splits += 1;
        core.trace_bio(Action::Split, bio, sector, 0);
        core.submit_bio_noacct(bio);
    }
}
