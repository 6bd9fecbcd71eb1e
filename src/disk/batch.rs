//! Batched completion: a device that posts its completions only once it
//! has nothing left to serve.
//!
//! A virtual disk served by one host thread works through the virtqueue
//! until it is empty and only then publishes what it finished and
//! interrupts the guest, once. Firecracker's virtio-block device does
//! this (`VirtioBlock::process_queue`, src/vmm/src/devices/virtio/block/
//! virtio/device.rs: it pops requests until `pop_or_enable_notification`
//! finds none, handling each with the synchronous file engine, then
//! `advance_used_ring_idx` and one `interrupt.trigger`). The guest sees
//! the whole batch complete at the end of its last command, so a queue
//! depth of q pays the batch's fixed cost (notification, the host
//! thread's wake-up, the interrupt: the device's access time) once per q
//! commands: the commands per second at depth q are q / (A + q·X) rather
//! than min(q / (A + X), 1 / X), a ramp that only reaches the transfer
//! path's 1 / X at large depths.
//!
//! The model: a command finishes at the time the service model gives,
//! but its completion is posted at the time the device next has no
//! command in service. A completion due while later commands are still
//! being served waits for them; commands that arrive meanwhile extend the
//! wait, as they extend the host thread's loop. A command that arrives
//! once the device is idle (at the very instant the last batch ended
//! included: the guest resubmitting as it reaps) opens a new batch, which
//! the earlier batch's completions do not wait for.

use super::DiskModel;

impl DiskModel {
    /// A command arrives at `now`: on an idle device it opens a batch.
    #[inline]
    pub(super) fn batch_arrival(&mut self, now: u64) {
        if now >= self.idle_at {
            self.batch_start = now;
        }
    }

    /// A command the device finished at `now`: when its completion is
    /// posted, if later than `now` (`None`: now, or no batching). Only a
    /// batch under way since before `now` can hold it: one opened at `now`
    /// came after it.
    #[inline]
    pub fn batch_posted_at(&self, now: u64) -> Option<u64> {
        (self.model.batch_completions && self.idle_at > now && self.batch_start < now).then_some(self.idle_at)
    }
}
