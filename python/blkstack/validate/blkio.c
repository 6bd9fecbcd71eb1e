/*
 * blkio: the validation guest's I/O tool. It issues the system calls a
 * blkstack workload stands for, and nothing else, so that the kernel's
 * block tracepoints show what the model should show.
 *
 *   blkio dd if=PATH of=PATH bs=N [count=N] [skip=N] [seek=N]
 *            [iflag=direct,...] [oflag=direct,sync,dsync,...]
 *       coreutils dd's loop: one read(2) of bs bytes into one buffer, then
 *       one write(2), per block; O_DIRECT/O_SYNC/O_DSYNC as the flags say.
 *
 *   blkio bios FILE
 *       an explicit bio list, one entry per line of FILE:
 *         depth D batch B
 *         OP PATH OFFSET LENGTH FLAGS REPEAT STRIDE
 *       OP is read, write, discard, secure_erase, write_zeroes or flush;
 *       OFFSET, LENGTH and STRIDE are bytes; FLAGS is '-' or a
 *       comma-separated list of fua, nowait, polled, atomic. With depth 1,
 *       each read or write is one pread/pwritev2 with O_DIRECT. With a
 *       larger depth, reads and writes go through Linux AIO (io_submit), B
 *       iocbs per call, at most D in flight. discard, secure_erase,
 *       write_zeroes and flush are ioctls (BLKDISCARD, BLKSECDISCARD,
 *       BLKZEROOUT) and fsync(2), each issued when nothing else is in
 *       flight.
 *
 * Buffers are 2 MiB huge pages when the kernel has them reserved
 * (/proc/sys/vm/nr_hugepages), so a buffer of up to 2 MiB is one
 * physically contiguous range, as the model's buffers are.
 *
 * Built static (cc -static -O2) so the guest needs no C library for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x00000040
#endif
#define HUGE (2UL << 20)

static void die(const char *what)
{
	fprintf(stderr, "blkio: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *msg)
{
	fprintf(stderr, "blkio: %s\n", msg);
	exit(2);
}

static void *buffer(size_t len)
{
	size_t size = (len + HUGE - 1) & ~(HUGE - 1);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
	}
	memset(p, 0, size); /* fault every page in before any I/O */
	return p;
}

static unsigned long long num(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	unsigned long long mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'M': mul = 1ULL << 20; end++; break;
	case 'G': mul = 1ULL << 30; end++; break;
	case 'c': end++; break;
	case 'w': mul = 2; end++; break;
	case 'b': mul = 512; end++; break;
	}
	if (*end)
		fail("bad number");
	return v * mul;
}

static int has(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		if (l == n && !strncmp(p, word, n))
			return 1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

static int dd(int argc, char **argv)
{
	const char *in = NULL, *out = NULL, *iflag = "", *oflag = "";
	unsigned long long bs = 512, count = ~0ULL, skip = 0, seek = 0;
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq)
			fail("dd: expected KEY=VALUE");
		*eq++ = 0;
		if (!strcmp(argv[i], "if")) in = eq;
		else if (!strcmp(argv[i], "of")) out = eq;
		else if (!strcmp(argv[i], "bs")) bs = num(eq);
		else if (!strcmp(argv[i], "count")) count = num(eq);
		else if (!strcmp(argv[i], "skip")) skip = num(eq);
		else if (!strcmp(argv[i], "seek")) seek = num(eq);
		else if (!strcmp(argv[i], "iflag")) iflag = eq;
		else if (!strcmp(argv[i], "oflag")) oflag = eq;
		else fail("dd: unknown key");
	}
	if (!in || !out)
		fail("dd: if= and of= are required");
	int ifl = O_RDONLY, ofl = O_WRONLY;
	if (has(iflag, "direct")) ifl |= O_DIRECT;
	if (has(oflag, "direct")) ofl |= O_DIRECT;
	if (has(oflag, "sync")) ofl |= O_SYNC;
	if (has(oflag, "dsync")) ofl |= O_DSYNC;
	int ifd = open(in, ifl), ofd = open(out, ofl);
	if (ifd < 0) die(in);
	if (ofd < 0) die(out);
	if (count == ~0ULL) {
		/* No count: to the end of the device side, as dd stops there. */
		int sfd = strcmp(in, "/dev/zero") ? ifd : ofd;
		unsigned long long size, from = sfd == ifd ? skip * bs : seek * bs;
		if (ioctl(sfd, BLKGETSIZE64, &size))
			die("BLKGETSIZE64");
		count = size > from ? (size - from + bs - 1) / bs : 0;
	}
	char *buf = buffer(bs);
	off_t ipos = skip * bs, opos = seek * bs;
	for (unsigned long long n = 0; n < count; n++) {
		ssize_t r = pread(ifd, buf, bs, ipos);
		if (r < 0) die("read");
		if (r == 0) break;
		if (strcmp(in, "/dev/zero"))
			ipos += r;
		ssize_t w = pwrite(ofd, buf, r, opos);
		if (w < 0) die("write");
		if (strcmp(out, "/dev/null"))
			opos += w;
		if ((unsigned long long)r < bs) break;
	}
	close(ifd);
	close(ofd);
	return 0;
}

struct entry {
	char op[16];
	char path[256];
	unsigned long long off, len, repeat, stride;
	int rwf;
};

static long io_setup_(unsigned n, aio_context_t *ctx) { return syscall(SYS_io_setup, n, ctx); }
static long io_submit_(aio_context_t ctx, long n, struct iocb **p) { return syscall(SYS_io_submit, ctx, n, p); }
static long io_getevents_(aio_context_t ctx, long min, long max, struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

#define MAXFD 64
static struct { char path[256]; int fd; } fds[MAXFD];
static int nfds;

static int fd_for(const char *path)
{
	for (int i = 0; i < nfds; i++)
		if (!strcmp(fds[i].path, path))
			return fds[i].fd;
	if (nfds == MAXFD)
		fail("too many devices");
	int fd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0)
		die(path);
	snprintf(fds[nfds].path, sizeof fds[nfds].path, "%s", path);
	fds[nfds].fd = fd;
	nfds++;
	return fd;
}

/* AIO state */
static aio_context_t ctx;
static long inflight;
static struct iocb *iocbs;
static char **slots;
static int *slot_free;
static long depth = 1, batch = 1;
static struct iocb **pending;
static long npending;

static void reap(long min)
{
	struct io_event ev[256];
	while (min > 0 || inflight > 0) {
		long want = min > 0 ? min : 0;
		if (want > 256) want = 256;
		long n = io_getevents_(ctx, want, 256, ev);
		if (n < 0) { if (errno == EINTR) continue; die("io_getevents"); }
		for (long i = 0; i < n; i++) {
			struct iocb *cb = (struct iocb *)(uintptr_t)ev[i].obj;
			if ((long long)ev[i].res < 0) { errno = -(int)ev[i].res; die("aio"); }
			slot_free[cb - iocbs] = 1;
			inflight--;
		}
		min -= n;
		if (min <= 0) break;
	}
}

static void flush_pending(void)
{
	long done = 0;
	while (done < npending) {
		long n = io_submit_(ctx, npending - done, pending + done);
		if (n < 0) { if (errno == EAGAIN) { reap(1); continue; } die("io_submit"); }
		done += n;
	}
	npending = 0;
}

static void drain(void)
{
	flush_pending();
	while (inflight > 0)
		reap(inflight);
}

static void one(struct entry *e, unsigned long long off, char *syncbuf)
{
	int fd = fd_for(e->path);
	int write = !strcmp(e->op, "write");
	if (!strcmp(e->op, "read") || write) {
		if (depth == 1) {
			struct iovec iov = { syncbuf, e->len };
			ssize_t r = write ? pwritev2(fd, &iov, 1, off, e->rwf) : preadv2(fd, &iov, 1, off, e->rwf);
			if (r < 0) die(e->op);
			return;
		}
		/* inflight counts the iocbs not yet submitted too. */
		while (inflight >= depth) {
			flush_pending();
			reap(1);
		}
		long s = 0;
		while (!slot_free[s]) s++;
		slot_free[s] = 0;
		struct iocb *cb = &iocbs[s];
		memset(cb, 0, sizeof *cb);
		cb->aio_fildes = fd;
		cb->aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cb->aio_buf = (uintptr_t)slots[s];
		cb->aio_nbytes = e->len;
		cb->aio_offset = off;
		cb->aio_rw_flags = e->rwf;
		pending[npending++] = cb;
		inflight++;
		if (npending == batch)
			flush_pending();
		return;
	}
	drain();
	unsigned long long range[2] = { off, e->len };
	if (!strcmp(e->op, "discard")) { if (ioctl(fd, BLKDISCARD, range)) die("BLKDISCARD"); }
	else if (!strcmp(e->op, "secure_erase")) { if (ioctl(fd, BLKSECDISCARD, range)) die("BLKSECDISCARD"); }
	else if (!strcmp(e->op, "write_zeroes")) { if (ioctl(fd, BLKZEROOUT, range)) die("BLKZEROOUT"); }
	else if (!strcmp(e->op, "flush")) { if (fsync(fd)) die("fsync"); }
	else fail("unknown op");
}

static int bios(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f) die(file);
	char line[1024];
	struct entry *es = NULL;
	long n = 0, cap = 0;
	unsigned long long maxlen = 4096;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!strncmp(line, "depth", 5)) {
			if (sscanf(line, "depth %ld batch %ld", &depth, &batch) != 2 || depth < 1 || batch < 1)
				fail("bad depth line");
			continue;
		}
		if (n == cap) { cap = cap ? 2 * cap : 64; es = realloc(es, cap * sizeof *es); }
		struct entry *e = &es[n];
		char flags[128];
		if (sscanf(line, "%15s %255s %llu %llu %127s %llu %llu", e->op, e->path, &e->off, &e->len, flags,
			   &e->repeat, &e->stride) != 7)
			fail("bad entry line");
		e->rwf = 0;
		if (has(flags, "fua")) e->rwf |= RWF_DSYNC;
		if (has(flags, "nowait")) e->rwf |= RWF_NOWAIT;
		if (has(flags, "polled")) e->rwf |= RWF_HIPRI;
		if (has(flags, "atomic")) e->rwf |= RWF_ATOMIC;
		if (e->len > maxlen) maxlen = e->len;
		n++;
	}
	fclose(f);
	if (batch > depth) batch = depth;
	char *syncbuf = NULL;
	if (depth == 1) {
		syncbuf = buffer(maxlen);
	} else {
		if (io_setup_(depth, &ctx)) die("io_setup");
		iocbs = calloc(depth, sizeof *iocbs);
		slots = calloc(depth, sizeof *slots);
		slot_free = calloc(depth, sizeof *slot_free);
		pending = calloc(depth, sizeof *pending);
		size_t slot = (maxlen + 4095) & ~4095UL;
		char *pool = buffer(slot * depth);
		for (long i = 0; i < depth; i++) { slots[i] = pool + i * slot; slot_free[i] = 1; }
	}
	for (long i = 0; i < n; i++)
		for (unsigned long long r = 0; r < es[i].repeat; r++)
			one(&es[i], es[i].off + r * es[i].stride, syncbuf);
	if (depth > 1)
		drain();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "dd"))
		return dd(argc - 2, argv + 2);
	if (argc == 3 && !strcmp(argv[1], "bios"))
		return bios(argv[2]);
	fprintf(stderr, "usage: blkio dd if=PATH of=PATH bs=N [count=N] [skip=N] [seek=N] [iflag=..] [oflag=..]\n"
			"       blkio bios FILE\n");
	return 2;
}
