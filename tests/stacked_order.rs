//! The submission loop order of `__submit_bio_noacct` with a stacked test
//! driver shaped like md raid5's read fast path (block-core spec §2.4):
//! md_submit_bio splits to md's max_sectors (1 MiB), then
//! chunk_aligned_read splits off one 512 KiB chunk per call and remaps it to
//! a member. A 2 MiB read must reach the member in the order
//! 0, 1M, 1536k, 512k with tail insertion of split remainders (≤6.17) and
//! 0, 512k, 1M, 1536k with head insertion (6.18+).

use blkstack::bio::{BioId, Op};
use blkstack::disk::ServiceModel;
use blkstack::engine::{Engine, EngineBuilder};
use blkstack::genhd::{DevId, DiskKind, Queue};
use blkstack::limits::{resolve, QueueAttrs, QueueLimits, SysfsWrites};
use blkstack::profile::{profile, Behaviour, BioListAssembly, SplitRemainder};
use blkstack::source::BioSpec;
use blkstack::submit::{BioDriver, BlockCore};
use blkstack::trace::Action;

const CHUNK: u32 = 1024; // 512 KiB

/// A one-member "raid5" whose layout is the identity: enough to see order.
struct ChunkedReadDriver {
    member: DevId,
}

impl BioDriver for ChunkedReadDriver {
    fn submit_bio(&mut self, core: &mut BlockCore, bio: BioId) {
        // md_submit_bio: bio_split_to_limits on md's queue.
        let Some((bio, _)) = core.bio_split_to_limits(bio) else { return };
        // chunk_aligned_read: at most one chunk per call; the remainder is
        // resubmitted (tail or head per version).
        let b = core.bio(bio);
        let left = CHUNK - (b.iter.sector % CHUNK as u64) as u32;
        let front = if b.sectors() > left { core.bio_submit_split(bio, left) } else { bio };
        // raid5_read_one_chunk: clone to the member, remap, submit.
        let (md, sector) = (core.bio(front).dev, core.bio(front).iter.sector);
        let clone = core.bio_alloc_clone(front, self.member);
        core.bio_chain(clone, front);
        core.trace_bio_remap(clone, md, sector);
        assert!(core.submit_bio_noacct(clone).is_none(), "inside the loop");
        core.bio_endio(front, 0);
    }
}

fn engine(beh: Behaviour) -> Engine {
    let mut b = EngineBuilder::new(beh.clone());
    let drv = DiskKind::Sata.driver_limits(&blkstack::profile::profile("6.12").unwrap().behaviour);
    let (limits, attrs) = resolve(&drv, &SysfsWrites::default(), beh.limits_model, beh.def_max_sectors_cap).unwrap();
    let member = b.add_disk("sdb", DiskKind::Sata, 1 << 24, Queue { limits, attrs: attrs.clone() }, ServiceModel::for_kind(DiskKind::Sata));
    let md_limits = QueueLimits { max_sectors: 2048, max_hw_sectors: 2048, ..QueueLimits::stacking() };
    let md_attrs = QueueAttrs { scheduler: blkstack::limits::Elevator::None, ..attrs };
    b.add_bio_device("md0", DiskKind::Md, 1 << 24, Queue { limits: md_limits, attrs: md_attrs }, Box::new(ChunkedReadDriver { member }));
    b.build()
}

/// Member sectors in the order the member queued them, for a 2 MiB read.
fn member_order(beh: Behaviour) -> Vec<u64> {
    let mut e = engine(beh);
    e.core.tracer.keep_log();
    let md = e.core.topo.by_name("md0").unwrap();
    let task = e.add_task(100, "dd");
    let spec = BioSpec {
        dev: md,
        op: Op::Read,
        flags: 0,
        sector: 0,
        bvecs: vec![blkstack::bio::Bvec { phys: 1 << 32, len: 2 << 20 }],
        size: 2 << 20,
    };
    e.submit_root(task, spec, u32::MAX, 0);
    e.run_until_idle();
    let sdb = e.core.topo.by_name("sdb").unwrap();
    let log = e.core.tracer.log.take().unwrap().events;
    let queued: Vec<u64> = log.iter().filter(|x| x.dev == sdb && x.action == Action::Queue).map(|x| x.sector).collect();
    let issued: Vec<u64> = log.iter().filter(|x| x.dev == sdb && x.action == Action::Issue).map(|x| x.sector).collect();
    assert_eq!(queued, issued, "no reordering below the member's queue");
    // Each member bio is one 512 KiB chunk.
    assert!(log.iter().filter(|x| x.dev == sdb && x.action == Action::Issue).all(|x| x.sectors() == CHUNK));
    queued
}

fn beh(name: &str) -> Behaviour {
    profile(name).unwrap().behaviour
}

#[test]
fn tail_insertion_gives_0_1m_1536k_512k() {
    assert_eq!(member_order(beh("6.12")), vec![0, 2048, 3072, 1024]);
}

#[test]
fn head_insertion_gives_0_512k_1m_1536k() {
    assert_eq!(member_order(beh("7.2")), vec![0, 1024, 2048, 3072]);
}

#[test]
fn switch_alone_changes_the_order() {
    let mut b = beh("6.1");
    b.split_remainder = SplitRemainder::Head;
    assert_eq!(member_order(b), vec![0, 1024, 2048, 3072]);
}

#[test]
fn barts_assembly_with_tail_is_plain_fifo() {
    // pending, lower, same: 0, 1M, 512k, 1536k (the commit message's narrative).
    let mut b = beh("6.12");
    b.bio_list_assembly = BioListAssembly::PendingLowerSame;
    assert_eq!(member_order(b), vec![0, 2048, 1024, 3072]);
}

#[test]
fn md_queue_sees_one_q_and_the_splits() {
    let mut e = engine(beh("6.12"));
    e.core.tracer.keep_log();
    let md = e.core.topo.by_name("md0").unwrap();
    let task = e.add_task(100, "dd");
    let spec = BioSpec { dev: md, op: Op::Read, flags: 0, sector: 0, bvecs: vec![blkstack::bio::Bvec { phys: 1 << 32, len: 2 << 20 }], size: 2 << 20 };
    e.submit_root(task, spec, u32::MAX, 0);
    e.run_until_idle();
    let log = e.core.tracer.log.take().unwrap().events;
    let count = |dev: DevId, a: Action| log.iter().filter(|x| x.dev == dev && x.action == a).count();
    let sdb = e.core.topo.by_name("sdb").unwrap();
    // One Q for the 2 MiB bio; splits: 1 (max_sectors) + 2 (chunks of the two halves).
    assert_eq!(count(md, Action::Queue), 1);
    assert_eq!(count(md, Action::Split), 3);
    assert_eq!(count(sdb, Action::Remap), 4);
    assert_eq!(count(sdb, Action::Queue), 4);
    // bio-based completions: the 3 split fronts and finally the remainder.
    assert_eq!(count(md, Action::Complete), 4);
    assert_eq!(e.core.live_bios(), 0, "every bio freed");
}
