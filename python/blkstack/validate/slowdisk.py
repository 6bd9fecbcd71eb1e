"""Slow disks: every guest disk answers each command after a fixed latency.

Under qemu's TCG the guest's CPU and its emulated disks race: whether a
member request has completed when md balances the next piece of a bio
(docs/validation.md C), whether raid5d's pre-reads come back while it still
runs (R), depends on the host's load, and two runs of one scenario do not
agree. With ``[validate] disk_latency_ms = L`` (or ``validate
--disk-latency L``) each disk image is served by nbdkit's delay filter on a
unix socket of its own and reached through QEMU's NBD client: every read,
write, trim and write-zeroes is answered L ms after it arrives, far longer
than the guest's CPU takes between two submissions, so every such race goes
one way (the disk is still busy), the way the model, which submits a bio's
pieces at one instant, already goes. The guest-visible device is unchanged
(the same virtio-blk, virtio-scsi, nvme or AHCI device with the same
properties); only its backend is. The model is told the same latency
(src/scenario/validate.rs: 16 commands in flight, QEMU's NBD client's
``MAX_NBD_REQUESTS``, each exactly L).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence

# Requests QEMU's NBD client keeps in flight per disk (block/nbd.c
# MAX_NBD_REQUESTS); nbdkit serves as many at once.
NBD_IN_FLIGHT = 16
# The most QEMU's NBD client moves in one command (nbd.h NBD_MAX_BUFFER_SIZE).
NBD_MAX_TRANSFER = 32 << 20
# How long nbdkit may take to listen on its socket.
START_TIMEOUT_S = 20.0


class SlowDiskError(Exception):
    """nbdkit is missing or did not start (one line)."""


def scenario_disk_latency(doc: Dict[str, Any], override: Optional[int] = None) -> int:
    """The guest disks' latency in ms (0: QEMU's own disks): *override*
    (``--disk-latency``) when given, else the scenario's ``[validate]
    disk_latency_ms`` (which the model has already checked)."""
    if override is not None:
        return int(override)
    return int(((doc.get("validate") or {}).get("disk_latency_ms")) or 0)


def find_nbdkit() -> str:
    path = shutil.which(os.environ.get("BLKSTACK_NBDKIT", "nbdkit"))
    if path is None:
        raise SlowDiskError("slow disks need nbdkit (with its delay and fua filters): apt-get install nbdkit")
    return path


def nbdkit_command(nbdkit: str, image: str, socket: str, latency_ms: int) -> List[str]:
    """nbdkit serving *image* on *socket*, each command delayed *latency_ms*.
    The delay filter sits nearest the client; below it the fua filter
    drops FUA flags and flushes, so no command waits for the host's own
    disk (the images are scratch files). The file plugin is parallel:
    ``--threads`` lets all of QEMU's requests wait out their delays at once.
    The server writes ``SOCKET.pid`` once it listens."""
    delay = f"{latency_ms}ms"
    return [nbdkit, "--foreground", "--exit-with-parent", "--unix", socket, "--pidfile", socket + ".pid",
            "--threads", str(NBD_IN_FLIGHT), "--filter=delay", "--filter=fua", "file", f"file={image}",
            f"delay-read={delay}", f"delay-write={delay}", f"delay-trim={delay}", f"delay-zero={delay}",
            "fuamode=discard"]


def nbd_drive(socket: str, index: int) -> str:
    """qemu's ``-drive`` for a disk served on *socket* (the NBD client in
    place of a raw file; the same cache and discard settings)."""
    return (f"driver=nbd,server.type=unix,server.path={socket},if=none,id=d{index},cache=unsafe,"
            "discard=unmap")


@contextlib.contextmanager
def serving(commands: Sequence[Sequence[str]], log_dir: str) -> Iterator[List[subprocess.Popen]]:
    """Run the nbdkit servers *commands* (each with ``--pidfile``) until
    the block ends; wait until every one listens before yielding their
    processes. Each server's messages go to ``nbdkit-N.log`` in *log_dir*."""
    procs: List[subprocess.Popen] = []
    try:
        for i, cmd in enumerate(commands):
            pidfile = cmd[cmd.index("--pidfile") + 1]
            if os.path.exists(pidfile):
                os.unlink(pidfile)
            with open(os.path.join(log_dir, f"nbdkit-{i}.log"), "w") as log:
                procs.append(subprocess.Popen(list(cmd), stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True))
        for cmd, proc in zip(commands, procs):
            _wait_listening(cmd[cmd.index("--pidfile") + 1], proc, log_dir)
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_listening(pidfile: str, proc: subprocess.Popen, log_dir: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not os.path.exists(pidfile):
        if proc.poll() is not None:
            raise SlowDiskError(f"nbdkit exited with status {proc.returncode} (log in {log_dir})")
        if time.monotonic() > deadline:
            raise SlowDiskError(f"nbdkit did not listen within {START_TIMEOUT_S:.0f} s (log in {log_dir})")
        time.sleep(0.05)
