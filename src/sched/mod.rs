//! I/O schedulers. `none` has no module of its own: its software-queue
//! merge and dispatch live in [`crate::mq`]. [`mq_deadline`] is the
//! elevator most single-queue disks get by default.

pub mod mq_deadline;
