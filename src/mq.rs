//! Request-based queues (block/blk-mq.c): `blk_mq_submit_bio`, requests,
//! issue and completion.
//!
//! This first path makes each bio that reaches a disk one request: split to
//! the queue's limits, allocate ('G'), insert into the scheduler ('I', only
//! when the queue has one), issue ('D') and complete ('C') in order. Plugging,
//! merging, tags and the schedulers' ordering build on these same points.

use crate::bio::{BioId, Op, SECTOR_SHIFT};
use crate::disk::DiskModel;
use crate::genhd::DevId;
use crate::limits::Elevator;
use crate::submit::{BlockCore, SimEvent};
use crate::trace::{Action, Event};

/// `struct request`.
#[derive(Clone, Debug)]
pub struct Request {
    pub dev: DevId,
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    pub nr_phys_segments: u32,
    pub bios: Vec<BioId>,
    pub start_time_ns: u64,
    /// Task that allocated it ('G' names it).
    pub task: u32,
}

impl Request {
    pub fn bytes(&self) -> u32 {
        self.nr_sectors << SECTOR_SHIFT
    }
}

/// A whole disk's request queue and device model.
pub struct RequestQueue {
    pub index: u32,
    pub dev: DevId,
    pub disk: DiskModel,
    rqs: Vec<Option<Request>>,
    free: Vec<u32>,
    pub in_flight: u32,
}

impl RequestQueue {
    pub fn new(index: u32, dev: DevId, disk: DiskModel) -> Self {
        RequestQueue { index, dev, disk, rqs: Vec::new(), free: Vec::new(), in_flight: 0 }
    }

    fn alloc(&mut self, rq: Request) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.rqs[i as usize] = Some(rq);
                i
            }
            None => {
                self.rqs.push(Some(rq));
                (self.rqs.len() - 1) as u32
            }
        }
    }

    pub fn request(&self, rq: u32) -> &Request {
        self.rqs[rq as usize].as_ref().expect("live request")
    }
}

/// Trace a request event ('I', 'D', 'C').
fn trace_rq(core: &mut BlockCore, action: Action, rq: &Request, task: u32) {
    if !core.tracer.active() {
        return;
    }
    let ev = Event {
        time: core.now,
        dev: rq.dev,
        action,
        op: rq.op,
        flags: rq.flags,
        sector: rq.sector,
        bytes: rq.bytes(),
        task,
        error: 0,
        arg: 0,
        from_dev: 0,
    };
    core.emit(ev);
}

/// `blk_mq_submit_bio`.
pub fn blk_mq_submit_bio(q: &mut RequestQueue, core: &mut BlockCore, bio: BioId) {
    let Some((bio, nsegs)) = core.bio_split_to_limits(bio) else { return };
    // blk_mq_get_new_requests → block_getrq, then blk_mq_bio_to_request.
    core.trace_bio(Action::GetRq, bio, 0, 0);
    let b = core.bio_mut(bio);
    b.in_request = true;
    let rq = Request {
        dev: q.dev,
        op: b.op,
        flags: b.flags,
        sector: b.iter.sector,
        nr_sectors: b.iter.size >> SECTOR_SHIFT,
        nr_phys_segments: nsegs,
        bios: vec![bio],
        start_time_ns: core.now,
        task: core.current,
    };
    core.stats[q.dev as usize].getrq += 1;
    let scheduler = core.topo.queue(q.dev).attrs.scheduler;
    let id = q.alloc(rq);
    if scheduler != Elevator::None {
        // insert into the elevator, then run the hardware queue at once.
        core.stats[q.dev as usize].inserts += 1;
        let task = core.current;
        trace_rq(core, Action::Insert, q.request(id), task);
    }
    blk_mq_start_request(q, core, id);
}

/// `blk_mq_start_request` from `->queue_rq`: the request is issued ('D')
/// and handed to the device model.
fn blk_mq_start_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32) {
    let rq = q.request(id);
    let (op, bytes, sectors) = (rq.op, rq.bytes(), rq.nr_sectors as u64);
    let task = core.current;
    trace_rq(core, Action::Issue, q.request(id), task);
    let s = &mut core.stats[q.dev as usize];
    s.issued += 1;
    s.sectors_issued[op as usize] += sectors;
    q.in_flight += 1;
    let done = q.disk.service(core.now, op, bytes);
    core.schedule(done, SimEvent::RqComplete { queue: q.index, rq: id });
}

/// `blk_mq_end_request` → `blk_update_request`: trace 'C' for the request
/// and end its bios.
pub fn blk_mq_complete_request(q: &mut RequestQueue, core: &mut BlockCore, id: u32) {
    let rq = q.rqs[id as usize].take().expect("live request");
    q.free.push(id);
    q.in_flight -= 1;
    trace_rq(core, Action::Complete, &rq, 0);
    core.stats[q.dev as usize].completed += 1;
    for bio in rq.bios {
        core.bio_endio(bio, 0);
    }
}
