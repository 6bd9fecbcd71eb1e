//! dm-crypt's table and rules (drivers/md/dm-crypt.c): the constructor,
//! the request-size cut of `crypt_map`, the pages of a write's encrypted
//! copy (`crypt_alloc_buffer`) and the queue-limit hints (`crypt_io_hints`).
//! The queues a bio goes through (kcryptd, the write thread) are
//! [`super::crypt_io`].
//!
//! Table arguments, as `dmsetup table` prints them (with the key shown as
//! zeros unless `--showkeys`):
//! `<cipher> <key> <iv_offset> <device> <offset> [<#opt_params> <opt_params>...]`.
//! The cipher is `cipher-chainmode-ivmode[:ivopts]` (`aes-xts-plain64`) or
//! a crypto API name (`capi:xts(aes)-plain64`); the key hex digits, `-`
//! for none, or `:<size>:<user|logon|encrypted|trusted>:<description>` for
//! a keyring key. A dm sector `s` of the target maps to `offset + (s −
//! begin)` on the device, as for dm-linear.

use super::{parse_sectors, ArgError};
use crate::bio::{Bvec, BIO_MAX_VECS, PAGE_SIZE, SECTOR_SHIFT};

/// The optional parameters (`crypt_ctr_optional`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CryptFlags {
    /// `allow_discards`: `num_discard_bios = 1`, discards pass through.
    pub allow_discards: bool,
    /// `same_cpu_crypt`: kcryptd is a per-CPU workqueue with one active work.
    pub same_cpu_crypt: bool,
    /// `submit_from_crypt_cpus` (`DM_CRYPT_NO_OFFLOAD`): an encrypted write
    /// is submitted by the kcryptd worker, not the write thread.
    pub submit_from_crypt_cpus: bool,
    /// `no_read_workqueue`: decryption runs in the read's completion.
    pub no_read_workqueue: bool,
    /// `no_write_workqueue`: encryption and submission run in the submitter.
    pub no_write_workqueue: bool,
    /// `iv_large_sectors`: IVs count `sector_size` units (no effect on I/O).
    pub iv_large_sectors: bool,
    /// `high_priority` (6.10+: `WQ_HIGHPRI` workqueues; no effect here).
    pub high_priority: bool,
}

/// `struct crypt_config`, what the model needs of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CryptC {
    pub cipher: String,
    /// `key_size` in bytes (the key itself is never kept).
    pub key_size: u32,
    pub iv_offset: u64,
    /// The device as named in the table.
    pub dev: String,
    /// `cc->start`: the device sector the target starts at.
    pub start: u64,
    /// `cc->sector_size` in bytes: 512 unless `sector_size:N`.
    pub sector_size: u32,
    pub flags: CryptFlags,
    /// The optional parameters as written, for printing the table back.
    pub opt_params: Vec<String>,
}

/// `crypt_ctr` for a target of `len` sectors.
pub fn crypt_ctr(len: u64, argv: &[&str]) -> Result<CryptC, ArgError> {
    let [cipher, key, iv_offset, dev, offset, opt @ ..] = argv else {
        return Err(ArgError::new("arguments", format!("crypt takes <cipher> <key> <iv_offset> <device> <offset> [<#opt_params> <opt_params>...], got {} argument(s)", argv.len())));
    };
    let key_size = get_key_size(key).map_err(|m| ArgError::new("key", m))?;
    let (flags, sector_size, opt_params) = if opt.is_empty() { (CryptFlags::default(), 512, Vec::new()) } else { crypt_ctr_optional(len, opt)? };
    crypt_ctr_cipher(cipher, key_size).map_err(|m| ArgError::new("cipher", m))?;
    // "Invalid iv_offset sector": a number, aligned to the crypt sector.
    let iv_offset = parse_sectors(iv_offset).map_err(|m| ArgError::new("iv_offset", m))?;
    if iv_offset % (sector_size >> SECTOR_SHIFT) as u64 != 0 {
        return Err(ArgError::new("iv_offset", format!("{iv_offset} is not a multiple of sector_size ({sector_size} bytes)")));
    }
    let start = parse_sectors(offset).map_err(|m| ArgError::new("offset", m))?;
    Ok(CryptC { cipher: cipher.to_string(), key_size, iv_offset, dev: dev.to_string(), start, sector_size, flags, opt_params })
}

/// `get_key_size`: hex digits (two per byte), `-` for an empty key, or a
/// keyring reference `:<size>:<type>:<description>`.
fn get_key_size(key: &str) -> Result<u32, String> {
    if key == "-" {
        return Ok(0);
    }
    if let Some(rest) = key.strip_prefix(':') {
        let mut parts = rest.splitn(3, ':');
        let size = parts.next().and_then(|s| s.parse::<u32>().ok()).ok_or_else(|| format!("'{key}': a keyring key is :<size>:<type>:<description>"))?;
        let ty = parts.next().unwrap_or("");
        if !matches!(ty, "user" | "logon" | "encrypted" | "trusted") || parts.next().is_none_or(str::is_empty) {
            return Err(format!("'{key}': a keyring key is :<size>:<user|logon|encrypted|trusted>:<description>"));
        }
        return Ok(size);
    }
    if key.len() % 2 != 0 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the key must be an even number of hex digits, '-' or :<size>:<type>:<description>".into());
    }
    Ok((key.len() / 2) as u32)
}

/// `crypt_ctr_cipher`, as far as the table's text decides: the old
/// `cipher-chainmode-ivmode[:ivopts]` form needs an IV mode for every chain
/// mode but ecb, and an AES key must be 16, 24 or 32 bytes (twice that for
/// xts, which takes two keys).
fn crypt_ctr_cipher(spec: &str, key_size: u32) -> Result<(), String> {
    if let Some(capi) = spec.strip_prefix("capi:") {
        return if capi.is_empty() { Err("empty crypto API cipher name".into()) } else { Ok(()) };
    }
    let mut it = spec.splitn(3, '-');
    let cipher = it.next().unwrap_or("");
    let chain = it.next().unwrap_or("cbc");
    let ivmode = it.next();
    if cipher.is_empty() || chain.is_empty() {
        return Err(format!("'{spec}' is not cipher-chainmode-ivmode (e.g. aes-xts-plain64)"));
    }
    match (chain, ivmode) {
        ("ecb", Some(_)) => return Err(format!("'{spec}': ecb takes no IV mode")),
        ("ecb", None) => {}
        (_, None) => return Err(format!("'{spec}': IV mechanism required (e.g. {cipher}-{chain}-plain64)")),
        (_, Some(_)) => {}
    }
    let parts = if chain == "xts" { 2 } else { 1 };
    if cipher == "aes" && (key_size % parts != 0 || ![16, 24, 32].contains(&(key_size / parts))) {
        return Err(format!("a {key_size}-byte key does not fit {spec} (aes takes 16, 24 or 32 bytes{})", if parts == 2 { ", xts two of them" } else { "" }));
    }
    Ok(())
}

/// `crypt_ctr_optional`: `<#opt_params> <opt_params>...`.
fn crypt_ctr_optional(len: u64, opt: &[&str]) -> Result<(CryptFlags, u32, Vec<String>), ArgError> {
    let bad = |m: String| ArgError::new("opt_params", m);
    let n: usize = opt[0].parse().map_err(|_| bad(format!("'{}' is not a count of optional parameters", opt[0])))?;
    // 6.12's limit is 9 (6.1: 8); more than there are is an error in both.
    if n > 9 || n != opt.len() - 1 {
        return Err(bad(format!("{n} optional parameter(s) announced, {} given", opt.len() - 1)));
    }
    let mut f = CryptFlags::default();
    let mut sector_size = 512u32;
    for &o in &opt[1..] {
        match o.to_ascii_lowercase().as_str() {
            "allow_discards" => f.allow_discards = true,
            "same_cpu_crypt" => f.same_cpu_crypt = true,
            "high_priority" => f.high_priority = true,
            "submit_from_crypt_cpus" => f.submit_from_crypt_cpus = true,
            "no_read_workqueue" => f.no_read_workqueue = true,
            "no_write_workqueue" => f.no_write_workqueue = true,
            "iv_large_sectors" => f.iv_large_sectors = true,
            s if s.starts_with("sector_size:") => sector_size = parse_sector_size(len, &s["sector_size:".len()..]).map_err(bad)?,
            s if s.starts_with("integrity:") => return Err(bad(format!("'{o}': integrity (dm-integrity under dm-crypt) is not modelled"))),
            _ => return Err(bad(format!("'{o}' is not a dm-crypt feature (allow_discards, same_cpu_crypt, submit_from_crypt_cpus, no_read_workqueue, no_write_workqueue, sector_size:N, iv_large_sectors, high_priority)"))),
        }
    }
    Ok((f, sector_size, opt[1..].iter().map(|s| s.to_string()).collect()))
}

/// `sector_size:N`: a power of two from 512 to 4096 dividing the target.
fn parse_sector_size(len: u64, v: &str) -> Result<u32, String> {
    let n: u32 = v.parse().map_err(|_| format!("sector_size:{v} is not a number"))?;
    if !(512..=4096).contains(&n) || !n.is_power_of_two() {
        return Err(format!("sector_size:{n}: invalid feature value (a power of two from 512 to 4096)"));
    }
    if len % (n >> SECTOR_SHIFT) as u64 != 0 {
        return Err(format!("device size {len} is not a multiple of sector_size {n}"));
    }
    Ok(n)
}

/// How `crypt_map` cuts a read or write (`dm_accept_partial_bio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CryptMaxRequest {
    /// Up to 6.9: only a write larger than `BIO_MAX_VECS` pages, to that.
    WritesBioMaxVecs,
    /// "dm-crypt: limit the size of encryption requests" (6.10):
    /// `get_max_request_sectors`, 128 KiB for reads and for writes
    /// (`max_read_size`/`max_write_size` module parameters, default 0).
    ReadWrite128k,
}

/// `DM_CRYPT_DEFAULT_MAX_READ_SIZE` and `..._WRITE_SIZE`.
const DM_CRYPT_DEFAULT_MAX_SIZE: u32 = 131_072;

impl CryptC {
    /// `get_max_request_sectors` / 6.1's cut in `crypt_map`: how many
    /// sectors of a bio of `sectors` the target takes at once (`None`: all);
    /// `lower_lbs` is the device's logical block size.
    pub fn max_request_sectors(&self, write: bool, sectors: u32, lower_lbs: u32, rule: CryptMaxRequest) -> Option<u32> {
        let bio_max = (BIO_MAX_VECS as u32 * PAGE_SIZE as u32) >> SECTOR_SHIFT;
        let max = match rule {
            CryptMaxRequest::WritesBioMaxVecs => (write).then_some(bio_max)?,
            CryptMaxRequest::ReadWrite128k => {
                let align = lower_lbs.max(self.sector_size);
                let val = DM_CRYPT_DEFAULT_MAX_SIZE / align * align;
                (val.max(align)) >> SECTOR_SHIFT
            }
        };
        (sectors > max).then_some(max)
    }

    /// `crypt_map`'s alignment checks: a bio must start and end on the
    /// crypt sector (`DM_MAPIO_KILL` otherwise).
    pub fn aligned(&self, target_offset: u64, sectors: u32) -> bool {
        let s = (self.sector_size >> SECTOR_SHIFT) as u64;
        target_offset % s == 0 && sectors as u64 % s == 0
    }

    /// The optional parameters as the table gives them (`crypt_status`
    /// prints the same words).
    pub fn table_args(&self) -> String {
        let mut s = format!("{} <key> {} {} {}", self.cipher, self.iv_offset, self.dev, self.start);
        if !self.opt_params.is_empty() {
            s += &format!(" {} {}", self.opt_params.len(), self.opt_params.join(" "));
        }
        s
    }
}

/// How `crypt_alloc_buffer` takes the pages of a write's encrypted copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CryptPages {
    /// Up to 6.4: one page from the mempool per bvec.
    Pages,
    /// "dm crypt: allocate compound pages if possible" (6.5): blocks of
    /// `2^order` pages, the order the largest that fits what is left
    /// (never growing), each block one bvec.
    Compound,
}

/// `MAX_ORDER` / `MAX_PAGE_ORDER` on x86-64: blocks of up to 1024 pages.
const MAX_PAGE_ORDER: u32 = 10;

/// The bvecs of the encrypted copy of `size` bytes: each page (6.1) or
/// block (6.5+) at its own physical address from `next` on, naturally
/// aligned and never adjoining the one before (as the allocator's pages
/// are in general), so each is its own segment on the disk.
pub fn crypt_alloc_buffer(size: u32, rule: CryptPages, next: &mut u64) -> Vec<Bvec> {
    let mut out = Vec::new();
    let mut left = size;
    let mut order = MAX_PAGE_ORDER;
    while left > 0 {
        let pages = (left as u64).div_ceil(PAGE_SIZE);
        order = match rule {
            CryptPages::Pages => 0,
            CryptPages::Compound => order.min(63 - pages.leading_zeros()),
        };
        let block = PAGE_SIZE << order;
        let phys = (*next).div_ceil(block) * block;
        let len = (block as u32).min(left);
        out.push(Bvec { phys, len });
        // The next block starts a page past this one's end: never contiguous.
        *next = phys + block + PAGE_SIZE;
        left -= len;
    }
    out
}

/// What `crypt_io_hints` does to the stacked limits: block sizes and
/// `io_min` at least the crypt sector, DMA alignment to the logical block
/// size; up to 6.4 also `max_segment_size` one page.
pub fn crypt_io_hints(l: &mut crate::limits::QueueLimits, sector_size: u32, page_segments: bool) {
    if page_segments {
        l.max_segment_size = PAGE_SIZE as u32;
    }
    l.logical_block_size = l.logical_block_size.max(sector_size);
    l.physical_block_size = l.physical_block_size.max(sector_size);
    l.io_min = l.io_min.max(sector_size);
    l.dma_alignment = l.logical_block_size - 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY64: &str = "0000000000000000000000000000000000000000000000000000000000000000\
                         0000000000000000000000000000000000000000000000000000000000000000";

    fn ctr(args: &str) -> Result<CryptC, ArgError> {
        let argv: Vec<&str> = args.split_whitespace().collect();
        crypt_ctr(2_097_152, &argv)
    }

    #[test]
    fn ctr_reads_the_dmsetup_line() {
        let c = ctr(&format!("aes-xts-plain64 {KEY64} 0 /dev/vdb 4096 3 allow_discards no_read_workqueue sector_size:4096")).unwrap();
        // 128 hex digits = 64 bytes (aes-256 twice, for xts).
        assert_eq!((c.key_size, c.iv_offset, c.dev.as_str(), c.start, c.sector_size), (64, 0, "/dev/vdb", 4096, 4096));
        assert!(c.flags.allow_discards && c.flags.no_read_workqueue && !c.flags.no_write_workqueue);
        assert_eq!(c.table_args(), "aes-xts-plain64 <key> 0 /dev/vdb 4096 3 allow_discards no_read_workqueue sector_size:4096");
        // A keyring key and the crypto API form.
        assert_eq!(ctr("capi:xts(aes)-plain64 :64:logon:cryptsetup:abc 0 8:16 0").unwrap().key_size, 64);
        assert_eq!(ctr("aes-ecb - 0 /dev/vdb 0").unwrap_err().field, "cipher");
    }

    #[test]
    fn ctr_errors_name_the_field() {
        assert_eq!(ctr("aes-xts-plain64 abc 0 /dev/vdb 0").unwrap_err().field, "key");
        // 16 bytes cannot be two AES keys.
        assert_eq!(ctr("aes-xts-plain64 00112233445566778899aabbccddeeff 0 /dev/vdb 0").unwrap_err().field, "cipher");
        assert_eq!(ctr(&format!("aes-xts {KEY64} 0 /dev/vdb 0")).unwrap_err().field, "cipher");
        assert_eq!(ctr(&format!("aes-xts-plain64 {KEY64} 0 /dev/vdb")).unwrap_err().field, "arguments");
        assert_eq!(ctr(&format!("aes-xts-plain64 {KEY64} 0 /dev/vdb 0 2 allow_discards")).unwrap_err().field, "opt_params");
        assert_eq!(ctr(&format!("aes-xts-plain64 {KEY64} 0 /dev/vdb 0 1 sector_size:1000")).unwrap_err().field, "opt_params");
        assert_eq!(ctr(&format!("aes-xts-plain64 {KEY64} 0 /dev/vdb 0 1 fast")).unwrap_err().field, "opt_params");
        // iv_offset 1 is not on a 4096-byte crypt sector (8 sectors).
        assert_eq!(ctr(&format!("aes-xts-plain64 {KEY64} 1 /dev/vdb 0 1 sector_size:4096")).unwrap_err().field, "iv_offset");
    }

    #[test]
    fn max_request_per_version() {
        let c = ctr(&format!("aes-xts-plain64 {KEY64} 0 /dev/vdb 0")).unwrap();
        let old = CryptMaxRequest::WritesBioMaxVecs;
        // 6.1: a 4 MiB write (8192 sectors) is cut to BIO_MAX_VECS pages = 256 × 4096 / 512 = 2048;
        // a read of any size and a 1 MiB write are not.
        assert_eq!(c.max_request_sectors(true, 8192, 512, old), Some(2048));
        assert_eq!(c.max_request_sectors(true, 2048, 512, old), None);
        assert_eq!(c.max_request_sectors(false, 8192, 512, old), None);
        // 6.12: 131072 bytes = 256 sectors for both directions.
        let new = CryptMaxRequest::ReadWrite128k;
        assert_eq!(c.max_request_sectors(false, 8192, 512, new), Some(256));
        assert_eq!(c.max_request_sectors(true, 257, 512, new), Some(256));
        assert_eq!(c.max_request_sectors(true, 256, 512, new), None);
    }

    #[test]
    fn alloc_buffer_pages_and_blocks() {
        // 6.1: 12 KiB + 512 is four pages, the last holding 512 bytes, none adjoining.
        let mut next = 0;
        let b = crypt_alloc_buffer(12_800, CryptPages::Pages, &mut next);
        assert_eq!(b.iter().map(|v| v.len).collect::<Vec<_>>(), [4096, 4096, 4096, 512]);
        assert!(b.windows(2).all(|w| w[0].end() < w[1].phys));
        // 6.5+: 96 KiB = 24 pages → a 16-page block (order 4 = __fls(24)), then 8 pages (order 3).
        let b = crypt_alloc_buffer(98_304, CryptPages::Compound, &mut next);
        assert_eq!(b.iter().map(|v| v.len).collect::<Vec<_>>(), [65_536, 32_768]);
        assert_eq!((b[0].phys % 65_536, b[1].phys % 32_768), (0, 0));
        // 1 MiB = 256 pages: one order-8 block.
        assert_eq!(crypt_alloc_buffer(1 << 20, CryptPages::Compound, &mut next).len(), 1);
    }

    #[test]
    fn io_hints_raise_block_sizes() {
        let mut l = crate::limits::QueueLimits::stacking();
        (l.logical_block_size, l.physical_block_size, l.io_min) = (512, 512, 512);
        crypt_io_hints(&mut l, 4096, true);
        assert_eq!((l.logical_block_size, l.physical_block_size, l.io_min, l.dma_alignment, l.max_segment_size), (4096, 4096, 4096, 4095, 4096));
    }
}
