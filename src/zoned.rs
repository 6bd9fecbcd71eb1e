//! Host-managed zoned disks: the device's write pointers
//! (drivers/block/null_blk/zoned.c, drivers/scsi/sd_zbc.c) and the block
//! layer's zone write plugs (block/blk-zoned.c, 6.10+).
//!
//! **The device.** A sequential-write-required zone accepts a write only at
//! its write pointer (WP). Zones start empty (every WP at the zone start)
//! and the model keeps a WP only for zones that were written, so memory
//! grows with the zones touched, not the disk's size. A WRITE or WRITE
//! ZEROES request that does not start at the WP, or would cross the zone
//! end, fails with -EIO and leaves the WP where it was (null_blk's
//! `null_zone_write`: `sector != zone->wp` is BLK_STS_IOERR; SCSI:
//! "unaligned write command"); one that fits moves the WP by its length. A
//! ZONE APPEND goes to the WP if the zone has room for it. The check is
//! made when the request is issued ('D'), in issue order, and a refused
//! request completes at once with the error ([`ZoneWps`]).
//!
//! **Zone write plugging** (switch `zone_write_plugging`, "block: Introduce
//! zone write plugging", 6.10; modelled as 6.12 has it). Without it (6.1)
//! the block layer lets every write through and the device is the only
//! check. With it, `blk_mq_submit_bio` hands each write to a sequential
//! zone, once split and once no merge took it, to `blk_zone_plug_bio`,
//! which keeps a plug per zone with the kernel's own idea of the WP:
//!
//! * a zone whose plug is *plugged* (a write of it is in flight) takes the
//!   bio onto the plug's bio list, in arrival order: no request, no 'G';
//! * otherwise `blk_zone_wplug_prepare_bio` checks the bio: not at the
//!   plug's WP, a full zone, or a zone that lost its WP after an error
//!   (`NEED_WP_UPDATE`) fails it at once with -EIO (`bio_io_error`: no
//!   request, nothing in diskstats; a bio that was queued gets its 'C' with
//!   the error). A bio that passes moves the plug's WP, plugs the zone and
//!   becomes a request; `blk_zone_write_plug_init_request` then merges the
//!   plugged bios that continue it into that request;
//! * a bio that back-merges into a plugged zone's request moves the WP
//!   (`blk_zone_write_plug_bio_merged`); a front merge into one is refused;
//! * when the zone's request ends (`blk_zone_write_plug_finish_request`),
//!   a non-empty bio list schedules the plug's work item
//!   (`blk_zone_wplug_bio_work`, on a kworker, at the same simulated time):
//!   it pops bios in order, fails each that does not pass the check (the
//!   others stay plugged) and submits the first that does; an empty list
//!   unplugs the zone;
//! * a write that failed (at the device, or refused by the check at
//!   submission, when the bio already counts as plugged) fails every bio
//!   still plugged and marks the zone `NEED_WP_UPDATE`: every later write
//!   to it fails until a report zones, a zone reset or a zone finish
//!   resyncs the plug. blkstack issues none of those, so such a zone fails
//!   every write for the rest of the run.
//!
//! A zone that has no plug (never written, or freed once it was full) gets
//! one whose WP is where the bio starts: the kernel knows nothing of an
//! empty zone, so only the device can refuse such a first write. A zone
//! append is taken as native (nvme, null_blk): it is not plugged, and a plug
//! of its zone is dropped, its bios failed; sd's emulation (a zone append
//! turned into a plugged write at the plug's WP) is not modelled. 7.2
//! serialises the writes of rotational zoned disks through one thread
//! (`zoned_qd1_writes`); the model keeps 6.12's per-zone work items under
//! every profile with the switch on.
//!
//! **Submission order.** Under either rule the model notes, per sequential
//! zone, whether the write bios reached `blk_mq_submit_bio` (after
//! splitting) in ascending sector order: with zone write plugging the
//! order writes are *issued* in no longer shows an out-of-order submission,
//! as the refused writes never reach the device ([`Zones::note_submitted`],
//! reported as `zones_out_of_order`).

use std::collections::{HashMap, VecDeque};

use crate::bio::{req, Bio, BioId, Op};
use crate::genhd::DevId;
use crate::merge::{self, BioMerge};
use crate::mq::{self, RequestQueue};
use crate::submit::{BlockCore, SimEvent, EIO, KWORKER};

/// The write pointers of one zoned disk.
#[derive(Clone, Debug, Default)]
pub struct ZoneWps {
    /// Zone size in sectors (`chunk_sectors`), a power of two.
    zone_sectors: u64,
    /// Zones at the start of the disk without a WP (conventional).
    nr_conv: u64,
    /// Zone number → WP offset from the zone start, for zones written.
    wp: HashMap<u64, u64>,
}

impl ZoneWps {
    pub fn new(zone_sectors: u64, nr_conv: u64) -> Self {
        assert!(zone_sectors > 0, "a zoned disk has a zone size");
        ZoneWps { zone_sectors, nr_conv, wp: HashMap::new() }
    }

    /// A request of `op` at `sector` for `sectors` reaches the zone:
    /// whether it is accepted (and the WP moved), as the write-pointer
    /// rules say. Ops that do not write are always accepted.
    pub fn write(&mut self, op: Op, sector: u64, sectors: u64) -> bool {
        if !matches!(op, Op::Write | Op::WriteZeroes | Op::ZoneAppend) || sectors == 0 {
            return true;
        }
        let zone = sector / self.zone_sectors;
        if zone < self.nr_conv {
            // A conventional zone takes any write, but not one running on
            // into the sequential zones.
            return (sector + sectors).div_ceil(self.zone_sectors) <= self.nr_conv;
        }
        let offset = sector % self.zone_sectors;
        let wp = self.wp.entry(zone).or_insert(0);
        let at = if op == Op::ZoneAppend { *wp } else { offset };
        if op == Op::ZoneAppend && offset != 0 {
            // A zone append names the zone by its start sector.
            return false;
        }
        if at != *wp || at + sectors > self.zone_sectors {
            return false;
        }
        *wp += sectors;
        true
    }

    /// The WP of `zone` as an offset from its start (`None` for a
    /// conventional zone).
    pub fn wp_offset(&self, zone: u64) -> Option<u64> {
        (zone >= self.nr_conv).then(|| self.wp.get(&zone).copied().unwrap_or(0))
    }
}

/// `BLK_ZONE_WPLUG_PLUGGED`: a write of the zone is in flight (or about
/// to be), so later ones wait on the plug's bio list.
const PLUGGED: u8 = 1 << 0;
/// `BLK_ZONE_WPLUG_NEED_WP_UPDATE`: a write failed, the plug's WP is not
/// to be trusted until a report zones.
const NEED_WP_UPDATE: u8 = 1 << 1;
/// `BLK_ZONE_WPLUG_DEAD`: the plug goes once nothing in flight holds it.
const DEAD: u8 = 1 << 2;

/// `struct blk_zone_wplug`.
#[derive(Clone, Debug)]
struct ZoneWplug {
    flags: u8,
    /// The kernel's WP, as an offset from the zone start.
    wp_offset: u64,
    /// The plugged bios, oldest first, each with its segment count
    /// (`__bi_nr_segments`).
    bio_list: VecDeque<(BioId, u32)>,
    /// The plug's work item is queued and has not started.
    work_queued: bool,
}

/// A host-managed zoned disk's zones: the device's WPs, the zone write
/// plugs, and the submission order per zone.
#[derive(Clone, Debug, Default)]
pub struct Zones {
    pub wps: ZoneWps,
    /// `disk->zone_wplugs_hash`: zone number → plug.
    wplugs: HashMap<u64, ZoneWplug>,
    /// `disk->zone_wplugs_wq`: zones whose work item is queued, in order.
    work: VecDeque<u64>,
    /// Zone number → (start of the last write bio submitted to it, whether
    /// any came below an earlier one).
    submitted: HashMap<u64, (u64, bool)>,
}

impl Zones {
    pub fn new(zone_sectors: u64, nr_conv: u64) -> Self {
        Zones { wps: ZoneWps::new(zone_sectors, nr_conv), ..Zones::default() }
    }

    fn zone_sectors(&self) -> u64 {
        self.wps.zone_sectors
    }

    /// `disk_zone_is_conv`.
    fn is_conv(&self, sector: u64) -> bool {
        sector / self.wps.zone_sectors < self.wps.nr_conv
    }

    /// A write bio starting at `sector` reached `blk_mq_submit_bio`: notes
    /// whether this is its zone's first, and whether it is the first to
    /// start below an earlier one of the zone (the zone goes out of order).
    pub fn note_submitted(&mut self, sector: u64) -> (bool, bool) {
        let zone = sector / self.wps.zone_sectors;
        match self.submitted.get_mut(&zone) {
            None => {
                self.submitted.insert(zone, (sector, false));
                (true, false)
            }
            Some((last, backwards)) => {
                let newly = sector < *last && !*backwards;
                *backwards |= newly;
                *last = sector;
                (false, newly)
            }
        }
    }
}

/// `blk_zone_wplug_prepare_bio`: may a write of `sectors` at `offset` into
/// the zone go now? If so the plug's WP moves past it.
fn blk_zone_wplug_prepare_bio(zw: &mut ZoneWplug, offset: u64, sectors: u64, zone_sectors: u64) -> bool {
    if zw.flags & NEED_WP_UPDATE != 0 || zw.wp_offset >= zone_sectors || offset != zw.wp_offset {
        return false;
    }
    zw.wp_offset += sectors;
    true
}

/// `bio_needs_zone_write_plugging` (zone management ops are not modelled).
fn bio_needs_zone_write_plugging(b: &Bio) -> bool {
    let empty_flush = b.flags & (req::PREFLUSH | req::FUA) != 0 && b.iter.size == 0;
    matches!(b.op, Op::Write | Op::WriteZeroes | Op::ZoneAppend) && !empty_flush && b.flags & req::ZONE_WPLUG == 0
}

/// [`Zones::note_submitted`] for a write bio to a sequential zone, as
/// `blk_mq_submit_bio` receives it after the split (with or without zone
/// write plugging).
#[cold]
#[inline(never)]
pub(crate) fn note_zone_write(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId) {
    let b = core.bio(bio);
    let Some(zones) = q.zones.as_deref_mut() else { return };
    if !matches!(b.op, Op::Write | Op::WriteZeroes) || b.iter.size == 0 || zones.is_conv(b.iter.sector) {
        return;
    }
    let (first, backwards) = zones.note_submitted(b.iter.sector);
    let s = &mut core.stats[q.dev as usize];
    s.zones_written += first as u64;
    s.zones_out_of_order += backwards as u64;
}

/// A bio zone write plugging fails with -EIO, before any device.
fn zone_wplug_bio_io_error(core: &mut BlockCore, dev: DevId, bio: BioId) {
    let s = &mut core.stats[dev as usize];
    s.zone_write_errors += 1;
    s.zone_wplug_errors += 1;
    core.bio_io_error(bio, EIO);
}

/// `bio_needs_zone_write_plugging` and `blk_zone_plug_bio` for a bio no
/// merge took, with the switch on: true when the plug took the bio (to
/// hold or to fail).
#[cold]
#[inline(never)]
pub(crate) fn blk_zone_plug_bio(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    if !core.beh.zone_write_plugging || !bio_needs_zone_write_plugging(core.bio(bio)) {
        return false;
    }
    match core.bio(bio).op {
        Op::ZoneAppend => {
            blk_zone_wplug_handle_native_zone_append(q, core, bio);
            false
        }
        _ => blk_zone_wplug_handle_write(q, core, bio, nsegs),
    }
}

/// `blk_zone_wplug_handle_write` for a write or write zeroes.
fn blk_zone_wplug_handle_write(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId, nsegs: u32) -> bool {
    let (dev, queue) = (q.dev, q.index);
    let zones = q.zones.as_deref_mut().expect("a zoned queue");
    let zs = zones.zone_sectors();
    let b = core.bio(bio);
    let (sector, sectors, nowait) = (b.iter.sector, b.sectors() as u64, b.flags & req::NOWAIT != 0);
    if sectors > 0 && sector % zs + sectors > zs {
        // bio_straddles_zones: blk-mq split it at the zone end already.
        zone_wplug_bio_io_error(core, dev, bio);
        return true;
    }
    if zones.is_conv(sector) {
        return false;
    }
    let (zno, offset) = (sector / zs, sector % zs);
    // disk_get_and_lock_zone_wplug: a new plug trusts the bio's position.
    let zw = zones.wplugs.entry(zno).or_insert_with(|| ZoneWplug { flags: 0, wp_offset: offset, bio_list: VecDeque::new(), work_queued: false });
    if zw.flags & DEAD != 0 {
        // disk_check_zone_wplug_dead: only a reset zone's plug comes back.
        if zw.wp_offset != 0 || !zw.bio_list.is_empty() {
            zone_wplug_bio_io_error(core, dev, bio);
            return true;
        }
        zw.flags &= !DEAD;
    }
    core.bio_mut(bio).flags |= req::ZONE_WPLUG;
    if zw.flags & PLUGGED != 0 || nowait {
        // disk_zone_wplug_add_bio: a REQ_NOWAIT bio always waits for the
        // work item, which may sleep; the first one plugged schedules it.
        let schedule = nowait && zw.flags & PLUGGED == 0;
        core.bio_mut(bio).flags &= !req::NOWAIT;
        zw.bio_list.push_back((bio, nsegs));
        zw.flags |= PLUGGED;
        if schedule {
            disk_zone_wplug_schedule_bio_work(zones, core, queue, zno);
        }
        return true;
    }
    if !blk_zone_wplug_prepare_bio(zw, offset, sectors, zs) {
        // bio_io_error on a bio already marked BIO_ZONE_WRITE_PLUGGING: its
        // end_io fails the zone's plugged bios and marks it NEED_WP_UPDATE.
        blk_zone_write_plug_bio_endio_error(zones, core, dev, zno);
        zone_wplug_bio_io_error(core, dev, bio);
        return true;
    }
    zw.flags |= PLUGGED;
    false
}

/// `blk_zone_wplug_handle_native_zone_append`: a zone append needs no plug;
/// one left from regular writes is dropped, its plugged bios failed.
fn blk_zone_wplug_handle_native_zone_append(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId) {
    let dev = q.dev;
    let zones = q.zones.as_deref_mut().expect("a zoned queue");
    let zno = core.bio(bio).iter.sector / zones.zone_sectors();
    if !zones.wplugs.contains_key(&zno) {
        return;
    }
    disk_zone_wplug_abort(zones, core, dev, zno);
    disk_mark_zone_wplug_dead(zones, zno);
}

/// `disk_mark_zone_wplug_dead`: the plug is freed as soon as nothing in
/// flight holds it (at once, unless a write of the zone is in flight).
fn disk_mark_zone_wplug_dead(zones: &mut Zones, zno: u64) {
    let Some(zw) = zones.wplugs.get_mut(&zno) else { return };
    zw.flags |= DEAD;
    if zw.flags & PLUGGED == 0 && !zw.work_queued {
        zones.wplugs.remove(&zno);
    }
}

/// `disk_zone_wplug_abort`: fail every plugged bio of the zone.
fn disk_zone_wplug_abort(zones: &mut Zones, core: &mut BlockCore, dev: DevId, zno: u64) {
    let Some(zw) = zones.wplugs.get_mut(&zno) else { return };
    if zw.bio_list.is_empty() {
        return;
    }
    let bios = std::mem::take(&mut zw.bio_list);
    zw.flags &= !PLUGGED;
    // blk_zone_wplug_bio_io_error: the flag goes first, so these bios'
    // own end_io does not abort again.
    for (bio, _) in bios {
        core.bio_mut(bio).flags &= !req::ZONE_WPLUG;
        zone_wplug_bio_io_error(core, dev, bio);
    }
}

/// `blk_zone_write_plug_bio_endio` for a plugged write that failed: the
/// zone's plugged bios are failed and its WP is no longer trusted.
fn blk_zone_write_plug_bio_endio_error(zones: &mut Zones, core: &mut BlockCore, dev: DevId, zno: u64) {
    disk_zone_wplug_abort(zones, core, dev, zno);
    if let Some(zw) = zones.wplugs.get_mut(&zno) {
        zw.flags |= NEED_WP_UPDATE;
    }
}

/// A request of a plugged zone failed at the device: its first bio's end
/// io (`blk_zone_write_plug_bio_endio`) aborts the zone's plug.
#[cold]
#[inline(never)]
pub(crate) fn blk_zone_write_plug_rq_error(q: &mut RequestQueue, core: &mut BlockCore, sector: u64) {
    let dev = q.dev;
    let Some(zones) = q.zones.as_deref_mut() else { return };
    let zno = sector / zones.zone_sectors();
    blk_zone_write_plug_bio_endio_error(zones, core, dev, zno);
}

/// `blk_zone_write_plug_bio_merged`: a bio merged at the back of a plugged
/// zone's request moves the plug's WP. With zone write plugging every write
/// request of a sequential zone is its plug's (`RQF_ZONE_WRITE_PLUGGING`)
/// and a front merge into one is refused, so a write to a sequential zone
/// that merged was such a back merge.
#[cold]
#[inline(never)]
pub(crate) fn blk_zone_write_plug_bio_merged(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId) {
    let b = core.bio(bio);
    let Some(zones) = q.zones.as_deref_mut() else { return };
    if !core.beh.zone_write_plugging || b.op != Op::Write || zones.is_conv(b.iter.sector) {
        return;
    }
    if let Some(zw) = zones.wplugs.get_mut(&(b.iter.sector / zones.wps.zone_sectors)) {
        zw.wp_offset += b.sectors() as u64;
    }
}

/// `blk_zone_write_plug_init_request`: the request just made for a plugged
/// zone's write takes, as back merges, the plugged bios that continue it,
/// while the zone has room.
#[cold]
#[inline(never)]
pub(crate) fn blk_zone_write_plug_init_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32) {
    if q.attrs.nomerges == 2 {
        // blk_queue_nomerges
        return;
    }
    let RequestQueue { rqs, zones, lim, .. } = q;
    let Some(zones) = zones.as_deref_mut() else { return };
    let zs = zones.zone_sectors();
    let rq = rqs.get_mut(id);
    let Some(zw) = zones.wplugs.get_mut(&(rq.sector / zs)) else { return };
    let mut back = rq.end();
    while zw.wp_offset < zs {
        let Some(&(bio, nsegs)) = zw.bio_list.front() else { break };
        if core.bio(bio).iter.sector != back || !merge::blk_rq_merge_ok(rq, core.bio(bio)) {
            break;
        }
        zw.bio_list.pop_front();
        if merge::bio_attempt_back_merge(core, rq, bio, nsegs, lim) != BioMerge::Ok {
            zw.bio_list.push_front((bio, nsegs));
            break;
        }
        let sectors = core.bio(bio).sectors() as u64;
        zw.wp_offset += sectors;
        back += sectors;
    }
}

/// `blk_zone_write_plug_finish_request`: a plugged zone's request ended
/// (`disk_zone_wplug_unplug_bio`).
#[cold]
#[inline(never)]
pub(crate) fn blk_zone_write_plug_finish_request(q: &mut RequestQueue, core: &mut BlockCore, sector: u64) {
    let queue = q.index;
    let Some(zones) = q.zones.as_deref_mut() else { return };
    let zs = zones.zone_sectors();
    let zno = sector / zs;
    let Some(zw) = zones.wplugs.get_mut(&zno) else { return };
    if !zw.bio_list.is_empty() {
        disk_zone_wplug_schedule_bio_work(zones, core, queue, zno);
        return;
    }
    zw.flags &= !PLUGGED;
    if zw.wp_offset == 0 || zw.wp_offset >= zs {
        zw.flags |= DEAD;
    }
    if zw.flags & DEAD != 0 && !zw.work_queued {
        zones.wplugs.remove(&zno);
    }
}

/// `disk_zone_wplug_schedule_bio_work`: queue the plug's work item, unless
/// it is queued already.
fn disk_zone_wplug_schedule_bio_work(zones: &mut Zones, core: &mut BlockCore, queue: u32, zno: u64) {
    let zw = zones.wplugs.get_mut(&zno).expect("a plug");
    if zw.work_queued {
        return;
    }
    zw.work_queued = true;
    zones.work.push_back(zno);
    core.schedule(core.now, SimEvent::ZoneWplugWork { queue });
}

/// `blk_zone_wplug_bio_work`, on a kworker: the next plugged bio of the
/// oldest queued zone is checked and submitted; each that fails the check
/// is failed, and the next one tried; none left unplugs the zone.
#[cold]
#[inline(never)]
pub fn blk_zone_wplug_bio_work(qs: &mut [RequestQueue], core: &mut BlockCore, qi: usize) {
    let dev = qs[qi].dev;
    let Some(zones) = qs[qi].zones.as_deref_mut() else { return };
    let Some(zno) = zones.work.pop_front() else { return };
    let zs = zones.zone_sectors();
    if let Some(zw) = zones.wplugs.get_mut(&zno) {
        zw.work_queued = false;
    }
    let saved = core.current;
    core.current = KWORKER;
    loop {
        let zones = qs[qi].zones.as_deref_mut().expect("a zoned queue");
        let Some(zw) = zones.wplugs.get_mut(&zno) else { break };
        let Some((bio, nsegs)) = zw.bio_list.pop_front() else {
            zw.flags &= !PLUGGED;
            if zw.flags & DEAD != 0 {
                zones.wplugs.remove(&zno);
            }
            break;
        };
        let b = core.bio(bio);
        if !blk_zone_wplug_prepare_bio(zw, b.iter.sector % zs, b.sectors() as u64, zs) {
            // blk_zone_wplug_bio_io_error: the others stay plugged.
            core.bio_mut(bio).flags &= !req::ZONE_WPLUG;
            zone_wplug_bio_io_error(core, dev, bio);
            continue;
        }
        // blk_mq_submit_bio for a bio released from its plug: split and
        // merged already, straight to a request (which may sleep for a tag).
        mq::blk_mq_new_request(qs, core, qi, bio, nsegs);
        break;
    }
    core.current = saved;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 MiB zones: 8192 sectors.
    const Z: u64 = 8192;

    #[test]
    fn writes_must_start_at_the_write_pointer() {
        let mut z = ZoneWps::new(Z, 0);
        // 0..1024 at the WP (0): accepted, WP 1024.
        assert!(z.write(Op::Write, 0, 1024));
        assert_eq!(z.wp_offset(0), Some(1024));
        // 2048..3072 skips ahead of the WP: -EIO, WP stays 1024.
        assert!(!z.write(Op::Write, 2048, 1024));
        assert_eq!(z.wp_offset(0), Some(1024));
        // 1024..2048 fills the gap: WP 2048; then the retry at 2048 fits.
        assert!(z.write(Op::Write, 1024, 1024));
        assert!(z.write(Op::Write, 2048, 1024));
        assert_eq!(z.wp_offset(0), Some(3072));
        // Rewriting behind the WP fails too.
        assert!(!z.write(Op::Write, 0, 8));
        // Reads go anywhere.
        assert!(z.write(Op::Read, 4096, 8));
        // Another zone starts empty: its first write must be at its start.
        assert!(!z.write(Op::Write, Z + 8, 8));
        assert!(z.write(Op::WriteZeroes, Z, 8));
        assert_eq!(z.wp_offset(1), Some(8));
        // Zones never written keep no state.
        assert_eq!(z.wp.len(), 2);
        assert_eq!(z.wp_offset(7), Some(0));
    }

    #[test]
    fn a_write_may_not_cross_the_zone_end() {
        let mut z = ZoneWps::new(Z, 0);
        assert!(z.write(Op::Write, 0, Z - 8));
        // 16 sectors at WP 8184 would end at 8200 > 8192: refused.
        assert!(!z.write(Op::Write, Z - 8, 16));
        assert!(z.write(Op::Write, Z - 8, 8));
        // Full: nothing more fits.
        assert_eq!(z.wp_offset(0), Some(Z));
        assert!(!z.write(Op::Write, Z - 8, 8));
    }

    #[test]
    fn zone_append_goes_to_the_write_pointer() {
        let mut z = ZoneWps::new(Z, 0);
        assert!(z.write(Op::ZoneAppend, 0, 64));
        assert!(z.write(Op::ZoneAppend, 0, 64));
        assert_eq!(z.wp_offset(0), Some(128));
        // Not at a zone start: refused.
        assert!(!z.write(Op::ZoneAppend, 128, 64));
    }

    #[test]
    fn conventional_zones_take_any_write() {
        // Two conventional zones, then sequential ones.
        let mut z = ZoneWps::new(Z, 2);
        assert!(z.write(Op::Write, 100, 8));
        assert!(z.write(Op::Write, 8, 8));
        assert!(z.write(Op::Write, 2 * Z - 8, 8));
        // Running from the last conventional zone into the first sequential one.
        assert!(!z.write(Op::Write, 2 * Z - 8, 16));
        assert_eq!(z.wp_offset(1), None);
        assert!(!z.write(Op::Write, 2 * Z + 8, 8));
        assert!(z.write(Op::Write, 2 * Z, 8));
    }
}
