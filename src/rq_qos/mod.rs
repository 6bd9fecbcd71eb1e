//! rq-qos policies and blk-cgroup's throttling: what holds bios or
//! requests back on their way to a disk.

pub mod throttle;
