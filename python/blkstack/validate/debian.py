"""Debian packages for the validation guests: a private apt configuration
in the cache directory, ``apt-get download`` and ``dpkg -x``.

Nothing here touches the system's apt state: the package lists, the
sources list and the downloaded ``.deb`` files all live under
``CACHE/apt`` (bookworm) or ``CACHE/apt-SUITE``. Each kernel comes from
one Debian release, whose userland (busybox, mdadm, dmsetup) the guest
takes too: bookworm, bookworm-updates and bookworm-security carry 6.1
(``linux-image-amd64``) and 6.12 (``linux-image-6.12-amd64``, from
bookworm-security); bullseye-security carries 5.10 and unstable 7.2 (each
release's ``linux-image-amd64``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Callable, Dict, List, Optional, Sequence

# What each kernel choice installs: a meta package whose dependency names
# the versioned image package.
KERNEL_META = {"5.10": "linux-image-amd64", "6.1": "linux-image-amd64", "6.12": "linux-image-6.12-amd64",
               "7.2": "linux-image-amd64"}
# The Debian release each kernel choice comes from (its apt configuration).
KERNEL_RELEASE = {"5.10": "bullseye", "6.1": "bookworm", "6.12": "bookworm", "7.2": "unstable"}

MIRROR = os.environ.get("BLKSTACK_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY_MIRROR = os.environ.get("BLKSTACK_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# Package lists younger than this are reused without asking the mirror.
LISTS_MAX_AGE_S = 7 * 24 * 3600

Progress = Callable[[str], None]


class DebianError(Exception):
    """A package could not be found, downloaded or unpacked (one line)."""


def _quiet(_msg: str) -> None:
    pass


def release_sources(release: str, signed: str) -> str:
    """The deb822 sources of a Debian release: its main suite, updates and
    security where the release has them (unstable has neither)."""
    if release == "unstable":
        return f"Types: deb\nURIs: {MIRROR}\nSuites: unstable\nComponents: main{signed}\n"
    return (
        f"Types: deb\nURIs: {MIRROR}\nSuites: {release} {release}-updates\nComponents: main{signed}\n\n"
        f"Types: deb\nURIs: {SECURITY_MIRROR}\nSuites: {release}-security\nComponents: main{signed}\n"
    )


def apt_root(cache: str, kernel: str) -> str:
    """The private apt directory of a kernel choice's release (bookworm's is
    ``CACHE/apt``, the others ``CACHE/apt-RELEASE``)."""
    release = KERNEL_RELEASE[kernel]
    return os.path.join(cache, "apt" if release == "bookworm" else f"apt-{release}")


def kernel_apt(cache: str, kernel: str, progress: Progress = _quiet) -> "Apt":
    """The private apt configuration a kernel choice's packages come from."""
    if kernel not in KERNEL_RELEASE:
        raise DebianError(f"no Debian kernel for profile {kernel} (choose one of: {', '.join(KERNEL_META)})")
    return Apt(apt_root(cache, kernel), progress, KERNEL_RELEASE[kernel])


class Apt:
    """apt-get and apt-cache over a private configuration in *root*."""

    def __init__(self, root: str, progress: Progress = _quiet, release: str = "bookworm") -> None:
        self.root = root
        self.progress = progress
        self.release = release
        self.debs = os.path.join(root, "debs")
        self._conf = os.path.join(root, "apt.conf")

    # -- configuration ------------------------------------------------------

    def _write_config(self) -> None:
        for sub in ("lists/partial", "cache/archives/partial", "etc/parts", "etc/preferences.d", "debs"):
            os.makedirs(os.path.join(self.root, sub), exist_ok=True)
        keyring = KEYRING if os.path.exists(KEYRING) else ""
        signed = f"\nSigned-By: {keyring}" if keyring else ""
        sources = release_sources(self.release, signed)
        _write_if_changed(os.path.join(self.root, "etc", "debian.sources"), sources)
        status = os.path.join(self.root, "status")
        empty = os.path.join(self.root, "etc", "empty")
        for path in (status, empty):
            if not os.path.exists(path):
                open(path, "w").close()
        r = self.root
        conf = f"""\
Dir::Etc::SourceList "{empty}";
Dir::Etc::SourceParts "{r}/etc";
Dir::Etc::Parts "{r}/etc/parts";
Dir::Etc::PreferencesParts "{r}/etc/preferences.d";
Dir::Etc::Preferences "{empty}";
Dir::State "{r}";
Dir::State::Lists "{r}/lists";
Dir::State::status "{status}";
Dir::Cache "{r}/cache";
Dir::Cache::archives "{r}/cache/archives";
Acquire::Languages "none";
Acquire::Check-Valid-Until "false";
Acquire::Retries "3";
APT::Architecture "amd64";
APT::Architectures {{ "amd64"; }};
APT::Sandbox::User "{'root' if os.geteuid() == 0 else os.environ.get('USER', 'nobody')}";
Debug::NoLocking "true";
"""
        _write_if_changed(self._conf, conf)

    def _run(self, args: Sequence[str], cwd: Optional[str] = None) -> str:
        env = dict(os.environ, APT_CONFIG=self._conf, LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
        try:
            proc = subprocess.run(list(args), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, check=False)
        except FileNotFoundError:
            raise DebianError(f"{args[0]} not found: validation needs a Debian (or Ubuntu) host with apt and dpkg")
        if proc.returncode != 0:
            lines = [l for l in (proc.stderr or proc.stdout).splitlines() if l.strip()]
            errs = [l for l in lines if l.startswith(("E:", "dpkg"))] or lines
            raise DebianError(f"{' '.join(args[:2])}: {errs[-1] if errs else 'failed'}")
        return proc.stdout

    @property
    def lists_stamp(self) -> str:
        return os.path.join(self.root, "lists.stamp")

    def update(self, force: bool = False) -> None:
        """Fetch the package lists unless fresh ones are cached."""
        self._write_config()
        stamp = self.lists_stamp
        fresh = os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < LISTS_MAX_AGE_S
        if fresh and not force:
            return
        self.progress(f"updating the package lists ({self.release})")
        self._run(["apt-get", "update", "-q"])
        with open(stamp, "w") as fh:
            fh.write(time.strftime("%Y-%m-%dT%H:%M:%S\n"))

    # -- queries ------------------------------------------------------------

    def show(self, package: str) -> Dict[str, str]:
        """The candidate version's control fields."""
        text = self._run(["apt-cache", "show", "--no-all-versions", package])
        return parse_control(text)

    def kernel_package(self, kernel: str) -> Dict[str, str]:
        """The versioned linux-image package a kernel choice installs."""
        if kernel not in KERNEL_META:
            raise DebianError(f"no Debian kernel for profile {kernel} (choose one of: {', '.join(KERNEL_META)})")
        meta = self.show(KERNEL_META[kernel])
        for alt in _depends(meta.get("Depends", "")):
            if alt.startswith("linux-image-"):
                fields = self.show(alt)
                return fields
        raise DebianError(f"{KERNEL_META[kernel]} names no linux-image package")

    def kernel_parts(self, image: Dict[str, str]) -> List[str]:
        """The packages an image package is split into (7.x: linux-binary-
        and linux-modules-ABI hold vmlinuz and the modules; empty when the
        image package holds them itself, as up to 6.x)."""
        abi = image["Package"][len("linux-image-"):]
        return [d for d in _depends(image.get("Depends", ""))
                if d.startswith("linux-") and d.endswith(abi) and not d.startswith("linux-image-")]

    def closure(self, packages: Sequence[str], skip: Sequence[str] = ()) -> List[str]:
        """The packages and the libraries they depend on, recursively
        (only ``lib*`` dependencies are followed: the guest needs shared
        objects, not maintainer scripts' tools)."""
        seen: Dict[str, None] = {}
        todo = list(packages)
        while todo:
            name = todo.pop(0)
            if name in seen or name in skip:
                continue
            seen[name] = None
            fields = self.show(name)
            for dep in _depends(fields.get("Depends", "")) + _depends(fields.get("Pre-Depends", "")):
                if dep.startswith("lib") and dep not in seen:
                    todo.append(dep)
        return list(seen)

    # -- files --------------------------------------------------------------

    def download(self, package: str) -> str:
        """The candidate .deb of *package* in the cache (downloaded once)."""
        fields = self.show(package)
        version = fields.get("Version", "")
        fname = os.path.basename(fields.get("Filename", ""))
        if not fname:
            raise DebianError(f"{package}: no Filename in the package list")
        arch = fields.get("Architecture", "amd64")
        # apt-get download names the file PACKAGE_VERSION_ARCH.deb, ':' escaped.
        path = os.path.join(self.debs, f"{package}_{version.replace(':', '%3a')}_{arch}.deb")
        if os.path.exists(path):
            return path
        size = int(fields.get("Size", "0") or 0)
        self.progress(f"downloading {package} {version} ({size / 1e6:.1f} MB)")
        self._run(["apt-get", "download", "-q", f"{package}={version}"], cwd=self.debs)
        if not os.path.exists(path):
            raise DebianError(f"{package}: apt-get download left no {os.path.basename(path)} in {self.debs}")
        return path

    def unpack(self, package: str, dest: str) -> str:
        """``dpkg -x`` the package into *dest* (once); returns *dest*."""
        deb = self.download(package)
        stamp = os.path.join(dest, ".unpacked-" + os.path.basename(deb))
        if os.path.exists(stamp):
            return dest
        os.makedirs(dest, exist_ok=True)
        self.progress(f"unpacking {os.path.basename(deb)}")
        try:
            subprocess.run(["dpkg", "-x", deb, dest], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError:
            raise DebianError("dpkg not found: validation needs a Debian (or Ubuntu) host")
        except subprocess.CalledProcessError as exc:
            raise DebianError(f"dpkg -x {deb}: {exc.stderr.decode(errors='replace').strip() or 'failed'}")
        open(stamp, "w").close()
        return dest


def _write_if_changed(path: str, text: str) -> None:
    try:
        with open(path) as fh:
            if fh.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as fh:
        fh.write(text)


def parse_control(text: str) -> Dict[str, str]:
    """The first stanza of Debian control text as {field: value}."""
    fields: Dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line[0] in " \t" and key:
            fields[key] += "\n" + line.strip()
            continue
        k, _, v = line.partition(":")
        key = k.strip()
        fields[key] = v.strip()
    return fields


def _depends(value: str) -> List[str]:
    """Package names of a Depends field (first alternative of each)."""
    out = []
    for item in value.split(","):
        first = item.split("|")[0].strip()
        name = re.split(r"[\s(:]", first, maxsplit=1)[0]
        if name:
            out.append(name)
    return out


def kernel_release(tree: str) -> str:
    """The module directory name (``uname -r``) in an unpacked image."""
    for base in ("lib/modules", "usr/lib/modules"):
        d = os.path.join(tree, base)
        if os.path.isdir(d):
            names = sorted(os.listdir(d))
            if names:
                return names[-1]
    raise DebianError(f"{tree}: no lib/modules/RELEASE in the kernel package")


def module_dir(tree: str, release: str) -> str:
    """The modules of *release* in an unpacked kernel: ``lib/modules`` up
    to 6.x, ``usr/lib/modules`` in 7.x's split packages."""
    for base in ("lib/modules", "usr/lib/modules"):
        d = os.path.join(tree, base, release)
        if os.path.isdir(d):
            return d
    raise DebianError(f"{tree}: no modules directory for {release}")


def remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
