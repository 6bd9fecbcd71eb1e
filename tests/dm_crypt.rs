//! dm-crypt end to end: the request cut per version, the CPU cost of
//! encryption and decryption in the run's time, and scenario errors.

mod common;

use blkstack::scenario;
use common::{issued, run_events};

fn crypt_scenario(kernel: &str, extra: &str, workload: &str) -> String {
    let key = "0123456789abcdef".repeat(8);
    format!(
        "kernel = \"{kernel}\"\n[disks.vda]\nkind = \"virtio\"\nsize = \"256MiB\"\n[disks.vda.queue]\nscheduler = \"none\"\n\
         [dm.c]\ntable = \"0 262144 crypt aes-xts-plain64 {key} 0 /dev/vda 4096\"\n{extra}\n[workload]\n{workload}\n"
    )
}

const ONE_WRITE: &str = "type = \"bios\"\ndevice = \"c\"\n[[workload.bio]]\nop = \"write\"\nsector = 0\nsize = \"64KiB\"";
const ONE_READ: &str = "type = \"bios\"\ndevice = \"c\"\n[[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"64KiB\"";

fn run_time(text: &str) -> u64 {
    let sc = scenario::load("crypt.toml", text, None, &[]).unwrap();
    let mut e = sc.build();
    e.run().sim_time_ns
}

#[test]
fn encryption_and_decryption_cost_shows_in_the_run_time() {
    // One 64 KiB write (or read), nothing else: the run with a cost ends later by exactly the
    // encryption (decryption) of 65536 bytes: at 100 MiB/s 65536 / 104857600 s = 625 µs, at
    // 50 MiB/s 1250 µs. The disk's own service time is the same in both runs.
    let free = run_time(&crypt_scenario("6.12", "crypt_encrypt_mib_s = 0\ncrypt_decrypt_mib_s = 0", ONE_WRITE));
    let paid = run_time(&crypt_scenario("6.12", "crypt_encrypt_mib_s = 100\ncrypt_decrypt_mib_s = 0", ONE_WRITE));
    assert_eq!(paid - free, 625_000);
    let free = run_time(&crypt_scenario("6.12", "crypt_encrypt_mib_s = 0\ncrypt_decrypt_mib_s = 0", ONE_READ));
    let paid = run_time(&crypt_scenario("6.12", "crypt_encrypt_mib_s = 0\ncrypt_decrypt_mib_s = 50", ONE_READ));
    assert_eq!(paid - free, 1_250_000);
}

#[test]
fn requests_cut_per_version() {
    // A 1 MiB direct read at 0: 6.1 takes it whole (one 2048-sector request at 4096, the table's
    // offset); 6.12 cuts it to 128 KiB (256 sectors): 8 requests from 4096 on.
    let dd = "type = \"dd\"\nif = \"/dev/c\"\nof = \"/dev/null\"\nbs = \"1M\"\ncount = 1\niflag = \"direct\"";
    let (e, ev) = run_events(&crypt_scenario("6.1", "", dd), &[]);
    assert_eq!(issued(&e, &ev, "vda"), vec![(4096, 2048)]);
    let (e, ev) = run_events(&crypt_scenario("6.12", "", dd), &[]);
    assert_eq!(issued(&e, &ev, "vda"), (0..8).map(|i| (4096 + 256 * i, 256)).collect::<Vec<_>>());
}

#[test]
fn crypt_keys_need_a_crypt_table() {
    let text = crypt_scenario("6.12", "crypt_cpus = 0", ONE_WRITE);
    let e = scenario::load("crypt.toml", &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains("dm.c.crypt_cpus") && e.contains("1 to 4096"), "{e}");
    let linear = "kernel = \"6.12\"\n[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n[dm.l]\ntable = \"0 1000 linear /dev/vda 0\"\ncrypt_cpus = 2\n";
    let e = scenario::load("l.toml", linear, None, &[]).unwrap_err().to_string();
    assert!(e.contains("only a table with a crypt target"), "{e}");
}
