//! The CPU each event is recorded on, as blktrace's per-CPU buffers see
//! it: an event of a task on the task's CPU (a job's, [`crate::host_cpu`];
//! kernel threads and interrupts on CPU 0), and a request's completion on
//! the CPU its hardware queue's interrupt goes to. blk-mq maps the CPUs
//! over the hardware queues (`blk_mq_map_queues`: CPU c on queue c mod
//! nr_hw_queues here) and a queue's interrupt is handled by the first CPU
//! it serves; `blk_mq_complete_request` completes there when the CPUs
//! share a cache (`blk_mq_complete_need_ipi`), as a virtual machine's do.
//! A single-queue disk (virtio-blk's one virtqueue) thus completes every
//! request on CPU 0, an nvme disk with a queue per CPU on the submitter's.

use std::collections::HashMap;

use super::{Action, Event, TraceCtx};
use crate::genhd::DevId;

/// Remembers the CPU that issued each request until it completes.
#[derive(Default)]
pub struct EventCpus {
    issued: HashMap<(DevId, u64), u32>,
}

impl EventCpus {
    /// The CPU `ev` is recorded on.
    #[inline]
    pub fn cpu(&mut self, ev: &Event, ctx: &TraceCtx) -> u32 {
        let own = ctx.tasks.get(ev.task as usize).map_or(0, |t| t.cpu);
        match ev.action {
            Action::Issue => {
                self.issued.insert((ev.dev, ev.sector), own);
                own
            }
            Action::Complete => match self.issued.remove(&(ev.dev, ev.sector)) {
                Some(cpu) => irq_cpu(cpu, ctx.topo.queue(ev.dev).attrs.nr_hw_queues),
                None => own,
            },
            _ => own,
        }
    }
}

/// The CPU handling the interrupt of the hardware queue CPU `cpu` submits
/// to.
pub fn irq_cpu(cpu: u32, nr_hw_queues: u32) -> u32 {
    cpu % nr_hw_queues.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_cpu_follows_the_hardware_queue() {
        // One queue (virtio-blk): every completion on CPU 0. A queue per
        // CPU (nvme, 4 queues): CPU 3's requests complete on CPU 3. Two
        // queues for four CPUs: CPU 3 submits to queue 1, served first by CPU 1.
        assert_eq!(irq_cpu(3, 1), 0);
        assert_eq!(irq_cpu(3, 4), 3);
        assert_eq!(irq_cpu(3, 2), 1);
    }
}
