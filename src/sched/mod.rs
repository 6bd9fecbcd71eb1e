//! I/O schedulers. `none` has no module of its own: its software-queue
//! merge and dispatch live in [`crate::mq`]. [`mq_deadline`] is the
//! elevator most single-queue disks get by default; bfq is split by
//! concept: [`bfq_wf2q`] (B-WF2Q+ service trees), [`bfq_queue`] (per-process
//! queues), [`bfq_ioprio`] (ioprio to weight), [`bfq_params`] (iosched
//! knobs) and [`bfq_iosched`] (queue selection, budgets, idling, weight
//! raising).

pub mod bfq_ioprio;
pub mod bfq_iosched;
pub mod bfq_merge;
pub mod bfq_params;
pub mod bfq_queue;
pub mod bfq_wf2q;
pub mod mq_deadline;
