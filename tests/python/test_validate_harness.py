"""The validation guest's fio workloads, CPUs, virtio-scsi disks and
cgroups: the plan a scenario turns into (no virtual machine is booted)."""

from __future__ import annotations

import json

import pytest

from blkstack import _core
from blkstack.validate.guest import fio_release
from test_validate import _plan

from blkstack.validate.plan import (PlanError, _fio_join_cgroups, build_plan, cgroup_job, fio_job_source,
                                    fio_version_sets, guest_fio_jobs, scenario_cpus)


def test_fio_workload_runs_the_same_job_file_on_the_guest_devices(tmp_path):
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "1GiB"
        [workload]
        type = "fio"
        job = \"\"\"
        [global]
        ioengine=psync
        direct=1
        ; a comment
        [r]
        filename=/dev/vda
        rw=randread
        bs=4k
        size=8M
        \"\"\"
    """)
    assert plan.tools and plan.bios_file is None
    text = plan.files["job.fio"]
    # The job's device is the guest's link; comments go.
    assert text.splitlines() == ["[global]", "ioengine=psync", "direct=1",
                                 "[r]", "filename=/dev/blkstack/vda", "rw=randread", "bs=4k", "size=8M"]
    assert "/tools/bin/fio --output=/out/fio.txt /out/job.fio" in plan.job
    assert plan.job.index("tracing_on") < plan.job.index("/tools/bin/fio")
    assert not plan.warnings


def test_fio_args_become_a_job_file_and_top_device_is_the_default(tmp_path):
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "256MiB"
        [disks.vdb]
        kind = "virtio"
        size = "256MiB"
        [md.md0]
        level = 0
        chunk = "64KiB"
        members = ["vda", "vdb"]
        [workload]
        type = "fio"
        args = ["--ioengine=libaio", "--direct=1", "--name=w", "--rw=write", "--bs=128k", "--size=4M",
                "--time_based", "--runtime=1"]
    """)
    # A job without a filename gets the top of the stack, in its own section
    # (fio would add a second file for a second filename= line).
    assert plan.files["job.fio"].splitlines() == [
        "[global]", "ioengine=libaio", "direct=1",
        "[w]", "rw=write", "bs=128k", "size=4M", "time_based", "runtime=1", "filename=/dev/blkstack/md0"]
    # time_based: the guest's speed decides how many I/Os there are.
    assert any("time_based" in w and "runtime" in w for w in plan.warnings)


def test_a_global_filename_serves_every_job():
    jobs = guest_fio_jobs("[global]\nfilename=vdb\n[a]\nrw=read\n[b]\nrw=write\n", ["vda", "vdb"], "vda", None, [])
    assert jobs.text.count("filename=") == 1 and "filename=/dev/blkstack/vdb" in jobs.text


def test_fio_filename_must_be_a_scenario_device():
    with pytest.raises(PlanError, match="'/dev/sdz' is not a scenario device"):
        guest_fio_jobs("[a]\nfilename=/dev/sdz\n", ["vda"], "vda", None, [])


def test_fio_jobfile_includes_are_inlined(tmp_path):
    (tmp_path / "common.fio").write_text("ioengine=psync\ndirect=1\n")
    (tmp_path / "job.fio").write_text("[a]\ninclude common.fio\nrw=read\n")
    text = fio_job_source({"jobfile": "job.fio"}, str(tmp_path / "s.toml"))
    assert text.splitlines() == ["[a]", "ioengine=psync", "direct=1", "rw=read"]


def test_fio_version_follows_the_guest():
    # Debian 12's fio package is 3.33-3: the model gets fio_version 3.33
    # unless the scenario names one, which is then only compared.
    assert fio_release("3.33-3") == "3.33" and fio_release("1:3.38-1+b1") == "3.38"
    warnings: list = []
    assert fio_version_sets({}, "3.33", warnings) == ["workload.fio_version=3.33"] and not warnings
    assert fio_version_sets({"fio_version": "3.39"}, "3.33", warnings) == []
    assert "fio 3.33" in warnings[0]


def test_fio_urandom_seeds_and_buffers_are_reported(tmp_path):
    plan = _plan(tmp_path, """
        [disks.vda]
        kind = "virtio"
        size = "1GiB"
        [workload]
        type = "fio"
        buffer_fragmentation = 0.5
        args = ["--name=r", "--rw=randread", "--bs=4k", "--size=4M", "--direct=1", "--randrepeat=0",
                "--numjobs=2"]
    """)
    text = " | ".join(plan.warnings)
    assert "/dev/urandom" in text and "buffer_fragmentation" in text and "interleave" in text


def test_cpus_and_virtio_scsi(tmp_path):
    plan = _plan(tmp_path, """
        cpus = 2
        [disks.sda]
        kind = "virtio-scsi"
        size = "1GiB"
        [disks.sda.queue]
        max_segments = 126
        queue_depth = 64
        [workload]
        type = "dd"
        if = "/dev/sda"
        of = "/dev/null"
        bs = "64k"
        count = 4
        iflag = "direct"
    """)
    assert plan.cpus == 2
    args = plan.qemu_args
    ctrl = args[args.index("-device") + 1]
    # seg_max is the virtqueue size - 2 (126 + 2 = 128), cmd_per_lun the queue depth.
    assert ctrl.startswith("virtio-scsi-pci,id=vscsi0,") and "virtqueue_size=128" in ctrl and "cmd_per_lun=64" in ctrl
    disk = args[args.index("-device", args.index("-device") + 1) + 1]
    assert disk.startswith("scsi-hd,drive=d0,bus=vscsi0.0,") and "serial=BLKSTACK00Z" in disk
    assert "for m in sd_mod virtio_scsi; do load $m; done" in plan.job
    assert not plan.warnings


def test_cpus_out_of_range_is_refused():
    assert scenario_cpus({}) == 1 and scenario_cpus({"cpus": 4}) == 4
    for bad in (0, 65, "2", True):
        with pytest.raises(PlanError, match="cpus"):
            scenario_cpus({"cpus": bad})


def test_cgroups_are_created_and_their_files_written():
    doc = {"cgroups": {"slow": {"io.max": ["vdb rbps=10485760 wiops=1000", "254:0 riops=500"], "io.weight": 100},
                       "fast/inner": {"io.bfq.weight": 200}}}
    resolved = {"devices": {"vda": {"major": 254, "minor": 0}, "vdb": {"major": 254, "minor": 16}}}
    lines = cgroup_job(doc, ["vda", "vdb"], resolved, used=["other"])
    text = "\n".join(lines)
    assert "mount -t cgroup2 none $CG" in text
    # The io controller is enabled from the root down to each group's parent.
    assert text.index("echo +io > $CG/cgroup.subtree_control") < text.index("echo +io > $CG/fast/cgroup.subtree_control")
    # Devices by scenario name or the model's MAJ:MIN, both as the guest numbers them.
    assert "echo \"$(devno vdb)\"' rbps=10485760 wiops=1000' > $CG/slow/io.max" in text
    assert "echo \"$(devno vda)\"' riops=500' > $CG/slow/io.max" in text
    assert "echo 100 > $CG/slow/io.weight" in text and "echo 200 > $CG/fast/inner/io.bfq.weight" in text
    assert "mkdir -p $CG/other" in text
    with pytest.raises(PlanError, match="'sdq' is not a scenario device"):
        cgroup_job({"cgroups": {"g": {"io.max": "sdq rbps=1"}}}, ["vda"], resolved)


def test_fio_jobs_join_their_cgroups_in_one_fio_process():
    warnings: list = []
    jobs = guest_fio_jobs("[global]\ncgroup=a\n[x]\nrw=read\n[y]\ncgroup=b\nrw=read\n", ["vda"], "vda", None, warnings)
    assert jobs.cgroups == {"x": "a", "y": "b"}
    assert "cgroup=" not in jobs.text
    text = _fio_join_cgroups(jobs.text, jobs.cgroups)
    assert "[x]\nexec_prerun=sh /out/cgjoin.sh a" in text and "[y]\nexec_prerun=sh /out/cgjoin.sh b" in text


def test_random_scenarios_are_reproducible_and_plan(tmp_path):
    import random
    from blkstack.validate.randomized import draw_disk_set, generate, toml_text
    texts = []
    for run in range(2):
        rng = random.Random(7)
        base = draw_disk_set(rng)
        docs = [generate(rng, base, "6.12", str(tmp_path), f"r{run}-{i}") for i in range(6)]
        texts.append([toml_text(dict(d, name="x")) for d in docs])
        for i, d in enumerate(docs):
            # Every drawn scenario is one the model accepts and the guest can build.
            path = str(tmp_path / f"r{run}-{i}.toml")
            plan = build_plan(path, "6.12", str(tmp_path), json.loads(_core.check(path, "6.12", [])))
            # The batch's disks and partitions, whatever the stack.
            assert [x.name for x in plan.disks] == list(base["disks"])
            assert all(d["disks"][n].get("partitions") == s.get("partitions") for n, s in base["disks"].items())
            # Each disk's scheduler and max_sectors_kb are written, so no
            # scenario of a batch inherits another's.
            assert all(set(s["queue"]) == {"scheduler", "max_sectors_kb"} for s in d["disks"].values())
    assert texts[0] == texts[1]


def test_batch_job_runs_each_scenario_in_its_own_directory(tmp_path):
    from blkstack.validate.randomized import batch_job
    plans = [_plan(tmp_path, f"""
        [disks.vda]
        kind = "virtio"
        size = "1GiB"
        [workload]
        type = "fio"
        args = ["--name=r", "--rw=read", "--bs=4k", "--size={n}M", "--direct=1"]
    """) for n in (1, 2)]
    job, files = batch_job(plans)
    assert sorted(files) == ["s0/job.fio", "s0/job.sh", "s1/job.fio", "s1/job.sh"]
    assert "/out/s1/fio.txt /out/s1/job.fio" in files["s1/job.sh"] and "size=2M" in files["s1/job.fio"]
    # Each in a subshell (a failure ends only its own), then the stack is torn down.
    assert job.index("( . /out/s0/job.sh ) > /out/s0/job.log") < job.index("teardown /out/s0") < job.index("/out/s1/job.sh")


def test_shrink_candidates_make_the_scenario_smaller():
    from blkstack.validate.randomized import shrink_candidates
    doc = {"disks": {"vda": {"queue": {"scheduler": "mq-deadline", "max_sectors_kb": 64}}},
           "workload": {"type": "dd", "count": 6, "skip": 3}}
    cands = shrink_candidates(doc)
    assert [c["workload"] for c in cands[:2]] == [{"type": "dd", "count": 3, "skip": 3}, {"type": "dd", "count": 6, "skip": 0}]
    assert cands[2]["disks"]["vda"]["queue"]["scheduler"] == "none"
    fio = {"disks": {"vda": {"queue": {"scheduler": "none"}}},
           "workload": {"type": "fio", "job": "[r]\nbs=4096\nsize=12288\n"}}
    # 12 KiB halves to 6 KiB, rounded down to the 4 KiB block size.
    assert [c["workload"]["job"] for c in shrink_candidates(fio)] == ["[r]\nbs=4096\nsize=4096\n"]


def test_random_cli_errors(capsys):
    from blkstack import cli
    for argv, msg in ((["validate"], "give scenario files"),
                      (["validate", "--random", "3", "x.toml"], "draws its own scenarios"),
                      (["validate", "--random", "3"], "--random needs --kernel"),
                      (["validate", "--random", "0", "--kernel", "6.1"], "must be at least 1")):
        assert cli.main(argv) == 2
        assert msg in capsys.readouterr().err


def test_blktrace_records_each_disk_around_the_workload(tmp_path):
    # validate --blktrace: the real 2-CPU trace of tests/data/real-2cpu was
    # recorded so. blktrace runs from the tools share (also for a dd
    # workload), one per disk, started after tracing is on and stopped
    # (SIGINT, then waited for) before the trace is copied out.
    path = tmp_path / "s.toml"
    path.write_text('kernel = "6.12"\ncpus = 2\n[disks.vda]\nkind = "virtio"\nsize = "1GiB"\n'
                    '[disks.sda]\nkind = "virtio-scsi"\nsize = "1GiB"\n'
                    '[workload]\ntype = "dd"\nif = "/dev/vda"\nof = "/dev/null"\nbs = "64k"\ncount = 2\niflag = "direct"\n')
    resolved = json.loads(_core.check(str(path), "6.12", []))
    plain = build_plan(str(path), "6.12", str(tmp_path), resolved)
    assert not plain.tools and "blktrace" not in plain.job
    plan = build_plan(str(path), "6.12", str(tmp_path), resolved, blktrace=True)
    assert plan.tools
    lines = plan.job.splitlines()
    starts = [i for i, line in enumerate(lines) if "/tools/bin/blktrace -d /dev/blkstack/" in line]
    assert [lines[i].split("-o ")[1].split()[0] for i in starts] == ["vda", "sda"]
    stop = lines.index("kill -INT $bt_pids; for p in $bt_pids; do wait $p; done")
    on = lines.index("echo 1 > $T/tracing_on")
    off = lines.index("echo 0 > $T/tracing_on")
    assert on < starts[0] < stop < off
    assert lines[stop + 1] == "cp /tmp/blktrace/* /out/blktrace/"


def test_host_cpu_gives_the_model_the_guests_cpu_class(tmp_path):
    from blkstack.validate.plan import HOST_CPU_CLASSES, host_cpu_sets
    warnings = []
    assert host_cpu_sets({"disks": {}}, None, warnings) == []
    assert host_cpu_sets({"disks": {}}, "tcg", warnings) == ["host.cpu=tcg"] and not warnings
    # A scenario's own [host] table is kept, and the run says so.
    assert host_cpu_sets({"host": {"cpu": "vm"}}, "tcg", warnings) == []
    assert warnings == ["--host-cpu tcg: the scenario's own [host] table is used"]
    # The classes validate accepts are the engine's (its error lists them).
    p = tmp_path / "s.toml"
    p.write_text('[disks.vda]\nkind = "virtio"\nsize = "1GiB"\n')
    for name in HOST_CPU_CLASSES:
        _core.check(str(p), "6.12", [f"host.cpu={name}"])
    with pytest.raises(Exception) as err:
        _core.check(str(p), "6.12", ["host.cpu=laptop"])
    assert str(err.value).rstrip().endswith("expected one of none, " + ", ".join(HOST_CPU_CLASSES))


def test_host_cpu_option_refuses_an_unknown_class(tmp_path, capsys):
    from blkstack import cli
    p = tmp_path / "s.toml"
    p.write_text('[disks.vda]\nkind = "virtio"\nsize = "1GiB"\n')
    assert cli.main(["validate", str(p), "--kernel", "6.12", "--host-cpu", "laptop"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--host-cpu laptop: unknown CPU class; expected one of server, vm, tcg" in err
