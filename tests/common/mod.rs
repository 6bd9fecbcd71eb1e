//! Helpers shared by the integration tests: run a scenario written inline
//! and look at the events it produced.

#![allow(dead_code)]

use blkstack::scenario;
use blkstack::trace::{Action, Event};

/// Run scenario `text` (with `--set` style overrides) and return every event.
pub fn run_events(text: &str, sets: &[&str]) -> (blkstack::engine::Engine, Vec<Event>) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = scenario::load("test.toml", text, None, &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    let events = engine.core.tracer.log.take().unwrap().events;
    (engine, events)
}

/// (sector, sectors) of every event with `action` on device `dev`.
pub fn on(engine: &blkstack::engine::Engine, events: &[Event], dev: &str, action: Action) -> Vec<(u64, u32)> {
    let id = engine.core.topo.by_name(dev).expect("device");
    events.iter().filter(|e| e.dev == id && e.action == action).map(|e| (e.sector, e.sectors())).collect()
}

/// The device the bio at `sector` of stacked device `from` was remapped to
/// (its first `A` event).
pub fn remapped_to(engine: &blkstack::engine::Engine, events: &[Event], from: &str, sector: u64) -> blkstack::genhd::DevId {
    let from = engine.core.topo.by_name(from).expect("device");
    events.iter().find(|e| e.action == Action::Remap && e.from_dev == from && e.arg == sector).map(|e| e.dev).expect("remapped")
}

/// Issued request sizes ('D') on `dev`.
pub fn issued(engine: &blkstack::engine::Engine, events: &[Event], dev: &str) -> Vec<(u64, u32)> {
    on(engine, events, dev, Action::Issue)
}
