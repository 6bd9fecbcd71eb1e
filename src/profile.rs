//! Kernel profiles and behaviour switches.
//!
//! Every block-layer behaviour that changed between kernel versions is a
//! named switch in [`Behaviour`]; a profile is a set of values for all of
//! them. `--set behaviour.NAME=VALUE` overrides one switch on top of a
//! profile, so a user can run "before" and "after" a single kernel change.
//! [`SWITCHES`] is the registry: name, values, description and per-profile
//! value for every switch.

use crate::limits::{LimitsModel, Raid10DiscardLimit, Raid5MaxHwSectors, StackingBehaviour};
use crate::dm::crypt::{CryptMaxRequest, CryptPages};
use crate::source::discard::DiscardChopping;

/// An enum switch: its values and their names.
pub trait Choice: Sized + Copy + PartialEq + 'static {
    const ALL: &'static [(Self, &'static str)];

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(v, _)| *v == self).map(|(_, n)| *n).expect("every value is named")
    }

    fn parse(s: &str) -> Result<Self, String> {
        Self::ALL.iter().find(|(_, n)| *n == s).map(|(v, _)| *v).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
            format!("'{s}' is not one of {}", names.join("|"))
        })
    }
}

macro_rules! choice {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $variant),+ }
        impl Choice for $name {
            const ALL: &'static [(Self, &'static str)] = &[$(($name::$variant, $text)),+];
        }
    };
}

choice!(
    /// Where `bio_submit_split` puts the remainder on `current->bio_list`.
    SplitRemainder {
        /// ≤6.17: `submit_bio_noacct(remainder)` appends at the tail.
        Tail = "tail",
        /// 6.18+: "block: fix reordered IO in the case recursive split".
        Head = "head",
    }
);

choice!(
    /// How `__submit_bio_noacct` reassembles `current->bio_list` after each bio.
    BioListAssembly {
        /// Every released kernel: lower-level bios, then same-level, then pending.
        LowerSamePending = "lower_same_pending",
        /// Bart Van Assche's unmerged proposal: pending first.
        PendingLowerSame = "pending_lower_same",
    }
);

choice!(WriteZeroesSplit { Exact = "exact", MaxIoSize = "max_io_size" });
choice!(SecureEraseLimit { Discard = "discard", Own = "own" });

impl Choice for CryptMaxRequest {
    const ALL: &'static [(Self, &'static str)] = &[(CryptMaxRequest::WritesBioMaxVecs, "writes_bio_max_vecs"), (CryptMaxRequest::ReadWrite128k, "read_write_128k")];
}

impl Choice for CryptPages {
    const ALL: &'static [(Self, &'static str)] = &[(CryptPages::Pages, "pages"), (CryptPages::Compound, "compound")];
}

impl Choice for LimitsModel {
    const ALL: &'static [(Self, &'static str)] = &[(LimitsModel::Legacy, "legacy"), (LimitsModel::Validate, "validate")];
}

choice!(
    /// Where `blk_add_rq_to_plug` puts a new request.
    PlugAdd {
        /// Newest first (≤6.12.24, mainline ≤6.12; the unmerged revert).
        Head = "head",
        /// Oldest first: e70c301faece "block: don't reorder requests in blk_add_rq_to_plug" (6.13, 6.12.25).
        Tail = "tail",
    }
);

choice!(
    /// Which request `blk_attempt_plug_merge` tries (exactly one).
    PlugMerge {
        /// The first request of the bio's queue from the list head.
        FirstFromHead = "first_from_head",
        /// The list tail if it is the bio's queue, else (several queues) the
        /// first from the head: 961296e89dc3 (6.16, 6.12.35).
        TailThenFirstFromHead = "tail_then_first_from_head",
        /// Up to 5.15: every request of the bio's queue, newest (list tail)
        /// first, until one merges (`list_for_each_entry_reverse`); bc490f81731e
        /// "blk-mq: change plugging to use a singly linked list" (5.16) kept one.
        EveryFromTail = "every_from_tail",
    }
);

choice!(
    /// Which request `blk_mq_submit_bio` measures against
    /// `BLK_PLUG_FLUSH_SIZE` before adding to the plug.
    PlugSizeRq {
        /// Up to 5.15: the list tail (`list_entry_rq(plug->mq_list.prev)`),
        /// the newest request.
        Tail = "tail",
        /// 5.16+ (bc490f81731e): the list head (`rq_list_peek`): the newest
        /// under head-add, the oldest under tail-add.
        Head = "head",
    }
);

choice!(
    /// How `blk_mq_dispatch_plug_list` builds its local list from the plug.
    PlugListPath {
        /// `list_add`: reverses (6.1.21+, "block: do not reverse request order when flushing plug list").
        ListAdd = "list_add",
        /// `list_add_tail`: keeps the plug's order (6.12.25+).
        ListAddTail = "list_add_tail",
    }
);

choice!(
    /// The virt-boundary gap rule between bios (`bio_will_gap`).
    GapRule {
        /// 4.12+: first-bvec rule, physical-contiguity shortcut, masked offsets.
        Current = "current",
        /// ≤4.11: any non-zero next offset is a gap.
        Old = "old",
        /// The 2016 RFC (seed 004): contiguous data in one page is no gap.
        SamePageRfc = "same_page_rfc",
    }
);

choice!(
    /// What /proc/diskstats field 9 counts on request-based disks.
    InflightCount {
        /// 6.1: requests in the driver.
        Driver = "driver",
        /// 6.12+: the accounted counter (plugged and scheduled requests too).
        Accounted = "accounted",
    }
);

choice!(
    /// `update_io_ticks`.
    IoTicks {
        /// "block: support to account io_ticks precisely" (6.10, 6.1.93).
        Precise = "precise",
        /// Before: every start on an idle disk adds a jiffy.
        Legacy = "legacy",
    }
);

choice!(
    /// When bio-based devices (md, dm) count ios and sectors.
    BioAccounting {
        /// 6.1: at `bio_start_io_acct`.
        Start = "start",
        /// 6.12+: at `bio_end_io_acct`.
        End = "end",
    }
);

/// How md raid10 handles discards (spec stack §4.4–4.6, §9a).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raid10Discard {
    /// ≤5.12: `raid10_run` caps discards at one chunk, so every chunk piece
    /// goes the write path (one discard per copy).
    ChunkLimited,
    /// 5.13+ (d30588b2731f, 254c271da071 "md/raid10: improve raid10 discard
    /// request"): `raid10_handle_discard`, one discard per member and
    /// far-copy region; head and tail via the write path.
    WholeRange,
    /// 5.10-rc1's first version (reverted before 5.10; LP #1907262): stripe
    /// = every member × chunk and near layouts not trimmed, which discards
    /// live data on near copies. For tests only.
    WholeRangeV1,
}

impl Choice for Raid10Discard {
    /// `v1-5.10rc1` is accepted for the first version too (the issue's name).
    const ALL: &'static [(Self, &'static str)] = &[
        (Raid10Discard::ChunkLimited, "chunk_limited"),
        (Raid10Discard::WholeRange, "whole_range"),
        (Raid10Discard::WholeRangeV1, "whole_range_v1"),
        (Raid10Discard::WholeRangeV1, "v1-5.10rc1"),
    ];
}

choice!(
    /// What raid0 does with the part of a read/write past a chunk end.
    Raid0Split {
        /// f00d7c85be9e (4.14) to 6.4: the front is mapped, the remainder
        /// resubmitted unmapped to md.
        RemainderToMd = "remainder_to_md",
        /// 319ff40a5427 "md/raid0: Fix performance regression for large
        /// sequential writes" (6.5; 6.1.y, 5.15.y): both pieces mapped, the
        /// remainder first.
        MapBoth = "map_both",
    }
);

choice!(
    /// Which arithmetic `raid0_handle_discard` uses for ORIG-layout zones.
    Raid0DiscardLayout {
        /// 4.12–6.4: the ALT formula for every layout (wrong chunks on
        /// multi-zone ORIG arrays).
        Unshifted = "unshifted",
        /// e836007089 "md/raid0: add discard support for the 'original'
        /// layout" (6.5; 6.1.192).
        DiskShift = "disk_shift",
    }
);

choice!(
    /// Where md counts I/O in /proc/diskstats (spec stack §2.4).
    MdAccounting {
        /// ≤5.8 `md_make_request`: ios and sectors per post-split bio after
        /// `make_request`, no in-flight, no ticks.
        Inline = "inline",
        /// 5.9–5.13 (41d2d848e5c0 "md: improve io stats accounting"): every
        /// bio `md_submit_bio` passes on, before the personality splits it.
        SubmitBio = "submit_bio",
        /// 5.14+ (ad3fc798800f reverted the above): each personality
        /// accounts the bios it maps (`md_account_bio`, r1/r10 start_time).
        Personality = "personality",
    }
);

choice!(
    /// raid456's `max_hw_sectors`.
    Raid5MaxHw {
        /// Up to 5.19: `UINT_MAX`, so `max_sectors` is `BLK_DEF_MAX_SECTORS`
        /// and `max_segments` the members' stacked value.
        Unlimited = "unlimited",
        /// 6.1/6.12: `RAID5_MAX_REQ_STRIPES` units (1 MiB), set after stacking.
        Fixed = "fixed",
        /// 7.x: at least the full stripe width (`io_opt`).
        AtLeastIoOpt = "at_least_io_opt",
    }
);

impl Choice for DiscardChopping {
    const ALL: &'static [(Self, &'static str)] = &[
        (DiscardChopping::MaxDiscardAligned, "max_discard_aligned"),
        (DiscardChopping::AllowedMaxSectors, "allowed_max_sectors"),
        (DiscardChopping::GranularityAligned, "granularity_aligned"),
        (DiscardChopping::BioDiscardLimit, "bio_discard_limit"),
    ];
}

choice!(
    /// When `bio_iov_iter_get_pages` adds a pinned user page to the last bvec.
    DioBvecMerge {
        /// 5.1-6.x (`bvec_try_merge_page`): whenever the page continues the
        /// bvec physically, so a physically contiguous run is one bvec.
        PhysContig = "phys_contig",
        /// 7.x folio-based extraction: only within one folio; order-0 user
        /// memory gives one page per bvec.
        FolioOnly = "folio_only",
    }
);

choice!(
    /// Whether direct I/O trims each bio to the queue's max I/O size.
    IovAlign {
        /// Every released kernel.
        Off = "off",
        /// Ed Tsai's proposal ("block: limit the extract size to align queue
        /// limit", seed 003): when more bios follow, a bio is cut down to a
        /// multiple of max_sectors, so splitting leaves no small remainder.
        MaxIo = "max_io",
        /// The same proposal as posted (v2, 2023-11-10): each extraction is
        /// limited to `max - bi_size & (max - 1)`, which C parses as
        /// `(max - bi_size) & (max - 1)`: 0 once the bio holds `max` bytes,
        /// so no bio grows past the max I/O size, and a single-bio direct
        /// I/O (`__blkdev_direct_IO_simple`, `__blkdev_direct_IO_async`)
        /// completes short (seed 003's ublk objection).
        MaxIoV2 = "max_io_v2",
    }
);

choice!(
    /// How kyber limits the scheduler tags of asynchronous requests
    /// (`kyber_depth_updated`, `kyber_limit_depth`, lib/sbitmap's shallow
    /// depth).
    KyberAsyncDepth {
        /// 6.1: `async_depth` is 75% of one sbitmap word, and
        /// `sbitmap_get_shallow` applies it to every word of the tags.
        Word = "word",
        /// 6.12.y and 7.x: 75% of `nr_requests`, spread over the words in
        /// proportion ("lib/sbitmap: convert shallow_depth from one word to
        /// the whole sbitmap", 6.17, with its kyber half; backported
        /// to 6.12.y).
        Queue = "queue",
    }
);

choice!(
    /// Which request mq-deadline continues a batch with
    /// (`deadline_next_request`).
    DdNext {
        /// Up to 6.4: `next_rq`, the request after the last dispatched one
        /// in sector order (none before a direction's first dispatch, so
        /// that starts from the FIFO).
        NextRq = "next_rq",
        /// 83c46ed67557 "block: mq-deadline: Track the dispatch position"
        /// (6.5): the lowest request at or above the last dispatched sector.
        LatestPos = "latest_pos",
    }
);

choice!(
    /// How the data of a `REQ_PREFLUSH`/`REQ_FUA` write reaches the driver.
    FlushDataPath {
        /// Up to 6.4: a flush write needing no flush goes straight into
        /// `hctx->dispatch`, and a sequence's data through the requeue list
        /// (kblockd issues it); the flush request joins the dispatch tail.
        Requeue = "requeue",
        /// 360f264834e3 and 615939a2ae73 "blk-mq: defer to the normal
        /// submission path for non-flush flush commands / post-flush
        /// requests" (6.5): both take the normal path (plug, scheduler);
        /// the flush request goes to the dispatch head.
        Normal = "normal",
    }
);

choice!(
    /// Where the blk-crypto fallback encrypts a write with a crypt context
    /// that no disk's hardware takes.
    CryptoFallback {
        /// Up to 6.x: `blk_crypto_bio_prep` in every `__submit_bio` splits
        /// the bio after `BIO_MAX_VECS` pages and resubmits the rest (always
        /// at the tail of `current->bio_list`).
        InSubmitBio = "in_submit_bio",
        /// bb8e2019ad61 "blk-crypto: handle the fallback above the block
        /// layer" (7.0): `blk_crypto_submit_bio` encrypts before submission
        /// and submits bios of at most `BIO_MAX_VECS` pages, in order.
        AboveBlockLayer = "above_block_layer",
    }
);

choice!(
    /// When nvme-pci sets a virt boundary of one controller page.
    NvmeVirtBoundary {
        /// Up to 6.x: always (`blk_queue_virt_boundary(q, NVME_CTRL_PAGE_SIZE - 1)`
        /// in `nvme_set_queue_limits`).
        Always = "always",
        /// 7.x `nvme_pci_get_virt_boundary`: only for a controller without
        /// SGL support (the I/O queues of one with SGLs have none).
        PrpOnly = "prp_only",
    }
);

choice!(
    /// Where nvme's `discard_granularity` comes from (`nvme_config_discard`).
    NvmeDiscardGranularity {
        /// Up to 6.x: the logical block size.
        Lba = "lba",
        /// 7.x: max(NPDG, NPDA) logical blocks (NPDGL/NPDAL when reported),
        /// the logical block size when the namespace reports neither.
        Npdg = "npdg",
    }
);

choice!(
    /// What md raid456 does when discard is not safe (no
    /// `devices_handle_discard_safely`, or members that cannot discard a
    /// whole stripe).
    Raid5Discard {
        /// Up to 6.x `raid5_set_limits`/`raid5_run`: `max_hw_discard_sectors`
        /// 0, so the array shows no discard and the block layer refuses it.
        HideUnsafe = "hide_unsafe",
        /// 7.x: `max_hw_discard_sectors` is `UINT_MAX` on every array and
        /// `raid5_discard_limits` fails each discard bio with -EOPNOTSUPP
        /// when discard is not safe.
        FailUnsafe = "fail_unsafe",
    }
);

choice!(
    /// What null_blk's `no_sched` parameter puts on its tag set.
    NullBlkNoSched {
        /// Up to 6.x: `BLK_MQ_F_NO_SCHED`: no scheduler can be set.
        NoSched = "no_sched",
        /// 7.x (`BLK_MQ_F_NO_SCHED` removed): `BLK_MQ_F_NO_SCHED_BY_DEFAULT`,
        /// `none` until one is written.
        NoneByDefault = "none_by_default",
    }
);

choice!(
    /// Which writes writeback throttling treats as reclaim (blk-wbt.c
    /// `bio_to_wbt_flags`, `get_limit`).
    WbtReclaim {
        /// Up to 6.1: writes submitted by kswapd (`current_is_kswapd()`) get
        /// the kswapd wait queue and the max limit; a swap write from direct
        /// reclaim is an ordinary buffered write.
        Kswapd = "kswapd",
        /// 6.12 on (changed between 6.1 and 6.12: `WBT_KSWAPD` became
        /// `WBT_SWAP`): `REQ_SWAP` writes get the swap wait queue and, being
        /// in `REQ_HIPRIO`, the max limit, whoever submits them.
        Swap = "swap",
    }
);

choice!(
    /// How blk-throttle decides when a group's first queued bio may go
    /// (`tg_may_dispatch` / `tg_dispatch_time`).
    ThrotlDispatch {
        /// 6.1: one queue per direction; the bps check first, and the iops
        /// wait only when the bytes fit (the wait is the bps one otherwise).
        BpsOrIops = "bps_or_iops",
        /// 6.12: one queue per direction; both waits computed, the longer wins.
        MaxWait = "max_wait",
        /// 7.x (Zizhi Wo's "blk-throttle: Split the blkthrotl queue" series,
        /// 6.16): a bps queue then an iops queue per direction; a bio is
        /// charged its bytes when it leaves the bps queue, and a split
        /// remainder (already charged) goes straight to the iops queue.
        BpsThenIops = "bps_then_iops",
    }
);

choice!(
    /// How long `tg_within_iops_limit` makes a bio over the iops limit wait.
    ThrotlIopsWait {
        /// 6.1: to the end of the current slice.
        SliceEnd = "slice_end",
        /// 6.12+: that, but at least `HZ / iops + 1` jiffies, so one I/O
        /// is allowed after waiting.
        OneIo = "one_io",
    }
);

choice!(
    /// What `throtl_trim_slice` takes off a slice after a dispatch.
    ThrotlTrim {
        /// Up to 6.x: every whole slice elapsed, with its allowance.
        WholeSlices = "whole_slices",
        /// 7.x ("blk-throttle: fix lower bps rate by throtl_trim_slice()"):
        /// only once two slices have elapsed, and one slice is kept.
        KeepOneSlice = "keep_one_slice",
    }
);

/// All behaviour switches in force for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Behaviour {
    pub split_remainder: SplitRemainder,
    pub bio_list_assembly: BioListAssembly,
    pub limits_model: LimitsModel,
    /// `BLK_DEF_MAX_SECTORS` / `BLK_DEF_MAX_SECTORS_CAP`, in sectors.
    pub def_max_sectors_cap: u32,
    pub write_zeroes_split: WriteZeroesSplit,
    pub secure_erase_limit: SecureEraseLimit,
    pub plug_add: PlugAdd,
    pub plug_merge: PlugMerge,
    pub plug_list_path: PlugListPath,
    /// `blk_mq_flush_plug_list` sorts a multi-queue plug (`plug_rq_cmp`; up to 5.15).
    pub plug_sort: bool,
    pub plug_size_rq: PlugSizeRq,
    /// nvme/virtio `->queue_rqs` submit the batch in reverse (head-add era).
    pub queue_rqs_reverse: bool,
    /// `block_unplug` also on the direct plug-flush path (6.12+).
    pub unplug_trace_direct: bool,
    /// Each `__submit_bio` in its own plug when the task has none (6.12 only).
    pub submit_bio_plug: bool,
    /// `BLK_PLUG_FLUSH_SIZE` in bytes (0 disables the size flush).
    pub plug_flush_size: u32,
    /// `BLK_MAX_REQUEST_COUNT` (doubled with several queues).
    pub plug_max_requests: u32,
    pub gap_rule: GapRule,
    pub inflight_count: InflightCount,
    pub io_ticks: IoTicks,
    pub bio_accounting: BioAccounting,
    pub raid10_discard: Raid10Discard,
    pub raid0_split: Raid0Split,
    pub raid0_discard: Raid0DiscardLayout,
    pub md_accounting: MdAccounting,
    /// md personalities trace 'X' for their own splits (6.12+).
    pub md_split_trace: bool,
    /// md raid1/raid10 hand their member writes to md's plug callback even
    /// without a write-intent bitmap, and the array's thread submits them
    /// when the submitter sleeps in its plug (up to 6.3; 5.10).
    pub md_plug_writes: bool,
    /// md raid0 sets `chunk_sectors` to the chunk (7.x).
    pub raid0_chunk_sectors: bool,
    /// md raid10 sets `chunk_sectors` to the chunk (6.12+).
    pub raid10_chunk_sectors: bool,
    pub raid5_max_hw: Raid5MaxHw,
    /// md raid5 sets `chunk_sectors` to the full stripe width (7.x).
    pub raid5_chunk_sectors: bool,
    /// dm-stripe sets `chunk_sectors` to its chunk (6.12.y; not 6.1).
    pub dm_stripe_chunk_sectors: bool,
    /// dm-stripe's discard limit is its devices' times the stripes (7.x).
    pub dm_stripe_discard_stripes: bool,
    /// md raid1 sets `chunk_sectors` to its 64 MiB barrier unit (7.x).
    pub raid1_chunk_sectors: bool,
    /// How `__blkdev_issue_discard` cuts a range into bios.
    pub discard_chopping: DiscardChopping,
    pub dio_bvec_merge: DioBvecMerge,
    pub iov_align: IovAlign,
    /// `__blkdev_direct_IO_simple` submits with `submit_bio_wait`, which
    /// sets `REQ_SYNC` (5.16+).
    pub dio_simple_sync: bool,
    /// `blkdev_write_iter` runs every write(2) to a block device inside a
    /// plug (up to 6.4; 6.1 only among the profiles).
    pub blkdev_write_plug: bool,
    pub dd_next: DdNext,
    pub kyber_async_depth: KyberAsyncDepth,
    pub flush_data_path: FlushDataPath,
    /// Writes to a host-managed zoned disk's sequential zones go through
    /// zone write plugs (6.10+, [`crate::zoned`]).
    pub zone_write_plugging: bool,
    pub crypto_fallback: CryptoFallback,
    /// nvme-pci's `NVME_MAX_SEGS`: the driver's segment cap besides
    /// `max_hw_sectors / 8 + 1` (`nvme_max_drv_segments`).
    pub nvme_max_segs: u32,
    pub nvme_virt_boundary: NvmeVirtBoundary,
    pub nvme_discard_granularity: NvmeDiscardGranularity,
    /// `nvme_update_disk_info` sets `io_opt` from NOWS even when NOWS is 0
    /// (one logical block; up to 6.1).
    pub nvme_io_opt_nows_zero: bool,
    pub raid5_discard: Raid5Discard,
    pub null_blk_no_sched: NullBlkNoSched,
    pub wbt_reclaim: WbtReclaim,
    /// bfq counts a scenario asymmetric (and idles for service guarantees)
    /// when more cgroups than this have pending requests.
    pub bfq_groups_asymmetric_above: u32,
    /// bfq merges the queues of processes started together (5.13+).
    pub bfq_stable_merge: bool,
    /// The elevator is asked for a request before its driver tag (6.1+):
    /// one request waits in `hctx->dispatch` when the driver is full.
    pub sched_dispatch_ahead: bool,
    /// bfq holds a queue to its weight's share of the scheduler tags
    /// (`bfqq_request_over_limit`; not in 5.10).
    pub bfq_tag_share: bool,
    pub throtl_dispatch: ThrotlDispatch,
    pub throtl_iops_wait: ThrotlIopsWait,
    pub throtl_trim: ThrotlTrim,
    /// blk-throttle counts each split piece of a bio as an I/O (5.18+);
    /// before, a piece of a bio that passed went through unthrottled.
    pub throtl_split_ios: bool,
    /// io.max values below this are refused (EINVAL): 2 up to 6.x, 1 in 7.x.
    pub throtl_min_limit: u32,
    /// How dm-crypt's `crypt_map` cuts reads and writes.
    pub crypt_max_request: CryptMaxRequest,
    /// dm-crypt's write buffer pages (and, with single pages, its one-page
    /// `max_segment_size`).
    pub crypt_pages: CryptPages,
    /// nvme multipath has the `queue-depth` iopolicy (6.11+).
    pub nvme_iopolicy_queue_depth: bool,
    /// Writing a new iopolicy clears each node's current path (6.12).
    pub nvme_iopolicy_clears_path: bool,
}

/// A named kernel version.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: &'static str,
    /// The tree the behaviour was read in.
    pub kernel: &'static str,
    pub summary: &'static str,
    pub behaviour: Behaviour,
}

pub const DEFAULT_PROFILE: &str = "6.12";

/// Jiffies per second (Debian's `CONFIG_HZ`).
pub const HZ: u64 = 250;

pub fn profiles() -> Vec<Profile> {
    let v6_1 = Behaviour {
        split_remainder: SplitRemainder::Tail,
        bio_list_assembly: BioListAssembly::LowerSamePending,
        limits_model: LimitsModel::Legacy,
        def_max_sectors_cap: 2560,
        write_zeroes_split: WriteZeroesSplit::Exact,
        secure_erase_limit: SecureEraseLimit::Discard,
        plug_add: PlugAdd::Head,
        plug_merge: PlugMerge::FirstFromHead,
        plug_list_path: PlugListPath::ListAdd,
        plug_sort: false,
        plug_size_rq: PlugSizeRq::Head,
        queue_rqs_reverse: true,
        unplug_trace_direct: false,
        submit_bio_plug: false,
        plug_flush_size: 131072,
        plug_max_requests: 32,
        gap_rule: GapRule::Current,
        inflight_count: InflightCount::Driver,
        io_ticks: IoTicks::Precise,
        bio_accounting: BioAccounting::Start,
        raid10_discard: Raid10Discard::WholeRange,
        raid0_split: Raid0Split::MapBoth,
        raid0_discard: Raid0DiscardLayout::DiskShift,
        md_accounting: MdAccounting::Personality,
        md_split_trace: false,
        md_plug_writes: false,
        raid0_chunk_sectors: false,
        raid10_chunk_sectors: false,
        raid5_max_hw: Raid5MaxHw::Fixed,
        raid5_chunk_sectors: false,
        dm_stripe_chunk_sectors: false,
        dm_stripe_discard_stripes: false,
        raid1_chunk_sectors: false,
        discard_chopping: DiscardChopping::BioDiscardLimit,
        dio_bvec_merge: DioBvecMerge::PhysContig,
        iov_align: IovAlign::Off,
        dio_simple_sync: true,
        blkdev_write_plug: true,
        dd_next: DdNext::NextRq,
        kyber_async_depth: KyberAsyncDepth::Word,
        flush_data_path: FlushDataPath::Requeue,
        zone_write_plugging: false,
        crypto_fallback: CryptoFallback::InSubmitBio,
        nvme_max_segs: 127,
        nvme_virt_boundary: NvmeVirtBoundary::Always,
        nvme_discard_granularity: NvmeDiscardGranularity::Lba,
        nvme_io_opt_nows_zero: true,
        raid5_discard: Raid5Discard::HideUnsafe,
        null_blk_no_sched: NullBlkNoSched::NoSched,
        wbt_reclaim: WbtReclaim::Kswapd,
        bfq_groups_asymmetric_above: 0,
        bfq_stable_merge: true,
        bfq_tag_share: true,
        sched_dispatch_ahead: true,
        throtl_dispatch: ThrotlDispatch::BpsOrIops,
        throtl_iops_wait: ThrotlIopsWait::SliceEnd,
        throtl_trim: ThrotlTrim::WholeSlices,
        throtl_split_ios: true,
        throtl_min_limit: 2,
        crypt_max_request: CryptMaxRequest::WritesBioMaxVecs,
        crypt_pages: CryptPages::Pages,
        nvme_iopolicy_queue_depth: false,
        nvme_iopolicy_clears_path: false,
    };
    let v6_12 = Behaviour {
        wbt_reclaim: WbtReclaim::Swap,
        limits_model: LimitsModel::Validate,
        write_zeroes_split: WriteZeroesSplit::MaxIoSize,
        secure_erase_limit: SecureEraseLimit::Own,
        plug_add: PlugAdd::Tail,
        plug_merge: PlugMerge::TailThenFirstFromHead,
        plug_list_path: PlugListPath::ListAddTail,
        queue_rqs_reverse: false,
        unplug_trace_direct: true,
        submit_bio_plug: true,
        inflight_count: InflightCount::Accounted,
        bio_accounting: BioAccounting::End,
        md_split_trace: true,
        raid10_chunk_sectors: true,
        dm_stripe_chunk_sectors: true,
        blkdev_write_plug: false,
        dd_next: DdNext::LatestPos,
        kyber_async_depth: KyberAsyncDepth::Queue,
        flush_data_path: FlushDataPath::Normal,
        zone_write_plugging: true,
        nvme_max_segs: 128,
        nvme_io_opt_nows_zero: false,
        bfq_groups_asymmetric_above: 1,
        throtl_dispatch: ThrotlDispatch::MaxWait,
        throtl_iops_wait: ThrotlIopsWait::OneIo,
        crypt_max_request: CryptMaxRequest::ReadWrite128k,
        crypt_pages: CryptPages::Compound,
        nvme_iopolicy_queue_depth: true,
        nvme_iopolicy_clears_path: true,
        ..v6_1.clone()
    };
    // Mainline 6.15: tail add without the tail-first merge fix (seed 001).
    // Mainline 6.15 predates the sbitmap shallow-depth rework (6.17) that
    // 6.12.y took as a backport: kyber's async depth is still per word.
    let v6_15 = Behaviour { plug_merge: PlugMerge::FirstFromHead, kyber_async_depth: KyberAsyncDepth::Word, ..v6_12.clone() };
    let v7_2 = Behaviour {
        split_remainder: SplitRemainder::Head,
        def_max_sectors_cap: 8192,
        submit_bio_plug: false,
        raid0_chunk_sectors: true,
        raid5_max_hw: Raid5MaxHw::AtLeastIoOpt,
        raid5_chunk_sectors: true,
        dio_bvec_merge: DioBvecMerge::FolioOnly,
        crypto_fallback: CryptoFallback::AboveBlockLayer,
        nvme_max_segs: 256,
        nvme_virt_boundary: NvmeVirtBoundary::PrpOnly,
        nvme_discard_granularity: NvmeDiscardGranularity::Npdg,
        raid5_discard: Raid5Discard::FailUnsafe,
        dm_stripe_discard_stripes: true,
        raid1_chunk_sectors: true,
        null_blk_no_sched: NullBlkNoSched::NoneByDefault,
        throtl_dispatch: ThrotlDispatch::BpsThenIops,
        throtl_trim: ThrotlTrim::KeepOneSlice,
        throtl_min_limit: 1,
        ..v6_12.clone()
    };
    let mut all = pre_6_profiles(&v6_1);
    all.extend([
        Profile { name: "6.1", kernel: "6.1.192", summary: "Debian bookworm's 6.1 LTS", behaviour: v6_1 },
        Profile { name: "6.12", kernel: "6.12.117", summary: "Debian trixie's 6.12 LTS", behaviour: v6_12 },
        Profile {
            name: "6.15",
            kernel: "6.15.1",
            summary: "plug list tail add without the tail-first plug merge (seed 001's regression)",
            behaviour: v6_15,
        },
        Profile { name: "7.2", kernel: "7.2.13", summary: "newest: head insertion of split remainders, 4 MiB default cap", behaviour: v7_2 },
    ]);
    all
}

/// Old kernels the seeds were taken on: 6.1's values except what the spec
/// documents for them (stack §2.4, §3.3, §3.4, §4.4; block-core §6.4), and
/// 5.10 as Debian bullseye ships it (5.10.262, read in its source).
fn pre_6_profiles(v6_1: &Behaviour) -> Vec<Profile> {
    let v5_10 = Behaviour {
        // blk-mq's list-based plug (block/blk-mq.c, blk-merge.c up to 5.15).
        plug_add: PlugAdd::Tail,
        plug_merge: PlugMerge::EveryFromTail,
        plug_list_path: PlugListPath::ListAddTail,
        plug_sort: true,
        plug_size_rq: PlugSizeRq::Tail,
        // No ->queue_rqs: blk_mq_try_issue_list_directly issues in list order.
        queue_rqs_reverse: false,
        // blk_mq_flush_plug_list traces block_unplug for every batch.
        unplug_trace_direct: true,
        io_ticks: IoTicks::Legacy,
        raid10_discard: Raid10Discard::ChunkLimited,
        // raid1_write_request / raid10_write_one_disk: blk_check_plugged
        // (raid1_unplug, raid10_unplug) whatever the bitmap.
        md_plug_writes: true,
        raid0_split: Raid0Split::RemainderToMd,
        md_accounting: MdAccounting::Inline,
        raid5_max_hw: Raid5MaxHw::Unlimited,
        discard_chopping: DiscardChopping::GranularityAligned,
        dio_simple_sync: false,
        // blk-throttle before 9f5ede3c01f9 (5.18): split pieces uncounted.
        throtl_split_ios: false,
        // bfq before 430a67f9d616 (5.13): no stable merging.
        bfq_stable_merge: false,
        // bfq_limit_depth before "bfq: Limit number of requests consumed by
        // each cgroup": async and write depths only.
        bfq_tag_share: false,
        sched_dispatch_ahead: false,
        ..v6_1.clone()
    };
    let v5_8 = Behaviour {
        raid10_discard: Raid10Discard::ChunkLimited,
        raid0_split: Raid0Split::RemainderToMd,
        raid0_discard: Raid0DiscardLayout::Unshifted,
        md_accounting: MdAccounting::Inline,
        io_ticks: IoTicks::Legacy,
        discard_chopping: DiscardChopping::AllowedMaxSectors,
        raid5_max_hw: Raid5MaxHw::Unlimited,
        throtl_split_ios: false,
        bfq_stable_merge: false,
        bfq_tag_share: false,
        sched_dispatch_ahead: false,
        ..v6_1.clone()
    };
    let v5_13 = Behaviour {
        raid10_discard: Raid10Discard::WholeRange,
        md_accounting: MdAccounting::SubmitBio,
        discard_chopping: DiscardChopping::GranularityAligned,
        ..v5_8.clone()
    };
    vec![
        Profile { name: "5.8", kernel: "5.8.18", summary: "md raid10 discards one chunk at a time (seed 002's old kernels)", behaviour: v5_8 },
        Profile {
            name: "5.10",
            kernel: "5.10.262",
            summary: "Debian bullseye's 5.10 LTS: list plug (sorted at flush, every request tried for a merge), raid5 without the 1 MiB cap",
            behaviour: v5_10,
        },
        Profile { name: "5.13", kernel: "5.13.19", summary: "md raid10 whole-range discard, md accounting in md_submit_bio", behaviour: v5_13 },
    ]
}

/// Look a profile up by name or by its full kernel version.
pub fn profile(name: &str) -> Option<Profile> {
    profiles().into_iter().find(|p| p.name == name || p.kernel == name)
}

/// One behaviour switch: how to read and set it, and what it models.
pub struct SwitchDef {
    pub name: &'static str,
    /// The values, separated by '|' (for a numeric switch, the ones the profiles use).
    pub values: &'static str,
    pub description: &'static str,
    pub get: fn(&Behaviour) -> String,
    pub set: fn(&mut Behaviour, &str) -> Result<(), String>,
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        _ => Err(format!("'{v}' is not true or false")),
    }
}

fn parse_u32(v: &str, min: u32) -> Result<u32, String> {
    let n: u32 = v.parse().map_err(|_| format!("'{v}' is not a whole number"))?;
    if n < min {
        return Err(format!("{n} is below {min}"));
    }
    Ok(n)
}

macro_rules! switch {
    (choice $field:ident, $values:literal, $desc:literal) => {
        SwitchDef {
            name: stringify!($field),
            values: $values,
            description: $desc,
            get: |b| b.$field.name().to_string(),
            set: |b, v| {
                b.$field = Choice::parse(v)?;
                Ok(())
            },
        }
    };
    (flag $field:ident, $desc:literal) => {
        SwitchDef {
            name: stringify!($field),
            values: "true|false",
            description: $desc,
            get: |b| b.$field.to_string(),
            set: |b, v| {
                b.$field = parse_bool(v)?;
                Ok(())
            },
        }
    };
    (number $field:ident, $min:expr, $values:literal, $desc:literal) => {
        SwitchDef {
            name: stringify!($field),
            values: $values,
            description: $desc,
            get: |b| b.$field.to_string(),
            set: |b, v| {
                b.$field = parse_u32(v, $min)?;
                Ok(())
            },
        }
    };
}

pub const SWITCHES: &[SwitchDef] = &[
    switch!(choice split_remainder, "tail|head",
        "where a split remainder goes on current->bio_list: tail (<=6.17) or head (6.18+, \"block: fix reordered IO in the case recursive split\"); seed 000"),
    switch!(choice bio_list_assembly, "lower_same_pending|pending_lower_same",
        "__submit_bio_noacct list order after each bio: lower, same, pending (all released kernels) or pending first (\"block: Make __submit_bio_noacct() preserve the bio submission order\", unmerged)"),
    switch!(choice limits_model, "legacy|validate",
        "how max_sectors is derived: legacy (6.1 blk_queue_max_hw_sectors, max_sectors_kb above max_hw refused) or validate (6.12+ blk_validate_limits with max_user_sectors; io_opt may raise the default)"),
    switch!(number def_max_sectors_cap, 8, "2560|8192",
        "BLK_DEF_MAX_SECTORS_CAP, the default max_sectors cap in sectors (any count of at least 8): 2560 (1280 KiB) up to 6.12, 8192 (4 MiB) after \"block: Increase BLK_DEF_MAX_SECTORS_CAP\""),
    switch!(choice write_zeroes_split, "exact|max_io_size",
        "write-zeroes splitting: exact (6.1, at max_write_zeroes_sectors) or max_io_size (6.12+, get_max_io_size with chunk boundaries)"),
    switch!(choice secure_erase_limit, "discard|own",
        "secure erase split by max_discard_sectors (6.1) or by max_secure_erase_sectors (6.12+)"),
    switch!(choice plug_add, "head|tail",
        "blk_add_rq_to_plug adds at the head (newest first; 6.1, 6.12.0-24) or the tail (e70c301faece \"block: don't reorder requests in blk_add_rq_to_plug\", 6.13, 6.12.25); seed 001"),
    switch!(choice plug_merge, "first_from_head|tail_then_first_from_head|every_from_tail",
        "blk_attempt_plug_merge tries the first request of the queue from the list head, or the tail first (961296e89dc3 \"block: use plug request list tail for one-shot backmerge attempt\", 6.16, 6.12.35), or every request of the queue from the tail (up to 5.15, list_for_each_entry_reverse; one-shot since bc490f81731e, 5.16); seed 001"),
    switch!(choice plug_list_path, "list_add|list_add_tail",
        "blk_mq_dispatch_plug_list builds its list with list_add (reverses; 6.1.21+) or list_add_tail (keeps order; 6.12.25+)"),
    switch!(flag plug_sort,
        "blk_mq_flush_plug_list sorts a plug holding more than two requests of several queues with plug_rq_cmp (by software queue, hardware queue, then sector) before inserting them (up to 5.15; dropped by bc490f81731e \"blk-mq: change plugging to use a singly linked list\", 5.16)"),
    switch!(choice plug_size_rq, "tail|head",
        "the plugged request blk_mq_submit_bio compares with BLK_PLUG_FLUSH_SIZE: tail (up to 5.15: list_entry_rq(plug->mq_list.prev), the newest) or head (5.16+ rq_list_peek, bc490f81731e)"),
    switch!(flag queue_rqs_reverse,
        "nvme/virtio ->queue_rqs push each request at the head of their submit list, so the device sees the batch reversed (head-add era; undone with e70c301faece)"),
    switch!(flag unplug_trace_direct,
        "block_unplug ('U') is traced on the direct plug-flush path too (6.12+; 6.1 traces it only on the list path)"),
    switch!(flag submit_bio_plug,
        "each __submit_bio runs in its own plug when the task has none (6.12 only; every request shows P and U)"),
    switch!(number plug_flush_size, 0, "131072",
        "BLK_PLUG_FLUSH_SIZE in bytes: adding a request flushes the plug first when the reference request is this large (0 disables); seed 000"),
    switch!(number plug_max_requests, 1, "16|32",
        "BLK_MAX_REQUEST_COUNT: requests in a plug before it is flushed (doubled with several queues): 16 up to 5.15, 32 since ba0ffdd8ce48 \"block: bump max plugged deferred size from 16 to 32\" (5.16, backported to the stable trees: Debian's 5.10.262 has 32)"),
    switch!(choice gap_rule, "current|old|same_page_rfc",
        "virt_boundary merge gap rule: current (5a8d75a1b8c9 \"block: fix bio_will_gap() for first bvec with offset\", 4.12+), old (any non-zero next offset is a gap), same_page_rfc (the 2016 RFC \"block: fix bio merge checks when virt_boundary is set\", never merged); seed 004"),
    switch!(choice inflight_count, "driver|accounted",
        "/proc/diskstats in_flight of request-based disks: requests in the driver (6.1) or the accounted counter including plugged and scheduled ones (6.12+)"),
    switch!(choice io_ticks, "precise|legacy",
        "update_io_ticks: precise (\"block: support to account io_ticks precisely\", 6.10, 6.1.93) or legacy (a start on an idle disk adds a jiffy)"),
    switch!(choice bio_accounting, "start|end",
        "bio-based (md/dm) ios and sectors counted at bio_start_io_acct (6.1) or at bio_end_io_acct (6.12+)"),
    switch!(choice raid10_discard, "chunk_limited|whole_range|whole_range_v1",
        "md raid10 discards: chunk_limited (<=5.12: discard_max_bytes = chunk, each chunk piece goes the write path), whole_range (5.13+ d30588b2731f/254c271da071 raid10_handle_discard: one discard per member range), whole_range_v1 (5.10-rc1's reverted first version, also spelled v1-5.10rc1: over-discards near copies; for tests)"),
    switch!(choice raid0_split, "remainder_to_md|map_both",
        "md raid0 read/write across a chunk end: remainder_to_md (f00d7c85be9e, <=6.4: front mapped, remainder back to md) or map_both (319ff40a5427, 6.5 and 6.1.y: both mapped, remainder first)"),
    switch!(choice raid0_discard, "unshifted|disk_shift",
        "raid0_handle_discard on multi-zone ORIG-layout arrays: unshifted (4.12-6.4, wrong chunks) or disk_shift (e836007089, 6.5 and 6.1.192)"),
    switch!(choice md_accounting, "inline|submit_bio|personality",
        "where md counts diskstats: inline (<=5.8 md_make_request: ios and sectors only), submit_bio (5.9-5.13 41d2d848e5c0: each md_submit_bio bio), personality (5.14+: each bio a personality maps)"),
    switch!(flag md_split_trace,
        "md personalities trace block_split ('X') for their own splits (6.12+)"),
    switch!(flag md_plug_writes,
        "md raid1/raid10 member writes (and raid10's chunk-limited discards) go to md's plug callback even without a bitmap; a submitter that sleeps in its plug hands them to mdN_raid1/mdN_raid10, which submits them in its own plug (up to 6.3, 5.10; raid1_add_bio_to_plug submits directly without a bitmap from 6.4 and in 6.1.y)"),
    switch!(flag raid0_chunk_sectors,
        "md raid0 sets the queue's chunk_sectors to its chunk, so md_submit_bio already splits at chunks (7.x)"),
    switch!(flag raid10_chunk_sectors,
        "md raid10 sets the queue's chunk_sectors to its chunk (6.12+)"),
    switch!(choice raid5_max_hw, "unlimited|fixed|at_least_io_opt",
        "md raid456 max_hw_sectors: unlimited (up to 5.19: UINT_MAX, so max_sectors_kb 1280 and the members' max_segments), fixed 1 MiB with max_segments 65535 (RAID5_MAX_REQ_STRIPES, 7e55c60acfbb \"md/raid5: Pivot raid5_make_request()\", 6.0; 6.1/6.12) or at least the full stripe width (7.x)"),
    switch!(flag raid5_chunk_sectors,
        "md raid456 sets chunk_sectors to the full data stripe (io_opt), so md splits at stripe boundaries (7.x)"),
    switch!(flag dm_stripe_chunk_sectors,
        "dm-stripe sets chunk_sectors to its chunk (6.12.y; not 6.1)"),
    switch!(flag dm_stripe_discard_stripes,
        "dm-stripe's discard limit: its devices' max_hw_discard_sectors (up to 6.x) or, when that is at least a chunk, that times the stripes rounded down to whole stripe rows (7.x stripe_io_hints, read in 7.2.13; the target sends one discard per stripe)"),
    switch!(flag raid1_chunk_sectors,
        "md raid1 sets chunk_sectors to BARRIER_UNIT_SECTOR_SIZE (64 MiB), so bios are split at barrier units before raid1 sees them (7.x raid1_set_limits, read in 7.2.13; up to 6.x raid1_make_request splits them itself, the same places)"),
    switch!(choice discard_chopping, "max_discard_aligned|allowed_max_sectors|granularity_aligned|bio_discard_limit",
        "how __blkdev_issue_discard cuts BLKDISCARD/fstrim ranges into bios: max_discard_aligned (4.9-4.18: max_discard_sectors pieces pulled back to the granularity grid), allowed_max_sectors (4.19-5.9, 744889b7cbb5: UINT_MAX-sized pieces, the queue splits), granularity_aligned (5.10-6.0: an unaligned head piece, then granularity-aligned UINT_MAX pieces), bio_discard_limit (6.1+: the same computed per bio)"),
    switch!(choice dio_bvec_merge, "phys_contig|folio_only",
        "direct I/O bvecs: phys_contig (5.1-6.x bvec_try_merge_page: a physically contiguous run of user pages is one bvec) or folio_only (7.x: pages merge only within a folio, so order-0 user memory is one page per bvec and a bio holds 256 pages)"),
    switch!(flag dio_simple_sync,
        "__blkdev_direct_IO_simple (a synchronous O_DIRECT I/O of at most 256 pages) submits its bio with submit_bio_wait, which sets REQ_SYNC, so such reads are RS (9650b453a3d4 \"block: ignore RWF_HIPRI hint for sync dio\", 5.16); up to 5.15 plain submit_bio, reads R"),
    switch!(flag blkdev_write_plug,
        "blkdev_write_iter plugs every write(2) to a block device (up to 6.4; removed by 712c7364655f \"block: don't plug in blkdev_write_iter\", 6.5): a synchronous O_DIRECT write's bios wait in the plug until the task sleeps for them, so pieces of one write merge"),
    switch!(choice dd_next, "next_rq|latest_pos",
        "mq-deadline's next request in sector order: next_rq (up to 6.4: the request after the last dispatched one when it was dispatched; a direction's first dispatch takes the FIFO head) or latest_pos (83c46ed67557 \"block: mq-deadline: Track the dispatch position\", 6.5: the lowest request at or above the last dispatched sector)"),
    switch!(choice kyber_async_depth, "word|queue",
        "kyber's limit on the scheduler tags of asynchronous requests (writes without REQ_SYNC): word (6.1: 75% of each sbitmap word of the tags, so 75% of nr_requests rounded per word) or queue (6.12.y and 7.x, \"lib/sbitmap: convert shallow_depth from one word to the whole sbitmap\" of 6.17 backported: 75% of nr_requests spread over the words)"),
    switch!(choice flush_data_path, "requeue|normal",
        "the data of a PREFLUSH/FUA write on a disk with a volatile cache: requeue (up to 6.4: a write needing no flush goes straight to hctx->dispatch, a flush sequence's data through the requeue list and kblockd) or normal (360f264834e3, 615939a2ae73, 6.5: the normal submission path, plug and scheduler included)"),
    switch!(flag zone_write_plugging,
        "host-managed zoned disks: true (\"block: Introduce zone write plugging\", 6.10) holds each zone's writes in a plug, one in flight, and fails a write off the plug's write pointer before the device; false (6.1) lets the device refuse it; seed 000's zoned variant"),
    switch!(choice crypto_fallback, "in_submit_bio|above_block_layer",
        "where the blk-crypto fallback encrypts writes: in_submit_bio (up to 6.x: blk_crypto_bio_prep in __submit_bio cuts the bio after 256 pages and resubmits the rest at the tail of current->bio_list) or above_block_layer (bb8e2019ad61 \"blk-crypto: handle the fallback above the block layer\", 7.0: blk_crypto_submit_bio submits encrypted bios of at most 256 pages in order); seed 000's zoned variant"),
    switch!(choice iov_align, "off|max_io|max_io_v2",
        "direct I/O bio sizing: off (every released kernel), max_io (Ed Tsai's proposal \"block: limit the extract size to align queue limit\", seed 003: every bio but the last is cut to a multiple of max_sectors) or max_io_v2 (that patch as posted: each extraction limited to (max - bi_size) & (max - 1), so no bio passes max_sectors and a single-bio O_DIRECT I/O completes short)"),
    switch!(number nvme_max_segs, 1, "127|128|256",
        "nvme-pci's NVME_MAX_SEGS: max_segments is min(max_hw_sectors / 8 + 1, this) (nvme_max_drv_segments); 127 (6.1), 128 (6.12), 256 (7.x: one page of SGL descriptors)"),
    switch!(choice nvme_virt_boundary, "always|prp_only",
        "nvme-pci's virt boundary: always one controller page (up to 6.x nvme_set_queue_limits) or only on controllers without SGL support (7.x nvme_pci_get_virt_boundary; the preset device, like qemu's, supports SGLs)"),
    switch!(choice nvme_discard_granularity, "lba|npdg",
        "nvme discard_granularity: the logical block size (up to 6.x) or max(NPDG, NPDA) blocks (7.x nvme_config_discard; the preset device, like qemu's, reports 4 KiB)"),
    switch!(flag nvme_io_opt_nows_zero,
        "nvme_update_disk_info sets optimal_io_size to (1 + NOWS) blocks even when NOWS is 0 (up to 6.1: one logical block); 6.12+ only when NOWS is set"),
    switch!(number bfq_groups_asymmetric_above, 0, "0|1",
        "bfq_asymmetric_scenario: the scenario is asymmetric (sync queues idle for service guarantees) when more non-root cgroups than this have pending requests; 0 up to 6.1 (one busy group already counts), 1 from 6.2 (\"block, bfq: do not idle if only one group is activated\")"),
    switch!(flag bfq_stable_merge,
        "bfq merges the sync queue of a process into that of one started within bfq_burst_interval (180 ms) before it, with the same ioprio, once both are 600 ms old (bfq_do_or_sched_stable_merge, \"block, bfq: merge bursts of newly-created queues\", 5.13); before, they stay apart"),
    switch!(flag sched_dispatch_ahead,
        "__blk_mq_do_dispatch_sched asks the elevator for a request before getting its driver tag and stops at the first that finds none, which waits in hctx->dispatch and is issued first at the next run: with the driver full the elevator has handed out one request more (6.1; a guest's bfq log counts 5 dispatched with 4 in a virtio disk; not on sd's disks, whose dispatch budget runs out first). Off: taking stops when no driver tag is left (5.10 takes up to nr_requests from the elevator without checking tags, which the model does not do)"),
    switch!(flag bfq_tag_share,
        "bfq_limit_depth holds a queue that already has its weight's share of the scheduler tags (nr_requests · weight / the weights of the busy queues of its class and those above, rounded) to a shallow depth of 1 (bfqq_request_over_limit, \"bfq: Limit number of requests consumed by each cgroup\", 6.1 has it, 5.10 not); a weight-raised queue beside an unraised one leaves the latter 2 of 64 tags"),
    switch!(choice raid5_discard, "hide_unsafe|fail_unsafe",
        "md raid456 without safe discard (devices_handle_discard_safely, members discarding whole stripes): hide_unsafe (up to 6.x: discard_max_bytes 0) or fail_unsafe (7.x: discard_max_hw_bytes UINT_MAX sectors on every array, raid5_discard_limits fails each discard with -EOPNOTSUPP)"),
    switch!(choice null_blk_no_sched, "no_sched|none_by_default",
        "null_blk's no_sched parameter: no_sched (up to 6.x: BLK_MQ_F_NO_SCHED, no scheduler can be set) or none_by_default (7.x null_setup_tagset: BLK_MQ_F_NO_SCHED_BY_DEFAULT, none until one is written)"),
    switch!(choice wbt_reclaim, "kswapd|swap",
        "writeback throttling's reclaim writes: kswapd (up to 6.1: writes kswapd submits get their own wait queue and the max limit; a REQ_SWAP write is an ordinary one) or swap (6.12 on, blk-wbt.c's WBT_KSWAPD became WBT_SWAP: REQ_SWAP writes get the swap queue and the max limit, whoever submits them). The model has no kswapd task, so only REQ_SWAP bios (flags = [\"swap\"]) differ"),
    switch!(choice throtl_dispatch, "bps_or_iops|max_wait|bps_then_iops",
        "io.max (blk-throttle) wait of a group's first queued bio: bps_or_iops (6.1 tg_may_dispatch: the iops wait only when the bytes fit), max_wait (6.12: the longer of the bps and iops waits) or bps_then_iops (7.x, \"blk-throttle: Split the blkthrotl queue\" series, 6.16: a bps queue then an iops queue; bytes charged on leaving the bps queue, split remainders straight to the iops queue). Every version charges a split bio's bytes once and each split piece as an I/O (BIO_BPS_THROTTLED)"),
    switch!(choice throtl_iops_wait, "slice_end|one_io",
        "io.max: how long a bio over the iops limit waits (tg_within_iops_limit): slice_end (6.1: to the end of the slice) or one_io (6.12+: at least HZ/iops + 1 jiffies)"),
    switch!(choice throtl_trim, "whole_slices|keep_one_slice",
        "io.max: throtl_trim_slice after a dispatch takes off every whole elapsed slice (up to 6.x) or, from two slices on, all but one (7.x \"blk-throttle: fix lower bps rate by throtl_trim_slice()\")"),
    switch!(flag throtl_split_ios,
        "io.max: each split piece of a bio is one I/O against riops/wiops (true: 9f5ede3c01f9 \"block: throttle split bio in case of iops limit\", 5.18, and from 6.0 BIO_BPS_THROTTLED, which also spares the pieces' bytes) or a piece of a bio that passed goes through unthrottled (false: BIO_THROTTLED, up to 5.17); blktests throtl/002"),
    switch!(number throtl_min_limit, 1, "2|1",
        "io.max: the smallest value tg_set_limit accepts (2 up to 6.x: 'val > 1'; 1 in 7.x); smaller values are EINVAL"),
    switch!(choice crypt_max_request, "writes_bio_max_vecs|read_write_128k",
        "dm-crypt's cut in crypt_map (dm_accept_partial_bio): writes_bio_max_vecs (6.1: only writes above BIO_MAX_VECS pages, to 1 MiB; reads whole) or read_write_128k (\"dm-crypt: limit the size of encryption requests\", 6.12: get_max_request_sectors, reads and writes to 128 KiB, the max_read_size/max_write_size default)"),
    switch!(choice crypt_pages, "pages|compound",
        "dm-crypt's encrypted write buffer (crypt_alloc_buffer): pages (6.1: one mempool page per bvec, and crypt_io_hints sets max_segment_size to one page) or compound (\"dm crypt: allocate compound pages if possible\", 6.5: power-of-two blocks of up to 1024 pages, no segment size limit)"),
    switch!(flag nvme_iopolicy_queue_depth,
        "nvme multipath's queue-depth iopolicy exists (\"nvme-multipath: implement \"queue-depth\" iopolicy\", 6.11: the optimized path with the fewest active requests); 6.1 has numa and round-robin"),
    switch!(flag nvme_iopolicy_clears_path,
        "writing a new iopolicy to an nvme subsystem clears the heads' current paths (6.12 nvme_subsys_iopolicy_update: \"iopolicy changes clear the mpath by design\"), so round-robin starts from the first optimized path; 6.1 only stores the policy"),
];

pub fn switch(name: &str) -> Option<&'static SwitchDef> {
    SWITCHES.iter().find(|s| s.name == name)
}

impl Behaviour {
    /// The switches the md and dm limit code reads.
    pub fn stacking(&self) -> StackingBehaviour {
        StackingBehaviour {
            model: self.limits_model,
            def_max_sectors_cap: self.def_max_sectors_cap,
            raid0_chunk_sectors: self.raid0_chunk_sectors,
            raid10_discard: match self.raid10_discard {
                Raid10Discard::ChunkLimited => Raid10DiscardLimit::Chunk,
                Raid10Discard::WholeRange | Raid10Discard::WholeRangeV1 => Raid10DiscardLimit::Members,
            },
            raid10_chunk_sectors: self.raid10_chunk_sectors,
            raid5_max_hw: match self.raid5_max_hw {
                Raid5MaxHw::Unlimited => Raid5MaxHwSectors::Unlimited,
                Raid5MaxHw::Fixed => Raid5MaxHwSectors::Fixed,
                Raid5MaxHw::AtLeastIoOpt => Raid5MaxHwSectors::AtLeastIoOpt,
            },
            raid5_chunk_sectors: self.raid5_chunk_sectors,
            dm_stripe_chunk_sectors: self.dm_stripe_chunk_sectors,
            dm_stripe_discard_stripes: self.dm_stripe_discard_stripes,
            raid1_chunk_sectors: self.raid1_chunk_sectors,
            raid5_discard_always: self.raid5_discard == Raid5Discard::FailUnsafe,
        }
    }

    /// Every switch and its value, in registry order.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        SWITCHES.iter().map(|s| (s.name, (s.get)(self))).collect()
    }

    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let s = switch(name).ok_or_else(|| format!("unknown behaviour switch '{name}'"))?;
        (s.set)(self, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_round_trips_in_every_profile() {
        for p in profiles() {
            for s in SWITCHES {
                let mut b = p.behaviour.clone();
                let v = (s.get)(&b);
                (s.set)(&mut b, &v).unwrap();
                assert_eq!(b, p.behaviour, "{} in {}", s.name, p.name);
            }
        }
    }

    #[test]
    fn split_remainder_per_version() {
        assert_eq!(profile("6.1").unwrap().behaviour.split_remainder, SplitRemainder::Tail);
        assert_eq!(profile("6.12.117").unwrap().behaviour.split_remainder, SplitRemainder::Tail);
        assert_eq!(profile("7.2").unwrap().behaviour.split_remainder, SplitRemainder::Head);
    }

    #[test]
    fn stacking_switches_match_the_limit_code_per_version() {
        // The per-version StackingBehaviour of limits.rs is what the profiles give.
        assert_eq!(profile("5.8").unwrap().behaviour.stacking(), StackingBehaviour::v5_10());
        assert_eq!(profile("5.10").unwrap().behaviour.stacking(), StackingBehaviour::v5_10());
        assert_eq!(profile("6.1").unwrap().behaviour.stacking(), StackingBehaviour::v6_1());
        assert_eq!(profile("6.12").unwrap().behaviour.stacking(), StackingBehaviour::v6_12());
        assert_eq!(profile("7.2").unwrap().behaviour.stacking(), StackingBehaviour::v7_2());
    }

    #[test]
    fn raid10_discard_accepts_the_issue_spelling() {
        let mut b = profile("6.12").unwrap().behaviour;
        b.set("raid10_discard", "v1-5.10rc1").unwrap();
        assert_eq!(b.raid10_discard, Raid10Discard::WholeRangeV1);
        // Reported under its own name.
        assert_eq!(b.values().into_iter().find(|(n, _)| *n == "raid10_discard").unwrap().1, "whole_range_v1");
    }

    #[test]
    fn bad_values_name_the_choices() {
        let mut b = profile("6.1").unwrap().behaviour;
        assert_eq!(b.set("plug_add", "middle").unwrap_err(), "'middle' is not one of head|tail");
        assert_eq!(b.set("submit_bio_plug", "maybe").unwrap_err(), "'maybe' is not true or false");
        assert!(b.set("nonsense", "1").is_err());
    }
}
