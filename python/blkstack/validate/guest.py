"""The validation guest: a Debian kernel and an initramfs built from
Debian packages, booted under qemu (TCG) with the scenario's disks.

The initramfs is generic per kernel and cached: busybox, mdadm, dmsetup,
the ``blkio`` helper (compiled here from ``blkio.c``), the shared
libraries they need, and the kernel modules of the disk drivers, md, dm and
9p, decompressed, with their load order worked out from each module's
``depends=`` (the same information ``depends -b`` would write to
modules.dep). ``/init`` mounts the 9p share ``out`` and runs the job
script the host left there (``job.sh``); what the job writes into the
share (trace, sysfs snapshot, device map, log) comes back to the host.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import shutil
import signal
import stat
import subprocess
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from blkstack.validate.debian import Apt, DebianError, kernel_apt, kernel_release, module_dir
from blkstack.validate.slowdisk import SlowDiskError, serving

# Bump when the guest's layout or /init changes: old cached guests are rebuilt.
GUEST_FORMAT = 5

# Modules the guest may load, by name; each is loaded with its dependencies.
MODULES = [
    "virtio_pci", "virtio_blk", "scsi_mod", "sd_mod", "virtio_scsi", "libata", "libahci", "ahci",
    "nvme_core", "nvme", "dm_mod", "md_mod", "raid0", "raid1", "raid10", "raid456",
    "9pnet", "9pnet_virtio", "netfs", "9p", "kyber_iosched", "bfq",
]
# dm-crypt, and the crypto API modules its aes-xts tables need first (the
# guest cannot autoload them): the xts template over ecb, and AES-NI.
DM_CRYPT_MODULES = ["ecb", "xts", "crypto_simd", "cryptd", "aesni_intel", "dm_crypt"]
MODULES += DM_CRYPT_MODULES
# Module names of the crypto aliases that softdeps name.
SOFTDEP_ALIASES = {"crc32c": "crc32c_generic", "crc32": "crc32_generic"}
# Loaded by /init before the job (the share needs them).
BOOT_MODULES = ["virtio_pci", "9pnet_virtio", "9p"]

PACKAGES = ["busybox-static", "mdadm", "dmsetup"]
LIBDIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")
# Files taken from the packages: (path in the unpacked tree, path in the guest).
BINARIES = [
    ("bin/busybox", "bin/busybox"),
    ("sbin/mdadm", "sbin/mdadm"),
    ("sbin/dmsetup", "sbin/dmsetup"),
]

INIT = r"""#!/bin/busybox sh
# blkstack validation guest: mount the share, run its job, power off.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /run /tmp /out
# load MOD: insmod MOD after its dependencies (lines of /lib/modules/deps: "mod dep dep...").
load() {
    for m in $(grep "^$1 " /lib/modules/deps | cut -d' ' -f2-) $1; do
        grep -q "^$m " /proc/modules && continue
        [ -d /sys/module/$m ] && continue
        insmod /lib/modules/$m.ko 2>/dev/null || { [ -d /sys/module/$m ] || echo "blkstack-guest: insmod $m failed"; }
    done
}
for m in @BOOT_MODULES@; do load $m; done
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /out; then
    echo "blkstack-guest: up $(uname -r)"
    if [ -f /out/job.sh ]; then
        . /out/job.sh > /out/job.log 2>&1
        echo "$?" > /out/job.status
    fi
    sync
    umount /out
else
    echo "blkstack-guest: cannot mount the 9p share"
fi
echo "blkstack-guest: done"
poweroff -f
"""

Progress = Callable[[str], None]


class GuestError(Exception):
    """The guest could not be built or run (one line)."""


# ---------------------------------------------------------------------------
# cpio (newc), as the kernel's initramfs unpacker reads it


class Cpio:
    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1
        self.dirs: Dict[str, None] = {}

    def _entry(self, name: str, mode: int, data: bytes = b"") -> None:
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        self.ino += 1
        self.buf.write(hdr.encode() + nb)
        self.buf.write(b"\0" * ((4 - (110 + len(nb)) % 4) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * ((4 - len(data) % 4) % 4))

    def dir(self, name: str) -> None:
        name = name.strip("/")
        if not name or name in self.dirs:
            return
        self.dir(os.path.dirname(name))
        self.dirs[name] = None
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        name = name.strip("/")
        self.dir(os.path.dirname(name))
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        name = name.strip("/")
        self.dir(os.path.dirname(name))
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def bytes(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        data = self.buf.getvalue()
        return data + b"\0" * ((512 - len(data) % 512) % 512)


# ---------------------------------------------------------------------------
# Kernel modules


def _module_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read()
    if path.endswith(".xz"):
        data = lzma.decompress(data)
    elif path.endswith(".zst"):
        raise GuestError(f"{path}: zstd-compressed modules are not supported")
    return data


def _modinfo(data: bytes, key: str) -> Optional[str]:
    tag = b"\0" + key.encode() + b"="
    i = data.find(tag)
    if i < 0:
        return None
    j = data.find(b"\0", i + len(tag))
    return data[i + len(tag):j].decode(errors="replace")


def module_index(moddir: str) -> Tuple[Dict[str, str], set]:
    """{module name: file} for every module file, and the built-in names."""
    files: Dict[str, str] = {}
    for root, _dirs, names in os.walk(os.path.join(moddir, "kernel")):
        for n in names:
            base = n.split(".ko")[0] if ".ko" in n else None
            if base:
                files[base.replace("-", "_")] = os.path.join(root, n)
    builtin = set()
    path = os.path.join(moddir, "modules.builtin")
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                builtin.add(os.path.basename(line.strip()).split(".ko")[0].replace("-", "_"))
    return files, builtin


def module_closure(names: Sequence[str], files: Dict[str, str], builtin: set) -> Tuple[List[str], Dict[str, List[str]], Dict[str, bytes]]:
    """Modules to ship (dependencies first), each one's ordered dependency
    list, and their decompressed contents."""
    data: Dict[str, bytes] = {}
    deps: Dict[str, List[str]] = {}
    order: List[str] = []

    def visit(name: str, stack: Tuple[str, ...]) -> None:
        if name in deps or name in builtin:
            return
        if name in stack:
            raise GuestError(f"module dependency loop: {' -> '.join(stack + (name,))}")
        if name not in files:
            raise GuestError(f"kernel module {name} is neither built in nor in the package")
        blob = _module_bytes(files[name])
        direct = [d.replace("-", "_") for d in (_modinfo(blob, "depends") or "").split(",") if d]
        # "softdep=pre: crc32c": modules loaded first by modprobe (libcrc32c
        # asks the crypto API for crc32c, which the guest cannot autoload).
        soft = _modinfo(blob, "softdep") or ""
        if soft.startswith("pre:"):
            for alias in soft[4:].split("post:")[0].split():
                mod = SOFTDEP_ALIASES.get(alias, alias).replace("-", "_")
                if mod in files and mod not in builtin and mod not in direct:
                    direct.insert(0, mod)
        for d in direct:
            visit(d, stack + (name,))
        full: List[str] = []
        for d in direct:
            for x in deps.get(d, []) + [d]:
                if x not in full and x not in builtin:
                    full.append(x)
        deps[name] = full
        data[name] = blob
        order.append(name)

    for n in names:
        visit(n, ())
    return order, deps, data


# ---------------------------------------------------------------------------
# Building


def _compile_blkio(out: str) -> None:
    src = os.path.join(os.path.dirname(__file__), "blkio.c")
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise GuestError(f"{cc} not found: the guest's I/O helper is compiled on the host (apt-get install gcc libc6-dev)")
    proc = subprocess.run([cc, "-static", "-O2", "-o", out, src], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        first = next((l for l in proc.stderr.splitlines() if "error" in l), proc.stderr.strip().splitlines()[-1:] or ["failed"])
        raise GuestError(f"compiling blkio.c with '{cc} -static' failed: {first} (is libc6-dev installed?)")


def _elf_needed(data: bytes) -> List[str]:
    """DT_NEEDED names of a 64-bit little-endian ELF file."""
    import struct
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return []
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    out = []
    for s in secs:
        if s[1] == 6:  # SHT_DYNAMIC
            strtab = secs[s[6]]
            for off in range(s[4], s[4] + s[5], 16):
                tag, val = struct.unpack_from("<qQ", data, off)
                if tag == 0:
                    break
                if tag == 1:  # DT_NEEDED
                    start = strtab[4] + val
                    out.append(data[start:data.index(b"\0", start)].decode())
    return out


def _unpacked(tree: str, path: str) -> Optional[str]:
    """*path* in an unpacked tree, or under usr/ (packages built for a
    merged /usr, Debian 13 and later, ship only that)."""
    for p in (os.path.join(tree, path), os.path.join(tree, "usr", path)):
        if os.path.exists(p):
            return p
    return None


def _vmlinuz(ktree: str, moddir: str, package: str) -> str:
    """The kernel image: /boot/vmlinuz-RELEASE up to 6.x, beside the
    modules in 7.x's linux-binary package."""
    boot_dir = os.path.join(ktree, "boot")
    names = sorted(f for f in os.listdir(boot_dir) if f.startswith("vmlinuz")) if os.path.isdir(boot_dir) else []
    if names:
        return os.path.join(boot_dir, names[0])
    if os.path.exists(os.path.join(moddir, "vmlinuz")):
        return os.path.join(moddir, "vmlinuz")
    raise GuestError(f"{package}: no vmlinuz in /boot or the modules directory")


def kernel_append(kernel: str) -> str:
    """Kernel command-line additions per kernel choice. Debian's 7.x
    kernels preempt lazily (CONFIG_PREEMPT_LAZY): a woken kblockd worker
    waits for the next tick or for the submitter to sleep, so whether a
    request waits in the scheduler (and merges) depends on how long the
    guest takes to submit; ``preempt=full`` (PREEMPT_DYNAMIC) lets it run
    at once, as 6.1's and 6.12's do (docs/validation.md, difference G).
    5.10 under TCG fails its IO-APIC timer check and panics unless told to
    skip it (``no_timer_check``)."""
    return {"5.10": "no_timer_check", "7.2": "preempt=full"}.get(kernel, "")


def _copy_libraries(needed: List[str], libdirs: Sequence[str], put: Callable[[str, bytes], None]) -> None:
    """Hand *put* each shared library *needed* names, and the ones those
    need, from the first of *libdirs* holding it."""
    seen = set()
    needed = list(needed)
    while needed:
        name = needed.pop()
        if name in seen:
            continue
        seen.add(name)
        for d in libdirs:
            p = os.path.join(d, name)
            if os.path.exists(p):
                with open(os.path.realpath(p), "rb") as fh:
                    data = fh.read()
                put(name, data)
                needed += _elf_needed(data)
                break
        else:
            raise GuestError(f"shared library {name} is in none of the downloaded packages")


def _remembered(apt: Apt, name: str, fmt: int, resolve: Callable[[], Dict[str, object]]) -> Dict:
    """What the package lists resolve to (*resolve*), remembered in
    ``resolved-NAME.json`` until the lists or the format change (asking
    apt-cache takes seconds)."""
    path = os.path.join(apt.root, f"resolved-{name}.json")
    lists_id = f"{os.path.getmtime(apt.lists_stamp)}:{fmt}"
    try:
        with open(path) as fh:
            resolved = json.load(fh)
        if resolved.get("lists") == lists_id:
            return resolved
    except (OSError, ValueError):
        pass
    resolved = dict(resolve(), lists=lists_id)
    with open(path, "w") as fh:
        json.dump(resolved, fh)
    return resolved


def guest_dir(cache: str, kernel: str) -> str:
    return os.path.join(cache, "guests", kernel)


class Guest:
    """A built guest: kernel image, initramfs and what went into them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.kernel = os.path.join(path, "vmlinuz")
        self.initrd = os.path.join(path, "initrd.cpio")
        with open(os.path.join(path, "release")) as fh:
            self.release = fh.read().strip()
        with open(os.path.join(path, "package")) as fh:
            self.package = fh.read().strip()


def build_guest(cache: str, kernel: str, progress: Progress, rebuild: bool = False) -> Guest:
    """Build (or reuse) the guest for a kernel choice (``5.10``, ``6.1``,
    ``6.12``, ``7.2``)."""
    apt = kernel_apt(cache, kernel, progress)
    apt.update()

    def resolve() -> Dict[str, object]:
        image = apt.kernel_package(kernel)
        parts = apt.kernel_parts(image)
        libs = apt.closure(PACKAGES + ["libc6"])
        versions = [f"{p}={apt.show(p).get('Version')}" for p in [image["Package"]] + parts + libs]
        return {"image": {"Package": image["Package"], "Version": image["Version"]}, "parts": parts, "libs": libs,
                "versions": versions}

    resolved = _remembered(apt, kernel, GUEST_FORMAT, resolve)
    image, libs, versions = resolved["image"], resolved["libs"], resolved["versions"]
    with open(os.path.join(os.path.dirname(__file__), "blkio.c"), "rb") as fh:
        helper = fh.read()
    key = hashlib.sha256(("\n".join(versions) + f"\n{GUEST_FORMAT}\n" + INIT).encode() + helper).hexdigest()[:16]
    out = guest_dir(cache, kernel)
    stamp = os.path.join(out, "key")
    if not rebuild and os.path.exists(stamp) and open(stamp).read().strip() == key:
        return Guest(out)

    progress(f"building the {kernel} guest ({image['Package']} {image['Version']})")
    root = os.path.join(cache, "unpacked")
    ktree = apt.unpack(image["Package"], os.path.join(root, image["Package"] + "_" + image["Version"]))
    for part in resolved.get("parts", []):
        apt.unpack(part, ktree)
    utree = os.path.join(root, "userland-" + key)
    for p in libs:
        apt.unpack(p, utree)
    release = kernel_release(ktree)
    moddir = module_dir(ktree, release)

    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    cpio = Cpio()
    for d in ("bin", "sbin", "dev", "proc", "sys", "run", "tmp", "out", "etc", "lib/modules"):
        cpio.dir(d)
    cpio.file("init", INIT.replace("@BOOT_MODULES@", " ".join(BOOT_MODULES)).encode(), 0o755)
    cpio.file("etc/mdadm/mdadm.conf", b"HOMEHOST <ignore>\nAUTO -all\n")

    # Binaries and their libraries.
    needed: List[str] = []
    for src, dst in BINARIES:
        path = _unpacked(utree, src)
        if path is None:
            raise GuestError(f"{src} is missing from the unpacked packages")
        with open(path, "rb") as fh:
            data = fh.read()
        cpio.file(dst, data, 0o755)
        needed += _elf_needed(data)
    blkio = os.path.join(tmp, "blkio")
    _compile_blkio(blkio)
    with open(blkio, "rb") as fh:
        cpio.file("bin/blkio", fh.read(), 0o755)
    libdirs = [os.path.join(utree, d) for d in LIBDIRS]
    _copy_libraries(needed, libdirs, lambda name, data: cpio.file(f"lib/x86_64-linux-gnu/{name}", data, 0o755))
    ld = _unpacked(utree, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    if ld is None:
        raise GuestError("the dynamic loader (ld-linux-x86-64.so.2) is missing from libc6")
    with open(os.path.realpath(ld), "rb") as fh:
        cpio.file("lib64/ld-linux-x86-64.so.2", fh.read(), 0o755)

    # Modules.
    files, builtin = module_index(moddir)
    wanted = [m for m in MODULES if m not in builtin and m in files]
    order, deps, data = module_closure(wanted, files, builtin)
    for name in order:
        cpio.file(f"lib/modules/{name}.ko", data[name])
    lines = [f"{m} {' '.join(deps[m])}".rstrip() + "\n" for m in order]
    lines += [f"{m} \n" for m in MODULES if m in builtin]
    cpio.file("lib/modules/deps", "".join(lines).encode())

    with open(os.path.join(tmp, "initrd.cpio"), "wb") as fh:
        fh.write(cpio.bytes())
    os.unlink(blkio)
    shutil.copy(_vmlinuz(ktree, moddir, image["Package"]), os.path.join(tmp, "vmlinuz"))
    with open(os.path.join(tmp, "release"), "w") as fh:
        fh.write(release + "\n")
    with open(os.path.join(tmp, "package"), "w") as fh:
        fh.write(f"{image['Package']} {image['Version']}\n")
    with open(os.path.join(tmp, "key"), "w") as fh:
        fh.write(key + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    # The unpacked trees are large (the kernel's modules); the .debs stay cached.
    shutil.rmtree(utree, ignore_errors=True)
    shutil.rmtree(ktree, ignore_errors=True)
    return Guest(out)


# ---------------------------------------------------------------------------
# Tools the guest reads from a second, read-only share (``tools``): fio and
# its libraries, and blktrace (``validate --blktrace``). They stay out of the initramfs, so a guest that runs no fio
# job boots as fast as before, and one tree serves every kernel.

# zlib1g: a library whose package name does not start with "lib" (Apt.closure follows only those).
TOOL_PACKAGES = ["fio", "zlib1g", "blktrace"]
TOOLS_FORMAT = 2
# How the job runs fio from the share (its own loader and libraries).
GUEST_FIO = "/tools/lib/ld-linux-x86-64.so.2 --library-path /tools/lib /tools/bin/fio"


class Tools:
    """The built tools tree: ``bin/fio``, ``bin/blktrace``, ``lib/`` and fio's version."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(os.path.join(path, "fio-version")) as fh:
            self.package_version = fh.read().strip()

    @property
    def fio_version(self) -> str:
        """fio's release as ``fio_version`` takes it: ``3.33`` of Debian's ``3.33-3``."""
        return fio_release(self.package_version)

    def share_args(self) -> List[str]:
        return ["-virtfs", f"local,path={self.path},mount_tag=tools,security_model=none,readonly=on,id=tools"]


def fio_release(package_version: str) -> str:
    """``3.33`` of a Debian version such as ``3.33-3`` or ``1:3.35-1``."""
    v = package_version.split(":", 1)[-1]
    parts = v.split("-")[0].split(".")
    return ".".join(parts[:2])


def build_tools(cache: str, progress: Progress, rebuild: bool = False) -> Tools:
    """Build (or reuse) the tools tree in ``CACHE/tools``."""
    apt = Apt(os.path.join(cache, "apt"), progress)
    apt.update()
    def resolve() -> Dict[str, object]:
        libs = apt.closure(TOOL_PACKAGES + ["libc6"])
        return {"libs": libs, "versions": [f"{p}={apt.show(p).get('Version')}" for p in libs]}

    resolved = _remembered(apt, "tools", TOOLS_FORMAT, resolve)
    libs, versions = resolved["libs"], resolved["versions"]
    key = hashlib.sha256(("\n".join(versions) + f"\n{TOOLS_FORMAT}\n").encode()).hexdigest()[:16]
    out = os.path.join(cache, "tools")
    stamp = os.path.join(out, "key")
    if not rebuild and os.path.exists(stamp) and open(stamp).read().strip() == key:
        return Tools(out)
    fio_version = next(v.split("=", 1)[1] for v in versions if v.startswith("fio="))
    progress(f"building the guest's tools (fio {fio_version})")
    utree = os.path.join(cache, "unpacked", "tools-" + key)
    for p in libs:
        apt.unpack(p, utree)
    tmp = f"{out}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "lib"))

    def put(rel: str, data: bytes) -> None:
        with open(os.path.join(tmp, rel), "wb") as fh:
            fh.write(data)
        os.chmod(os.path.join(tmp, rel), 0o755)

    with open(os.path.join(utree, "usr/bin/fio"), "rb") as fh:
        fio = fh.read()
    put("bin/fio", fio)
    with open(os.path.join(utree, "usr/sbin/blktrace"), "rb") as fh:
        blktrace = fh.read()
    put("bin/blktrace", blktrace)
    # Some libraries live in private directories their users' RUNPATH names
    # (librados2's ceph/): search every library directory of the tree.
    libdirs = [os.path.join(utree, d) for d in LIBDIRS]
    for top in list(libdirs):
        libdirs += sorted(root for root, _dirs, _files in os.walk(top) if root != top)
    _copy_libraries(_elf_needed(fio) + _elf_needed(blktrace), libdirs, lambda n, d: put(f"lib/{n}", d))
    with open(os.path.realpath(os.path.join(utree, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")), "rb") as fh:
        put("lib/ld-linux-x86-64.so.2", fh.read())
    with open(os.path.join(tmp, "fio-version"), "w") as fh:
        fh.write(fio_version + "\n")
    with open(os.path.join(tmp, "key"), "w") as fh:
        fh.write(key + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    shutil.rmtree(utree, ignore_errors=True)
    return Tools(out)


# ---------------------------------------------------------------------------
# Running


def find_qemu() -> str:
    qemu = os.environ.get("BLKSTACK_QEMU", "qemu-system-x86_64")
    path = shutil.which(qemu)
    if path is None:
        raise GuestError(f"{qemu} not found: install it with 'apt-get install qemu-system-x86' (see README, Validation)")
    return path


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG),
    so a killed validation leaves no qemu behind."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


def boot(guest: Guest, share: str, drives: Sequence[str], timeout: float, progress: Progress,
         memory_mb: int = 1024, append: str = "", cpus: int = 1, servers: Sequence[Sequence[str]] = ()) -> float:
    """Boot the guest with the 9p share and qemu device arguments *drives*;
    wait for it to power off. Returns the wall time in seconds. *servers*:
    the slow disks' nbdkit commands, run while qemu runs (slowdisk.py)."""
    qemu = find_qemu()
    cmdline = (f"console=ttyS0 rdinit=/init panic=-1 loglevel=4 hugepages=64 "
               f"mitigations=off nokaslr tsc=reliable {append}").strip()
    args = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", str(cpus), "-m", str(memory_mb),
            "-nodefaults", "-display", "none", "-no-reboot", "-serial", f"file:{os.path.join(share, 'console.log')}",
            "-kernel", guest.kernel, "-initrd", guest.initrd, "-append", cmdline,
            "-virtfs", f"local,path={share},mount_tag=out,security_model=none,id=out"]
    args += list(drives)
    with open(os.path.join(share, "qemu.cmd"), "w") as fh:
        fh.write(" ".join(args) + "\n")
    start = time.monotonic()
    try:
        with serving(servers, share):
            _run_qemu(args, share, timeout)
    except SlowDiskError as exc:
        raise GuestError(str(exc))
    return time.monotonic() - start


def _run_qemu(args: Sequence[str], share: str, timeout: float) -> None:
    """Run qemu until the guest powers off (killed after *timeout* s)."""
    with open(os.path.join(share, "qemu.log"), "w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=_die_with_parent)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise GuestError(f"the guest did not finish within {timeout:.0f} s (console: {os.path.join(share, 'console.log')})")
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    if proc.returncode != 0:
        with open(os.path.join(share, "qemu.log")) as fh:
            last = [l.strip() for l in fh if l.strip()]
        raise GuestError(f"qemu exited with status {proc.returncode}: {last[-1] if last else 'no message'}")
