"""The host probes (shm, memlock, container, fabric, pcie) against real captured files and
against tools that are missing, hang, fail or print garbage."""

from __future__ import annotations

import resource
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainmedic.probes import compile_cache, container, fabric, memlock, pcie, procfs, shm
from trainmedic.probes.base import Budget
from trainmedic.probes.runner import run_probes

from .helpers import check_types, fixture_path, fixture_text

MIB = 1024 * 1024


def body(name: str) -> str:
    """A fixture without its `# source:` line: what the real file or tool printed."""
    return "\n".join(line for line in fixture_text(name).splitlines()
                     if not line.startswith("# source:")) + "\n"


# ---- shm ---------------------------------------------------------------------------------


def test_shm_counts_nccl_segments_left_behind(tmp_path):
    (tmp_path / "nccl-KWfVyt").write_bytes(b"\0" * 8192)
    (tmp_path / "nccl-fjwOOB").write_bytes(b"\0" * 4096)
    (tmp_path / "torch_1234").write_bytes(b"\0" * 4096)
    result = shm.inspect(tmp_path)
    check_types(result)
    assert result.facts["nccl_segments"] == 2
    assert "2 nccl-* segment(s)" in result.evidence["nccl_segments"]


def test_shm_of_dockers_default_64_mb_is_small(monkeypatch, tmp_path):
    def fake_statvfs(_path):  # Docker's default: a 64 MB tmpfs, 4 KiB blocks, 60 MB used
        return SimpleNamespace(f_blocks=16384, f_frsize=4096, f_bavail=1024)

    monkeypatch.setattr(shm.os, "statvfs", fake_statvfs)
    result = shm.inspect(tmp_path)
    check_types(result)
    assert result.facts["size_mib"] == 64.0 and result.facts["small"] is True
    assert result.facts["used_fraction"] == pytest.approx(0.938, abs=0.001)
    assert result.status == "warn" and "--shm-size" in result.summary


def test_shm_missing_is_a_failure_not_an_exception(tmp_path):
    result = shm.inspect(tmp_path / "no-such-dir")
    assert result.status == "fail" and "not usable" in result.summary


# ---- memlock -----------------------------------------------------------------------------

DEFAULT_CAPS = procfs.parse_cap_eff(fixture_text("status_caps_containerd_default.txt"))
PRIVILEGED_CAPS = procfs.parse_cap_eff(fixture_text("status_privileged_container.txt"))


def test_capability_masks_from_real_status_files():
    assert DEFAULT_CAPS == 0xA80425FB and PRIVILEGED_CAPS == 0x1FFFFFFFFFF
    # the default container set lacks both capabilities NCCL's host paths care about
    assert procfs.has_cap(DEFAULT_CAPS, procfs.CAP_IPC_LOCK) is False
    assert procfs.has_cap(DEFAULT_CAPS, procfs.CAP_SYS_NICE) is False
    assert procfs.has_cap(PRIVILEGED_CAPS, procfs.CAP_SYS_NICE) is True
    assert procfs.parse_cap_eff("Name: bash\nState: S\n") is None


def test_memlock_64_kib_in_a_default_container_on_an_rdma_node_warns():
    result = memlock.build_result(65536, 65536, DEFAULT_CAPS, rdma_devices=True)
    check_types(result)
    assert result.facts["soft_mib"] == 0.062 and result.facts["unlimited"] is False
    assert result.facts["ok_for_rdma"] is False and result.status == "warn"
    assert "ibv_reg_mr" in result.summary
    assert "srun" in result.evidence["ok_for_rdma"]  # says the ranks' limit may differ


def test_memlock_is_fine_when_unlimited_or_with_ipc_lock():
    inf = resource.RLIM_INFINITY
    unlimited = memlock.build_result(inf, inf, DEFAULT_CAPS, rdma_devices=True)
    assert unlimited.facts["unlimited"] is True and "soft_mib" not in unlimited.facts
    assert unlimited.status == "ok"
    capable = memlock.build_result(8 * MIB, 8 * MIB, PRIVILEGED_CAPS, rdma_devices=True)
    assert capable.facts["ok_for_rdma"] is True and capable.status == "ok"


def test_memlock_low_without_rdma_devices_is_only_noted():
    result = memlock.build_result(8 * MIB, 8 * MIB, DEFAULT_CAPS, rdma_devices=False)
    assert result.status == "ok" and result.facts["ok_for_rdma"] is False
    assert "only for InfiniBand" in result.summary


def test_memlock_probe_reads_this_process():
    result = memlock.probe(Budget(2))
    check_types(result)
    soft = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    assert result.facts["unlimited"] is (soft == resource.RLIM_INFINITY)


# ---- container ---------------------------------------------------------------------------

MEMINFO = "MemTotal:       263856744 kB\nMemFree:        1000000 kB\n"  # a 251 GiB node


def fake_root(tmp_path: Path, cgroup: str, status: str = "", files: dict[str, str] | None = None,
              marker: str = "") -> Path:
    root = tmp_path / "root"
    entries = {"proc/self/cgroup": cgroup, "proc/meminfo": MEMINFO, "proc/self/status": status,
               **(files or {})}
    if marker:
        entries[marker.lstrip("/")] = ""
    for rel, text in entries.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_docker_v1_with_a_memory_limit_and_default_capabilities(tmp_path):
    # without a cgroup namespace the container's own memory cgroup is mounted at the root
    root = fake_root(tmp_path, body("cgroup_v1_docker.txt"),
                     body("status_caps_containerd_default.txt"),
                     {"sys/fs/cgroup/memory/memory.limit_in_bytes": "8589934592\n"}, "/.dockerenv")
    result = container.examine(root, {})
    check_types(result)
    f = result.facts
    assert f["runtime"] == "docker" and f["in_container"] is True and f["kubernetes"] is False
    assert f["cgroup_version"] == 1
    assert f["memory_limited"] is True and f["memory_limit_gib"] == 8.0
    assert f["cap_sys_nice"] is False and f["cap_ipc_lock"] is False
    assert "without CAP_SYS_NICE and CAP_IPC_LOCK" in result.summary


def test_docker_is_recognised_from_the_cgroup_path_alone(tmp_path):
    root = fake_root(tmp_path, body("cgroup_v1_docker.txt"),
                     files={"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"})
    f = container.examine(root, {}).facts
    assert f["runtime"] == "docker"
    assert f["memory_limited"] is False  # v1's "unlimited" is a huge number, not a limit


def test_kubernetes_pod_on_containerd(tmp_path):
    root = fake_root(tmp_path, body("cgroup_v1_kubernetes_containerd.txt"))
    f = container.examine(root, {}).facts
    assert f["runtime"] == "kubernetes" and f["kubernetes"] is True
    with_env = container.examine(fake_root(tmp_path / "b", "0::/\n"),
                                 {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}).facts
    assert with_env["kubernetes"] is True and with_env["cgroup_version"] == 2


def test_cgroup_v2_limit_and_no_limit(tmp_path):
    limited = fake_root(tmp_path / "a", "0::/\n", body("status_privileged_container.txt"),
                        {"sys/fs/cgroup/memory.max": body("cgroup_v2_memory_max_128m.txt")},
                        "/run/.containerenv")
    f = container.examine(limited, {}).facts
    assert f["runtime"] == "podman" and f["cgroup_version"] == 2
    assert f["memory_limit_gib"] == 0.12 and f["cap_sys_nice"] is True
    free = fake_root(tmp_path / "b", "0::/\n",
                     files={"sys/fs/cgroup/memory.max": body("cgroup_v2_memory_max_unlimited.txt")})
    assert container.examine(free, {}).facts["memory_limited"] is False


def test_a_slurm_job_cgroup_limit_is_found_on_an_ancestor(tmp_path):
    path = "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0"
    root = fake_root(tmp_path, f"0::{path}\n", files={
        f"sys/fs/cgroup{path}/memory.max": "max\n",
        "sys/fs/cgroup/system.slice/slurmstepd.scope/job_4242/memory.max": "68719476736\n",
    })
    f = container.examine(root, {}).facts
    assert f["slurm_cgroup"] is True and f["in_container"] is False
    assert f["memory_limit_gib"] == 64.0


def test_a_hosts_mountinfo_full_of_container_mounts_is_not_a_container(tmp_path):
    # a Docker/Kubernetes node lists its containers' mounts too; only bind mounts onto this
    # process's /etc/hostname, /etc/hosts or /etc/resolv.conf say "we are inside one"
    host_lines = (
        "731 29 0:55 / /var/lib/docker/containers/abc/mounts/shm rw - tmpfs shm rw,size=65536k\n"
        "845 29 0:60 / /var/lib/kubelet/pods/1234/volumes/x rw - tmpfs tmpfs rw\n"
    )
    root = fake_root(tmp_path, "0::/user.slice/user-1000.slice/session-3.scope\n",
                     files={"proc/self/mountinfo": host_lines})
    f = container.examine(root, {}).facts
    assert f["in_container"] is False and f["runtime"] == ""
    inside = host_lines + ("512 500 8:1 /var/lib/docker/containers/abc/hostname /etc/hostname "
                           "rw - ext4 /dev/sda1 rw\n")
    root2 = fake_root(tmp_path / "b", "0::/\n", files={"proc/self/mountinfo": inside})
    assert container.examine(root2, {}).facts["runtime"] == "docker"


def test_container_probe_on_garbage_is_unavailable_not_an_exception(tmp_path):
    root = fake_root(tmp_path, "\x00\xff garbage\nnot:a cgroup line\n")
    result = container.examine(root, {})
    check_types(result)
    assert result.status == "unavailable" and result.facts["cgroup_version"] == 0


# ---- fabric ------------------------------------------------------------------------------


def test_fabric_section_in_progress_from_a_real_report():
    gpus = fabric.parse_fabric(fixture_text("smi_q_fabric_in_progress.txt"))
    assert [(g.state, g.status) for g in gpus] == [("In Progress", "N/A")]
    result = fabric.build_result(gpus, "inactive", "")
    check_types(result)
    assert result.facts == {"nvswitch": True, "state": "In Progress", "gpus_not_ready": 1,
                            "service": "inactive"}
    assert result.status == "fail" and "error 802" in result.summary


def test_fabric_on_a_real_single_h200_is_not_an_nvswitch_system():
    # the whole `nvidia-smi -q` of an H200 (driver 580.159.04): its Fabric section says N/A
    gpus = fabric.parse_fabric(fixture_text("smi_q_h200.txt"))
    assert [(g.bus_id, g.state) for g in gpus] == [("00000000:00:06.0", "N/A")]
    result = fabric.build_result(gpus, "unknown", "")
    check_types(result)
    assert result.status == "ok" and result.facts["nvswitch"] is False


def test_fabric_completed_with_an_error_status_is_not_ready():
    gpus = fabric.parse_fabric(fixture_text("smi_q_fabric_insufficient_resources.txt"))
    result = fabric.build_result(gpus, "active", "")
    assert result.facts["state"] == "Completed" and result.facts["gpus_not_ready"] == 1
    assert "Insufficient Resources" in result.evidence["gpus_not_ready"]
    assert "NVLSM" in result.summary  # the daemon runs: look at its log and version


def test_several_gpus_and_one_pcie_board():
    two = ("GPU 00000000:07:00.0\n" + fixture_text("smi_q_fabric_in_progress.txt")
           + "    Processes                             : None\n"
           + "GPU 00000000:0F:00.0\n" + fixture_text("smi_q_fabric_insufficient_resources.txt"))
    gpus = fabric.parse_fabric(two)
    assert [g.bus_id for g in gpus] == ["00000000:07:00.0", "00000000:0F:00.0"]
    assert fabric.build_result(gpus, "", "").facts["state"] == "In Progress"  # the worst
    # a PCIe A100 reports N/A: no fabric to wait for
    xml_like = fabric.parse_fabric("GPU 00000000:01:00.0\n    Fabric\n        State : N/A\n"
                                   "        Status : N/A\n")
    result = fabric.build_result(xml_like, "", "")
    assert result.facts["nvswitch"] is False and result.status == "ok"


def test_service_state_words():
    assert fabric.service_state("active\n") == "active"
    assert fabric.service_state("inactive\n") == "inactive"
    assert fabric.service_state(
        "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
        "Failed to connect to bus: Host is down\n") == ""
    assert fabric.service_state("\x00garbage") == "unknown"


def test_fabric_probe_with_fake_tools(fakebin):
    fakebin("nvidia-smi", f'/bin/cat "{fixture_path("smi_q_fabric_in_progress.txt")}"')
    fakebin("systemctl", "echo failed; exit 3")
    result = fabric.probe(Budget(5))
    check_types(result)
    assert result.facts["service"] == "failed" and result.facts["gpus_not_ready"] == 1
    assert result.status == "fail"


def test_fabric_probe_reports_the_service_when_nvidia_smi_is_missing(fakebin):
    fakebin("systemctl", "echo active")
    result = fabric.probe(Budget(5))
    check_types(result)
    assert result.status == "unavailable" and result.facts == {"service": "active"}


# ---- pcie --------------------------------------------------------------------------------


def test_pcie_from_real_xml():
    p100 = pcie.build_result(pcie.parse_links(fixture_text("smi_q_x_tesla_p100.xml")), "")
    check_types(p100)
    assert p100.facts["min_width"] == 16 and p100.facts["min_gen"] == 3
    assert p100.facts["width_degraded"] == 0 and p100.status == "ok"
    a100 = pcie.parse_links(fixture_text("smi_q_x_a100_mig.xml"))
    assert (a100[0].gen, a100[0].gen_max, a100[0].width) == (4, 4, 16)
    assert a100[0].util is None  # MIG hides utilization: a low generation cannot count


def degraded_p100(width: str, gen: str, util: str) -> str:
    """The real P100 output with one field changed, as a degraded link would show it."""
    text = fixture_text("smi_q_x_tesla_p100.xml")
    text = text.replace("<current_link_width>16x</current_link_width>",
                        f"<current_link_width>{width}</current_link_width>")
    text = text.replace("<current_link_gen>3</current_link_gen>",
                        f"<current_link_gen>{gen}</current_link_gen>")
    return text.replace("<gpu_util>0 %</gpu_util>", f"<gpu_util>{util}</gpu_util>")


def test_pcie_narrow_link_warns_even_when_idle():
    result = pcie.build_result(pcie.parse_links(degraded_p100("8x", "3", "0 %")), "")
    assert result.facts["width_degraded"] == 1 and result.status == "warn"
    assert "x8 of Gen3 x16" in result.facts["degraded"][0]


def test_pcie_low_generation_counts_only_under_load():
    idle = pcie.build_result(pcie.parse_links(degraded_p100("16x", "1", "0 %")), "")
    assert idle.facts["gen_degraded"] == 0 and idle.status == "ok"
    assert "power saving" in idle.summary
    busy = pcie.build_result(pcie.parse_links(degraded_p100("16x", "1", "97 %")), "")
    assert busy.facts["gen_degraded"] == 1 and busy.status == "warn"


def test_pcie_probe_with_a_fake_nvidia_smi(fakebin):
    fakebin("nvidia-smi", f'/bin/cat "{fixture_path("smi_q_x_tesla_p100.xml")}"')
    result = pcie.probe(Budget(5))
    check_types(result)
    assert result.status == "ok" and result.facts["gpus"] == 1


def test_pure_python_host_probes_run_here():
    for result in run_probes(["shm", "memlock", "container"], timeout=5):
        check_types(result)
        assert result.status in ("ok", "warn", "fail", "unavailable")
        assert result.summary



# ---- compile-cache -----------------------------------------------------------------------


def mount_line_as_mountinfo(line: str) -> str:
    """A `mount` output line (device on point type fstype (opts)) in mountinfo's layout."""
    device, rest = line.split(" on ", 1)
    point, rest = rest.split(" type ", 1)
    fstype, opts = rest.split(" ", 1)
    return f"40 28 0:50 / {point} rw,relatime shared:9 - {fstype} {device} {opts.strip('()')}"


def test_mountinfo_of_a_real_login_node():
    mounts = compile_cache.parse_mountinfo(fixture_text("mountinfo_cray_login.txt"))
    assert ("/", "overlay") in mounts and ("/tmp", "tmpfs") in mounts
    assert compile_cache.fs_type("/tmp/torchinductor_alice", mounts) == "tmpfs"
    assert compile_cache.fs_type("/cray_home/alice/.triton/cache", mounts) == "xfs"
    assert compile_cache.fs_type("/opt/conda", mounts) == "overlay"
    # a path under /var/lib/nfs is not on NFS: rpc_pipefs is the type that counts
    assert compile_cache.fs_type("/var/lib/nfs/rpc_pipefs/x", mounts) == "rpc_pipefs"


def test_a_home_on_nfs_is_flagged(tmp_path):
    lines = fixture_text("mountinfo_cray_login.txt").splitlines()
    nfs = [mount_line_as_mountinfo(line) for line in body("mount_nfs4_home.txt").splitlines()
           if line.strip()]
    mounts = compile_cache.parse_mountinfo("\n".join(lines + nfs))
    assert compile_cache.fs_type("/home/vc-a/alice/.triton/cache", mounts) == "nfs4"
    # the probe looks up the real paths; map them onto this machine's tmp_path
    home = tmp_path / "home" / "vc-a" / "alice"
    home.mkdir(parents=True)
    dirs = compile_cache.cache_dirs({}, str(tmp_path), str(home), "alice")
    assert dirs["inductor"] == str(tmp_path / "torchinductor_alice")
    assert dirs["triton"] == str(tmp_path / "torchinductor_alice" / "triton")
    fake_mounts = [("/", "overlay"), (str(tmp_path / "home"), "nfs4")]
    result = compile_cache.examine(dirs, fake_mounts)
    check_types(result)
    assert result.facts["network_fs"] is True and result.facts["inductor_fs"] == "overlay"
    assert result.status == "warn" and "triton (outside Inductor)" in result.evidence["network_fs"]


def test_explicit_cache_dirs_on_local_disk_are_fine(tmp_path):
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "ind"),
           "TRITON_CACHE_DIR": str(tmp_path / "tri")}
    dirs = compile_cache.cache_dirs(env, "/tmp", "/home/alice", "alice")
    assert set(dirs) == {"inductor", "triton"}  # no ~/.triton fallback once TRITON_CACHE_DIR is set
    result = compile_cache.examine(dirs, [("/", "ext4")])
    check_types(result)
    assert result.facts["network_fs"] is False and result.facts["writable"] is True
    assert result.facts["inductor_fs"] == "ext4"


def test_compile_cache_probe_runs_here():
    result = compile_cache.probe(Budget(2))
    check_types(result)
    assert result.facts["inductor_dir"]
